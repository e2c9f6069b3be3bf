"""A build's memory from 1x to 10x the corpus, and how well parsing hides behind embedding.

Memory: the shared corpus (or sample_corpus/) built once as it is and once as ten edited
copies, each build in a fresh process, reporting the peak resident memory (VmHWM) of the build
process and of the largest parsing worker. The copies are edited so that their chunks differ
from each other (an in-build dedup would otherwise skip embedding them): every paragraph of an
HTML, Markdown or text file and four lines on every PDF page carry the copy's number. By default
the builds embed with benchmarks' hashing embedder, so that ten copies build in a few minutes;
the model's own memory is a constant on top, measured alone (BENCH_MEMORY_MODEL=1 builds with
the default backend instead).

Overlap: a full build of the corpus with each backend against embedding the same chunks alone
with it: the closer to 1, the better the parse workers hide behind the model.

`python -m benchmarks.scaling [memory|overlap]`
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpus import ROOT, SAMPLE, SHARED

RESULTS: dict[str, object] = {}
COPIES = 10


def report(key: str, value, text: str) -> None:
    RESULTS[key] = value
    print(text)


def corpus_root() -> Path:
    return SHARED if SHARED.is_dir() else SAMPLE


# --------------------------------------------------------------------------- memory


def edited_copies(corpus: Path, out: Path, copies: int) -> Path:
    """``copies`` copies of ``corpus`` under ``out``, each edited throughout (see the docstring)."""
    for k in range(copies):
        target = out / f"copy{k:02d}"
        shutil.copytree(corpus, target, ignore=shutil.ignore_patterns(".*", "SOURCES.tsv"))
        for path in sorted(target.rglob("*")):
            if path.is_file():
                _edit(path, k)
    return out


def _edit(path: Path, k: int) -> None:
    mark = f"copy {k} "
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm", ".xhtml"):
        data = path.read_bytes()
        tag = rb"(<(?:p|li|td|th|h[1-6]|div|pre|dd|dt|blockquote)\b[^>]*>)"
        path.write_bytes(re.sub(tag, lambda m: m.group(1) + mark.encode(), data, flags=re.IGNORECASE))
    elif suffix in (".md", ".markdown", ".txt", ".text"):
        text = path.read_bytes()
        path.write_bytes(re.sub(rb"(?m)^(?=\S)", mark.encode(), text))
    elif suffix == ".pdf":
        _edit_pdf(path, mark)


def _edit_pdf(path: Path, mark: str) -> None:
    import pymupdf

    try:
        doc = pymupdf.open(path)
        if doc.needs_pass or not doc.page_count:
            return
        for page in doc:
            height = page.rect.height
            for y in (0.05, 0.3, 0.55, 0.8):
                page.insert_text((20, y * height), f"{mark}page {page.number}", fontsize=6)
        data = doc.tobytes(garbage=0)
        doc.close()
        path.write_bytes(data)
    except Exception:  # noqa: BLE001 - a damaged PDF stays as it is (its parse fails the same way)
        return


_BUILD_ONE = """
import json, re, sys, time
from pathlib import Path
from benchmarks.scaling import embedder_for
from ingest.build import BuildSettings, build_index
def peak_kb():
    return int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1))
embedder = embedder_for(sys.argv[3])
loaded_kb = peak_kb()
started = time.perf_counter()
r = build_index(sys.argv[1], sys.argv[2], BuildSettings(), embedder=embedder)
print(json.dumps({"seconds": time.perf_counter() - started, "chunks": r.chunks, "embedded": r.chunks_embedded,
                  "reused": r.chunks_reused, "driver_mb": peak_kb() / 1024, "loaded_mb": loaded_kb / 1024,
                  "worker_mb": r.worker_peak_rss_mb, "embed_seconds": r.embed_seconds}))
"""


def embedder_for(backend: str):
    """The embedder a benchmark build uses: ``hashing`` (no model), or a backend's."""
    if backend == "hashing":
        from benchmarks.embedders import HashingEmbedder

        return HashingEmbedder(dim=384)
    if backend == "torch":
        from ingest.embed import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()
    from ingest.embed_onnx import OnnxEmbedder
    from schemas.embedding import EmbedBackend

    return OnnxEmbedder(backend=EmbedBackend(backend))


def _build(corpus: Path, index: Path, backend: str) -> dict:
    run = subprocess.run([sys.executable, "-c", _BUILD_ONE, str(corpus), str(index), backend], cwd=ROOT,
                         capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(run.stdout.strip().splitlines()[-1])


def bench_memory(work: Path) -> None:
    backend = os.environ.get("BENCH_MEMORY_BACKEND") or ("onnx" if os.environ.get("BENCH_MEMORY_MODEL") else "hashing")
    corpus = corpus_root()
    print(f"== build memory, 1x and {COPIES}x {corpus.name} (embedder: {backend})")
    one = edited_copies(corpus, work / "x1", 1)
    ten = edited_copies(corpus, work / f"x{COPIES}", COPIES)
    small = _build(one, work / "index1", backend)
    large = _build(ten, work / f"index{COPIES}", backend)
    for name, r in (("1x", small), (f"{COPIES}x", large)):
        report(f"memory_{name}", {k: round(v, 1) for k, v in r.items()},
               f"  {name}: {r['chunks']} chunks ({r['reused']} sharing a text with another), build {r['seconds']:.1f} s; "
               f"peak RSS build process {r['driver_mb']:.0f} MB ({r['loaded_mb']:.0f} MB with the embedder loaded, "
               f"before the build), largest worker {r['worker_mb']:.0f} MB")
    driver = large["driver_mb"] / small["driver_mb"]
    worker = large["worker_mb"] / small["worker_mb"] if small["worker_mb"] else float("nan")
    report("memory_10x_over_1x", {"driver": round(driver, 3), "worker": round(worker, 3)},
           f"  {COPIES}x / 1x peak memory: build process {driver:.2f}, largest worker {worker:.2f} (target within 0.8-1.2)")


# --------------------------------------------------------------------------- overlap


def bench_overlap(work: Path, backends: list[str]) -> None:
    from benchmarks.corpus import chunk_texts

    corpus = corpus_root()
    texts = chunk_texts()
    print(f"== parse/embed overlap: full build of {corpus.name} / embedding its {len(texts)} chunks alone")
    for backend in backends:
        index = work / f"overlap-{backend}"
        build = _build(corpus, index, backend)
        embedder = embedder_for(backend)
        embedder.embed(texts[:8])  # warm
        started = time.perf_counter()
        for first in range(0, len(texts), 256):  # the build's batch size
            embedder.embed(texts[first : first + 256])
        alone = time.perf_counter() - started
        del embedder
        ratio = build["seconds"] / alone
        report(f"overlap_{backend}", {"build_s": round(build["seconds"], 1), "embed_only_s": round(alone, 1),
                                      "ratio": round(ratio, 3)},
               f"  {backend:9s} build {build['seconds']:.1f} s / embedding alone {alone:.1f} s = {ratio:.2f} (target <= 1.1)")
        shutil.rmtree(index, ignore_errors=True)


def main() -> None:
    what = sys.argv[1:] or ["memory", "overlap"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="spanindex-scaling-"))
    try:
        if "memory" in what:
            bench_memory(work)
        if "overlap" in what:
            backends = os.environ.get("BENCH_OVERLAP_BACKENDS", "torch,onnx,onnx-int8").split(",")
            bench_overlap(work, backends)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = ROOT / "build" / "bench-scaling.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(RESULTS, indent=2) + "\n")


if __name__ == "__main__":
    main()
