"""The index in Azure Blob storage (``--index az://container/prefix``), against Azurite on localhost
(conftest.py): the same rows and answers as the same corpus built into a folder, through a whole
copy and through a reader's ranged reads; a reindex and its removals; of two builds racing from one
CURRENT exactly one publishes (Azure's ``If-Match`` and ``If-None-Match: *``); large files as staged
blocks; a missing container and a refused key as one line. The S3 side of the same contract is
tests/remote/test_index_in_a_bucket.py."""

from __future__ import annotations

import shutil

import pytest

import index
from index.citations.verify import resolve
from index.fsck import fsck
from index.reader import local_index
from ingest.build import BuildSettings, build_index
from ingest.store.bucket import IndexBucket, references
from schemas.errors import IndexFormatError, IndexWriteError, PublishRaceError
from schemas.layout import IndexPaths, read_current

from conftest import SAMPLE_CORPUS, chunk_with
from doubles import HashingEmbedder
from races import race
from same_generation import assert_same_generation, live_generation

QUERIES = ["overage price per API call", "refund policy", "getting started"]


def _build(corpus, index_dir, cache=None, progress=None, **settings):
    return build_index(corpus, index_dir, BuildSettings(workers=1, **settings), embedder=HashingEmbedder(),
                       index_cache=cache, progress=progress)


def _container(name: str):
    import os

    from azure.storage.blob import BlobServiceClient

    return BlobServiceClient.from_connection_string(os.environ["AZURE_STORAGE_CONNECTION_STRING"]).get_container_client(name)


def _keys(container: str) -> set[str]:
    return {blob.name.removeprefix("idx/") for blob in _container(container).list_blobs(name_starts_with="idx/")}


def _current(container: str) -> str:
    return _container(container).download_blob("idx/CURRENT").readall().decode().strip()


def test_an_index_built_into_azure_answers_and_reindexes_as_the_same_index_in_a_folder(azure, tmp_path):
    url = f"az://{azure}/idx"
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    report = _build(corpus, url, tmp_path / "build-cache")
    _build(corpus, tmp_path / "local")
    assert _current(azure) == report.generation

    assert_same_generation(local_index(url, cache=tmp_path / "copy"), tmp_path / "local", atol=0)
    reader = index.open(url, embedder=HashingEmbedder(), cache=tmp_path / "reader")  # ranged reads, a bounded cache
    local = index.open(tmp_path / "local", embedder=HashingEmbedder())
    for query in QUERIES:
        for mode in ("dense", "lexical", "hybrid"):
            assert [(h.chunk_id, h.score, h.text) for h in reader.search(query, k=5, mode=mode)] == \
                [(h.chunk_id, h.score, h.text) for h in local.search(query, k=5, mode=mode)]
    for doc_id, quote in [("pricing/rate-card.pdf", "usage above the allowance is billed"),
                          ("docs/getting-started.md", "Getting started")]:
        chunk = chunk_with(local, doc_id, quote)
        assert resolve(reader, chunk, quote) == resolve(local, chunk, quote)
    assert reader.documents() == local.documents() and fsck(url) == []

    # a reindex: one page changed, one removed; the bucket then holds what its kept generations read
    (corpus / "docs" / "getting-started.md").write_text("# Getting started\n\nA new first step.\n")
    (corpus / "docs" / "release-notes.txt").unlink()
    second = _build(corpus, url, tmp_path / "build-cache", keep_generations=1)
    _build(corpus, tmp_path / "local")
    assert _current(azure) == second.generation != report.generation
    assert_same_generation(local_index(url, cache=tmp_path / "copy"), tmp_path / "local", atol=0)
    reader = index.open(url, embedder=HashingEmbedder(), cache=tmp_path / "reader")
    local = index.open(tmp_path / "local", embedder=HashingEmbedder())
    assert [(h.chunk_id, h.score) for h in reader.search("a new first step", k=5, mode="lexical")] == \
        [(h.chunk_id, h.score) for h in local.search("a new first step", k=5, mode="lexical")]
    cache = IndexPaths(tmp_path / "build-cache")
    kept = references(cache, sorted(p.name for p in cache.generations.iterdir()))
    assert {k for k in _keys(azure) if not kept(k)} == {"CURRENT"} and fsck(url) == []


