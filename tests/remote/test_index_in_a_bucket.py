"""The index in a bucket (``--index s3://bucket/prefix``): built in a local copy and published with a
conditional write of CURRENT; read from a local copy brought up to the bucket's live generation. The
same rows and answers as the same corpus built into a folder; a rebuild uploads only its new objects;
of two builds racing from one CURRENT exactly one publishes; a failed upload leaves CURRENT as it was.
Against moto's S3 server on localhost (conftest.py), with the tests' hashing embedder; requests are
counted at the server."""

from __future__ import annotations

import collections
import shutil
import threading
from pathlib import Path

import pytest

import index
from index.citations.verify import resolve
from index.fsck import fsck
from index.reader import local_index
import ingest.store.ranged as ranged
from ingest.store.write import ROW_GROUP_ROWS
from ingest.build import BuildSettings, build_index
from ingest.store.bucket import IndexBucket, default_cache, references
from schemas.errors import IndexFormatError, IndexWriteError, PublishRaceError
from schemas.layout import IndexPaths, read_current

from conftest import SAMPLE_CORPUS, chunk_with, spanindex
from doubles import HashingEmbedder
from races import race
from same_generation import assert_same_generation

INDEX = "s3://index-bucket/idx"
QUERIES = ["overage price per API call", "refund policy", "getting started"]


@pytest.fixture
def bucket(s3, tmp_path, monkeypatch):
    """An empty bucket for the index; the default local copies under the test's own cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    s3.client().create_bucket(Bucket="index-bucket")
    return s3


def _build(corpus, index_dir, cache=None, progress=None, **settings):
    return build_index(corpus, index_dir, BuildSettings(workers=1, **settings), embedder=HashingEmbedder(),
                       index_cache=cache, progress=progress)


def _two_generations(tmp_path, cache, step: str) -> tuple[Path, object, object]:
    """The docs of the sample corpus built into the bucket, then again with its getting-started page
    replaced by ``step``: (the corpus, the two builds' reports)."""
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    first = _build(corpus, INDEX, cache)
    (corpus / "getting-started.md").write_text(f"# Getting started\n\n{step}\n")
    return corpus, first, _build(corpus, INDEX, cache)


def _puts(s3, since: int) -> list[str]:
    """The keys (relative to the index) of the objects written since request number ``since``."""
    return sorted(r.path.removeprefix("/index-bucket/idx/") for r in s3.log.requests[since:] if r.method == "PUT")


def _current(s3) -> str:
    return s3.client().get_object(Bucket="index-bucket", Key="idx/CURRENT")["Body"].read().decode().strip()


def _keys(s3) -> set[str]:
    pages = s3.client().get_paginator("list_objects_v2").paginate(Bucket="index-bucket", Prefix="idx/")
    return {o["Key"].removeprefix("idx/") for page in pages for o in page.get("Contents", [])}


def test_an_index_built_into_a_bucket_searches_and_resolves_as_the_same_index_in_a_folder(bucket, tmp_path):
    report = _build(SAMPLE_CORPUS, INDEX, tmp_path / "build-cache")
    _build(SAMPLE_CORPUS, tmp_path / "local")
    assert _current(bucket) == report.generation == read_current(IndexPaths(tmp_path / "build-cache"))

    # a whole copy (what fsck, compaction and SQL read): the same generation, each file fetched once
    before = len(bucket.log.requests)
    copy = local_index(INDEX, cache=tmp_path / "copy")
    fetched = [r for r in bucket.log.requests[before:] if r.method == "GET"]
    assert_same_generation(copy, tmp_path / "local", atol=0)
    wanted = references(IndexPaths(copy), [report.generation])
    assert sorted(r.path.removeprefix("/index-bucket/idx/") for r in fetched if "list-type" not in r.query) == \
        sorted(["CURRENT", *(k for k in _keys(bucket) if wanted(k))])

    # a reader: CURRENT, the live generation's manifest and deletions, no listing; then what it reads
    before = len(bucket.log.requests)
    from_bucket = index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "reader")
    assert sorted(r.path.removeprefix("/index-bucket/idx/") for r in bucket.log.requests[before:]) == \
        ["CURRENT", f"generations/{report.generation}/deleted.parquet", f"generations/{report.generation}/manifest.json"]
    local = index.open(tmp_path / "local", embedder=HashingEmbedder())
    before = len(bucket.log.requests)
    for query in QUERIES:
        for mode in ("dense", "lexical", "hybrid"):
            assert [(h.chunk_id, h.score, h.text) for h in from_bucket.search(query, k=5, mode=mode)] == \
                [(h.chunk_id, h.score, h.text) for h in local.search(query, k=5, mode=mode)]
    # the hits' rows come from their row groups of chunks.parquet: the hits file is never fetched
    searched = {r.path.rsplit("/", 1)[-1] for r in bucket.log.requests[before:]}
    assert "chunks.parquet" in searched and "chunks.arrow" not in searched, searched
    for doc_id, quote in [("pricing/rate-card.pdf", "usage above the allowance is billed"),
                          ("docs/getting-started.md", "Getting started")]:
        chunk = chunk_with(local, doc_id, quote)
        assert resolve(from_bucket, chunk, quote) == resolve(local, chunk, quote)
    assert from_bucket.documents() == local.documents()
    assert fsck(INDEX) == []

    before = len(bucket.log.requests)
    index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "reader")  # a second open: nothing changed
    assert [r.path for r in bucket.log.requests[before:]] == ["/index-bucket/idx/CURRENT"]


