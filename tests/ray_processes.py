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


def wait_for_no_strays(before: set[int], seconds: float) -> list[str]:
    """The Ray processes that were not running in ``before`` and are still alive after ``seconds``."""
    deadline = time.time() + seconds
    while True:
        strays = [p for p in ray_processes() if p.pid not in before]
        if not strays or time.time() > deadline:
            return [f"{p.pid} {p.info['name']}" for p in strays]
        time.sleep(0.5)


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
    psutil.wait_procs(processes, timeout=10)
