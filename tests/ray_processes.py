"""Ray's processes on this machine, found by name: what a test checks is gone after Ray stops.

A driver that ends abruptly leaves ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent``
running for a minute or more (FACTS.md), so a test that started Ray checks, by name, that
nothing it started is left.
"""

from __future__ import annotations

import time

import psutil

_NAMES = ("raylet", "gcs_server", "plasma_store")
_SCRIPTS = ("ray/dashboard/", "ray/_private/log_monitor.py", "ray/autoscaler/_private/monitor.py",
            "ray/_private/runtime_env/agent/", "ray/_private/workers/default_worker.py")

# How long a stopped Ray's processes may take to exit. Only a process that is still there after
# this long is a stray: a process that exits returns at once (psutil waits on each one), so this
# bounds a failing test, not a passing one, and is sized for a busy machine, not an idle one.
EXIT_WAIT_S = 300


def ray_processes() -> list[psutil.Process]:
    """Every live process of Ray on this machine (workers, agents, raylet, GCS, monitors)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline", "status"]):
        try:
            name = process.info["name"] or ""
            cmdline = " ".join(process.info["cmdline"] or [])
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if name.startswith("ray::") or name in _NAMES or any(s in cmdline for s in _SCRIPTS) or cmdline.startswith("ray::"):
            found.append(process)
    return found


def wait_for_exit(processes: list[psutil.Process], seconds: float = EXIT_WAIT_S) -> list[psutil.Process]:
    """Wait for each of ``processes`` to exit (a zombie has exited: nothing may reap it here);
    the ones still running after ``seconds``."""
    return wait_until_none(lambda: [p for p in processes if _running(p)], seconds)


def wait_for_no_strays(before: set[int], seconds: float = EXIT_WAIT_S) -> list[str]:
    """The Ray processes that were not running in ``before`` and are still alive after ``seconds``
    (returns as soon as the last of them exits)."""
    strays = wait_until_none(lambda: [p for p in ray_processes() if p.pid not in before], seconds)
    return [f"{p.pid} {p.info['name']}" for p in strays]


def wait_until_none(listing, seconds: float = EXIT_WAIT_S) -> list:
    """Call ``listing`` until it is empty, backing off to a second between looks; what it last
    listed once ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    pause = 0.05
    while (found := listing()) and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(1.0, 2 * pause)
    return found


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def kill_all(processes: list[psutil.Process]) -> None:
    """End these processes (ones the test started), by their ids."""
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    wait_for_exit(processes)