def test_a_rebuild_uploads_only_its_new_objects_and_removes_what_no_kept_generation_reads(bucket, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    cache = IndexPaths(tmp_path / "build-cache")
    first = _build(corpus, INDEX, cache.root)
    uploaded = set(_keys(bucket))

    before = len(bucket.log.requests)
    same = _build(corpus, INDEX, cache.root)
    # what a build always writes: its claim of the generation's name, its two files, then CURRENT
    assert _puts(bucket, before) == sorted(["CURRENT", f"generations/{same.generation}/claim.json",
                                            f"generations/{same.generation}/deleted.parquet",
                                            f"generations/{same.generation}/manifest.json"])
    assert not [r for r in bucket.log.requests[before:] if r.method == "GET" and "list-type" not in r.query
                and not r.path.endswith("/CURRENT")]  # the local copy was up to date: nothing fetched

    (corpus / "docs" / "long-policy.md").write_text("# Changed\n\nA paragraph that was not there before.\n")
    local_before = {p.relative_to(cache.root).as_posix() for p in cache.root.rglob("*") if p.is_file()}
    before = len(bucket.log.requests)
    changed = _build(corpus, INDEX, cache.root)
    assert changed.changed == 1
    puts = _puts(bucket, before)
    local_after = {p.relative_to(cache.root).as_posix() for p in cache.root.rglob("*") if p.is_file()}
    assert puts == sorted({"CURRENT", f"generations/{changed.generation}/claim.json", *(local_after - local_before)}), \
        "exactly the build's new files, each once"
    assert not set(puts) & uploaded - {"CURRENT"}
    assert any(k.startswith("segments/") for k in puts) and any(k.startswith("texts/") for k in puts)

    # --keep 3 in the bucket as in the folder: generation 1 and what only it read are gone
    for _ in range(2):
        (corpus / "docs" / "long-policy.md").write_text(f"# Changed again\n\n{_} more.\n")
        last = _build(corpus, INDEX, cache.root)
    keys = _keys(bucket)
    assert sorted({k.split("/")[1] for k in keys if k.startswith("generations/")}) == \
        sorted(p.name for p in cache.generations.iterdir()) and f"generations/{first.generation}/manifest.json" not in keys
    kept = references(cache, sorted(p.name for p in cache.generations.iterdir()))
    assert {k for k in keys if not kept(k)} == {"CURRENT"}
    assert _current(bucket) == last.generation and fsck(INDEX) == []


def test_a_build_on_another_machine_reads_the_byte_ranges_it_needs_of_the_live_segments(bucket, tmp_path):
    """A build's copy holds the generations' manifests and deletions; of the segments it carries over
    it reads the columns and rows it needs, through its cache: a reindex of one changed document from
    an empty copy fetches a small part of the index, and builds what a folder builds."""
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    _build(corpus, INDEX, tmp_path / "first-machine")
    index_bytes = sum(_sizes(bucket).values())
    (corpus / "docs" / "long-policy.md").write_text("# Changed\n\nA paragraph that was not there before.\n")
    before = len(bucket.log.requests)
    again = _build(corpus, INDEX, tmp_path / "second-machine")
    fetched = sum(r.bytes_sent for r in bucket.log.requests[before:] if r.method == "GET")
    assert again.changed == 1 and again.unchanged == again.n_files - 1
    assert fetched < index_bytes / 10, (fetched, index_bytes)
    copy = tmp_path / "second-machine"
    assert not [p for p in copy.glob("segments/*/*") if not p.parent.name.startswith(again.generation)]
    _build(corpus, tmp_path / "local")
    assert_same_generation(local_index(INDEX, cache=tmp_path / "whole"), tmp_path / "local", atol=0, same_files=False)
    assert fsck(INDEX) == []


def _sizes(s3) -> dict[str, int]:
    listed = s3.client().list_objects_v2(Bucket="index-bucket", Prefix="idx/").get("Contents", [])
    return {o["Key"]: o["Size"] for o in listed}


def test_a_build_lists_generations_segments_and_shards_only_and_texts_go_by_name_or_with_a_compaction(bucket, tmp_path):
    """Texts and sources (one or more a document) are never listed by a build: it uploads those of the
    documents it wrote and removes those its retired generations alone held, by name; --keep-texts
    keeps them; a compaction lists everything and sweeps what no kept generation reads."""
    from urllib.parse import parse_qs

    from ingest.compact import compact_index

    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    page = corpus / "getting-started.md"
    first = _build(corpus, INDEX, tmp_path / "copy", keep_generations=1, keep_texts=True)
    first_text = f"texts/{_text_of(tmp_path / 'copy', first.generation, 'getting-started.md')}.txt"
    page.write_text("# Getting started\n\nVersion two.\n")
    before = len(bucket.log.requests)
    second = _build(corpus, INDEX, tmp_path / "copy", keep_generations=1, keep_texts=True)
    listed = [parse_qs(r.query)["prefix"][0] for r in bucket.log.requests[before:] if "list-type" in r.query]
    assert sorted(listed) == ["idx/ann/", "idx/generations/", "idx/segments/"]
    assert first_text in _keys(bucket)  # --keep-texts: generation 1 retired, its text kept
    second_text = f"texts/{_text_of(tmp_path / 'copy', second.generation, 'getting-started.md')}.txt"
    page.write_text("# Getting started\n\nVersion three.\n")
    _build(corpus, INDEX, tmp_path / "copy", keep_generations=1)
    keys = _keys(bucket)
    assert second_text not in keys and first_text in keys  # by name: the text of the generation retired now
    compact_index(INDEX, keep_generations=1, index_cache=tmp_path / "copy")
    keys = _keys(bucket)
    assert first_text not in keys  # the sweep
    copy = IndexPaths(tmp_path / "copy")
    kept = references(IndexBucket(INDEX, copy.root).paths, [read_current(copy)])
    assert {k for k in keys if not kept(k)} == {"CURRENT"} and fsck(INDEX) == []


def _text_of(copy: Path, generation: str, doc_id: str) -> str:
    from schemas.layout import version_hex
    from ingest.store.previous import PublishedGeneration

    documents = PublishedGeneration(IndexPaths(copy), generation).table("documents", ["doc_id", "doc_version"])
    return version_hex(documents.column("doc_version")[documents.column("doc_id").to_pylist().index(doc_id)].as_py())


@pytest.mark.hostile("two builds publishing to one index in a bucket from the same CURRENT", "CLI error")
def test_of_two_builds_racing_from_one_current_exactly_one_publishes(bucket, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    _build(corpus, INDEX, tmp_path / "a")
    _build(corpus, INDEX, tmp_path / "b")  # both copies at generation 2
    (corpus / "getting-started.md").write_text("# Getting started\n\nA new first step.\n")
    # the requests from the moment the winner has published on are the loser's
    lost, (winner, before) = race(lambda paused: _build(corpus, INDEX, tmp_path / "b", progress=paused),
                                  lambda: (_build(corpus, INDEX, tmp_path / "a"), len(bucket.log.requests)))
    assert isinstance(lost, PublishRaceError) and isinstance(lost, IndexWriteError)
    assert str(lost) == (f"{INDEX}: another build published first (this one started from generation 000002); "
                         "generation 000003 was not published")
    # the loser claimed 000003 first, so the winner built 000004; seeing CURRENT moved, the loser wrote nothing more
    assert _puts(bucket, before) == []
    assert _current(bucket) == winner.generation == "000004"
    assert read_current(IndexPaths(tmp_path / "b")) == "000002"  # the loser's copy: its generation not live
    assert fsck(INDEX) == []
    again = _build(corpus, INDEX, tmp_path / "b")  # the loser's next build starts from the winner's generation
    assert _current(bucket) == again.generation == "000005" and fsck(INDEX) == []
    assert not [k for k in _keys(bucket) if k.startswith("generations/000003/")]  # the loser's claim: removed


def test_a_conditional_current_refuses_a_stale_etag_and_a_second_first_build(bucket, tmp_path):
    first = _build(SAMPLE_CORPUS / "docs", INDEX, tmp_path / "a")
    copy = IndexBucket(INDEX, tmp_path / "a")
    started = copy.state()
    # another build publishes (a generation's name is never used twice: CURRENT's ETag changes with it)
    bucket.client().put_object(Bucket="index-bucket", Key="idx/CURRENT", Body=b"000002\n")
    with pytest.raises(PublishRaceError, match="another build published first"):
        copy.publish(first.generation, started)
    with pytest.raises(FileExistsError):  # and the conditional write itself, where CURRENT changes after that check
        copy._run(copy.objects.put("idx/CURRENT", b"000003\n", started.etag))
    assert _current(bucket) == "000002"
    empty = IndexBucket("s3://index-bucket/other", tmp_path / "o").state()
    assert empty.live is None and empty.etag is None
    bucket.client().put_object(Bucket="index-bucket", Key="other/CURRENT", Body=b"000007\n")
    with pytest.raises(PublishRaceError):  # If-None-Match: * refuses a CURRENT that appeared meanwhile
        IndexBucket("s3://index-bucket/other", tmp_path / "a").publish(first.generation, empty)
    assert bucket.client().get_object(Bucket="index-bucket", Key="other/CURRENT")["Body"].read() == b"000007\n"
    # CURRENT holds this build's generation, whose name it claimed: a retried publish whose first try landed
    landed = IndexBucket("s3://index-bucket/other", tmp_path / "a")
    uploaded = landed.state()
    landed.claim(first.generation, uploaded)
    bucket.client().put_object(Bucket="index-bucket", Key="other/CURRENT", Body=b"000001\n")
    before = len(bucket.log.requests)
    landed.publish(first.generation, uploaded)
    assert [r.method for r in bucket.log.requests[before:]] == ["GET"]
    # another build's claim of the name refuses this one before it writes anything
    with pytest.raises(PublishRaceError, match="another build is writing generation 000001"):
        IndexBucket("s3://index-bucket/other", tmp_path / "o").claim(first.generation, uploaded)


@pytest.mark.hostile("an index bucket that fails (HTTP 503 on every write) while a build uploads", "CLI error")
def test_a_build_whose_upload_fails_leaves_current_as_it_was_and_the_next_build_succeeds(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # botocore's retries, kept short
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    first = _build(corpus, INDEX, tmp_path / "cache")
    (corpus / "docs" / "long-policy.md").write_text("# Changed\n\nNew text.\n")
    bucket.log.failing, bucket.log.writes_before_failing = "writes", 3  # a few uploads land, then every write fails
    with pytest.raises(IndexWriteError) as raised:
        _build(corpus, INDEX, tmp_path / "cache")
    assert str(raised.value).startswith(f"cannot write the index {INDEX}: writing failed")
    assert str(raised.value).endswith(f"generation {first.generation} is still live") and "\n" not in str(raised.value)
    assert "spanindex-test-secret" not in str(raised.value)
    assert _current(bucket) == first.generation and read_current(IndexPaths(tmp_path / "cache")) == first.generation
    assert fsck(INDEX) == []
    debris = _keys(bucket)

    bucket.log.failing = ""
    second = _build(corpus, INDEX, tmp_path / "cache")
    assert second.generation > first.generation and _current(bucket) == second.generation
    keys = _keys(bucket)
    cache = IndexPaths(tmp_path / "cache")
    kept = references(cache, sorted(p.name for p in cache.generations.iterdir()))
    assert {k for k in keys if not kept(k)} == {"CURRENT"}  # the failed build's debris is gone
    assert debris - keys and fsck(INDEX) == []


@pytest.mark.hostile("an index URL naming a missing bucket, a prefix with no index, a store refusing the credentials "
                     "or failing (HTTP 503) past its retries", "CLI error")
def test_a_missing_bucket_or_index_or_wrong_credentials_is_one_line_naming_the_url(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # botocore's retries, kept short
    for url, says in [("s3://no-such-bucket/idx", "no such bucket or prefix"),
                      ("s3://index-bucket/nothing-here", "no index here")]:
        with pytest.raises(IndexFormatError, match=says) as raised:
            index.open(url, embedder=HashingEmbedder())
        assert str(raised.value).startswith(f"{url}: ") and "\n" not in str(raised.value)
    with pytest.raises(IndexWriteError, match="no such bucket or prefix") as raised:
        _build(SAMPLE_CORPUS / "docs", "s3://no-such-bucket/idx", tmp_path / "cache")
    assert str(raised.value).startswith("s3://no-such-bucket/idx: ")
    with pytest.raises(IndexFormatError, match=r"^memory://idx: an index in memory:// is not supported yet"):
        index.open("memory://idx", embedder=HashingEmbedder())
    with pytest.raises(IndexWriteError, match="credentials in the URL are not accepted") as raised:
        _build(SAMPLE_CORPUS / "docs", "s3://AKIDEXAMPLE:hunter2secret@index-bucket/idx", tmp_path / "cache")
    assert "hunter2secret" not in str(raised.value) and str(raised.value).startswith(f"{INDEX}: ")
    _build(SAMPLE_CORPUS / "docs", INDEX, tmp_path / "cache")
    bucket.log.failing = "all"  # 503 SlowDown on every request, past the retries
    try:
        with pytest.raises(IndexFormatError, match="reading failed") as raised:
            index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "r")
        assert str(raised.value).startswith(f"{INDEX}: ") and "\n" not in str(raised.value)
    finally:
        bucket.log.failing = ""
    bucket.require_credentials(True)
    for attempt in (lambda: index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "r"),
                    lambda: _build(SAMPLE_CORPUS / "docs", INDEX, tmp_path / "cache")):
        with pytest.raises((IndexFormatError, IndexWriteError), match="access denied") as raised:
            attempt()
        assert str(raised.value).startswith(f"{INDEX}: ") and "spanindex-test-secret" not in str(raised.value)


@pytest.mark.spawns  # the CLI in a subprocess, as a user runs it
def test_the_cli_builds_into_a_bucket_and_searches_resolves_and_checks_from_it(bucket, tmp_path):
    built = spanindex("build", SAMPLE_CORPUS / "docs", "--index", INDEX, "--index-cache", tmp_path / "cache",
                      "--workers", "1", "--quiet", test_embedder=True, timeout=300)
    assert built.returncode == 0, built.stderr
    local = spanindex("build", SAMPLE_CORPUS / "docs", "--index", tmp_path / "local", "--workers", "1", "--quiet",
                      test_embedder=True, timeout=300)
    assert local.returncode == 0, local.stderr
    quote = "from a new account to your first API call"
    chunk = chunk_with(index.open(tmp_path / "local", embedder=HashingEmbedder()), "getting-started.md", quote)
    for args in (["search", "{}", "getting started", "--json"], ["resolve", "{}", chunk, quote], ["fsck", "{}"]):
        from_bucket = spanindex(*[INDEX if a == "{}" else a for a in args], test_embedder=True, timeout=300)
        from_folder = spanindex(*[tmp_path / "local" if a == "{}" else a for a in args], test_embedder=True, timeout=300)
        assert from_bucket.returncode == from_folder.returncode == 0, from_bucket.stderr
        assert from_bucket.stdout.replace(INDEX, "X") == from_folder.stdout.replace(str(tmp_path / "local"), "X") != ""
    # --cache-mb bounds what a reader keeps, what an earlier reader left in the folder included
    cache = default_cache(INDEX) / "reader" / "cache"
    assert sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) > 40_000
    small = spanindex("search", INDEX, "getting started", "--cache-mb", "0.02", test_embedder=True, timeout=300)
    assert small.returncode == 0 and small.stdout.replace(INDEX, "X") == \
        spanindex("search", tmp_path / "local", "getting started", test_embedder=True, timeout=300).stdout.replace(
            str(tmp_path / "local"), "X")
    held = [p.stat().st_size for p in cache.rglob("*") if p.is_file()]
    assert held and sum(held) <= max(0.02 * 1024 * 1024, max(held))
    missing = spanindex("search", "s3://no-such-bucket/idx", "anything", test_embedder=True, timeout=120)
    assert missing.returncode not in (0, 1) and \
        missing.stderr.strip().splitlines() == ["spanindex: s3://no-such-bucket/idx: no such bucket or prefix"]


def test_a_file_of_a_generation_the_copy_never_published_is_fetched_again_though_its_size_matches(bucket, tmp_path):
    """A build killed in the copy (or one that lost a race) leaves files under a generation's name; the
    bucket's generation of that name is another build's. Same name and size is no proof there; nor is
    a reader's open of the same folder (it fetches no segment file into the copy)."""
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    _build(corpus, INDEX, tmp_path / "writer")
    local_index(INDEX, cache=tmp_path / "copy")  # the whole copy: generation 1
    (corpus / "getting-started.md").write_text("# Getting started\n\nA new first step.\n")
    second = _build(corpus, INDEX, tmp_path / "writer")
    debris = IndexPaths(tmp_path / "copy").segment(second.generation) / "segment.json"
    published = IndexPaths(tmp_path / "writer").segment(second.generation) / "segment.json"
    debris.parent.mkdir(parents=True)
    debris.write_bytes(b"x" * published.stat().st_size)
    reader = index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "copy")
    assert "A new first step." in reader.doc_text(reader.document("getting-started.md").doc_version)
    assert read_current(IndexPaths(tmp_path / "copy")) != second.generation  # the reader's CURRENT is its own
    local_index(INDEX, cache=tmp_path / "copy")
    assert debris.read_bytes() == published.read_bytes() and fsck(tmp_path / "copy") == []


