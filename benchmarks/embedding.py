"""Embedding backends side by side: speed, vectors, and what they retrieve.

On the chunks of the shared corpus and sample_corpus/ (benchmarks/corpus.py), in one run:
chunks/s per backend, measured round-robin on the same slices of the chunks (a busy neighbour
slows every backend alike); cosine of each backend's vectors to torch fp32 (mean, worst); and
retrieval agreement: for each question in benchmarks/queries.txt, the top 10 chunks by exact
cosine under a backend, against the top 10 under torch fp32 (share of the ten in common).

`python -m benchmarks.embedding [--why]`: --why adds the ONNX Runtime variants behind the figures
(threads, spinning, batch padding, graph optimisation, the ORT transformer fusion).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.corpus import ROOT, chunk_texts

QUERIES_FILE = ROOT / "benchmarks" / "queries.txt"
SLICES = 4
RESULTS: dict[str, object] = {}


def report(key: str, value, text: str) -> None:
    RESULTS[key] = value
    print(text)


def queries() -> list[str]:
    return [q.strip() for q in QUERIES_FILE.read_text().splitlines() if q.strip() and not q.startswith("#")]


def run(why: bool = False, limit: int | None = None) -> dict:
    from ingest.embed.embedder import SentenceTransformerEmbedder
    from ingest.embed.onnx_backend import OnnxEmbedder
    from schemas.embedding import EmbedBackend

    texts = chunk_texts()[:limit]
    questions = queries()
    print(f"== embedding backends ({len(texts)} chunks, {len(questions)} queries, {os.cpu_count()} cores)")
    embedders = {}
    for name, make in [
        ("torch", lambda: SentenceTransformerEmbedder()),
        ("onnx", lambda: OnnxEmbedder(backend=EmbedBackend.ONNX)),
        ("onnx-int8", lambda: OnnxEmbedder(backend=EmbedBackend.ONNX_INT8)),
    ]:
        started = time.perf_counter()
        embedders[name] = make()
        report(f"embed_{name}_load_s", round(time.perf_counter() - started, 1),
               f"  {name}: loaded in {time.perf_counter() - started:.1f} s (ONNX export and quantisation cached after the first run)")
    rates = _round_robin(embedders, texts)
    vectors = {name: np.vstack(parts) for name, parts in rates.pop("_vectors").items()}
    reference = vectors["torch"]
    query_vectors = {name: e.embed(questions) for name, e in embedders.items()}
    top_ref = _top10(reference, query_vectors["torch"])
    for name in embedders:
        cos = (vectors[name] * reference).sum(axis=1)
        overlap = _overlap(_top10(vectors[name], query_vectors[name]), top_ref)
        report(f"embed_{name}", {"chunks_per_s": round(rates[name], 1), "cos_mean": round(float(cos.mean()), 4),
                                 "cos_worst": round(float(cos.min()), 4), "top10_overlap": round(overlap, 3),
                                 "speed_vs_torch": round(rates[name] / rates["torch"], 2)},
               f"  {name:9s} {rates[name]:6.1f} chunks/s ({rates[name] / rates['torch']:.2f}x torch), cosine to torch "
               f"mean {cos.mean():.4f} worst {cos.min():.4f}, top-10 overlap {overlap:.3f} over {len(questions)} queries")
    if why:
        _why(embedders["onnx"], texts)
    return RESULTS


def _round_robin(embedders: dict, texts: list[str]) -> dict:
    """chunks/s per embedder, each slice embedded by every embedder in turn (order rotating)."""
    seconds = {name: 0.0 for name in embedders}
    parts: dict[str, list] = {name: [] for name in embedders}
    names = list(embedders)
    size = -(-len(texts) // SLICES)
    for k, first in enumerate(range(0, len(texts), size)):
        part = texts[first : first + size]
        for name in names[k % len(names) :] + names[: k % len(names)]:
            started = time.perf_counter()
            parts[name].append((first, embedders[name].embed(part)))
            seconds[name] += time.perf_counter() - started
    rates = {name: len(texts) / seconds[name] for name in names}
    rates["_vectors"] = {name: [v for _, v in sorted(parts[name], key=lambda p: p[0])] for name in names}
    return rates


def _top10(chunks: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
    return np.argsort(-(query_vectors @ chunks.T), axis=1, kind="stable")[:, :10]


def _overlap(found: np.ndarray, reference: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, reference)]))


def _why(onnx_embedder, texts: list[str]) -> None:
    """ONNX Runtime variants on 192 chunks, round-robin, two rounds: what the speed depends on."""
    import onnxruntime as ort

    from ingest.embed.onnx_backend import OUTPUT

    sample = texts[:: max(1, len(texts) // 192)][:192]
    tokenizer = onnx_embedder._tokenizer
    fused = onnx_embedder.onnx_path  # what the onnx backend runs
    path = fused.with_name("model-plain.onnx")  # the export before the transformer fusion

    def session(threads=2, spin=False, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL, model=path):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def variant(sess, sort=True, pad_to=None, batch=32):
        def embed(batch_texts):
            encodings = tokenizer.encode_batch([t.strip() for t in batch_texts])
            lengths = np.array([len(e.ids) for e in encodings])
            order = np.argsort(-lengths, kind="stable") if sort else np.arange(len(batch_texts))
            for first in range(0, len(order), batch):
                rows = order[first : first + batch]
                width = pad_to or int(lengths[rows].max())
                ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros_like(ids)
                for r, i in enumerate(rows):
                    ids[r, : lengths[i]] = encodings[i].ids
                    mask[r, : lengths[i]] = 1
                sess.run([OUTPUT], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        return embed

    variants = {
        "the onnx backend: fused graph, 2 threads spinning, sorted batches": variant(session(spin=True, model=fused)),
        "the same, threads not spinning": variant(session(model=fused)),
        "plain export, 2 threads spinning": variant(session(spin=True)),
        "plain export, not spinning": variant(session()),
        "plain export, 1 thread": variant(session(threads=1)),
        "plain, batches unsorted (padded to the longest of each)": variant(session(), sort=False),
        "plain, every row padded to 256 tokens": variant(session(), pad_to=256),
        "plain, basic graph optimisation only": variant(session(level=ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)),
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(2):
        for name, embed in variants.items():
            started = time.perf_counter()
            embed(sample)
            rates[name].append(len(sample) / (time.perf_counter() - started))
    print(f"  why (onnx fp32 variants, {len(sample)} chunks, median of 2 interleaved rounds):")
    out = {}
    for name, r in rates.items():
        out[name] = round(statistics.median(r), 1)
        print(f"    {out[name]:6.1f} chunks/s  {name}")
    RESULTS["embed_onnx_variants"] = out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--why", action="store_true", help="also measure the ONNX Runtime variants")
    parser.add_argument("--limit", type=int, help="only the first N chunks")
    parser.add_argument("-o", "--output", default=str(ROOT / "build" / "bench-embedding.json"))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    run(args.why, args.limit)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(RESULTS, indent=2) + "\n")


if __name__ == "__main__":
    main()
