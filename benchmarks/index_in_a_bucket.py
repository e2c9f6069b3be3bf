"""What an index in a bucket costs (README, "Where the index lives"): requests and bytes, counted at the server.

The corpus (a folder) is built into ``s3://index-bucket/<name>`` on moto's S3 server on localhost
(tests/s3_server.py, with its log of every request, the bytes it sent and received), in full, again
with nothing changed, and again with one document changed; beside each, the same build into a folder.
Then a reader opens the index from the bucket into an empty local copy (its first open) and again
(a second open, nothing changed). The hashing embedder, without OCR or office layout: the figures are
of moving files, not of the model. localhost has no latency: a real store adds ~10-50 ms per request.

``python -m benchmarks.index_in_a_bucket [CORPUS ...]`` (default: sample_corpus/ and, when present,
the shared corpus).
"""

from __future__ import annotations

import collections
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpus import corpora_named, folder_size
from benchmarks.corpus_in_a_bucket import on_s3_server


def run(corpora: list[Path]) -> dict:
    return on_s3_server(corpora, _measure, buckets=("index-bucket",))


def _traffic(requests) -> dict:
    """Requests by kind, and the bytes that went each way."""
    kinds = collections.Counter(
        "list" if "list-type" in r.query else "delete" if "delete" in r.query else r.method.lower() for r in requests)
    return {"requests": len(requests), **dict(sorted(kinds.items())),
            "bytes_uploaded": sum(r.bytes_received for r in requests if r.method == "PUT"),
            "bytes_fetched": sum(r.bytes_sent for r in requests if r.method == "GET" and "list-type" not in r.query),
            "bytes_listed": sum(r.bytes_sent for r in requests if "list-type" in r.query)}


def _measure(corpus: Path, s3) -> dict:
    import index
    from benchmarks.embedders import HashingEmbedder
    from ingest.build import BuildSettings, build_index
    from schemas.records import OcrMode, OcrSettings

    settings = BuildSettings(ocr=OcrSettings(OcrMode.OFF), office_layout=False)
    work = Path(tempfile.mkdtemp(prefix="spanindex-index-bucket-bench-"))
    url = f"s3://index-bucket/{corpus.name}"
    try:
        folder = shutil.copytree(corpus, work / "corpus")
        changed = next(p for pattern in ("*.md", "*.txt", "*.html") for p in sorted(folder.rglob(pattern)) if p.stat().st_size)
        build_index(folder, work / "warm-up", settings, embedder=HashingEmbedder(dim=384))  # imports, page cache
        builds: dict[str, dict] = {}
        for step in ("full", "no change", "one file changed"):
            if step == "one file changed":
                changed.write_bytes(changed.read_bytes() + b"\n\nA paragraph added for the benchmark.\n")
            row = {}
            started = time.perf_counter()
            build_index(folder, work / "index-folder", settings, embedder=HashingEmbedder(dim=384))
            row["folder_s"] = round(time.perf_counter() - started, 2)
            before = len(s3.log.requests)
            started = time.perf_counter()
            build_index(folder, url, settings, embedder=HashingEmbedder(dim=384), index_cache=work / "build-cache")
            row["bucket_s"] = round(time.perf_counter() - started, 2)
            row.update(_traffic(s3.log.requests[before:]))
            builds[step] = row
        readers = {}
        for step in ("first open", "second open"):
            before = len(s3.log.requests)
            started = time.perf_counter()
            index.open(url, embedder=HashingEmbedder(dim=384), cache=work / "reader-cache")
            readers[step] = {"seconds": round(time.perf_counter() - started, 2), **_traffic(s3.log.requests[before:])}
        index_bytes = sum(p.stat().st_size for p in (work / "reader-cache").rglob("*") if p.is_file())
        return {**folder_size(folder), "live_generation_bytes": index_bytes, "builds": builds, "reader": readers}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    print(json.dumps(run(corpora_named(sys.argv[1:])), indent=2))


if __name__ == "__main__":
    main()