def test_the_viewer_serves_an_index_in_a_bucket_and_its_sources_from_the_local_copy(bucket, tmp_path):
    from fastapi.testclient import TestClient

    from index.viewer.server.app import create_app

    _build(SAMPLE_CORPUS, INDEX, tmp_path / "build-cache")
    client = TestClient(create_app(INDEX, embedder=HashingEmbedder()), base_url="http://127.0.0.1")
    body = client.get("/api/search", params={"q": "overage per 1,000 API calls", "k": 3}).json()
    local = index.open(tmp_path / "build-cache", embedder=HashingEmbedder())
    assert [h["chunk_id"] for h in body["hits"]] == [h.chunk_id for h in local.search("overage per 1,000 API calls", k=3)]
    original = client.get("/documents/pricing/rate-card.pdf/file")
    assert original.status_code == 200 and original.content == (SAMPLE_CORPUS / "pricing" / "rate-card.pdf").read_bytes()


def test_live_tables_read_an_index_in_a_bucket(bucket, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    _build(SAMPLE_CORPUS / "docs", INDEX, tmp_path / "build-cache")
    documents = index.live_sql(INDEX, "documents")
    assert duckdb.sql(f"SELECT count(*) FROM ({documents})").fetchall() == [(3,)]


def test_compacting_an_index_in_a_bucket_publishes_one_segment_with_the_same_answers(bucket, tmp_path):
    from ingest.compact import compact_index

    _two_generations(tmp_path, tmp_path / "cache", "Step one of a new start.")
    reader = index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "reader")
    before = [(h.chunk_id, h.score) for h in reader.search("a new start", k=5)]
    assert len(reader.manifest.segments) > 1

    report = compact_index(INDEX, index_cache=tmp_path / "cache")
    assert _current(bucket) == report.generation and report.segments_after == 1
    compacted = index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "reader")
    assert len(compacted.manifest.segments) == 1 and fsck(INDEX) == []
    assert [h.chunk_id for h in compacted.search("a new start", k=5)] == [c for c, _ in before]
    cache = IndexPaths(tmp_path / "cache")
    kept = references(cache, sorted(p.name for p in cache.generations.iterdir()))
    assert {k for k in _keys(bucket) if not kept(k)} == {"CURRENT"}


