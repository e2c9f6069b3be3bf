"""A build on Ray is a local build: the same generation row for row, the same reuse, the same safety.

One real Ray instance (2 CPUs) is started for this module and stopped after it; the
driver killed with kill -9 runs its own. Nothing Ray started may be left running.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from index.fsck import fsck
from index.store import Generation
from ingest.build import BuildSettings, build_index
from ingest.corpus import discover
from schemas.layout import IndexPaths, read_current
from schemas.records import DocStatus, MediaType

import doubles
from conftest import ROOT, SAMPLE_CORPUS, SHARED_CORPUS, needs_shared_corpus, spanindex_command
from doubles import HashingEmbedder
from ray_processes import descendants, kill_all, ray_processes, wait_for_no_strays

pytestmark = [pytest.mark.slow, pytest.mark.spawns]  # a Ray instance: processes, and seconds to start

TABLES = ("documents", "chunks", "pdf_chars", "pdf_pages", "html_map", "hidden_text")


@pytest.fixture(scope="module")
def ray_executor():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    from ingest.run.ray_driver import RayExecutor, RaySettings

    ray.cloudpickle.register_pickle_by_value(doubles)  # tests/ is not importable on Ray's workers
    before = {p.pid for p in ray_processes()}
    with RayExecutor(RaySettings(num_cpus=2)) as executor:
        yield executor
    strays = wait_for_no_strays(before, seconds=30)
    assert not strays, f"Ray processes left running after shutdown: {strays}"


def live_generation(index_dir: Path) -> Generation:
    paths = IndexPaths(Path(index_dir))
    return Generation(paths, read_current(paths))


def assert_same_generation(mine: Path, theirs: Path, atol: float, same_files: bool = True) -> None:
    """Row for row the same tables, vectors equal within ``atol``, and (unless an index keeps
    older generations' texts) the same texts and sources."""
    a, b = live_generation(mine), live_generation(theirs)
    for name in TABLES:
        assert a.table(name).equals(b.table(name)), f"{name} differs"
    assert a.manifest.files == b.manifest.files and a.manifest.documents_by_status == b.manifest.documents_by_status
    assert a.vectors().shape == b.vectors().shape
    np.testing.assert_allclose(a.vectors(), b.vectors(), atol=atol, rtol=0)
    for folder in ("texts", "sources") if same_files else ():
        names = sorted(p.name for p in (Path(mine) / folder).iterdir())
        assert names == sorted(p.name for p in (Path(theirs) / folder).iterdir()), folder
    assert fsck(mine) == []


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


def test_files_that_crash_or_hang_their_ray_task_become_error_rows_and_the_rest_is_indexed(ray_executor, tmp_path):
    from ingest.run.ray_driver import RayExecutor, RaySettings
    from ingest.run.worker import FileJob, crashed_result, timed_out_result

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


_DRIVER = """
import sys
sys.path.insert(0, {tests!r})
import ray, doubles
from ingest.build import BuildSettings, build_index
from ingest.corpus import discover
from ingest.run.ray_driver import RayExecutor, RaySettings
ray.cloudpickle.register_pickle_by_value(doubles)
with RayExecutor(RaySettings(num_cpus=2)) as executor:
    build_index(sys.argv[1], sys.argv[2], BuildSettings(), embedder=doubles.HashingEmbedder(), executor=executor,
                progress=lambda step: print("PROGRESS", step.done, step.total, flush=True))
print("DONE", flush=True)
"""


def test_a_ray_driver_killed_mid_build_leaves_the_previous_generation_serving_and_fsck_clean(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    index_dir = tmp_path / "idx"
    build_index(corpus, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    previous = live_generation(index_dir).manifest
    (corpus / "docs" / "edit.md").write_text("A file the killed build was adding.\n")
    shutil.rmtree(corpus / "web")

    before = {p.pid for p in ray_processes()}
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER.format(tests=str(ROOT / "tests")), str(corpus), str(index_dir)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    started = []
    try:
        for line in driver.stdout:
            if line.startswith("PROGRESS"):
                done, total = map(int, line.split()[1:])
                if done >= total // 2:
                    break
        else:
            pytest.fail(f"the driver ended before the middle of its build (exit {driver.wait()})")
        assert list((index_dir / "generations").glob(".*.tmp-*")), "the build is not writing a generation"
        started = descendants(driver.pid)
        driver.kill()  # SIGKILL: no cleanup of any kind
        driver.wait()

        assert fsck(index_dir) == []
        live = live_generation(index_dir).manifest
        assert (live.generation, live.files) == (previous.generation, previous.files)
        # The next build clears the killed one's debris and publishes the edited corpus.
        report = build_index(corpus, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
        assert not list((index_dir / "generations").glob(".*.tmp-*"))
        assert report.added == 1 and report.removed > 0 and fsck(index_dir) == []
        assert "docs/edit.md" in live_generation(index_dir).manifest.files
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        # A killed driver's Ray leaves agents running for a minute (FACTS.md): end the ones it started.
        kill_all([p for p in started if p.is_running()])
        time.sleep(1)
    assert not wait_for_no_strays(before, seconds=30)


def _cli_env(**extra: str) -> dict[str, str]:
    # The test embedder is shipped to Ray's actors, which import it from tests/ (on PYTHONPATH,
    # inherited by the workers of the Ray instance the build starts).
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), **extra}


def test_the_cli_builds_on_a_ray_instance_of_its_own_and_leaves_no_process_behind(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    before = {p.pid for p in ray_processes()}
    done = subprocess.run(spanindex_command("build", SAMPLE_CORPUS, "--index", tmp_path / "idx", "--executor", "ray",
                                            "--quiet", test_embedder=True),
                          cwd=ROOT, env=_cli_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran on a local Ray instance: 1 node" in done.stdout and "1 embedding actors" in done.stdout
    assert fsck(tmp_path / "idx") == []
    strays = wait_for_no_strays(before, seconds=30)
    assert not strays, f"the build's Ray instance left processes running: {strays}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_cli_joins_a_running_cluster_by_address_and_by_ray_client_and_leaves_it_running(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    gcs_port, client_port = _free_port(), _free_port()
    before = {p.pid for p in ray_processes()}
    # A one-node cluster as `ray start` makes it; with --block it stops what it started on SIGTERM.
    head = subprocess.Popen(
        [str(Path(sys.executable).parent / "ray"), "start", "--head", "--block", "--num-cpus=2", f"--port={gcs_port}",
         f"--ray-client-server-port={client_port}", "--include-dashboard=false", "--disable-usage-stats"],
        env=_cli_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started = []
    try:
        for line in head.stdout:
            if "Ray runtime started" in line:
                break
        else:
            pytest.fail(f"ray start ended ({head.wait()})")
        started = descendants(head.pid)
        env = _cli_env(RAY_AUTH_MODE="token")  # Ray's clusters take a token; the driver sends it
        for address, expect in ((f"127.0.0.1:{gcs_port}", "added"), (f"ray://127.0.0.1:{client_port}", "unchanged")):
            done = subprocess.run(spanindex_command("build", SAMPLE_CORPUS, "--index", tmp_path / "idx", "--executor", "ray",
                                                    "--ray-address", address, "--quiet", test_embedder=True),
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
            assert f"ran on the Ray cluster at {address}" in done.stdout
            assert f"{len(discover(SAMPLE_CORPUS).files)} {expect}" in done.stdout, done.stdout
            assert fsck(tmp_path / "idx") == []
            assert head.poll() is None and all(p.is_running() for p in started if p.name() in ("raylet", "gcs_server")), \
                "the build stopped the cluster it joined"
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        left = [p for p in ray_processes() if p.pid not in before]
        kill_all(left)  # what `ray start` did not stop (its agents, like an abrupt driver's)
