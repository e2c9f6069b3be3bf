"""Ray gives what a local run gives: tasks the pool's results, actors the in-process vectors, a build
on Ray the local build row for row, with the same reuse and the same error rows.

One real Ray instance (2 CPUs) serves every test of this module: it is started by the first test
that asks for it and stopped after the last, and nothing it started may be left running then.
(The tests that start and stop Ray themselves are in ``test_ray_instances.py``.) The module
skips when Ray is not installed.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

import index
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from ingest.corpus import discover
from ingest.embed.model import resolve_model
from ingest.formats.parse import media_type_of
from ingest.run.pool import process_in_workers
from ingest.run.ray_driver import RayExecutor, RaySettings
from ingest.run.worker import FileJob, WorkerSettings, crashed_result, timed_out_result
from schemas.errors import ClusterError, IndexWriteError
from schemas.records import ChunkerSettings, DocStatus, MediaType

import doubles
from conftest import S3_CREDENTIALS, SAMPLE_CORPUS, SHARED_CORPUS, needs_shared_corpus
from doubles import HashingEmbedder
from doubles import process_source_failing_on_marked_files as failing
from ray_processes import EXIT_WAIT_S, ray_processes, wait_for_no_strays, wait_until_none
from same_generation import assert_same_generation, live_generation

pytestmark = [pytest.mark.slow, pytest.mark.spawns]  # a Ray instance: processes, and seconds to start


@pytest.fixture(scope="module")
def ray_executor():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    # Ray pickles functions by reference, and tests/ is not importable on Ray's workers.
    ray.cloudpickle.register_pickle_by_value(doubles)
    before = {p.pid for p in ray_processes()}
    with pytest.MonkeyPatch.context() as environment:
        # the nodes' own credentials for the tests' S3 server, as a node's instance role would be (a build
        # gives its tasks where the store is, never who may read it)
        for name, value in S3_CREDENTIALS.items():
            environment.setenv(name, value)
        running = RayExecutor(RaySettings(num_cpus=2))
        running.start()
    with running:
        started = {p.info["name"] for p in ray_processes() if p.pid not in before}
        assert {"raylet", "gcs_server"} <= started, f"the stray check would see nothing: {started}"
        yield running
    strays = wait_for_no_strays(before)
    assert not strays, f"Ray processes left running after shutdown: {strays}"


# -- builds -----------------------------------------------------------------------------------


def test_the_ray_build_of_the_sample_corpus_is_the_local_build_with_the_real_model(ray_executor, sample_index, tmp_path):
    report = build_index(SAMPLE_CORPUS, tmp_path / "idx", BuildSettings(), executor=ray_executor)
    assert report.chunks_embedded == report.chunks > 0 and report.by_status["ok"] > 5
    assert_same_generation(tmp_path / "idx", sample_index, atol=1e-5)


def test_the_ray_build_of_the_shared_corpus_is_the_local_build(ray_executor, shared_index, tmp_path):
    needs_shared_corpus()
    report = build_index(SHARED_CORPUS, tmp_path / "idx", BuildSettings(), embedder=HashingEmbedder(),
                         executor=ray_executor)
    assert report.by_status["ok"] > 20
    assert_same_generation(tmp_path / "idx", shared_index, atol=0)  # the same embedder, run in an actor


def test_a_reindex_on_ray_embeds_the_edited_documents_chunks_and_reuses_the_rest(ray_executor, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    first = build_index(corpus, tmp_path / "idx", BuildSettings(), embedder=HashingEmbedder(), executor=ray_executor)
    before = live_generation(tmp_path / "idx").table("chunks").to_pylist()
    edited = corpus / "docs" / "long-policy.md"
    text = edited.read_text()
    middle = text.index("\n\n", len(text) // 2)
    edited.write_text(text[:middle] + " A sentence added in the middle of the policy." + text[middle:])

    second = build_index(corpus, tmp_path / "idx", BuildSettings(), embedder=HashingEmbedder(), executor=ray_executor)
    after = live_generation(tmp_path / "idx").table("chunks").to_pylist()
    assert (second.changed, second.added, second.removed, second.unchanged) == (1, 0, 0, first.n_files - 1)
    known = {row["embed_sha256"] for row in before}
    new_texts = {row["embed_sha256"] for row in after if row["embed_sha256"] not in known}
    assert second.chunks_embedded == len(new_texts) > 0
    assert all(row["doc_id"] == "docs/long-policy.md" for row in after if row["embed_sha256"] in new_texts)
    edited_chunks = sum(1 for row in after if row["doc_id"] == "docs/long-policy.md")
    assert second.chunks_embedded < edited_chunks, "an edit in the middle re-embeds the chunks near it, not all"
    assert second.chunks_reused == second.chunks - second.chunks_embedded
    # A local build of the edited corpus gives the same tables and vectors.
    build_index(corpus, tmp_path / "local", BuildSettings(workers=1), embedder=HashingEmbedder())
    assert_same_generation(tmp_path / "idx", tmp_path / "local", atol=0, same_files=False)


def test_writer_actors_write_a_segment_per_run_of_files_and_the_build_is_the_local_build(ray_executor, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    n_files = len(discover(corpus).files)
    # Another executor on the module's running Ray instance, whose writers take 4 files each.
    with RayExecutor(RaySettings(segment_documents=4)) as executor:
        build_index(corpus, tmp_path / "idx", BuildSettings(), embedder=HashingEmbedder(), executor=executor)
        segments = live_generation(tmp_path / "idx").manifest.segments
        assert len(segments) == -(-n_files // 4) > 2
        assert [s.n_documents for s in segments[:-1]] == [4] * (len(segments) - 1)
        # Their vector id ranges follow one another, as one local segment's would.
        assert [s.vector_base for s in segments[1:]] == [s.vector_base + s.n_vectors for s in segments[:-1]]
        build_index(corpus, tmp_path / "local", BuildSettings(workers=1), embedder=HashingEmbedder())
        assert_same_generation(tmp_path / "idx", tmp_path / "local", atol=0)
        assert _vector_ids(tmp_path / "idx") == _vector_ids(tmp_path / "local")

    edited = corpus / "docs" / "long-policy.md"
    edited.write_text(edited.read_text() + "\n\nA paragraph added at the end of the policy.\n")
    (corpus / "docs" / "release-notes.txt").unlink()
    # A sidecar alone changes a document's row: its chunks are carried over by a writer, not embedded.
    (corpus / "docs" / "getting-started.md.meta.json").write_text('{"team": "docs"}')
    # Writers on any node (the index folder shared): here the one node, by another path in the code.
    with RayExecutor(RaySettings(segment_documents=4, shared_index=True)) as executor:
        report = build_index(corpus, tmp_path / "idx", BuildSettings(), embedder=HashingEmbedder(), executor=executor)
    assert (report.changed, report.removed, report.metadata_changed) == (1, 1, 1)
    assert 0 < report.chunks_embedded < report.chunks_reused
    build_index(corpus, tmp_path / "local", BuildSettings(workers=1), embedder=HashingEmbedder())
    # The same rows; vector ids differ from here on, as the two indexes' segments (and merges) do.
    assert_same_generation(tmp_path / "idx", tmp_path / "local", atol=0, same_files=False)


def test_a_ray_build_reads_a_bucket_as_a_local_build_reads_the_folder(ray_executor, s3, tmp_path):
    """The driver lists the prefix; each task reads its object through the store's driver, on its node
    (the driver reads none); the rows are the folder's."""
    import ingest.run.worker

    url = s3.upload(SAMPLE_CORPUS, "corpus")

    def not_in_the_driver(*args, **kwargs):
        raise AssertionError("the driver read an object of the corpus")

    with pytest.MonkeyPatch.context() as driver:
        driver.setattr(ingest.run.worker, "read_source_bytes", not_in_the_driver)  # this process only
        first = build_index(url, tmp_path / "idx", BuildSettings(), embedder=HashingEmbedder(), executor=ray_executor)
    build_index(SAMPLE_CORPUS, tmp_path / "local", BuildSettings(workers=1), embedder=HashingEmbedder())
    assert_same_generation(tmp_path / "idx", tmp_path / "local", atol=0,
                           documents_except=("source_url", "source_mtime_ns", "source_etag"))
    local = {d["doc_id"]: d["source_url"] for d in live_generation(tmp_path / "local").table("documents").to_pylist()}
    for row in live_generation(tmp_path / "idx").table("documents").to_pylist():  # the page's own address, else the object's
        assert row["source_url"] == (local[row["doc_id"]] or f"{url}/{row['doc_id']}")
    before = len(s3.log.requests)
    again = build_index(url, tmp_path / "idx", BuildSettings(), embedder=HashingEmbedder(), executor=ray_executor)
    assert again.unchanged == first.n_files and s3.gets(before) == []