def test_past_the_claim_an_object_holding_this_builds_bytes_is_taken_as_uploaded_and_other_bytes_are_a_lost_race(
        bucket, tmp_path):
    """A retried PutObject whose first try landed is refused (If-None-Match: *) on its own object."""
    first = _build(SAMPLE_CORPUS / "docs", INDEX, tmp_path / "a")
    segment_json = IndexPaths(tmp_path / "a").segment(first.generation) / "segment.json"
    for prefix, body, lands in [("same", segment_json.read_bytes(), True), ("other", b"{}", False)]:
        target = IndexBucket(f"s3://index-bucket/{prefix}", tmp_path / "a")
        started = target.state()  # listed before the object appears: it is uploaded, and refused
        bucket.client().put_object(Bucket="index-bucket", Key=f"{prefix}/segments/{first.generation}/segment.json",
                                   Body=body)
        if lands:
            target.publish(first.generation, started)
            assert fsck(f"s3://index-bucket/{prefix}") == []
        else:
            with pytest.raises(PublishRaceError):
                target.publish(first.generation, started)
            assert "other/CURRENT" not in {k for k in _keys_of(bucket, "other/")}


def _keys_of(s3, prefix: str) -> set[str]:
    return {o["Key"] for o in s3.client().list_objects_v2(Bucket="index-bucket", Prefix=prefix).get("Contents", [])}