@pytest.mark.hostile("two builds publishing to one index in Azure Blob storage from the same CURRENT", "CLI error")
def test_of_two_builds_racing_from_one_current_in_azure_exactly_one_publishes(azure, tmp_path):
    url = f"az://{azure}/idx"
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    _build(corpus, url, tmp_path / "a")
    _build(corpus, url, tmp_path / "b")  # both copies at generation 2
    (corpus / "getting-started.md").write_text("# Getting started\n\nA new first step.\n")
    lost, winner = race(lambda paused: _build(corpus, url, tmp_path / "b", progress=paused),
                        lambda: _build(corpus, url, tmp_path / "a"))
    assert isinstance(lost, PublishRaceError) and str(lost).startswith(f"{url}: another build published first")
    # the slow build had claimed 000003: the fast one built 000004
    assert _current(azure) == winner.generation == "000004" and read_current(IndexPaths(tmp_path / "b")) == "000002"
    assert fsck(url) == []
    assert _build(corpus, url, tmp_path / "b").generation == _current(azure) == "000005" and fsck(url) == []

    # If-Match: a CURRENT replaced since the build read it refuses the publish, and the write itself
    copy = IndexBucket(url, tmp_path / "a")
    state = copy.state()
    _container(azure).upload_blob("idx/CURRENT", b"000009\n", overwrite=True)
    with pytest.raises(PublishRaceError):
        copy.publish(read_current(IndexPaths(tmp_path / "a")), state)
    with pytest.raises(FileExistsError):
        copy._run(copy.objects.put("idx/CURRENT", b"000010\n", state.etag))
    assert _current(azure) == "000009"
    # a name another build claimed refuses this one before it writes anything
    with pytest.raises(PublishRaceError, match="another build is writing generation 000005"):
        copy.claim("000005", state)


def test_files_over_the_part_size_are_staged_as_blocks_and_read_back_whole(azure, tmp_path, monkeypatch):
    import ingest.store.bucket as store_bucket

    monkeypatch.setattr(store_bucket, "PART_BYTES", 64 * 1024)
    url = f"az://{azure}/idx"
    _build(SAMPLE_CORPUS, url, tmp_path / "cache")
    _build(SAMPLE_CORPUS, tmp_path / "local")
    sizes = {blob.name: blob.size for blob in _container(azure).list_blobs(name_starts_with="idx/")}
    assert max(sizes.values()) > 2 * 64 * 1024, "some file was staged in more than one block"
    assert_same_generation(local_index(url, cache=tmp_path / "copy"), tmp_path / "local", atol=0)


@pytest.mark.hostile("an az:// index naming a missing container, or with a wrong account key", "CLI error")
def test_a_missing_container_or_a_wrong_key_is_one_line_naming_the_url(azure, azurite, tmp_path, monkeypatch):
    import base64

    from azure_server import connection_string

    missing = "az://no-such-container/idx"
    with pytest.raises(IndexFormatError, match="no such bucket or prefix") as raised:
        index.open(missing, embedder=HashingEmbedder(), cache=tmp_path / "r")
    assert str(raised.value).startswith(f"{missing}: ") and "\n" not in str(raised.value)
    with pytest.raises(IndexWriteError, match="no such bucket or prefix"):
        _build(SAMPLE_CORPUS / "docs", missing, tmp_path / "c")
    url = f"az://{azure}/idx"
    _build(SAMPLE_CORPUS / "docs", url, tmp_path / "cache")
    wrong = base64.b64encode(b"spanindex-wrong-key-do-not-show").decode()
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string(azurite, wrong))
    for attempt in (lambda: index.open(url, embedder=HashingEmbedder(), cache=tmp_path / "r2"),
                    lambda: _build(SAMPLE_CORPUS / "docs", url, tmp_path / "cache")):
        with pytest.raises((IndexFormatError, IndexWriteError)) as raised:
            attempt()
        message = str(raised.value)
        assert message.startswith(f"{url}: access denied") and "\n" not in message and wrong not in message, message


def test_a_corpus_in_azure_builds_the_rows_of_the_same_corpus_in_a_folder(azure, tmp_path):
    container = _container(azure)
    for path in sorted((SAMPLE_CORPUS / "docs").iterdir()):
        container.upload_blob(f"corpus/{path.name}", path.read_bytes())
    built = _build(f"az://{azure}/corpus", tmp_path / "from-azure")
    _build(SAMPLE_CORPUS / "docs", tmp_path / "local")
    assert built.n_files == 3 and built.by_status["ok"] == 3
    # where each file was read from differs: its URL, and the time and checksum the listing gave
    assert_same_generation(tmp_path / "from-azure", tmp_path / "local", atol=0,
                           documents_except=("source_url", "source_mtime_ns", "source_etag"))
    assert live_generation(tmp_path / "from-azure").table("documents", ["source_url"]).column(0).to_pylist() == \
        [f"az://{azure}/corpus/{name}" for name in ("getting-started.md", "long-policy.md", "release-notes.txt")]
    assert _build(f"az://{azure}/corpus", tmp_path / "from-azure").changed == 0  # listed, nothing read again
