"""A Ray build's driver as the corpus grows: its peak memory, with writer actors writing the segments.

The shared corpus (or sample_corpus/) copied N times with edits (``scaling.edited_copies``),
built on a local Ray instance in a fresh driver with the hashing embedder (embedding would
hide nothing here: it runs in an actor either way) and OCR off. Reported per N: the driver's
peak RSS, the build's wall time, its chunks and segments. The driver takes only summaries,
so its peak should not follow N.

    python -m benchmarks.ray_driver 1 8
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.reindex_cost import _run
from benchmarks.scaling import corpus_root, edited_copies

_BUILD = """
import index.cli  # Arrow's memory pool, as the command sets it
import json, re, sys
from pathlib import Path
from benchmarks.embedders import HashingEmbedder
import doubles, ray
ray.cloudpickle.register_pickle_by_value(doubles)  # Ray's workers cannot import tests/
from ingest.build import BuildSettings, build_index
from ingest.run.ray_driver import RayExecutor, RaySettings
from schemas.records import OcrMode, OcrSettings
def status_kb(field):
    return int(re.search(field + r":\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1))
peaks = {"RssAnon": 0, "RssShmem": 0}
def sample():  # the driver's own heap apart from the object store's shared pages it maps
    import time
    while True:
        for field in peaks:
            peaks[field] = max(peaks[field], status_kb(field))
        time.sleep(0.02)
if __name__ == "__main__":
    import threading
    threading.Thread(target=sample, daemon=True).start()
    import os
    per_segment = int(os.environ.get("BENCH_RAY_SEGMENT_DOCUMENTS", "10000"))  # files per segment a writer writes
    with RayExecutor(RaySettings(num_cpus=2, segment_documents=per_segment)) as executor:
        report = build_index(sys.argv[1], sys.argv[2], BuildSettings(ocr=OcrSettings(OcrMode.OFF), office_layout=False),
                             embedder=HashingEmbedder(dim=384), executor=executor)
    peak = int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
    print(json.dumps({"seconds": report.seconds, "driver_peak_mb": peak, "chunks": report.chunks,
                      "segments": report.segments, "anon_peak_mb": peaks["RssAnon"] / 1024,
                      "shmem_peak_mb": peaks["RssShmem"] / 1024}))
"""


def run(copies: list[int] | None = None) -> list[dict]:
    rows = []
    for n in copies or [1, 8]:
        work = Path(tempfile.mkdtemp(prefix="spanindex-ray-driver-"))
        try:
            corpus = edited_copies(corpus_root(), work / "corpus", n)
            row = {"copies": n, **_run(_BUILD, corpus, work / "index")}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{n:>3} copies: {row['chunks']:>7,} chunks, {row['segments']} segment(s), build {row['seconds']:.1f} s, "
              f"driver peak {row['driver_peak_mb']:.0f} MB (its heap {row['anon_peak_mb']:.0f} MB, "
              f"object store pages {row['shmem_peak_mb']:.0f} MB)", flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    run([int(a) for a in sys.argv[1:]] or None)