def test_a_reader_of_a_bucket_follows_its_new_generations_with_one_request_while_nothing_changes(bucket, tmp_path,
                                                                                                 monkeypatch):
    from ingest.store.bucket import LocalCopy

    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # botocore's retries, kept short
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    first = _build(corpus, INDEX, tmp_path / "writer")
    monkeypatch.setattr(LocalCopy, "FOLLOW_EVERY_S", 0.0)
    idx = index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "reader")
    before = len(bucket.log.requests)
    with idx.request():
        assert idx.generation.name == first.generation
    assert [(r.method, r.path) for r in bucket.log.requests[before:]] == [("GET", "/index-bucket/idx/CURRENT")]

    (corpus / "getting-started.md").write_text("# Getting started\n\nA brand new first step.\n")
    second = _build(corpus, INDEX, tmp_path / "writer")
    with idx.request():
        assert idx.generation.name == second.generation
        assert "A brand new first step." in idx.doc_text(idx.document("getting-started.md").doc_version)
        hits = idx.search("first step", k=1)
    bucket.log.failing = "all"  # the store fails: the generation keeps serving what its reader has fetched
    try:
        with idx.request():
            assert idx.generation.name == second.generation and idx.search("first step", k=1) == hits
            with pytest.raises(IndexFormatError) as raised:  # and says so of what it has not
                idx.pdf_pages("getting-started.md")  # a table not read yet
            assert str(raised.value).startswith(f"{INDEX}/segments/") and "\n" not in str(raised.value)
    finally:
        bucket.log.failing = ""


