"""A build's memory from 1x to 10x the corpus, and how well parsing hides behind embedding.

Memory: the shared corpus (or sample_corpus/) built once as it is and once as ten edited
copies, each build in a fresh process set up as the `spanindex` command sets up its own,
reporting the peak resident memory (VmHWM) of the build process and of the largest parsing
worker. The copies are edited so that their chunks differ
from each other (an in-build dedup would otherwise skip embedding them): every paragraph of an
HTML, Markdown or text file and four lines on every PDF page carry the copy's number. By default
the builds embed with benchmarks' hashing embedder, so that ten copies build in a few minutes;
the model's own memory is a constant on top, measured alone (BENCH_MEMORY_MODEL=1 builds with
the default backend instead).

Large documents: a build of a 50 MB one-line HTML page and a 30 MB one-line text file, its peak
memory summed over the build process and its workers (sampled from /proc every 50 ms), beside
each process's own peak. BENCH_BASELINE=DIR also builds with the checkout in DIR (another
commit, e.g. `git worktree add DIR main`), in the same run, for a before and after.

Overlap: a full build of the corpus with each backend against embedding the same chunks alone
with it: the closer to 1, the better the parse workers hide behind the model. Both load the
model before the clock starts, made as a local build makes it (``embedder_for``).

`python -m benchmarks.scaling [memory|large|overlap]`
"""

from __future__ import annotations

import json
import os
import random
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


# Each build runs in a fresh process set up as the `spanindex` command sets up its own: importing
# index.cli first chooses Arrow's memory pool before pyarrow is imported.
_BUILD_ONE = """
import index.cli
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
    """The embedder a benchmark build uses: ``hashing`` (no model), or a backend's, made as a
    local build makes it (so that embedding alone runs the model as the build runs it: ONNX
    Runtime's threads not spinning beside the parse workers)."""
    if backend == "hashing":
        from benchmarks.embedders import HashingEmbedder

        return HashingEmbedder(dim=384)
    from ingest.embed.model import resolve_model
    from ingest.run.executors import LocalExecutor
    from schemas.embedding import EmbedBackend

    with LocalExecutor().embedding(resolve_model(), None, EmbedBackend(backend)) as embedder:
        return embedder


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


# --------------------------------------------------------------------------- large documents

MIB = 1 << 20
_WORDS = "invoice refund overage webhook plan growth tier limit quota export archive ledger".split()


def one_line_html(size: int, seed: int = 7) -> bytes:
    """About ``size`` bytes of HTML text on one line: paragraphs of words with inline tags and an
    entity (a run of the source map each): about 25,000 runs and 0.9 million characters of text a
    megabyte."""
    rng = random.Random(seed)
    parts, total, i = ["<!DOCTYPE html><html><head><title>One line</title></head><body>"], 0, 0
    while total < size:
        w = [rng.choice(_WORDS) for _ in range(40)]
        part = (f"<p>Section {i}: {' '.join(w[:12])} <b>{w[12]}</b> {' '.join(w[13:25])} &amp; "
                f"<a href='#s{i}'>{w[25]}</a> {' '.join(w[26:])}.</p>")
        parts.append(part)
        total, i = total + len(part), i + 1
    return ("".join(parts) + "</body></html>").encode()


def one_line_text(size: int, seed: int = 8) -> str:
    """About ``size`` characters of sentences on one line (no line break at all)."""
    rng = random.Random(seed)
    sentences, total = [], 0
    while total < size:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(20)).capitalize() + ". "
        sentences.append(sentence)
        total += len(sentence)
    return "".join(sentences).rstrip()


_BUILD_LARGE = """
import index.cli
import json, sys
from benchmarks.embedders import HashingEmbedder
from ingest.build import BuildSettings, build_index
r = build_index(sys.argv[1], sys.argv[2], BuildSettings(), embedder=HashingEmbedder(dim=384))
print(json.dumps({"chunks": r.chunks, "by_status": dict(r.by_status)}))
"""


def _tree_rss_kb(pid: int) -> dict[int, int]:
    """VmRSS of ``pid`` and of every process below it, by pid."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    rss, todo = {}, [pid]
    while todo:
        p = todo.pop()
        try:
            found = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{p}/status").read_text())
        except OSError:
            continue
        if found:
            rss[p] = int(found.group(1))
        todo.extend(children.get(p, []))
    return rss


def build_peak_memory(checkout: Path, corpus: Path, index: Path) -> dict:
    """A build of ``corpus`` with the code of ``checkout`` in a fresh process: peak memory of the
    process tree (summed), of the build process, and of its largest other process."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _BUILD_LARGE, str(corpus), str(index)], cwd=checkout, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_kb, driver_kb, worker_kb = 0, 0, 0
    while proc.poll() is None:
        rss = _tree_rss_kb(proc.pid)
        peak_kb = max(peak_kb, sum(rss.values()))
        driver_kb = max(driver_kb, rss.get(proc.pid, 0))
        worker_kb = max([worker_kb, *(kb for p, kb in rss.items() if p != proc.pid)])
        time.sleep(0.05)
    out, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"the build with {checkout} failed:\n{err[-3000:]}")
    built = json.loads(out.strip().splitlines()[-1])
    return {"peak_mb": round(peak_kb / 1024), "driver_mb": round(driver_kb / 1024), "worker_mb": round(worker_kb / 1024),
            "seconds": round(time.perf_counter() - started, 1), "chunks": built["chunks"]}


