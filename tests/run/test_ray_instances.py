"""Ray instances a build starts, joins or loses: each test here starts and stops its own.

A driver killed mid-build leaves the previous generation serving; the command builds on a Ray
instance of its own and leaves no process behind, or joins a running cluster and leaves it
running; an address nothing answers at is refused at once. This module sorts before
``test_ray_on_one_instance.py``, so that no other Ray instance is up while its tests count
the processes Ray leaves.
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

import pytest

import index
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from ingest.corpus import discover
from ingest.embed.model import resolve_model
from ingest.run.ray_driver import _check_reachable
from ingest.run.ray_nodes import NodeExpectations, code_fingerprint, node_model
from schemas.errors import ClusterError

from conftest import ROOT, SAMPLE_CORPUS, live_files, spanindex_command
from doubles import HashingEmbedder
from ray_processes import descendants, kill_all, ray_processes, wait_for_no_strays


def test_an_address_nothing_answers_at_is_refused_at_once_not_retried_forever(monkeypatch):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    attempts = []
    connect = socket.create_connection
    monkeypatch.setattr(socket, "create_connection", lambda where, *a, **k: attempts.append(where) or connect(where, *a, **k))
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ClusterError, match="no Ray cluster answers"):
            _check_reachable(address)
    assert attempts == [("127.0.0.1", port)] * 2, "one try each: refused at once, never retried"
    with pytest.raises(ClusterError, match="is not auto, HOST:PORT or ray://HOST:PORT"):
        _check_reachable("head-node")


def test_a_node_with_other_code_or_another_model_refuses_to_work():
    model = resolve_model()
    same = NodeExpectations(code_fingerprint(), model.model_id, "")
    with pytest.raises(ClusterError, match="another spanindex or other parser libraries"):
        node_model(model, NodeExpectations("0" * 64, model.model_id, same.tokenizer_sha256))
    with pytest.raises(ClusterError, match="has another sentence-transformers/all-MiniLM-L6-v2"):
        node_model(model, same)  # the tokenizer the driver has differs from this node's


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


@pytest.mark.slow
@pytest.mark.spawns
def test_a_ray_driver_killed_mid_build_leaves_the_previous_generation_serving_and_fsck_clean(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    index_dir = tmp_path / "idx"
    build_index(corpus, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    previous = index.open(index_dir).manifest
    previous_files = live_files(index_dir)
    (corpus / "docs" / "edit.md").write_text("A file the killed build was adding.\n")
    shutil.rmtree(corpus / "web")

    before = {p.pid for p in ray_processes()}
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER.format(tests=str(ROOT / "tests")), str(corpus), str(index_dir)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    started = []
    try:
        # Killed as soon as its segment is being written: by a writer actor, from the first document
        # on (the progress lines, read from a pipe, lag behind: a small build can be over by the middle).
        deadline = time.monotonic() + 120
        while not (writing := list((index_dir / "segments").glob(".*.tmp-*"))) and driver.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert writing and driver.poll() is None, f"the build is not writing a segment (exit {driver.poll()})"
        started = descendants(driver.pid)
        driver.kill()  # SIGKILL: no cleanup of any kind
        driver.wait()

        assert fsck(index_dir) == []
        assert index.open(index_dir).manifest.generation == previous.generation
        assert live_files(index_dir) == previous_files
        # The next build clears the killed one's debris and publishes the edited corpus.
        report = build_index(corpus, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
        assert not list((index_dir / "generations").glob(".*.tmp-*"))
        assert not list((index_dir / "segments").glob(".*.tmp-*"))
        assert report.added == 1 and report.removed > 0 and fsck(index_dir) == []
        assert "docs/edit.md" in live_files(index_dir)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        # A killed driver's Ray leaves agents running for a minute (FACTS.md): end the ones it started.
        kill_all([p for p in started if p.is_running()])
    assert not wait_for_no_strays(before)


def _cli_env(**extra: str) -> dict[str, str]:
    # The test embedder is shipped to Ray's actors, which import it from tests/ (on PYTHONPATH,
    # inherited by the workers of the Ray instance the build starts).
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), **extra}


@pytest.mark.slow
@pytest.mark.spawns
def test_the_cli_builds_on_a_ray_instance_of_its_own_and_leaves_no_process_behind(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'spanindex[ray]')")
    before = {p.pid for p in ray_processes()}
    done = subprocess.run(spanindex_command("build", SAMPLE_CORPUS, "--index", tmp_path / "idx", "--executor", "ray",
                                            "--quiet", test_embedder=True),
                          cwd=ROOT, env=_cli_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran on a local Ray instance: 1 node" in done.stdout and "1 embedding actors" in done.stdout
    assert fsck(tmp_path / "idx") == []
    strays = wait_for_no_strays(before)
    assert not strays, f"the build's Ray instance left processes running: {strays}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
@pytest.mark.spawns
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
