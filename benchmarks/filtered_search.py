"""Filtered search (issue 28): what a filter costs, and that it returns k hits however selective.

The corpus: ``n`` generated Markdown notes (``benchmarks.many_docs``), a tenth of them with a
sidecar ``NAME.meta.json`` saying ``{"team": "legal"}``, built twice with the hashing embedder
(384-d): once with Flat, once with an inverted file (IVF256,Flat: nprobe 16 of 256 lists). For
each, filters keeping one document, a tenth (``meta['team'] = 'legal'``), and nine tenths: the
first search's cost (the filter compiled and evaluated over the documents table, its vector ids
found), then the median of 20 queries (k=10) in dense and lexical mode against the unfiltered
median, and the smallest number of hits any query returned.

``python -m benchmarks.filtered_search [N]`` (default: BENCH_FILTER_DOCS, else 20000).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.many_docs import _WORDS, _note

FILTERS = {
    "one document": "doc_id = 'notes/00/n00042.md'",
    "a tenth (meta)": "meta['team'] = 'legal'",
    "nine tenths": "meta['team'] IS NULL",  # (NOT (meta['team'] = 'legal') keeps none of them: NULL)
}


def _corpus(root: Path, n: int) -> None:
    rng = random.Random(28)
    for i in range(n):
        folder = root / "notes" / f"{i // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i:05d}.md").write_text(_note(rng, i), encoding="utf-8")
        if i % 10 == 0:
            (folder / f"n{i:05d}.md.meta.json").write_text('{"team": "legal"}', encoding="utf-8")


def _measure(index_dir: Path) -> dict:
    import index
    from benchmarks.embedders import HashingEmbedder

    rng = random.Random(7)
    queries = [" ".join(rng.sample(_WORDS, 3)) for _ in range(20)]
    out: dict = {}
    for mode in ("dense", "lexical"):
        idx = index.open(index_dir, embedder=HashingEmbedder(dim=384))
        idx.search(queries[0], k=10, mode=mode)  # the first loads what the mode needs
        unfiltered = []
        for q in queries:
            started = time.perf_counter()
            idx.search(q, k=10, mode=mode)
            unfiltered.append(time.perf_counter() - started)
        row = {"unfiltered_ms": round(statistics.median(unfiltered) * 1000, 2)}
        for name, where in FILTERS.items():
            started = time.perf_counter()
            idx.search(queries[0], k=10, mode=mode, where=where)
            first = time.perf_counter() - started
            times, fewest = [], 10
            for q in queries:
                started = time.perf_counter()
                hits = idx.search(q, k=10, mode=mode, where=where)
                times.append(time.perf_counter() - started)
                fewest = min(fewest, len(hits))
            row[name] = {"first_ms": round(first * 1000, 1), "p50_ms": round(statistics.median(times) * 1000, 2),
                         "matching_chunks": int(len(idx.allowed_vector_ids(where))), "fewest_hits": fewest}
        out[mode] = row
    return out


def run(n: int) -> dict:
    from benchmarks.embedders import HashingEmbedder
    from ingest.build import BuildSettings, build_index
    from schemas.records import OcrMode, OcrSettings

    work = Path(tempfile.mkdtemp(prefix="spanindex-filter-"))
    results: dict = {"documents": n}
    try:
        _corpus(work / "corpus", n)
        for factory in ("Flat", "IVF256,Flat"):
            out = work / factory.replace(",", "-")
            started = time.perf_counter()
            report = build_index(work / "corpus", out, BuildSettings(faiss_factory=factory, ocr=OcrSettings(OcrMode.OFF),
                                                                     office_layout=False),
                                 embedder=HashingEmbedder(dim=384))
            results[factory] = {"build_s": round(time.perf_counter() - started, 1), "chunks": report.chunks,
                                **_measure(out)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    size = int(sys.argv[1]) if sys.argv[1:] else int(os.environ.get("BENCH_FILTER_DOCS", "20000"))
    figures = run(size)
    print(json.dumps(figures, indent=2))
    Path("build").mkdir(exist_ok=True)
    Path("build/bench-filtered-search.json").write_text(json.dumps(figures, indent=2))