def test_files_over_the_part_size_are_uploaded_in_parts_and_read_back_whole(bucket, tmp_path, monkeypatch):
    import moto.s3.models

    import ingest.store.bucket as store_bucket

    monkeypatch.setattr(store_bucket, "PART_BYTES", 64 * 1024)  # the sample index's larger files, in parts
    monkeypatch.setattr(moto.s3.models, "S3_UPLOAD_PART_MIN_SIZE", 64 * 1024)  # the server's least part, as S3's 5 MiB
    _build(SAMPLE_CORPUS, INDEX, tmp_path / "cache")
    _build(SAMPLE_CORPUS, tmp_path / "local")
    parts = [r for r in bucket.log.requests if r.method == "PUT" and "partNumber=2" in r.query]
    assert parts, "some file was uploaded in more than one part"
    local_index(INDEX, cache=tmp_path / "reader")
    assert_same_generation(tmp_path / "reader", tmp_path / "local", atol=0)
    local = IndexPaths(tmp_path / "cache")
    big = [p for p in local.root.rglob("*") if p.is_file() and p.stat().st_size > 64 * 1024]
    assert big and all((tmp_path / "reader" / p.relative_to(local.root)).read_bytes() == p.read_bytes() for p in big)


def test_the_build_that_loses_the_race_exits_5_with_one_line_as_an_index_that_cannot_be_written(
        bucket, tmp_path, monkeypatch, capsys):
    from index.cli import main
    from index.cli.registry import EXIT_CANNOT_WRITE

    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    _build(corpus, INDEX, tmp_path / "a")
    _build(corpus, INDEX, tmp_path / "b")
    (corpus / "getting-started.md").write_text("# Getting started\n\nA new first step.\n")
    ready, first_published = threading.Event(), threading.Event()
    publish = IndexBucket.publish

    def publish_after_the_other(self, name, started):  # the real publish, once the other build's is done
        ready.set()
        first_published.wait(timeout=120)
        return publish(self, name, started)

    monkeypatch.setattr(IndexBucket, "publish", publish_after_the_other)
    exit_code: list[int] = []
    cli = threading.Thread(target=lambda: exit_code.append(main(
        ["build", str(corpus), "--index", INDEX, "--index-cache", str(tmp_path / "b"), "--workers", "1", "--quiet"],
        embedder=HashingEmbedder())))
    cli.start()
    assert ready.wait(timeout=120)
    monkeypatch.setattr(IndexBucket, "publish", publish)
    winner = _build(corpus, INDEX, tmp_path / "a")
    first_published.set()
    cli.join(timeout=300)
    assert exit_code == [EXIT_CANNOT_WRITE]
    assert capsys.readouterr().err.strip().splitlines() == [
        f"spanindex: {INDEX}: another build published first (this one started from generation 000002); "
        f"generation 000003 was not published"]
    assert winner.generation == "000004"  # the loser had claimed 000003
    assert _current(bucket) == winner.generation and fsck(INDEX) == []


