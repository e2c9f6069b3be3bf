"""Where a build's work runs: this machine's process pool, or a Ray cluster.

A build needs two things done for it: each file parsed and chunked (the same
``ingest.run.worker`` code everywhere), and chunk texts embedded (the same
``Embedder`` everywhere). An executor decides only where that code runs; the
build that orders, reuses, writes and publishes is one and the same.

>>> with LocalExecutor(workers=1) as executor:
...     executor.describe()
'local (1 worker process)'
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from ingest.embed import Embedder, ModelInfo
from ingest.run.segment_sink import LocalSegmentSink, SegmentSink, SegmentTarget
from ingest.run.worker import DocResult, FileJob, WorkerSettings, process_file
from schemas.embedding import Device, EmbedBackend


class Executor(Protocol):
    """Runs the per-file work and the embedding of one build."""

    def process(self, jobs: Sequence[FileJob], settings: WorkerSettings, timeout_s: float | None) -> Iterator[DocResult]:
        """One result per job, in job order.

        By the time a result is yielded, its document text and source are stored under
        ``settings.index_root``. A file that crashes its worker becomes
        ``worker.crashed_result``; one still parsing ``timeout_s`` seconds after it
        started becomes ``worker.timed_out_result``; the batch carries on.
        """
        ...

    def embedding(self, model: ModelInfo, embedder: Embedder | None = None,
                  backend: EmbedBackend = EmbedBackend.TORCH, device: Device = Device.AUTO,
                  ) -> AbstractContextManager[Embedder]:
        """The embedder a build calls, for the length of the ``with`` block: ``model`` run by
        ``backend`` on ``device`` where this executor embeds, or ``embedder`` (one passed in,
        such as a test double) run there."""
        ...

    def segment_sink(self, target: SegmentTarget, embedder: Embedder, live=None) -> SegmentSink:
        """Where the build's new rows are written (``ingest.run.segment_sink``): ``embedder`` is the
        one ``embedding`` gave, ``live`` the live generation (``ingest.store.LiveGeneration``) whose
        vectors unchanged chunk texts reuse."""
        ...

    def describe(self) -> str:
        """Where the work runs, in a few words (for the build's report)."""
        ...

    def close(self) -> None:
        """Stop what this executor started; safe to call twice."""
        ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc) -> None: ...


class LocalExecutor:
    """Worker processes on this machine parse; this process embeds."""

    def __init__(self, workers: int = 0, work: Callable[[FileJob], DocResult] = process_file) -> None:
        self.workers = workers or os.cpu_count() or 1  # 1: everything in this process
        self.work = work  # a module-level function: it is sent to the worker processes

    def process(self, jobs: Sequence[FileJob], settings: WorkerSettings, timeout_s: float | None) -> Iterator[DocResult]:
        from ingest.run.pool import process_in_workers

        return process_in_workers(list(jobs), settings, self.workers, work=self.work, timeout_s=timeout_s)

    @contextlib.contextmanager
    def embedding(self, model: ModelInfo, embedder: Embedder | None = None,
                  backend: EmbedBackend = EmbedBackend.TORCH, device: Device = Device.AUTO) -> Iterator[Embedder]:
        if embedder is None:
            from ingest.embed import make_embedder

            # The parse workers run on the cores the model's threads would spin on.
            embedder = make_embedder(model, backend, device, spin=self.workers <= 1)
        yield embedder

    def segment_sink(self, target: SegmentTarget, embedder: Embedder, live=None) -> SegmentSink:
        return LocalSegmentSink.over(target, embedder, live)

    def describe(self) -> str:
        return f"local ({self.workers} worker process{'es' if self.workers != 1 else ''})"

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
