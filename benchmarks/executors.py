"""The local process pool and Ray side by side: one corpus, one run, each build in its own driver.

Each build runs in a fresh process (the driver) so that its peak memory is its own:
the local build's driver embeds (torch and the model live in it), Ray's driver only
reads files, orders results and writes the index (the model lives in the actors).
Ray's start and stop are timed apart from the build. On a shared, loaded machine
wall times say more about the neighbours than about Ray, so the CPU time that all of
a build's processes spent (driver, workers, actors, Ray's own daemons) is reported
beside them: it is the overhead Ray costs. A reindex on Ray after editing one file
shows what the embed cache saves.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_DRIVER = r"""
import json, sys, time
started = time.perf_counter()
kind, corpus, index_dir, skip_model = sys.argv[1:5]
import threading, psutil

# CPU seconds per process of this build (this driver and every process under it: a
# local pool's workers, Ray's daemons, workers and actors), sampled while they live.
seen, stop_sampling = {{}}, threading.Event()
def sample():
    while True:
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            try:
                seen[process.pid] = max(seen.get(process.pid, 0.0), sum(process.cpu_times()[:2]))
            except psutil.NoSuchProcess:
                pass
        if stop_sampling.wait(0.25):
            return
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()

def cpu_seconds():
    stop_sampling.set()
    sampler.join()
    return sum(seen.values())
sys.path.insert(0, {tests!r})
from ingest.build import BuildSettings, build_index
embedder = None
if skip_model == "1":
    import doubles
    embedder = doubles.HashingEmbedder()
if kind == "ray":
    import ray
    from ingest.run.ray_driver import RayExecutor, RaySettings
    ray.cloudpickle.register_pickle_by_value(sys.modules["doubles"]) if embedder else None
    executor = RayExecutor(RaySettings())
else:
    from ingest.run.executors import LocalExecutor
    executor = LocalExecutor()
with executor:
    ready = time.perf_counter()
    report = build_index(corpus, index_dir, BuildSettings(), embedder=embedder, executor=executor)
    built = time.perf_counter()
    cpu_s = cpu_seconds()
stopped = time.perf_counter()
with open("/proc/self/status") as status:
    peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print("RESULT " + json.dumps(dict(
    where=report.executor, cpu_s=cpu_s, startup_s=ready - started, build_s=built - ready, stop_s=stopped - built,
    files=report.n_files, chunks=report.chunks, embedded=report.chunks_embedded, reused=report.chunks_reused,
    changed=report.changed, parse_s=report.parse_seconds, embed_s=report.embed_seconds,
    driver_peak_mb=peak_kb / 1024, worker_peak_mb=report.worker_peak_rss_mb)))
"""


def run_driver(kind: str, corpus: Path, index_dir: Path, skip_model: bool) -> dict:
    """One build in its own driver process; what it measured, and its wall time."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER.format(tests=str(ROOT / "tests")), kind, str(corpus), str(index_dir),
         "1" if skip_model else "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=3600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the {kind} build failed ({done.returncode}): {done.stderr[-2000:]}")
    measured = json.loads(lines[-1].removeprefix("RESULT "))
    measured["wall_s"] = time.perf_counter() - started
    return measured


def edit_one_html_file(corpus: Path) -> tuple[str, int]:
    """Insert a paragraph in the middle of the first HTML file with one: (doc_id, bytes added)."""
    for path in sorted(corpus.rglob("*.html")):
        source = path.read_bytes()
        middle = source.find(b"</p>", len(source) // 2)
        if middle < 0:
            continue
        added = b"</p><p>A paragraph added by the reindex benchmark, in the middle of the page."
        path.write_bytes(source[:middle] + added + source[middle:])
        return path.relative_to(corpus).as_posix(), len(added)
    raise RuntimeError("no HTML file with a paragraph to edit")


def bench_executors(corpus: Path, work: Path, skip_model: bool, report) -> None:
    """Local and Ray builds of ``corpus``, then a reindex on Ray after one edit."""
    try:
        import ray  # noqa: F401
    except ImportError:
        print("== local vs Ray: skipped (ray is not installed: pip install 'spanindex[ray]')")
        return
    print("== local process pool vs Ray (each build in a fresh driver process)")
    copy = shutil.copytree(corpus, work / "executor-corpus")
    local = run_driver("local", copy, work / "executor-local", skip_model)
    on_ray = run_driver("ray", copy, work / "executor-ray", skip_model)
    for name, m in (("local", local), ("ray", on_ray)):
        report(f"executor_{name}", m,
               f"  {name:5}: {m['where']}\n"
               f"         CPU time of all its processes until published {m['cpu_s']:.0f} s; build {m['build_s']:.1f} s ({m['chunks'] / m['build_s']:.1f} chunks/s), start {m['startup_s']:.1f} s, "
               f"stop {m['stop_s']:.1f} s, whole driver {m['wall_s']:.1f} s; driver peak memory {m['driver_peak_mb']:.0f} MB, "
               f"largest parsing worker {m['worker_peak_mb']:.0f} MB")
    report("executor_ray_over_local_build", on_ray["build_s"] / local["build_s"],
           f"  Ray / local: CPU time {on_ray['cpu_s'] / local['cpu_s']:.2f}x (start included), "
           f"build {on_ray['build_s'] / local['build_s']:.2f}x, "
           f"whole driver (start and stop included) {on_ray['wall_s'] / local['wall_s']:.2f}x; "
           f"driver peak memory {on_ray['driver_peak_mb']:.0f} MB vs {local['driver_peak_mb']:.0f} MB")
    doc_id, _ = edit_one_html_file(copy)
    again = run_driver("ray", copy, work / "executor-ray", skip_model)
    report("executor_ray_reindex", again,
           f"  reindex on Ray after editing {doc_id}: {again['changed']} file changed, "
           f"{again['embedded']} chunks embedded, {again['reused']} reused, build {again['build_s']:.1f} s")
    assert local["chunks"] == on_ray["chunks"], "the two builds disagree"


if __name__ == "__main__":
    import tempfile

    def _print(key, value, text):
        print(text)

    folder = Path(tempfile.mkdtemp(prefix="spanindex-executors-"))
    try:
        from benchmarks.corpus import SHARED

        bench_executors(SHARED if SHARED.is_dir() else ROOT / "sample_corpus", folder, "--skip-model" in sys.argv, _print)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