def bench_large_documents(work: Path) -> None:
    corpus = work / "large-corpus"
    corpus.mkdir()
    (corpus / "page.html").write_bytes(one_line_html(50 * MIB))
    (corpus / "line.txt").write_text(one_line_text(30 * MIB))
    print("== build memory: a 50 MB one-line HTML page and a 30 MB one-line text file (hashing embedder)")
    checkouts = [("this", ROOT)]
    if os.environ.get("BENCH_BASELINE"):
        checkouts.insert(0, ("baseline", Path(os.environ["BENCH_BASELINE"]).resolve()))
    for name, checkout in checkouts:
        r = build_peak_memory(checkout, corpus, work / f"large-index-{name}")
        report(f"large_documents_memory_{name}", r,
               f"  {name} ({checkout}): peak {r['peak_mb']} MB, build process and workers together "
               f"(build process {r['driver_mb']} MB, largest worker {r['worker_mb']} MB); "
               f"{r['chunks']} chunks, {r['seconds']:.0f} s")


# --------------------------------------------------------------------------- overlap


_WORKER_CPU = """
import json, resource, sys, time
from pathlib import Path
from ingest.build import BuildSettings
from ingest.corpus import discover
from ingest.embed.model import resolve_model
from ingest.formats.pdf.tesseract import resolve_ocr
from ingest.formats.parse import media_type_of
from ingest.run.worker import FileJob, WorkerSettings, init_worker, process_file
settings = BuildSettings()
init_worker(WorkerSettings(model=resolve_model(), chunker=settings.chunker, index_root=None,
                           max_file_bytes=settings.max_file_mb * 1024 * 1024, ocr=resolve_ocr(settings.ocr)[0]))
jobs = [FileJob(f.path, f.doc_id, media_type_of(f.doc_id), None) for f in discover(Path(sys.argv[1])).files]
started = time.process_time()
for job in jobs:
    process_file(job)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu_s": time.process_time() - started + children.ru_utime + children.ru_stime}))
"""


def _worker_cpu_seconds(corpus: Path) -> float:
    """CPU seconds of the workers' share of a build (parse, OCR by Tesseract, chunk), one
    process doing every file as a build's worker does it."""
    run = subprocess.run([sys.executable, "-c", _WORKER_CPU, str(corpus)], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(run.stdout.strip().splitlines()[-1])["cpu_s"]


def bench_overlap(work: Path, backends: list[str]) -> None:
    """Build time against embedding alone, and the bound the machine sets on that ratio: while
    the model keeps every core busy, the workers' CPU time P comes on top of the model's E, so
    a build takes at least (P + E) / cores, and build / embedding alone >= 1 + P / E."""
    from benchmarks.corpus import chunk_texts

    corpus = corpus_root()
    texts = chunk_texts()
    cores = os.cpu_count() or 1
    print(f"== parse/embed overlap: full build of {corpus.name} / embedding its {len(texts)} chunks alone")
    worker_cpu = _worker_cpu_seconds(corpus)
    print(f"  the workers' share (parse, OCR, chunk), one process: {worker_cpu:.1f} CPU s")
    for backend in backends:
        index = work / f"overlap-{backend}"
        build = _build(corpus, index, backend)
        embedder = embedder_for(backend)
        embedder.embed(texts[:8])  # warm
        started, cpu_started = time.perf_counter(), time.process_time()
        for first in range(0, len(texts), 256):  # the build's batch size
            embedder.embed(texts[first : first + 256])
        alone, embed_cpu = time.perf_counter() - started, time.process_time() - cpu_started
        del embedder
        ratio = build["seconds"] / alone
        floor = max(1.0, (worker_cpu + embed_cpu) / (cores * alone))
        report(f"overlap_{backend}", {"build_s": round(build["seconds"], 1), "embed_only_s": round(alone, 1),
                                      "ratio": round(ratio, 3), "embed_cpu_s": round(embed_cpu, 1),
                                      "worker_cpu_s": round(worker_cpu, 1), "floor": round(floor, 3)},
               f"  {backend:9s} build {build['seconds']:.1f} s / embedding alone {alone:.1f} s = {ratio:.2f} (target <= 1.1); "
               f"embedding alone used {embed_cpu:.1f} CPU s on {cores} cores: no build can be under "
               f"{floor:.2f} here (1 + workers' CPU / the model's, where the model fills every core)")
        shutil.rmtree(index, ignore_errors=True)


def main() -> None:
    what = sys.argv[1:] or ["memory", "overlap"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="spanindex-scaling-"))
    try:
        if "memory" in what:
            bench_memory(work)
        if "large" in what or "memory" in what:
            bench_large_documents(work)
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
