"""The Ray executor: the local pool's results, error rows and reasons, from tasks and actors on Ray.

The tests marked slow run on one real Ray instance (2 CPUs) that this module starts and
stops; after it stops, no Ray process it started may be left running. They skip when
Ray is not installed.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import numpy as np
import pytest

from ingest.corpus import discover
from ingest.embed.model import resolve_model
from ingest.formats.parse import media_type_of
from ingest.run.pool import process_in_workers
from ingest.run.ray_driver import RayExecutor, RaySettings, _check_reachable
from ingest.run.ray_nodes import NodeExpectations, code_fingerprint, node_model
from ingest.run.worker import FileJob, WorkerSettings, crashed_result, timed_out_result
from schemas.errors import ClusterError
from schemas.records import ChunkerSettings, DocStatus, MediaType

import doubles
from conftest import SAMPLE_CORPUS
from doubles import process_source_failing_on_marked_files as failing
from ray_processes import ray_processes, wait_for_no_strays


def test_an_address_nothing_answers_at_is_refused_at_once_not_retried_forever():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.perf_counter()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ClusterError, match="no Ray cluster answers"):
            _check_reachable(address)
    with pytest.raises(ClusterError, match="is not auto, HOST:PORT or ray://HOST:PORT"):
        _check_reachable("head-node")
    assert time.perf_counter() - started < 5


def test_a_node_with_other_code_or_another_model_refuses_to_work():
    model = resolve_model()
    same = NodeExpectations(code_fingerprint(), model.model_id, "")
    with pytest.raises(ClusterError, match="another spanindex or other parser libraries"):
        node_model(model, NodeExpectations("0" * 64, model.model_id, same.tokenizer_sha256))
    with pytest.raises(ClusterError, match="has another sentence-transformers/all-MiniLM-L6-v2"):
        node_model(model, same)  # the tokenizer the driver has differs from this node's


@pytest.fixture(scope="module")
def executor():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    # Ray pickles functions by reference, and tests/ is not importable on Ray's workers.
    ray.cloudpickle.register_pickle_by_value(doubles)
    before = {p.pid for p in ray_processes()}
    with RayExecutor(RaySettings(num_cpus=2)) as running:
        started = {p.info["name"] for p in ray_processes() if p.pid not in before}
        assert {"raylet", "gcs_server"} <= started, f"the stray check would see nothing: {started}"
        yield running
    strays = wait_for_no_strays(before, seconds=30)
    assert not strays, f"Ray processes left running after shutdown: {strays}"


def _process(jobs: list[FileJob], index_root: Path, timeout_s: float, work) -> list:
    """``work`` on each job in Ray tasks, on the Ray instance the module runs (an executor
    started while Ray runs joins it, and leaves it running when it closes)."""
    with RayExecutor(RaySettings(), work=work) as executor:
        return list(executor.process(jobs, _settings(index_root), timeout_s=timeout_s))


def _settings(index_root: Path) -> WorkerSettings:
    return WorkerSettings(resolve_model(), ChunkerSettings(), index_root, 1 << 20)


def _markdown_jobs(corpus: Path, names: list[str]) -> list[FileJob]:
    corpus.mkdir()
    for name in names:
        (corpus / name).write_text(f"Document {name} has some text.")
    return [FileJob(corpus / n, n, MediaType.MARKDOWN, None) for n in names]


@pytest.mark.slow
@pytest.mark.spawns
def test_ray_tasks_give_the_local_pools_results_and_store_the_same_files(executor, tmp_path):
    files = discover(SAMPLE_CORPUS).files
    jobs = [FileJob(f.path, f.doc_id, media_type_of(f.doc_id), None) for f in files]
    local = list(process_in_workers(jobs, _settings(tmp_path / "local"), 2))
    remote = list(executor.process(jobs, _settings(tmp_path / "ray"), timeout_s=600))
    assert [r.doc_id for r in remote] == [r.doc_id for r in local] == [j.doc_id for j in jobs]
    for mine, theirs in zip(remote, local):
        assert mine.record == theirs.record, mine.doc_id
        assert mine.embed_texts == theirs.embed_texts, mine.doc_id
        assert mine.files is None, "the driver stores the files a task ships"
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
def test_a_task_that_kills_its_worker_becomes_the_local_error_row_and_the_batch_carries_on(executor, tmp_path):
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
def test_a_task_that_hangs_is_stopped_at_the_doc_timeout_and_the_batch_carries_on(executor, tmp_path):
    names = ["a.md", "b-hang.md", "c.md", "d-hang.md", "e.md", "f.md"]
    jobs = _markdown_jobs(tmp_path / "c", names)
    started = time.perf_counter()
    results = _process(jobs, tmp_path / "idx", 4, failing)
    seconds = time.perf_counter() - started
    assert [r.doc_id for r in results] == names
    for job, result in zip(jobs, results):
        if "hang" in job.doc_id:
            assert result.record == timed_out_result(job, 4).record
        else:
            assert result.record.status is DocStatus.OK
    assert seconds < 120, f"two 4 s timeouts took {seconds:.0f} s"
    # The cancelled tasks' worker processes were killed, not left looping.
    deadline = time.time() + 20
    while time.time() < deadline and [p for p in ray_processes() if p.name() == "ray::parse_remote"]:
        time.sleep(0.5)
    assert not [p for p in ray_processes() if p.name() == "ray::parse_remote"], "a hung task's worker survived"


@pytest.mark.slow
@pytest.mark.spawns
def test_a_task_that_finds_its_node_different_stops_the_build_with_the_nodes_reason(executor, tmp_path):
    jobs = _markdown_jobs(tmp_path / "c", ["a.md", "b-othernode.md"])
    with pytest.raises(ClusterError, match="runs another spanindex"):
        _process(jobs, tmp_path / "idx", 60, failing)


@pytest.mark.slow
@pytest.mark.spawns
def test_embedding_actors_give_the_vectors_of_an_in_process_embedder(executor, real_embedder):
    import ray

    texts = [f"Overage on plan {i} is billed at ${i}.12 per 1,000 API calls." for i in range(40)]
    with executor.embedding(resolve_model()) as embedder:
        assert (embedder.model_id, embedder.dim) == (real_embedder.model_id, real_embedder.dim)
        vectors = embedder.embed(texts)
        assert embedder.embed([]).shape == (0, real_embedder.dim)
        actor = embedder.actors[0]
    assert vectors.dtype == np.float32 and vectors.shape == (40, real_embedder.dim)
    np.testing.assert_allclose(vectors, real_embedder.embed(texts), atol=1e-5)
    with pytest.raises(ray.exceptions.RayActorError):  # the pool ends with the block: its CPU is free again
        ray.get(actor.identity.remote(), timeout=60)
