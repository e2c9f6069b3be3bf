"""Run the per-file work in worker processes, a bounded window ahead of the consumer.

Results come back in file order, so the index is written in a deterministic
order. A worker that dies (a native crash inside a parser, the kernel's OOM
killer) breaks the pool: the files that were in flight are then retried one
by one in a fresh process, the one that kills its process again becomes an
error row, and the batch carries on.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

from ingest.worker import (
    DocResult,
    FileJob,
    WorkerSettings,
    crashed_result,
    init_worker,
    process_file,
)


def process_in_workers(
    jobs: list[FileJob], settings: WorkerSettings, workers: int, work: Callable[[FileJob], DocResult] = process_file
) -> Iterator[DocResult]:
    """``work`` (a module-level function) over ``jobs`` in ``workers`` processes; results in job order."""
    if workers <= 1:
        init_worker(settings)
        yield from map(work, jobs)
        return
    pending = collections.deque(jobs)
    while pending:
        suspects: list[FileJob] = []
        with _pool(settings, workers) as pool:
            window: collections.deque[tuple[FileJob, Future]] = collections.deque()
            try:
                while pending or window:
                    while pending and len(window) < 2 * workers:
                        job = pending.popleft()
                        window.append((job, pool.submit(work, job)))
                    job, future = window[0]
                    result = future.result()
                    window.popleft()
                    yield result
            except BrokenProcessPool:
                suspects = [job for job, _ in window]
        for job in suspects:
            yield _isolated(job, settings, work)


def _isolated(job: FileJob, settings: WorkerSettings, work) -> DocResult:
    with _pool(settings, 1) as pool:
        try:
            return pool.submit(work, job).result()
        except BrokenProcessPool:
            return crashed_result(job)


def _pool(settings: WorkerSettings, workers: int) -> ProcessPoolExecutor:
    # spawn, not fork: the consuming process may already hold torch's threads.
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=init_worker,
        initargs=(settings,),
    )
