"""What a corpus in a bucket costs against the same files on disk (README, "Where the corpus lives").

The corpus is uploaded to moto's S3 server on localhost (tests/s3_server.py, the tests' server,
with its log of every request and the bytes it sent), then built from the folder and from the
bucket, each in full, again with nothing changed, and again with one document changed. For each
build: seconds, and for the bucket the requests the server answered (listings, object reads) and
the bytes it sent. The hashing embedder, without OCR or office layout: the figures are of
reading, not of the model. localhost has no latency: a real store adds ~10-50 ms per request.

``python -m benchmarks.corpus_in_a_bucket [CORPUS ...]`` (default: sample_corpus/ and, when
present, the shared corpus).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpus import ROOT, corpora_named, folder_size


def run(corpora: list[Path]) -> dict:
    return on_s3_server(corpora, _measure)


def on_s3_server(corpora: list[Path], measure, buckets: tuple[str, ...] = ()) -> dict:
    """corpus name -> ``measure(corpus, s3)``, every corpus against one moto server (the tests' own,
    ``tests/s3_server.py``) started here with ``buckets`` created."""
    import pytest

    sys.path.insert(0, str(ROOT / "tests"))
    from s3_server import running_s3_server

    results = {}
    with pytest.MonkeyPatch.context() as env, running_s3_server(env) as s3:
        for bucket in buckets:
            s3.client().create_bucket(Bucket=bucket)
        for corpus in corpora:
            results[corpus.name] = measure(corpus, s3)
    return results


def _measure(corpus: Path, s3) -> dict:
    from benchmarks.embedders import HashingEmbedder
    from ingest.build import BuildSettings, build_index
    from schemas.records import OcrMode, OcrSettings

    settings = BuildSettings(ocr=OcrSettings(OcrMode.OFF), office_layout=False)
    work = Path(tempfile.mkdtemp(prefix="spanindex-bucket-bench-"))
    try:
        folder = shutil.copytree(corpus, work / "corpus")
        url = s3.upload(folder, corpus.name)
        changed = next(p for pattern in ("*.md", "*.txt", "*.html") for p in sorted(folder.rglob(pattern)) if p.stat().st_size)
        key = changed.relative_to(folder).as_posix()
        # warm-up, unmeasured: imports, the tokenizer and the page cache, paid by whichever build came first
        build_index(folder, work / "warm-up", settings, embedder=HashingEmbedder(dim=384))
        figures: dict[str, dict] = {}
        for step in ("full", "no change", "one file changed"):
            if step == "one file changed":
                edited = changed.read_bytes() + b"\n\nA paragraph added for the benchmark.\n"
                changed.write_bytes(edited)
                s3.client().put_object(Bucket="corpus-bucket", Key=f"{corpus.name}/{key}", Body=edited)
            row = {}
            for where, source in (("folder", folder), ("bucket", url)):
                before = len(s3.log.requests)
                started = time.perf_counter()
                report = build_index(source, work / f"index-{where}", settings, embedder=HashingEmbedder(dim=384))
                row[f"{where}_s"] = round(time.perf_counter() - started, 2)
                row[f"{where}_read"] = report.n_files - report.unchanged
                if where == "bucket":
                    requests = s3.log.requests[before:]
                    reads = s3.gets(before)
                    row["bucket_requests"] = len(requests)
                    row["bucket_object_reads"] = len(reads)
                    row["bucket_bytes_sent"] = sum(r.bytes_sent for r in requests)
            figures[step] = row
        return {**folder_size(folder), "builds": figures}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    print(json.dumps(run(corpora_named(sys.argv[1:])), indent=2))


if __name__ == "__main__":
    main()
