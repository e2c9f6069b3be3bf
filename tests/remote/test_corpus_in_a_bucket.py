"""A corpus in a bucket (``s3://``) is indexed as the same files in a folder are, row for row; a
rebuild reads only the objects whose listing changed; a wrong bucket or wrong credentials say so in
one line and write nothing. Against moto's S3 server on localhost (conftest.py), with the tests'
hashing embedder: the model plays no part in where the bytes come from."""

from __future__ import annotations

import json
import shutil

import pytest

from index import open as open_index
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from ingest.corpus import discover
from schemas.errors import CorpusError

from conftest import SAMPLE_CORPUS, spanindex
from doubles import HashingEmbedder
from same_generation import assert_same_generation, live_generation

# Where a document was read from: the object's URL, LastModified and ETag against a file's mtime.
WHERE_READ = ("source_url", "source_mtime_ns", "source_etag")


def _build(corpus, index_dir, workers: int = 1, **settings):
    return build_index(corpus, index_dir, BuildSettings(workers=workers, **settings), embedder=HashingEmbedder())


def _documents(index_dir) -> dict[str, dict]:
    return {row["doc_id"]: row for row in live_generation(index_dir).table("documents").to_pylist()}


@pytest.mark.spawns  # the worker processes make their own filesystem from the URL and the environment
def test_the_bucket_builds_the_index_the_folder_builds_row_for_row(s3, tmp_path):
    url = s3.upload(SAMPLE_CORPUS, "corpus")
    from_bucket = _build(url, tmp_path / "s3", workers=2)
    from_folder = _build(SAMPLE_CORPUS, tmp_path / "local", workers=2)

    assert_same_generation(tmp_path / "s3", tmp_path / "local", atol=0, documents_except=WHERE_READ)
    assert from_bucket.by_status == from_folder.by_status and from_bucket.n_files == from_folder.n_files > 10
    assert [(s.doc_id, s.reason) for s in from_bucket.skipped] == [(s.doc_id, s.reason) for s in from_folder.skipped]
    local = _documents(tmp_path / "local")
    for doc_id, row in _documents(tmp_path / "s3").items():
        # the page's own address where it names one, else the object's, never with credentials
        assert row["source_url"] == (local[doc_id]["source_url"] or f"{url}/{doc_id}")
        assert "spanindex-test" not in json.dumps(row)
        if row["source_sha256"]:
            assert row["source_etag"] and row["source_mtime_ns"] > 0


def test_the_listing_is_one_flat_listing_pulled_a_page_at_a_time(s3, monkeypatch):
    import ingest.corpus.store as store

    url = s3.upload(SAMPLE_CORPUS, "corpus")
    before = len(s3.log.requests)
    whole = discover(url)
    assert len(s3.log.requests) - before == 1  # ListObjectsV2 without a delimiter: every folder at once
    monkeypatch.setattr(store, "LISTING_PAGE", 3)  # the iterator is resumed page after page
    paged = discover(url)
    assert [(f.doc_id, f.listed) for f in paged.files] == [(f.doc_id, f.listed) for f in whole.files]
    assert [f.doc_id for f in whole.files] == [f.doc_id for f in discover(SAMPLE_CORPUS).files]


def test_a_prefix_over_one_listing_page_is_listed_whole_in_pages(s3):
    client = s3.client()
    client.create_bucket(Bucket="corpus-bucket")
    for n in range(1001):  # S3 gives 1,000 keys per listing request
        client.put_object(Bucket="corpus-bucket", Key=f"many/{n:04d}.md", Body=b"#")
    before = len(s3.log.requests)
    found = discover("s3://corpus-bucket/many")
    assert [f.doc_id for f in found.files] == [f"{n:04d}.md" for n in range(1001)]
    assert len(s3.log.requests) - before == 2


def test_a_rebuild_reads_only_the_object_that_changed(s3, tmp_path):
    url = s3.upload(SAMPLE_CORPUS, "corpus")
    first = _build(url, tmp_path / "idx")
    assert sorted(r.path for r in s3.gets()) == sorted(
        f"/{url.removeprefix('s3://')}/{f.relative_to(SAMPLE_CORPUS).as_posix()}"
        for f in SAMPLE_CORPUS.rglob("*")
        if f.is_file() and f.suffix != ".xyz" and f.stat().st_size)  # every document once (an empty one never)

    before = len(s3.log.requests)
    unchanged = _build(url, tmp_path / "idx")
    assert s3.gets(before) == [] and unchanged.unchanged == first.n_files and unchanged.changed == 0

    edited = (SAMPLE_CORPUS / "docs" / "long-policy.md").read_bytes() + b"\n\nA paragraph added in the bucket.\n"
    s3.client().put_object(Bucket="corpus-bucket", Key="corpus/docs/long-policy.md", Body=edited)
    before = len(s3.log.requests)
    second = _build(url, tmp_path / "idx")
    assert [r.path for r in s3.gets(before)] == ["/corpus-bucket/corpus/docs/long-policy.md"]
    assert (second.changed, second.unchanged, second.added, second.removed) == (1, first.n_files - 1, 0, 0)
    idx = open_index(tmp_path / "idx")
    assert "A paragraph added in the bucket." in idx.doc_text(idx.document("docs/long-policy.md").doc_version)


