"""Language identification of a corpus's chunks: py3langid's own ``classify``, text by text, against
``ingest.text.language``'s batched walk of the same model (which must give the same bits), and a
full build's time against another checkout's.

Identification: the chunk texts of the shared corpus (or sample_corpus/) built once, each
classified by py3langid alone, then all of them by ``_Identifier.classify``; the fastest of three
runs each, and whether every (language, probability) pair is equal.

Full build: with ``BENCH_BASELINE=DIR`` (another checkout, e.g. ``git worktree add DIR bc0e7b9``),
builds of the corpus alternated between DIR and this checkout, ``BENCH_BUILD_ROUNDS`` (5) each, in
fresh processes; hashing embedder, no OCR or office layout; the median of each and their ratio.

``python -m benchmarks.language``
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpus import ROOT
from benchmarks.scaling import corpus_root

_BUILD = """
import index.cli  # Arrow's memory pool, as the command sets it
import json, sys
from benchmarks.embedders import HashingEmbedder
from ingest.build import BuildSettings, build_index
from schemas.records import OcrMode, OcrSettings
report = build_index(sys.argv[1], sys.argv[2], BuildSettings(ocr=OcrSettings(OcrMode.OFF), office_layout=False),
                     embedder=HashingEmbedder(dim=384))
print(json.dumps({"seconds": report.seconds, "chunks": report.chunks}))
"""


def _build(checkout: Path, corpus: Path, index_dir: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", _BUILD, str(corpus), str(index_dir)], cwd=checkout,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(checkout)})
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_identification(work: Path) -> dict:
    from index.reader import open_index
    from ingest.text import language

    index_dir = work / "index"
    _build(ROOT, corpus_root(), index_dir)
    texts = open_index(index_dir).generation.table("chunks", ["text"]).column(0).to_pylist()
    reference, ours = language._packaged_model(), language._identifier()
    one_by_one, batched = [], []
    for _ in range(3):
        started = time.perf_counter()
        expected = [reference.classify(text) for text in texts]
        one_by_one.append(time.perf_counter() - started)
        started = time.perf_counter()
        found = ours.classify(texts)
        batched.append(time.perf_counter() - started)
    result = {"chunks": len(texts), "characters": sum(map(len, texts)), "py3langid_s": min(one_by_one),
              "batched_s": min(batched), "same_bits": found == expected}
    print(f"  {len(texts):,} chunks ({result['characters']:,} characters): py3langid one by one "
          f"{result['py3langid_s']:.3f} s, batched {result['batched_s']:.3f} s "
          f"(x{result['py3langid_s'] / result['batched_s']:.1f}); the same languages and probabilities: {result['same_bits']}")
    return result


def bench_full_build(work: Path) -> dict | None:
    baseline = os.environ.get("BENCH_BASELINE")
    if not baseline:
        print("  full build against a baseline: set BENCH_BASELINE=DIR (another checkout) to measure")
        return None
    rounds = int(os.environ.get("BENCH_BUILD_ROUNDS", "5"))
    seconds: dict[str, list[float]] = {"baseline": [], "this": []}
    for round_ in range(rounds):
        for name, checkout in (("baseline", Path(baseline).resolve()), ("this", ROOT)):
            index_dir = work / f"build-{name}-{round_}"
            seconds[name].append(_build(checkout, corpus_root(), index_dir)["seconds"])
            shutil.rmtree(index_dir, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    print(f"  full build, {rounds} alternated rounds: {medians['this']:.2f} s against the baseline's "
          f"{medians['baseline']:.2f} s (x{medians['this'] / medians['baseline']:.2f}); "
          f"this {sorted(round(s, 2) for s in seconds['this'])}, baseline {sorted(round(s, 2) for s in seconds['baseline'])}")
    return {"seconds": seconds, "ratio": medians["this"] / medians["baseline"]}


def run() -> dict:
    work = Path(tempfile.mkdtemp(prefix="spanindex-language-"))
    try:
        return {"identification": bench_identification(work), "full_build": bench_full_build(work)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print("== language identification, and a full build against a baseline checkout")
    print(json.dumps(run(), indent=1))
