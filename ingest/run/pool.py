"""Run the per-file work in worker processes, a bounded window ahead of the consumer.

Results come back in file order, so the index is written in a deterministic
order. A worker that dies (a native crash inside a parser, the kernel's OOM
killer) breaks the pool: the files that were in flight are then retried one
by one in a fresh process, the one that kills its process again becomes an
error row, and the batch carries on. A file whose parsing outlasts
``timeout_s`` (a parser stuck in a loop) has its pool's processes killed and
becomes an error row; the other files in flight are run again.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, TimeoutError
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

from ingest.run.worker import (
    DocResult,
    FileJob,
    WorkerSettings,
    crashed_result,
    init_worker,
    process_file,
    timed_out_result,
)

# Files in flight per worker. Results come in file order: while one slow file parses (OCR of a
# form: 24 s), the others must run far enough ahead for the model to have chunks to embed. With
# 2, a build of the shared corpus (onnx) waited 31 s of its 74 s on parsing; with 4, 9 of 67.
WINDOW_PER_WORKER = 4


def process_in_workers(
    jobs: list[FileJob],
    settings: WorkerSettings,
    workers: int,
    work: Callable[[FileJob], DocResult] = process_file,
    timeout_s: float | None = None,
) -> Iterator[DocResult]:
    """``work`` (a module-level function) over ``jobs`` in ``workers`` processes; results in job order.

    ``timeout_s`` bounds each file, counted from when it is the oldest in flight (so it
    is running); with ``workers <= 1`` everything runs in this process, unbounded.
    """
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
                    while pending and len(window) < WINDOW_PER_WORKER * workers:
                        job = pending.popleft()
                        window.append((job, pool.submit(work, job)))
                    job, future = window[0]
                    try:
                        result = future.result(timeout=timeout_s)
                    except TimeoutError:
                        _kill_workers(pool)
                        window.popleft()
                        pending.extendleft(reversed([j for j, _ in window]))  # not their fault: run again
                        window.clear()
                        yield timed_out_result(job, timeout_s)
                        break
                    window.popleft()
                    yield result
            except BrokenProcessPool:
                suspects = [job for job, _ in window]
            except GeneratorExit:  # the consumer stopped (a full disk): files in flight are not waited for
                _kill_workers(pool)
                raise
        for job in suspects:
            yield _isolated(job, settings, work, timeout_s)


def _isolated(job: FileJob, settings: WorkerSettings, work, timeout_s: float | None) -> DocResult:
    with _pool(settings, 1) as pool:
        try:
            return pool.submit(work, job).result(timeout=timeout_s)
        except BrokenProcessPool:
            return crashed_result(job)
        except TimeoutError:
            _kill_workers(pool)
            return timed_out_result(job, timeout_s)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    # The executor cannot cancel a running call (Python 3.14 adds kill_workers()); killing
    # its processes breaks it, and leaving the `with` block then returns at once.
    for process in list((pool._processes or {}).values()):
        process.kill()


def _pool(settings: WorkerSettings, workers: int) -> ProcessPoolExecutor:
    # spawn, not fork: the consuming process may already hold torch's threads.
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=init_worker,
        initargs=(settings,),
    )
