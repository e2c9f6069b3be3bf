"""Approximate search at 100k and 1M vectors: build time, size, query latency, recall@10.

`python -m benchmarks.ann` (sizes from BENCH_ANN_SIZES, default 100000; the full table is
BENCH_ANN_SIZES=100000,1000000, about 20 minutes on 2 cores). Figures go to build/bench-ann.json.

The vectors. The real ones are the model's embeddings of every chunk of the shared corpus and
sample_corpus/ (about a thousand). Each synthetic vector is a real one moved part of the way
(t uniform in [0, 0.5]) towards one of its 10 nearest real neighbours, plus Gaussian noise with
the covariance of the real vectors (so it lies along the directions real embeddings vary in),
renormalised. The queries are drawn the same way with another seed and never indexed, plus the
embeddings of benchmarks/queries.txt. Vectors and exact answers are cached under .bench/ann/.

Each index is searched one query at a time (k=10) with one OpenMP thread, as a server answers a
request; recall@10 is the share of the exact top 10 (IndexFlatIP) that the index returns.
Inverted files with the same nlist share one k-means run: their build time is that run's time
plus their own encoder training and adding (PQ codebooks on 16k vectors). The incremental update is measured on the auto index:
five documents of 40 chunks changed (removed and re-added with new text) and every later vector
renumbered, against a full build of the same vectors.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.corpus import CACHE, ROOT, chunk_texts

QUERIES_FILE = ROOT / "benchmarks" / "queries.txt"
N_QUERIES = 500  # synthetic held-out queries (plus the real ones from queries.txt)
NOISE = 0.7  # scale of the covariance-shaped noise (see the module docstring)
HNSW_EF = (16, 32, 64, 128)
NPROBES = (8, 16, 32, 64, 128)
PQ_TRAIN = 16_384
SKIP = set(os.environ.get("BENCH_ANN_SKIP", "").split(","))  # e.g. HNSW,PQ48: candidates to leave out
RESULTS: dict[str, object] = {}


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sizes = [int(s) for s in os.environ.get("BENCH_ANN_SIZES", "100000").split(",") if s.strip()]
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "bench-ann.json")
    run(sizes)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(RESULTS, indent=2) + "\n")
    print(f"\nwritten to {out}")


def run(sizes: list[int]) -> dict:
    import faiss

    print("== approximate search (vectors: see benchmarks/ann.py)")
    real, real_queries = real_vectors()
    for n in sizes:
        base = synthetic(real, n, seed=1)
        queries = np.vstack([synthetic(real, N_QUERIES, seed=2), real_queries])
        truth = exact_top10(base, queries, f"{n}-{_key(real)}")
        _describe(real, base, queries, truth)
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        incremental(base, queries, n)
        print(f"  {n:,} vectors: index, params, build s, size MB, p50 ms, p99 ms, recall@10")
        RESULTS[f"ann_{n}"] = candidates(base, queries, truth)
    return RESULTS


def report(key: str, value, text: str) -> None:
    RESULTS[key] = value
    print(text)


def _key(real: np.ndarray) -> str:
    return hashlib.sha256(real.tobytes() + f"{NOISE}".encode()).hexdigest()[:12]


def real_vectors() -> tuple[np.ndarray, np.ndarray]:
    """(chunk vectors, query vectors) of the real corpus, by the fp32 model (cached)."""
    texts = chunk_texts()
    queries = [q.strip() for q in QUERIES_FILE.read_text().splitlines() if q.strip() and not q.startswith("#")]
    key = hashlib.sha256("\0".join(texts + ["--"] + queries).encode()).hexdigest()[:16]
    cached = CACHE / "ann" / f"real-{key}.npz"
    if cached.is_file():
        data = np.load(cached)
        return data["chunks"], data["queries"]
    from ingest.embed.onnx_backend import OnnxEmbedder

    embedder = OnnxEmbedder()  # fp32: the torch model's vectors to 1e-6, faster
    chunks, query_vectors = embedder.embed(texts), embedder.embed(queries)
    cached.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cached, chunks=chunks, queries=query_vectors)
    return chunks, query_vectors


def synthetic(real: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` unit vectors drawn around the real ones (see the module docstring); cached."""
    path = CACHE / "ann" / f"synthetic-{n}-{seed}-{_key(real)}.npy"
    if path.is_file():
        return np.load(path, mmap_mode="r")
    rng = np.random.default_rng(seed)
    sims = real @ real.T
    np.fill_diagonal(sims, -np.inf)
    neighbours = np.argsort(-sims, axis=1)[:, :10]
    centred = real - real.mean(axis=0)
    eigvals, eigvecs = np.linalg.eigh(centred.T @ centred / len(real))
    shape = (eigvecs * np.sqrt(np.clip(eigvals, 0, None))).T.astype(np.float32)  # z @ shape ~ N(0, C)
    out = np.lib.format.open_memmap(path.with_suffix(".tmp.npy"), mode="w+", dtype=np.float32, shape=(n, real.shape[1]))
    for first in range(0, n, 100_000):
        m = min(100_000, n - first)
        base = rng.integers(0, len(real), m)
        towards = neighbours[base, rng.integers(0, 10, m)]
        t = rng.uniform(0, 0.5, (m, 1)).astype(np.float32)
        noise = NOISE * (rng.standard_normal((m, real.shape[1]), dtype=np.float32) @ shape)
        v = (1 - t) * real[base] + t * real[towards] + noise
        out[first : first + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    out.flush()
    del out
    os.replace(path.with_suffix(".tmp.npy"), path)
    return np.load(path, mmap_mode="r")


def exact_top10(base: np.ndarray, queries: np.ndarray, key: str) -> np.ndarray:
    import faiss

    path = CACHE / "ann" / f"truth-{key}-{len(queries)}.npy"
    if path.is_file():
        return np.load(path)
    flat = faiss.IndexFlatIP(base.shape[1])
    for first in range(0, len(base), 100_000):
        flat.add(np.ascontiguousarray(base[first : first + 100_000]))
    _, ids = flat.search(np.ascontiguousarray(queries), 10)
    np.save(path, ids)
    return ids


def _describe(real, base, queries, truth) -> None:
    real_sims = real @ real.T
    np.fill_diagonal(real_sims, -1)
    real_nn = np.median(real_sims.max(axis=1))
    query_nn = np.median([float(queries[i] @ base[truth[i, 0]]) for i in range(len(queries))])
    tenth = np.median([float(queries[i] @ base[truth[i, 9]]) for i in range(len(queries))])
    report(f"ann_{len(base)}_data", {"real_vectors": len(real), "real_nn_cosine_median": round(float(real_nn), 3),
                                      "query_top1_cosine_median": round(float(query_nn), 3),
                                      "query_top10_cosine_median": round(float(tenth), 3)},
           f"  {len(base):,} vectors from {len(real)} real ones; median cosine of a real chunk to its nearest "
           f"real neighbour {real_nn:.3f}; of a query to its 1st / 10th exact neighbour {query_nn:.3f} / {tenth:.3f}")


def candidates(base: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> list[dict]:
    import faiss

    from ingest.store.faiss_index import nlist_for, training_sample

    n, dim = base.shape
    nlist = nlist_for(n)
    rows = []

    started = time.perf_counter()
    flat = faiss.IndexFlatIP(dim)
    flat.add(np.ascontiguousarray(base))
    rows.append(_measure("Flat", "", flat, time.perf_counter() - started, queries[:200], truth[:200]))
    del flat

    sample = training_sample(base, faiss.index_factory(dim, f"IVF{nlist},Flat", faiss.METRIC_INNER_PRODUCT))
    centroids, kmeans_seconds = None, 0.0
    for coding in [c for c in ("SQ8", "Flat", "PQ48") if c not in SKIP]:
        started = time.perf_counter()
        index = faiss.index_factory(dim, f"IVF{nlist},{coding}", faiss.METRIC_INNER_PRODUCT)
        ivf = faiss.extract_index_ivf(index)
        if centroids is not None:
            ivf.quantizer.add(centroids)  # train() then skips k-means and trains the encoder only
        # PQ codebooks (48 k-means of 256 centroids) took 10 minutes on 41k vectors: trained
        # on PQ_TRAIN of them, which its recall (far below the others') does not hinge on.
        index.train(sample[:: max(1, len(sample) // PQ_TRAIN)] if coding.startswith("PQ") else sample)
        if centroids is None:
            kmeans_seconds = time.perf_counter() - started
            centroids = ivf.quantizer.reconstruct_n(0, nlist)
        for first in range(0, n, 65_536):
            index.add_with_ids(np.ascontiguousarray(base[first : first + 65_536]),
                               np.arange(first, min(n, first + 65_536), dtype=np.int64))
        seconds = time.perf_counter() - started + (kmeans_seconds if coding != "SQ8" else 0.0)
        for nprobe in NPROBES:
            ivf.nprobe = nprobe
            rows.append(_measure(f"IVF{nlist},{coding}", f"nprobe={nprobe}", index, seconds, queries, truth))
        del index

    if "HNSW" in SKIP:
        return rows
    started = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
    for first in range(0, n, 65_536):
        hnsw.add(np.ascontiguousarray(base[first : first + 65_536]))
    seconds = time.perf_counter() - started
    for ef in HNSW_EF:
        hnsw.hnsw.efSearch = ef
        rows.append(_measure("HNSW32", f"efSearch={ef}", hnsw, seconds, queries, truth))
    return rows


def _measure(factory: str, params: str, index, build_seconds: float, queries: np.ndarray, truth: np.ndarray) -> dict:
    import faiss

    size_mb = faiss.serialize_index(index).nbytes / 2**20
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    latencies, found = [], np.empty((len(queries), 10), dtype=np.int64)
    for i in range(len(queries)):
        q = np.ascontiguousarray(queries[i : i + 1])
        started = time.perf_counter()
        _, ids = index.search(q, 10)
        latencies.append(time.perf_counter() - started)
        found[i] = ids[0]
    faiss.omp_set_num_threads(threads)
    recall = np.mean([len(set(found[i]) & set(truth[i])) / 10 for i in range(len(queries))])
    latencies.sort()
    row = {
        "factory": factory,
        "params": params,
        "build_s": round(build_seconds, 1),
        "size_mb": round(size_mb, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 2),
        "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2),
        "recall_at_10": round(float(recall), 4),
    }
    _print_row(row)
    return row


def _print_row(r: dict) -> None:
    print(f"    {r['factory']:18s} {r['params']:14s} {r['build_s']:7.1f} {r['size_mb']:8.1f} "
          f"{r['p50_ms']:7.2f} {r['p99_ms']:7.2f} {r['recall_at_10']:7.4f}", flush=True)


def incremental(base: np.ndarray, queries: np.ndarray, n: int) -> None:
    """Five changed documents of 44 chunks in an index of ``n``: the shard of their new segment
    (a copy of the trained template) against building the whole index anew."""
    import faiss

    from ingest.store.faiss_index import add_vectors, build_ann, plan_index

    plan = plan_index(n)
    started = time.perf_counter()
    index, params, _ = build_ann(base, plan)
    full_seconds = time.perf_counter() - started
    fresh = synthetic_like(base, 5 * 44, seed=4)
    template = faiss.clone_index(index)
    template.reset()  # the trained, empty template every shard copies
    started = time.perf_counter()
    shard = faiss.clone_index(template)
    shard = shard if faiss.try_extract_index_ivf(shard) is not None else faiss.IndexIDMap2(shard)
    add_vectors(shard, fresh, np.arange(n, n + len(fresh), dtype=np.int64))
    update_seconds = time.perf_counter() - started
    report(f"ann_{n}_incremental", {"factory": params.factory, "update_s": round(update_seconds, 3),
                                     "full_build_s": round(full_seconds, 1),
                                     "ratio": round(update_seconds / full_seconds, 5)},
           f"  reindex of 5 changed documents in {params.factory} ({n:,} vectors): the new segment's shard "
           f"{update_seconds:.3f} s against {full_seconds:.1f} s for a full build ({update_seconds / full_seconds:.3%})")


def synthetic_like(base: np.ndarray, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = np.asarray(base[rng.integers(0, len(base), m)])
    v = picks + 0.3 * rng.standard_normal(picks.shape, dtype=np.float32) / np.sqrt(base.shape[1])
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


if __name__ == "__main__":
    main()
