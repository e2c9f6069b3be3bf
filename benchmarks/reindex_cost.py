"""What a one-file reindex and a first citation cost as the corpus grows (issue 25's table).

The shared corpus (or sample_corpus/) copied N times with edits (``scaling.edited_copies``), built
in full; then one HTML file of one copy gains a paragraph and the index is built again
incrementally, in a fresh process: its seconds, the bytes it wrote (files new or changed under
the index folder) and its peak memory. Then, in another fresh process, the first resolve of a
quote on one PDF (``reader_cost``), and search latency (p50 of 20 queries, dense and lexical).
Builds embed with the hashing embedder, without OCR or office layout, so that the index's size is
the only thing that changes.

``python -m benchmarks.reindex_cost [COPIES ...]`` (default: 1 4 16; BENCH_REINDEX_COPIES=1,4,16,64).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.corpus import ROOT
from benchmarks.reader_cost import _first_resolve, _quote
from benchmarks.scaling import corpus_root, edited_copies

_BUILD = """
import index.cli  # Arrow's memory pool, as the command sets it
import json, re, sys
from pathlib import Path
from benchmarks.embedders import HashingEmbedder
from ingest.build import BuildSettings, build_index
from schemas.records import OcrMode, OcrSettings
report = build_index(sys.argv[1], sys.argv[2], BuildSettings(ocr=OcrSettings(OcrMode.OFF), office_layout=False),
                     embedder=HashingEmbedder(dim=384))
peak = int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
print(json.dumps({"seconds": report.seconds, "peak_mb": peak, "chunks": report.chunks, "changed": report.changed,
                  "embedded": report.chunks_embedded, "lexical_s": report.lexical_seconds, "ann_s": report.ann_seconds,
                  "segments": report.segments, "merged": report.merged}))
"""

_SEARCH = """
import json, statistics, sys, time
from benchmarks.embedders import HashingEmbedder
import index
idx = index.open(sys.argv[1], embedder=HashingEmbedder(dim=384))
queries = [line.strip() for line in open(sys.argv[2] if sys.argv[2:] else "benchmarks/queries.txt") if line.strip()][:20]
out = {}
for mode in ("dense", "lexical"):
    idx.search(queries[0], k=10, mode=mode)  # the first loads what the mode needs
    times = []
    for q in queries:
        started = time.perf_counter()
        idx.search(q, k=10, mode=mode)
        times.append(time.perf_counter() - started)
    out[mode] = statistics.median(times) * 1000
print(json.dumps(out))
"""


def _run(script: str, *args) -> dict:
    run = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    if run.returncode:
        raise RuntimeError(run.stderr[-2000:])
    return json.loads(run.stdout.strip().splitlines()[-1])


def _files(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p): (s.st_ino, s.st_mtime_ns, s.st_size) for p in folder.rglob("*") if p.is_file() for s in [p.stat()]}


def _edit_one_html(corpus: Path) -> str:
    page = sorted(corpus.rglob("*.html"))[0]
    html = page.read_text(encoding="utf-8", errors="surrogateescape")
    paragraph = "<p>A paragraph added for the reindex benchmark: audit exports now run nightly.</p>"
    at = html.lower().rfind("</body>")
    page.write_text(html[:at] + paragraph + html[at:] if at >= 0 else html + paragraph, encoding="utf-8",
                    errors="surrogateescape")
    return str(page.relative_to(corpus))


def run(copies: list[int] | None = None) -> dict:
    copies = copies or [int(c) for c in os.environ.get("BENCH_REINDEX_COPIES", "1,4,16").split(",")]
    results: dict = {}
    work = Path(tempfile.mkdtemp(prefix="spanindex-reindex-"))
    try:
        for n in copies:
            corpus = edited_copies(corpus_root(), work / f"corpus{n}", n)
            index_dir = work / f"index{n}"
            full = _run(_BUILD, corpus, index_dir)
            edited = _edit_one_html(corpus / "copy00")
            before = _files(index_dir)
            reindex = _run(_BUILD, corpus, index_dir)
            after = _files(index_dir)
            written = sum(size for path, (ino, mtime, size) in after.items() if before.get(path) != (ino, mtime, size))
            chunk_id, quote = _quote(index_dir)
            resolve = _first_resolve(index_dir, chunk_id, quote, "groups")
            search = _run(_SEARCH, index_dir)
            results[n] = {"chunks": full["chunks"], "full_build_s": full["seconds"], "reindex": reindex,
                          "written_mb": written / 1e6, "resolve": resolve, "search_p50_ms": search}
            print(f"  {n} cop{'y' if n == 1 else 'ies'}, {full['chunks']:,} chunks (full build {full['seconds']:.1f} s): "
                  f"one-file reindex ({edited}) {reindex['seconds']:.2f} s, {written / 1e6:.1f} MB written, "
                  f"peak {reindex['peak_mb']:.0f} MB (lexical {reindex['lexical_s']:.2f} s, vectors {reindex['ann_s']:.2f} s); "
                  f"first resolve {resolve['seconds']:.3f} s, reader peak {resolve['peak_mb']:.0f} MB; "
                  f"search p50 dense {search['dense']:.1f} ms, lexical {search['lexical']:.1f} ms")
            shutil.rmtree(corpus, ignore_errors=True)
            shutil.rmtree(index_dir, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(results) > 1:
        first, last = results[min(results)], results[max(results)]
        print(f"  {max(results)} copies against {min(results)}: reindex time x{last['reindex']['seconds'] / first['reindex']['seconds']:.2f}, "
              f"written x{last['written_mb'] / max(first['written_mb'], 1e-9):.2f}, "
              f"reindex peak x{last['reindex']['peak_mb'] / first['reindex']['peak_mb']:.2f}, "
              f"first resolve x{last['resolve']['seconds'] / first['resolve']['seconds']:.2f}, "
              f"reader peak x{last['resolve']['peak_mb'] / first['resolve']['peak_mb']:.2f}, "
              f"search p50 dense x{last['search_p50_ms']['dense'] / first['search_p50_ms']['dense']:.2f}, "
              f"lexical x{last['search_p50_ms']['lexical'] / first['search_p50_ms']['lexical']:.2f}")
    return results


if __name__ == "__main__":
    print("== a one-file reindex and the first citation, by corpus size")
    print(json.dumps(run([int(a) for a in sys.argv[1:]] or None), indent=1))
