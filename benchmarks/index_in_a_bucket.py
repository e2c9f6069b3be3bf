"""What an index in a bucket costs (README, "Where the index lives"): requests and bytes, counted at the server.

The corpus (a folder) is built into ``s3://index-bucket/<name>`` on moto's S3 server on localhost
(tests/s3_server.py, with its log of every request, the bytes it sent and received), in full, again
with nothing changed, and again with one document changed (and once more from an empty copy, as on
another machine); beside each, the same build into a folder.
Then a reader opens the index from the bucket with an empty cache (its first open) and again (a
second open, nothing changed); a new reader searches (dense, lexical); a new reader resolves a quote
of one PDF, in this index and in one of ``COPIES`` copies of the corpus (the cost of a citation
follows its document, not the corpus). The hashing embedder, without OCR or office layout: the figures are
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

COPIES = 8  # the corpus copied this many times: a cold resolve's cost must not grow with it


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
        # the last step builds on another machine: its copy of the index is empty
        for step in ("full", "no change", "one file changed", "one file changed, from an empty copy"):
            if step.startswith("one file changed"):
                changed.write_bytes(changed.read_bytes() + b"\n\nA paragraph added for the benchmark.\n")
            row = {}
            started = time.perf_counter()
            build_index(folder, work / "index-folder", settings, embedder=HashingEmbedder(dim=384))
            row["folder_s"] = round(time.perf_counter() - started, 2)
            before = len(s3.log.requests)
            started = time.perf_counter()
            cache = work / ("other-build-cache" if step.endswith("empty copy") else "build-cache")
            build_index(folder, url, settings, embedder=HashingEmbedder(dim=384), index_cache=cache)
            row["bucket_s"] = round(time.perf_counter() - started, 2)
            row.update(_traffic(s3.log.requests[before:]))
            builds[step] = row
        readers = {}
        for step in ("first open", "second open"):
            before = len(s3.log.requests)
            started = time.perf_counter()
            index.open(url, embedder=HashingEmbedder(dim=384), cache=work / "reader-cache")
            readers[step] = {"seconds": round(time.perf_counter() - started, 2), **_traffic(s3.log.requests[before:])}
        readers["first search"] = _first_search(url, work / "search-cache", s3)
        cited = {"1 copy": _cold_resolve(work / "index-folder", url, work / "resolve-cache", s3)}
        for n in range(COPIES):  # the same document cited in an index of COPIES copies of the corpus
            shutil.copytree(corpus, work / "copies" / f"copy-{n:02d}")
        build_index(work / "copies", url + "-copies", settings, embedder=HashingEmbedder(dim=384),
                    index_cache=work / "copies-cache")
        cited[f"{COPIES} copies"] = _cold_resolve(work / "copies-cache", url + "-copies", work / "resolve-copies-cache",
                                                  s3, prefix="copy-00/")
        return {**folder_size(folder), "live_generation_bytes": folder_size(work / "build-cache")["bytes"], "builds": builds,
                "reader": readers, "cold resolve of one PDF quote": cited}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _first_search(url: str, cache: Path, s3) -> dict:
    """A new reader's first dense and lexical searches: what they fetch (vector shards and postings whole,
    their hits' row groups)."""
    import index
    from benchmarks.embedders import HashingEmbedder

    before = len(s3.log.requests)
    started = time.perf_counter()
    reader = index.open(url, embedder=HashingEmbedder(dim=384), cache=cache)
    for mode in ("dense", "lexical"):
        reader.search("price per call", k=10, mode=mode)
    return {"seconds": round(time.perf_counter() - started, 2), **_traffic(s3.log.requests[before:])}


def _cold_resolve(folder: Path, url: str, cache: Path, s3, prefix: str = "") -> dict:
    """A new reader (empty cache) resolving a quote of the first PDF under ``prefix``: its requests and
    bytes, the open's included, beside the size of the live index."""
    import index
    from benchmarks.embedders import HashingEmbedder
    from index.citations.verify import resolve

    local = index.open(folder, embedder=HashingEmbedder(dim=384))
    doc = next(d for d in local.documents() if d.doc_id.startswith(prefix) and d.doc_id.endswith(".pdf")
               and local.chunks_of(d.doc_id))
    chunk = local.chunks_of(doc.doc_id)[0]
    quote = chunk.text[:80]
    before = len(s3.log.requests)
    started = time.perf_counter()
    reader = index.open(url, embedder=HashingEmbedder(dim=384), cache=cache)
    citation = resolve(reader, chunk.chunk_id, quote)
    took = time.perf_counter() - started
    assert citation == resolve(local, chunk.chunk_id, quote), "the bucket's citation differs from the folder's"
    return {"doc_id": doc.doc_id, "seconds": round(took, 3), "index_bytes": folder_size(folder)["bytes"],
            **_traffic(s3.log.requests[before:])}


def main() -> None:
    print(json.dumps(run(corpora_named(sys.argv[1:])), indent=2))


if __name__ == "__main__":
    main()
