"""What a citation costs a reader that has just opened the index: the first resolve of a quote on
one PDF, in a fresh process, with the corpus copied 1 and N times (``scaling.edited_copies``).

Measured in one run, both ways: reading the cited document's row groups alone (what readers do),
and reading the tables it touches whole first (what they did before: the whole documents,
chunks, pdf_chars and pdf_pages tables). Builds use the hashing embedder, no OCR and no office
layout, so that the index's size is the only thing that changes.

``python -m benchmarks.reader_cost [COPIES ...]`` (default: 1 8).
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
from benchmarks.scaling import corpus_root, edited_copies

# A fresh process: open, resolve the first sentence of the first PDF's first chunk, report.
_FIRST_RESOLVE = """
import index.cli
import json, re, sys, time
from pathlib import Path
from benchmarks.embedders import HashingEmbedder
import index
from index.citations.verify import resolve
def peak_mb():
    return int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
chunk_id, quote, whole = sys.argv[2], sys.argv[3], sys.argv[4] == "whole"
loaded = peak_mb()
started = time.perf_counter()
idx = index.open(sys.argv[1], embedder=HashingEmbedder(dim=384))
if whole:  # as readers did: the tables a PDF citation touches, read whole
    for table in ("documents", "chunks", "pdf_chars", "pdf_pages", "hidden_text"):
        idx.generation.table(table)
citation = resolve(idx, chunk_id, quote)
seconds = time.perf_counter() - started
assert citation.status.verified and citation.rects, citation
print(json.dumps({"seconds": seconds, "peak_mb": peak_mb(), "loaded_mb": loaded,
                  "row_groups_read": idx.generation.row_groups_read, "whole_tables": len(idx.generation.whole_tables)}))
"""


def _quote(index_dir: Path) -> tuple[str, str]:
    """A chunk of a PDF and a sentence of it that occurs once there."""
    import re

    import index
    from benchmarks.embedders import HashingEmbedder

    idx = index.open(index_dir, embedder=HashingEmbedder(dim=384))
    for doc in sorted(idx.documents(), key=lambda d: d.doc_id):
        if doc.media_type.value != "application/pdf" or doc.status.value != "ok":
            continue
        for chunk in idx.chunks_of(doc.doc_id):
            found = re.search(r"[A-Z][a-z][^.\n]{30,90}\.", chunk.text)
            if found and chunk.text.count(found.group(0)) == 1:
                return chunk.chunk_id, found.group(0)
    raise RuntimeError("no PDF sentence to quote")


def _first_resolve(index_dir: Path, chunk_id: str, quote: str, how: str) -> dict:
    run = subprocess.run([sys.executable, "-c", _FIRST_RESOLVE, str(index_dir), chunk_id, quote, how], cwd=ROOT,
                         capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(run.stdout.strip().splitlines()[-1])


def run(copies: list[int] | None = None) -> dict:
    from benchmarks.embedders import HashingEmbedder
    from ingest.build import BuildSettings, build_index
    from schemas.records import OcrMode, OcrSettings

    copies = copies or [1, 8]
    results: dict = {}
    work = Path(tempfile.mkdtemp(prefix="spanindex-reader-"))
    try:
        for n in copies:
            corpus = edited_copies(corpus_root(), work / f"corpus{n}", n)
            index_dir = work / f"index{n}"
            report = build_index(corpus, index_dir, BuildSettings(ocr=OcrSettings(OcrMode.OFF), office_layout=False),
                                 embedder=HashingEmbedder(dim=384))
            chunk_id, quote = _quote(index_dir)
            by_groups = _first_resolve(index_dir, chunk_id, quote, "groups")
            whole = _first_resolve(index_dir, chunk_id, quote, "whole")
            results[n] = {"chunks": report.chunks, "row_groups": by_groups, "whole": whole}
            print(f"  {n} cop{'y' if n == 1 else 'ies'}, {report.chunks:,} chunks: first resolve (cold) "
                  f"{by_groups['seconds']:.3f} s, peak {by_groups['peak_mb']:.0f} MB, "
                  f"{by_groups['row_groups_read']} row groups read; reading its tables whole {whole['seconds']:.3f} s, "
                  f"peak {whole['peak_mb']:.0f} MB")
            shutil.rmtree(corpus, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    print("== the first resolve of a PDF quote in a fresh reader, by corpus size")
    print(json.dumps(run([int(a) for a in sys.argv[1:]] or None), indent=1))