def _cold_resolve(s3, url: str, cache, local, doc_id: str, quote: str, **open_options):
    """A new reader's citation of ``quote`` in ``doc_id``: it (equal to the folder's) and the requests it made."""
    chunk = chunk_with(local, doc_id, quote)
    before = len(s3.log.requests)
    reader = index.open(url, embedder=HashingEmbedder(), cache=cache, **open_options)
    citation = resolve(reader, chunk, quote)
    assert citation == resolve(local, chunk, quote) and citation.status == "exact"
    return reader, s3.log.requests[before:]


def test_a_readers_cold_citation_fetches_byte_ranges_of_its_documents_rows_whatever_the_corpus_size(
        bucket, tmp_path, monkeypatch):
    """Blocks of 8 KiB and row groups of 128 character runs: the sample index's tables span many blocks
    and row groups, as a large corpus's do at 128 KiB and 4,096."""
    monkeypatch.setattr(ranged, "BLOCK", 8 << 10)
    monkeypatch.setitem(ROW_GROUP_ROWS, "pdf_chars", 128)
    quote = "usage above the allowance is billed"
    fetched = {}
    for copies in (1, 6):
        corpus = tmp_path / f"corpus-{copies}"
        for n in range(copies):
            shutil.copytree(SAMPLE_CORPUS, corpus / f"copy-{n}")
        url = f"{INDEX}-{copies}"
        _build(corpus, url, tmp_path / f"build-{copies}")
        local = index.open(tmp_path / f"build-{copies}", embedder=HashingEmbedder())
        reader, requests = _cold_resolve(bucket, url, tmp_path / f"reader-{copies}", local, "copy-0/pricing/rate-card.pdf",
                                         quote)
        keys = [r.path.removeprefix(f"/index-bucket/idx-{copies}/") for r in requests]
        assert {r.method for r in requests} == {"GET"} and not [r for r in requests if "list-type" in r.query]
        # no file a search reads whole: vectors, FAISS shards, postings, hits files
        assert not [k for k in keys if k.endswith((".f32", ".faiss", ".arrow")) or "lexical" in k], keys
        assert reader.generation.whole_tables == ()
        fetched[copies] = (len(requests), sum(r.bytes_sent for r in requests))
        index_bytes = sum(p.stat().st_size for p in (tmp_path / f"build-{copies}").rglob("*") if p.is_file())
        assert fetched[copies][1] < index_bytes / (3 if copies == 1 else 12)
        # the same citation again, by a new reader on the same cache: no request but CURRENT
        before = len(bucket.log.requests)
        _cold_resolve(bucket, url, tmp_path / f"reader-{copies}", local, "copy-0/pricing/rate-card.pdf", quote)
        assert [r.path for r in bucket.log.requests[before:]] == [f"/index-bucket/idx-{copies}/CURRENT"]
    (requests_1, bytes_1), (requests_6, bytes_6) = fetched[1], fetched[6]
    assert requests_6 <= requests_1 + 2 and bytes_6 <= 1.5 * bytes_1, fetched


