"""Search p50 at 1 and N copies of the corpus, on indexes as a growing corpus leaves them (issue 25).

The shared corpus (or sample_corpus/) copied 1 and N times with edits (``scaling.edited_copies``),
built in full, then reindexed three times, each after one HTML file of a copy gains a paragraph:
several segments, some documents masked, as a corpus updated in batches leaves its index. Then, in
``BENCH_SEARCH_PROCESSES`` fresh processes alternating between the two indexes, the p50 of the 20
benchmark queries (k=10) for dense search, lexical search and the lexical top k alone
(``LexicalIndex.top``, without reading the hits), each the median of the rounds after the first
(the first reads what the mode loads). Hashing embedder, no OCR, so that the index's size is the
only thing that differs.

``python -m benchmarks.search_p50 [N]`` (default: BENCH_SEARCH_COPIES or 64).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.reindex_cost import _BUILD, _edit_one_html, _run
from benchmarks.scaling import corpus_root, edited_copies

REBUILDS = 3
ROUNDS = 3  # per process: the first is left out

_SEARCH = """
import json, statistics, sys, time
from benchmarks.embedders import HashingEmbedder
import index
idx = index.open(sys.argv[1], embedder=HashingEmbedder(dim=384))
queries = [line.strip() for line in open("benchmarks/queries.txt") if line.strip()][:20]
lexical = idx.lexical()
runs = {"dense": lambda q: idx.search(q, k=10, mode="dense"), "lexical": lambda q: idx.search(q, k=10, mode="lexical"),
        "lexical_top": lambda q: lexical.top(q, 10)}
out = {}
for name, run in runs.items():
    medians = []
    for _ in range(%d):
        times = []
        for q in queries:
            started = time.perf_counter()
            run(q)
            times.append(time.perf_counter() - started)
        medians.append(statistics.median(times) * 1000)
    out[name] = medians[1:]
print(json.dumps(out))
""" % ROUNDS


def run(copies: int | None = None) -> dict:
    copies = copies or int(os.environ.get("BENCH_SEARCH_COPIES", "64"))
    processes = int(os.environ.get("BENCH_SEARCH_PROCESSES", "5"))
    work = Path(tempfile.mkdtemp(prefix="spanindex-search-"))
    try:
        indexes = {}
        for n in (1, copies):
            corpus = edited_copies(corpus_root(), work / f"corpus{n}", n)
            indexes[n] = work / f"index{n}"
            built = _run(_BUILD, corpus, indexes[n])
            for rebuild in range(REBUILDS):
                _edit_one_html(sorted(corpus.iterdir())[rebuild % n])
                built = _run(_BUILD, corpus, indexes[n])
            print(f"  {n} cop{'y' if n == 1 else 'ies'}: {built['chunks']:,} chunks, {built['segments']} segments after "
                  f"{REBUILDS} reindexes")
        times: dict[int, dict[str, list[float]]] = {n: {} for n in indexes}
        for _ in range(processes):
            for n, index_dir in indexes.items():
                for name, values in _run(_SEARCH, index_dir).items():
                    times[n].setdefault(name, []).extend(values)
        p50 = {n: {name: statistics.median(values) for name, values in by_mode.items()} for n, by_mode in times.items()}
        ratios = {name: p50[copies][name] / p50[1][name] for name in p50[1]}
        for name in p50[1]:
            print(f"  {name}: {p50[1][name]:.3f} ms at 1 copy, {p50[copies][name]:.3f} ms at {copies}: x{ratios[name]:.2f}")
        return {"p50_ms": p50, "ratios": ratios}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print("== search p50 by corpus size, on reindexed indexes")
    print(json.dumps(run(int(sys.argv[1]) if sys.argv[1:] else None), indent=1))