def test_an_object_rewritten_with_the_same_size_in_the_same_second_is_read_again(s3, tmp_path):
    """LastModified has whole seconds: the ETag tells two versions of one size apart."""
    url = s3.upload(SAMPLE_CORPUS / "docs", "docs")
    _build(url, tmp_path / "idx")
    key = "docs/getting-started.md"
    original = (SAMPLE_CORPUS / "docs" / "getting-started.md").read_bytes()
    same_size = original.replace(b"e", b"E", 1)
    assert len(same_size) == len(original) and same_size != original
    s3.client().put_object(Bucket="corpus-bucket", Key=key, Body=same_size)
    listed = {f.doc_id: f.listed for f in discover(url).files}["getting-started.md"]
    recorded = _documents(tmp_path / "idx")["getting-started.md"]
    assert listed.size == recorded["source_bytes"] and listed.etag != recorded["source_etag"]
    before = len(s3.log.requests)
    assert _build(url, tmp_path / "idx").changed == 1
    assert [r.path for r in s3.gets(before)] == [f"/corpus-bucket/{key}"]


def test_sidecars_and_corpus_metadata_in_the_bucket_are_the_documents_fields(s3, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    (corpus / "getting-started.md.meta.json").write_text('{"team": "docs", "year": 2024}')
    (corpus / "metadata.jsonl").write_text('{"doc_id": "release-notes.txt", "fields": {"team": "release"}}\n')
    url = s3.upload(corpus, "with-metadata")
    report = _build(url, tmp_path / "idx")
    documents = _documents(tmp_path / "idx")
    assert json.loads(documents["getting-started.md"]["metadata"]) == {"team": "docs", "year": 2024}
    assert json.loads(documents["release-notes.txt"]["metadata"]) == {"team": "release"}
    assert json.loads(documents["long-policy.md"]["metadata"]) == {} and report.n_files == 3 and not report.warnings

    s3.client().put_object(Bucket="corpus-bucket", Key="with-metadata/getting-started.md.meta.json", Body=b'{"team": "ops"}')
    before = len(s3.log.requests)
    again = _build(url, tmp_path / "idx")
    assert again.metadata_changed == 1 and again.changed == 0
    # the metadata files are read (they are small, and read whole each build); no document is
    assert sorted(r.path for r in s3.gets(before)) == ["/corpus-bucket/with-metadata/getting-started.md.meta.json",
                                                       "/corpus-bucket/with-metadata/metadata.jsonl"]


@pytest.mark.hostile("an object in the corpus store over --max-file-mb", "error row")
def test_an_object_over_the_size_limit_is_refused_from_its_listing_unread(s3, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    (corpus / "huge.txt").write_bytes(b"word " * (1024 * 1024 // 5 + 1))  # just over 1 MB
    url = s3.upload(corpus, "sized")
    report = _build(url, tmp_path / "idx", max_file_mb=1)
    assert [(doc_id, reason.split(":")[0]) for doc_id, _, reason in report.failures] == [("huge.txt", "file too large")]
    assert "/corpus-bucket/sized/huge.txt" not in {r.path for r in s3.gets()}


def test_a_missing_bucket_or_prefix_is_one_error_naming_the_url_and_nothing_is_written(s3, tmp_path):
    s3.upload(SAMPLE_CORPUS / "docs", "docs")
    for url, says in [("s3://no-such-bucket/corpus", "no such bucket or prefix"),
                      ("s3://corpus-bucket/nothing-here", "no such bucket or prefix")]:
        with pytest.raises(CorpusError, match=says) as raised:
            _build(url, tmp_path / "idx")
        assert str(raised.value).startswith(f"{url}: ") and "\n" not in str(raised.value)
        assert not (tmp_path / "idx").exists()


@pytest.mark.hostile("a corpus store that fails (HTTP 503 on listing, then on every read mid-rebuild)", "CLI error")
def test_a_failing_store_is_retried_then_one_error_and_the_live_generation_keeps_serving(s3, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # botocore's retries (and s3fs's around them), kept short
    url = s3.upload(SAMPLE_CORPUS / "docs", "docs")
    s3.log.failing = "all"
    before = len(s3.log.requests)
    with pytest.raises(CorpusError, match="listing failed") as raised:
        _build(url, tmp_path / "idx")
    assert str(raised.value).startswith(f"{url}: ") and "\n" not in str(raised.value)
    assert len(s3.log.requests) - before > 2  # the one listing request was retried, with backoff
    assert not (tmp_path / "idx").exists()

    s3.log.failing = ""
    first = _build(url, tmp_path / "idx")
    s3.client().put_object(Bucket="corpus-bucket", Key="docs/long-policy.md", Body=b"# Changed\n\nNew text.\n")
    s3.log.failing = "reads"  # listed fine, then every read fails: no document may become an error row
    with pytest.raises(CorpusError, match="the store failed") as raised:
        _build(url, tmp_path / "idx")
    assert str(raised.value).startswith(f"{url}/long-policy.md: the store failed")
    assert live_generation(tmp_path / "idx").manifest.generation == first.generation
    assert fsck(tmp_path / "idx") == []


@pytest.mark.hostile("a corpus URL with credentials in it (s3://KEY:SECRET@bucket/prefix)", "CLI error")
def test_credentials_in_the_url_are_refused_without_being_shown(s3, tmp_path):
    with pytest.raises(CorpusError) as raised:
        _build("s3://AKIDEXAMPLE:hunter2secret@corpus-bucket/corpus", tmp_path / "idx")
    assert "hunter2secret" not in str(raised.value) and "AKIDEXAMPLE" not in str(raised.value)
    assert str(raised.value).startswith("s3://corpus-bucket/corpus: credentials in the URL are not accepted")


@pytest.mark.hostile("a corpus URL naming a missing bucket, a missing prefix, or a store that refuses the credentials", "CLI error")
@pytest.mark.spawns  # the CLI in a subprocess, as a user runs it
def test_the_cli_says_in_one_line_what_is_wrong_with_the_store_and_exits_as_for_a_missing_folder(s3, tmp_path):
    url = s3.upload(SAMPLE_CORPUS / "docs", "docs")
    missing_folder = spanindex("build", tmp_path / "no-such-folder", "--index", tmp_path / "idx")
    assert missing_folder.returncode not in (0, 1)
    cases = {"s3://no-such-bucket/docs": "no such bucket or prefix",
             "s3://corpus-bucket/nothing-here": "no such bucket or prefix"}
    for bad_url, says in cases.items():
        run = spanindex("build", bad_url, "--index", tmp_path / "idx", timeout=120)
        assert run.returncode == missing_folder.returncode, run.stderr
        assert run.stderr.strip().splitlines() == [f"spanindex: {bad_url}: {says}"]
    s3.require_credentials(True)  # the server now knows no key: ours is wrong
    run = spanindex("build", url, "--index", tmp_path / "idx", timeout=120)
    assert run.returncode == missing_folder.returncode, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(f"spanindex: {url}: access denied")
    assert "spanindex-test-secret" not in run.stderr + run.stdout
    assert not (tmp_path / "idx").exists()


def test_a_file_url_is_the_folder_it_names():
    as_url, as_path = discover(SAMPLE_CORPUS.as_uri()), discover(SAMPLE_CORPUS)
    assert [(f.doc_id, f.path) for f in as_url.files] == [(f.doc_id, f.path) for f in as_path.files]
    assert not any(f.url for f in as_url.files)


def test_a_store_whose_driver_is_not_installed_names_the_package_to_install(tmp_path):
    import importlib.util

    for url, package in [("gs://bucket/corpus", "gcsfs"), ("az://container/corpus", "adlfs")]:
        if importlib.util.find_spec(package) is not None:
            continue  # installed: its own driver answers
        with pytest.raises(CorpusError, match=f"^{url}: reading {url.split(':')[0]}:// needs {package} "):
            _build(url, tmp_path / "idx")
        assert not (tmp_path / "idx").exists()


def test_keys_with_spaces_query_and_fragment_characters_are_documents_under_their_own_names(s3, tmp_path):
    client = s3.client()
    client.create_bucket(Bucket="corpus-bucket")
    names = ["a b.md", "q?x.md", "h#1.md", "pct%41.md", "ü.md", "sub/x+y.md"]
    for name in names:
        client.put_object(Bucket="corpus-bucket", Key=f"odd/{name}", Body=f"# {name}\n\nThe text of {name}.".encode())
    _build("s3://corpus-bucket/odd", tmp_path / "idx")
    documents = _documents(tmp_path / "idx")
    assert sorted(documents) == sorted(names)
    for name, row in documents.items():  # the key as it is (s3:// URLs are not percent-encoded)
        assert (row["status"], row["source_url"]) == ("ok", f"s3://corpus-bucket/odd/{name}")