def test_a_readers_cache_keeps_to_its_size_least_recently_used_out_first(bucket, tmp_path, monkeypatch):
    monkeypatch.setattr(ranged, "BLOCK", 8 << 10)
    _build(SAMPLE_CORPUS, INDEX, tmp_path / "build")
    local = index.open(tmp_path / "build", embedder=HashingEmbedder())
    limit = 96 << 10
    cited = [("pricing/rate-card.pdf", "usage above the allowance is billed"),
             ("docs/getting-started.md", "Getting started")]
    for doc_id, quote in cited * 2:  # each citation evicts the other's blocks: fetched again, answers the same
        reader, requests = _cold_resolve(bucket, INDEX, tmp_path / "reader", local, doc_id, quote, cache_bytes=limit)
        assert len(requests) > 1
        held = [p for p in (tmp_path / "reader" / "reader" / "cache").rglob("*") if p.is_file()]
        assert sum(p.stat().st_size for p in held) <= limit
    for query in QUERIES:  # a search's whole files: each larger than the cache, kept alone while used
        assert [h.chunk_id for h in reader.search(query, k=3, mode="dense")] == \
            [h.chunk_id for h in local.search(query, k=3, mode="dense")]
    assert reader.paths.files.cache.total_bytes <= max(limit, max(
        p.stat().st_size for p in (tmp_path / "reader" / "reader" / "cache").rglob("*") if p.is_file()))

    # a large cache keeps both documents' rows: their citations again cost CURRENT alone
    for doc_id, quote in cited:
        _cold_resolve(bucket, INDEX, tmp_path / "roomy", local, doc_id, quote)
    before = len(bucket.log.requests)
    for doc_id, quote in cited:
        _cold_resolve(bucket, INDEX, tmp_path / "roomy", local, doc_id, quote)
    assert [r.path for r in bucket.log.requests[before:]] == ["/index-bucket/idx/CURRENT"] * 2


def test_a_cold_citation_in_an_index_of_several_segments_fetches_each_object_it_reads_once(bucket, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    _build(corpus, INDEX, tmp_path / "writer")
    (corpus / "docs" / "getting-started.md").write_text("# Getting started\n\nA new first step.\n")
    _build(corpus, INDEX, tmp_path / "writer")
    local = index.open(tmp_path / "writer", embedder=HashingEmbedder())
    reader, requests = _cold_resolve(bucket, INDEX, tmp_path / "reader", local, "pricing/rate-card.pdf",
                                     "usage above the allowance is billed")
    fetched = collections.Counter(r.path.removeprefix("/index-bucket/idx/") for r in requests)
    segments = [ref.name for ref in reader.manifest.segments]
    assert len(segments) == 2 and set(fetched.values()) == {1}, fetched
    # the documents' footers of both segments (fetched together), the rest from the one that holds it
    assert {k for k in fetched if k.endswith("/documents.parquet")} == {f"segments/{s}/documents.parquet" for s in segments}
    assert {k.split("/")[1] for k in fetched if k.startswith("segments/") and not k.endswith("/documents.parquet")} \
        == {reader.generation.live.segment_of("pricing/rate-card.pdf").name}


def test_a_reader_whose_bucket_was_built_again_from_nothing_drops_what_it_cached_of_the_old_index(bucket, tmp_path):
    corpus, _, _ = _two_generations(tmp_path, tmp_path / "old", "A first step.")
    old = index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "reader")
    assert old.search("first step", k=1, mode="lexical") and old.generation.name == "000002"
    keys = [o["Key"] for o in bucket.client().list_objects_v2(Bucket="index-bucket", Prefix="idx/")["Contents"]]
    bucket.client().delete_objects(Bucket="index-bucket", Delete={"Objects": [{"Key": k} for k in keys]})
    (corpus / "getting-started.md").write_text("# Getting started\n\nAn index built anew.\n")
    _build(corpus, INDEX, tmp_path / "new")  # generation 000001 again, other files under its names
    new = index.open(INDEX, embedder=HashingEmbedder(), cache=tmp_path / "reader")
    assert new.generation.name == "000001"
    assert "An index built anew." in new.doc_text(new.document("getting-started.md").doc_version)
    assert [h.chunk_id for h in new.search("built anew", k=1, mode="lexical")] == \
        [h.chunk_id for h in index.open(tmp_path / "new", embedder=HashingEmbedder()).search("built anew", k=1, mode="lexical")]