def test_ray_writers_upload_their_segments_to_an_index_in_a_bucket_and_the_driver_uploads_its_generation_only(
        ray_executor, s3, tmp_path, monkeypatch):
    """Writers on any node upload their segments, shards, texts and sources themselves; the driver's
    copy never holds a segment; the index is the local build's, and so is its reindex."""
    from index.fsck import fsck as check
    from index.reader import local_index

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    s3.client().create_bucket(Bucket="index-bucket")
    url, copy = "s3://index-bucket/idx", tmp_path / "driver-copy"
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    with RayExecutor(RaySettings(segment_documents=4)) as executor:  # on the module's running Ray instance
        first = build_index(corpus, url, BuildSettings(), embedder=HashingEmbedder(), executor=executor,
                            index_cache=copy)
        puts = _puts_by_client(s3)
        segments = live_generation(local_index(url, cache=tmp_path / "whole-1")).manifest.segments
        assert len(segments) == -(-first.n_files // 4) > 2
        written = {f"segments/{s.name}/chunks.parquet" for s in segments} | {f"segments/{s.name}/vectors.f32" for s in segments}
        assert written <= set(puts) and any(k.startswith("ann/") and k.endswith(f"{segments[0].name}.faiss") for k in puts)
        # the driver wrote its generation's objects, the vector template and CURRENT; the writers everything else
        assert not list(copy.glob("segments/*")) and not list(copy.glob("ann/*/0*"))
        assert not (copy / "texts").exists() and not (copy / "sources").exists()
        build_index(corpus, tmp_path / "local", BuildSettings(workers=1), embedder=HashingEmbedder())
        assert_same_generation(tmp_path / "whole-1", tmp_path / "local", atol=0)
        assert check(url) == []

        (corpus / "docs" / "long-policy.md").write_text("# Changed\n\nA paragraph that was not there before.\n")
        (corpus / "docs" / "release-notes.txt").unlink()
        again = build_index(corpus, url, BuildSettings(), embedder=HashingEmbedder(), executor=executor,
                            index_cache=copy)
    assert (again.changed, again.removed) == (1, 1) and again.chunks_embedded < again.chunks
    build_index(corpus, tmp_path / "local", BuildSettings(workers=1), embedder=HashingEmbedder())
    assert_same_generation(local_index(url, cache=tmp_path / "whole-2"), tmp_path / "local", atol=0, same_files=False)
    # the driver read what it needed of the live segments from the bucket: never a segment's vectors or chunks whole
    assert not list(copy.glob("segments/*/*")) and not list(copy.glob("cache/whole/segments/*/chunks.parquet"))
    assert check(url) == []

    # Another vector index than the writers could foresee (an inverted file, trained at the end): the
    # driver writes every new segment's shard itself, from their vectors in the bucket.
    (corpus / "docs" / "getting-started.md").write_text("# Getting started\n\nA new first step.\n")
    ivf = BuildSettings(faiss_factory="IVF4,Flat")
    with RayExecutor(RaySettings(segment_documents=4)) as executor:
        third = build_index(corpus, url, ivf, embedder=HashingEmbedder(), executor=executor, index_cache=copy)
    assert third.ann_reason and third.ann_factory == "IVF4,Flat"
    build_index(corpus, tmp_path / "local", dataclasses.replace(ivf, workers=1), embedder=HashingEmbedder())
    assert_same_generation(local_index(url, cache=tmp_path / "whole-3"), tmp_path / "local", atol=0, same_files=False)
    from_bucket, local = index.open(url, embedder=HashingEmbedder()), index.open(tmp_path / "local", embedder=HashingEmbedder())
    for query in ("refund policy", "overage price per API call", "getting started"):
        assert [(h.chunk_id, h.score) for h in from_bucket.search(query, k=5, mode="dense")] == \
            [(h.chunk_id, h.score) for h in local.search(query, k=5, mode="dense")]
    assert check(url) == []


def test_a_ray_build_into_a_bucket_merges_on_a_node_and_the_driver_never_holds_a_segment(ray_executor, s3, tmp_path,
                                                                                         monkeypatch):
    """Writers of 2 files each make 8 segments of one tier: the build merges them, in a task that reads
    them from the bucket and uploads the merged segment and its shard."""
    from index.fsck import fsck as check
    from index.reader import local_index

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    s3.client().create_bucket(Bucket="index-bucket")
    url, copy = "s3://index-bucket/idx", tmp_path / "driver-copy"
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    with RayExecutor(RaySettings(segment_documents=2)) as executor:
        report = build_index(corpus, url, BuildSettings(), embedder=HashingEmbedder(), executor=executor,
                             index_cache=copy)
    assert report.merged == -(-report.n_files // 2) >= 8 and report.segments == 1
    merged = f"{report.generation}-merged"
    assert live_generation(local_index(url, cache=tmp_path / "whole")).manifest.segments[0].name == merged
    assert not list(copy.glob("segments/*")) and not list(copy.glob("ann/*/0*"))  # neither the merge nor its shard
    assert f"segments/{merged}/chunks.parquet" in _keys(s3)
    build_index(corpus, tmp_path / "local", BuildSettings(workers=1), embedder=HashingEmbedder())
    assert_same_generation(tmp_path / "whole", tmp_path / "local", atol=0, same_files=False)
    assert check(url) == []


@pytest.mark.hostile("a Ray build into a bucket whose store fails while its writers upload", "CLI error")
def test_a_ray_build_whose_writers_uploads_fail_leaves_current_as_it_was_and_the_next_build_removes_their_objects(
        ray_executor, s3, tmp_path, monkeypatch):
    from index.fsck import fsck as check

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # the driver's retries, kept short
    s3.client().create_bucket(Bucket="index-bucket")
    url = "s3://index-bucket/idx"
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    with RayExecutor(RaySettings(segment_documents=4)) as executor:
        first = build_index(corpus, url, BuildSettings(), embedder=HashingEmbedder(), executor=executor)
        (corpus / "docs" / "long-policy.md").write_text("# Changed\n\nNew text.\n")
        s3.log.failing, s3.log.writes_before_failing = "writes", 2  # the claim and one more land, then every PUT fails
        with pytest.raises(IndexWriteError) as failed:
            build_index(corpus, url, BuildSettings(), embedder=HashingEmbedder(), executor=executor)
        assert "\n" not in str(failed.value) and str(failed.value).startswith(f"cannot write the index {url}")
        s3.log.failing = ""
        assert _current(s3) == first.generation and check(url) == []
        debris = {k for k in _keys(s3) if "/" in k and k.split("/")[1].startswith("000002")}
        assert debris, "the failed build claimed its name and uploaded something"
        again = build_index(corpus, url, BuildSettings(), embedder=HashingEmbedder(), executor=executor)
    assert again.generation == "000003" == _current(s3) and not debris & _keys(s3) and check(url) == []


def _keys(s3) -> set[str]:
    listed = s3.client().list_objects_v2(Bucket="index-bucket", Prefix="idx/").get("Contents", [])
    return {o["Key"].removeprefix("idx/") for o in listed}


def _current(s3) -> str:
    return s3.client().get_object(Bucket="index-bucket", Key="idx/CURRENT")["Body"].read().decode().strip()


def _puts_by_client(s3) -> list[str]:
    return [r.path.split("/idx/", 1)[1] for r in s3.log.requests if r.method == "PUT" and "/idx/" in r.path]


def _vector_ids(index_dir: Path) -> dict[str, int]:
    chunks = live_generation(index_dir).table("chunks", ["chunk_id", "vector_id"])
    return dict(zip(chunks.column("chunk_id").to_pylist(), chunks.column("vector_id").to_pylist()))


def test_files_that_crash_or_hang_their_ray_task_become_error_rows_and_the_rest_is_indexed(ray_executor, tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    (corpus / "a-crash.md").write_text("This file takes its worker down.")
    (corpus / "b-hang.md").write_text("This file never finishes parsing.")
    # Another executor on the module's running Ray instance, whose tasks fail on marked files.
    with RayExecutor(RaySettings(), work=doubles.process_source_failing_on_marked_files) as executor:
        report = build_index(corpus, tmp_path / "idx", BuildSettings(doc_timeout_s=5), embedder=HashingEmbedder(),
                             executor=executor)
    documents = {row["doc_id"]: row for row in live_generation(tmp_path / "idx").table("documents").to_pylist()}
    crash = FileJob(corpus / "a-crash.md", "a-crash.md", MediaType.MARKDOWN, None)
    hang = FileJob(corpus / "b-hang.md", "b-hang.md", MediaType.MARKDOWN, None)
    assert documents["a-crash.md"]["status"] == "error"
    assert documents["a-crash.md"]["error"] == crashed_result(crash).record.error
    assert documents["b-hang.md"]["error"] == timed_out_result(hang, 5).record.error
    others = {doc_id: row["status"] for doc_id, row in documents.items() if doc_id not in ("a-crash.md", "b-hang.md")}
    assert others and set(others.values()) == {DocStatus.OK.value}
    assert sorted(doc_id for doc_id, _, _ in report.failures) == ["a-crash.md", "b-hang.md"]
    assert fsck(tmp_path / "idx") == []


# -- tasks and actors ---------------------------------------------------------------------------


def _process(jobs: list[FileJob], index_root: Path, timeout_s: float, work) -> list:
    """``work`` on each job in Ray tasks, on the Ray instance the module runs (an executor
    started while Ray runs joins it, and leaves it running when it closes)."""
    with RayExecutor(RaySettings(), work=work) as executor:
        return [executor.fetch(r, index_root) for r in executor.process(jobs, _settings(index_root), timeout_s=timeout_s)]


def _settings(index_root: Path) -> WorkerSettings:
    return WorkerSettings(resolve_model(), ChunkerSettings(), index_root, 1 << 20)


def _markdown_jobs(corpus: Path, names: list[str]) -> list[FileJob]:
    corpus.mkdir()
    for name in names:
        (corpus / name).write_text(f"Document {name} has some text.")
    return [FileJob(corpus / n, n, MediaType.MARKDOWN, None) for n in names]


@pytest.mark.slow
@pytest.mark.spawns
def test_ray_tasks_give_the_local_pools_results_and_store_the_same_files(ray_executor, tmp_path):
    files = discover(SAMPLE_CORPUS).files
    jobs = [FileJob(f.path, f.doc_id, media_type_of(f.doc_id), None) for f in files]
    local = list(process_in_workers(jobs, _settings(tmp_path / "local"), 2))
    summaries = list(ray_executor.process(jobs, _settings(tmp_path / "ray"), timeout_s=600))
    # The driver receives a summary: the rows and the file's bytes stay on the cluster for a writer.
    for summary in summaries:
        assert summary.chunks is None and summary.tables == {} and summary.embed_texts == [] and summary.files is None
        assert summary.remote is not None, summary.doc_id
    assert not (tmp_path / "ray").exists(), "the driver stores nothing"
    remote = [ray_executor.fetch(r, tmp_path / "ray") for r in summaries]
    assert [r.doc_id for r in remote] == [r.doc_id for r in local] == [j.doc_id for j in jobs]
    for mine, theirs in zip(remote, local):
        assert mine.record == theirs.record, mine.doc_id
        assert mine.embed_texts == theirs.embed_texts, mine.doc_id
        assert mine.files is None, "fetch stores the files a task ships"
        assert (mine.chunks is None) == (theirs.chunks is None)
        if mine.chunks is not None:
            assert mine.chunks.equals(theirs.chunks), mine.doc_id
        assert mine.tables.keys() == theirs.tables.keys(), mine.doc_id
        for name, table in mine.tables.items():
            assert table.equals(theirs.tables[name]), (mine.doc_id, name)
    stored = {folder: sorted((tmp_path / folder).rglob("*")) for folder in ("local", "ray")}
    assert [p.relative_to(tmp_path / "ray") for p in stored["ray"]] == [p.relative_to(tmp_path / "local") for p in stored["local"]]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(stored["ray"], stored["local"]) if a.is_file())
    assert sum(1 for r in remote if r.record.status is DocStatus.OK) > 5


@pytest.mark.slow
@pytest.mark.spawns
def test_a_task_that_kills_its_worker_becomes_the_local_error_row_and_the_batch_carries_on(ray_executor, tmp_path):
    names = ["a.md", "b-crash.md", "c.md", "d.md", "e-crash.md", "f.md"]
    jobs = _markdown_jobs(tmp_path / "c", names)
    results = _process(jobs, tmp_path / "idx", 600, failing)
    assert [r.doc_id for r in results] == names
    for job, result in zip(jobs, results):
        if "crash" in job.doc_id:
            assert result.record == crashed_result(job).record  # status and reason as a local build gives them
        else:
            assert result.record.status is DocStatus.OK and result.record.n_chunks == 1
            assert (tmp_path / "idx" / "texts").is_dir()


@pytest.mark.slow
@pytest.mark.spawns
def test_a_task_that_hangs_is_stopped_at_the_doc_timeout_and_the_batch_carries_on(ray_executor, tmp_path):
    names = ["a.md", "b-hang.md", "c.md", "d-hang.md", "e.md", "f.md"]
    jobs = _markdown_jobs(tmp_path / "c", names)
    results = _process(jobs, tmp_path / "idx", 4, failing)
    assert [r.doc_id for r in results] == names
    for job, result in zip(jobs, results):
        if "hang" in job.doc_id:
            assert result.record == timed_out_result(job, 4).record
        else:
            assert result.record.status is DocStatus.OK
    # The cancelled tasks' worker processes are killed, not left looping (a looping one never exits).
    looping = wait_until_none(lambda: [p for p in ray_processes() if p.name() == "ray::parse_remote"])
    assert not looping, "a hung task's worker survived"


@pytest.mark.slow
@pytest.mark.spawns
def test_a_task_that_finds_its_node_different_stops_the_build_with_the_nodes_reason(ray_executor, tmp_path):
    jobs = _markdown_jobs(tmp_path / "c", ["a.md", "b-othernode.md"])
    with pytest.raises(ClusterError, match="runs another spanindex"):
        _process(jobs, tmp_path / "idx", 60, failing)


@pytest.mark.slow
@pytest.mark.spawns
def test_embedding_actors_give_the_vectors_of_an_in_process_embedder(ray_executor, real_embedder):
    import ray

    texts = [f"Overage on plan {i} is billed at ${i}.12 per 1,000 API calls." for i in range(40)]
    with ray_executor.embedding(resolve_model()) as embedder:
        assert (embedder.model_id, embedder.dim) == (real_embedder.model_id, real_embedder.dim)
        vectors = embedder.embed(texts)
        assert embedder.embed([]).shape == (0, real_embedder.dim)
        actor = embedder.actors[0]
    assert vectors.dtype == np.float32 and vectors.shape == (40, real_embedder.dim)
    np.testing.assert_allclose(vectors, real_embedder.embed(texts), atol=1e-5)
    with pytest.raises(ray.exceptions.RayActorError):  # the pool ends with the block: its CPU is free again
        ray.get(actor.identity.remote(), timeout=EXIT_WAIT_S)
