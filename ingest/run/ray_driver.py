"""Run a build on a Ray cluster: parsing and chunking as Ray tasks, embedding in Ray actors,
segments written by Ray actors.

The driver (the process that runs the build) reads each file and ships its bytes to a task through
Ray's object store (an object of a store the task reads itself, on its node), at most
``in_flight`` files ahead of the one it is waiting for, and takes the results in file order. A task
runs the same ``ingest.run.worker`` code as a local worker process and returns three objects: a
summary (the document's record), which the driver takes; the bytes it read, if it read them; and
the rows, which the driver passes by reference, with the bytes, to a segment writer actor
(``ingest.run.ray_segments``) that stores the text and source, embeds the chunks
and writes the segment. The driver only routes, counts and commits: it holds no
table, however large the corpus. Workers need neither the corpus nor the index
folder; writers need the index folder (they run on the driver's node unless it
is shared). Every node must run the same spanindex, parser libraries and model
as the driver: a node that differs stops the build (``ClusterError``) before
anything is written from it. What runs on the nodes is ``ingest.run.ray_nodes``.

``--doc-timeout`` counts from when a task starts its file (each task signs in
on a start board once its worker has checked the node and loaded the
tokenizer), not from when it was submitted, so files that wait for a busy or
still-scaling cluster, or for a new worker to set up, are not timed out (Ray
runs its workers niced: on a loaded node a worker's set-up alone took longer
than a test's 5 s timeout); a task past its time is cancelled
with its worker process killed. A task whose worker dies is run once more (a
node can be lost); a file that kills its worker again becomes the error row a
local build gives it.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import logging
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ingest.corpus import store_location
from ingest.embed import Embedder, ModelInfo
from ingest.run.ray_nodes import EmbedActor, StartBoard, node_expectations, parse_remote
from ingest.run.segment_sink import SegmentSink, SegmentTarget
from ingest.run.worker import (
    DocResult,
    FileJob,
    RemoteRows,
    WorkerSettings,
    crashed_result,
    joined_rows,
    process_source,
    read_mtime,
    read_source,
    store_document,
    timed_out_result,
)
from schemas.embedding import Device, EmbedBackend
from schemas.errors import ClusterError

POLL_S = 1.0  # how often the driver asks whether a task it waits for has started


@dataclass(frozen=True, slots=True)
class RaySettings:
    """Where and how wide a Ray build runs.

    ``address``: None starts a Ray instance on this machine for the build and stops it
    after; ``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:PORT"`` joins a running cluster
    and leaves it running.
    """

    address: str | None = None
    embed_actors: int = 0  # 0: one per GPU of the cluster, or one (on a CPU) where it has none
    in_flight: int = 0  # files shipped ahead of the one the driver waits for; 0: twice the cluster's CPUs
    num_cpus: int | None = None  # CPUs of the instance started when there is no address (None: all)
    crash_retries: int = 1  # a task whose worker dies is run again this many times before its file fails
    segment_documents: int = 10_000  # files per segment a writer actor writes (the last one fewer)
    shared_index: bool = False  # the index folder is at the same path on every node: writers run anywhere


class RayExecutor:
    """Parse and chunk in Ray tasks, embed and write segments in Ray actors; the driver commits.

    >>> with RayExecutor(RaySettings(num_cpus=2)) as executor:   # doctest: +SKIP
    ...     report = build_index("corpus", "index", executor=executor)
    """

    def __init__(self, settings: RaySettings = RaySettings(),
                 work: Callable[[FileJob, bytes], DocResult] = process_source) -> None:
        self.settings = settings
        self.work = work  # a module-level function, run in the tasks on each file's bytes
        self.in_flight = 0
        self._ray = None
        self._owns_ray = False
        self._board = None
        self._parse = None
        self._parse_here = None  # the task with the environment of this build's store
        self._actors: list = []
        self._keys = itertools.count()
        self._signed_out: list[int] = []

    # -- the cluster ---------------------------------------------------------------------

    def __enter__(self) -> RayExecutor:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        if self._ray is not None:
            return
        ray = _import_ray()
        if not ray.is_initialized():
            quiet = dict(log_to_driver=False, logging_level=logging.ERROR)
            if self.settings.address is None:
                ray.init(address="local", num_cpus=self.settings.num_cpus, include_dashboard=False, **quiet)
            else:
                _check_reachable(self.settings.address)
                try:
                    _join(ray, self.settings.address, quiet)
                except (ConnectionError, ValueError, RuntimeError) as exc:
                    raise ClusterError(
                        f"cannot join the Ray cluster at {self.settings.address!r}: {exc} (a cluster with token "
                        "authentication needs RAY_AUTH_MODE=token and its token, as any Ray driver does)"
                    ) from None
            self._owns_ray = True
        self._ray = ray
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.in_flight = self.settings.in_flight or max(2, 2 * cpus)
        self._board = ray.remote(num_cpus=0)(StartBoard).remote()
        self._parse = ray.remote(num_cpus=1, max_retries=0, num_returns=3)(parse_remote)

    def close(self) -> None:
        ray, self._ray = self._ray, None
        if ray is None:
            return
        actors, self._actors, self._board = [*self._actors, self._board], [], None
        if self._owns_ray:
            # Stops the instance this executor started; from a joined cluster it disconnects,
            # and the cluster ends the actors this driver owned. The cluster keeps running.
            ray.shutdown()
            self._owns_ray = False
        else:  # Ray was started by our caller, who goes on using it
            for actor in actors:
                if actor is not None:
                    ray.kill(actor)

    def describe(self) -> str:
        ray = self._require()
        resources = ray.cluster_resources()
        nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        where = "a local Ray instance" if self.settings.address is None else f"the Ray cluster at {self.settings.address}"
        gpus = int(resources.get("GPU", 0))
        return (f"{where}: {nodes} node{'s' if nodes != 1 else ''}, {int(resources.get('CPU', 0))} CPUs"
                f"{f', {gpus} GPUs' if gpus else ''}; {len(self._actors) or 'no'} embedding actors")

    def _require(self):
        if self._ray is None:
            raise ClusterError("the Ray executor is not started: use it as a context manager")
        return self._ray

    # -- parsing and chunking ------------------------------------------------------------

    def process(self, jobs: Sequence[FileJob], settings: WorkerSettings, timeout_s: float | None = None) -> Iterator[DocResult]:
        """Each file's bytes parsed and chunked in a Ray task; results in job order, without their
        rows: a task's rows and the file's bytes stay on the cluster (``DocResult.remote``) for the
        build's segment writers (``segment_sink``), or for ``fetch``."""
        ray, work = self._require(), self.work
        expected = node_expectations(settings.model)
        shipped = ray.put(dataclasses.replace(settings, index_root=None))
        # Tasks read a store's objects themselves: the driver's idea of where its URLs point goes with them.
        location = store_location()
        self._parse_here = self._parse.options(runtime_env={"env_vars": location}) if location else self._parse
        window: collections.deque[_Flight] = collections.deque()
        pending = iter(jobs)
        try:
            while True:
                while len(window) < self.in_flight and (job := next(pending, None)) is not None:
                    window.append(self._submit(job, shipped, settings, expected, work))
                if not window:
                    return
                flight = window.popleft()
                result = flight.result or self._finish(flight, window, timeout_s)
                self._signed_out.extend(flight.keys)
                if len(self._signed_out) >= 256:  # the board forgets the tasks that are done
                    self._board.forget.remote(self._signed_out)
                    self._signed_out = []
                yield result
        finally:
            for flight in window:  # the consumer stopped early (an error, an interrupt)
                if flight.task is not None:
                    ray.cancel(flight.task, force=True)

    def _submit(self, job, shipped, settings: WorkerSettings, expected, work) -> _Flight:
        job = dataclasses.replace(job, read_mtime_ns=read_mtime(job))  # before reading: a write after shows
        source = None  # an object in a store: its task reads it (the corpus never passes through the driver)
        if not job.url:
            read = read_source(job, settings)
            if isinstance(read, DocResult):  # too large, unreadable, or unchanged: no task needed
                return _Flight(job, result=read)
            source = self._ray.put(read)
        flight = _Flight(job, source=source, call=(shipped, expected, work))
        self._launch(flight)
        return flight

    def _launch(self, flight: _Flight) -> None:
        flight.key = next(self._keys)
        flight.keys.append(flight.key)
        flight.submitted_at, flight.started_at = time.time(), None
        shipped, expected, work = flight.call
        flight.task, flight.rows, flight.read = self._parse_here.remote(self._board, flight.key, flight.job,
                                                                        flight.source, shipped, expected, work)

    def fetch(self, result: DocResult, index_root: Path | None = None) -> DocResult:
        """A result of ``process`` with its rows, its files stored under ``index_root`` where given."""
        if result.remote is None:
            return result
        whole = joined_rows(result, self._require().get(result.remote.rows))
        if index_root is not None and whole.files is not None:
            store_document(index_root, whole.record, self._ray.get(result.remote.source), whole.files)
            whole.files = None
        return whole

    def segment_sink(self, target: SegmentTarget, embedder: Embedder, live=None) -> SegmentSink:
        """Where the build's rows are written (``ingest.run.ray_segments``): by writer actors, a
        segment per run of ``RaySettings.segment_documents`` files, on the driver's node (on any
        node with ``RaySettings.shared_index``, or for an index in a bucket, which writers upload
        to themselves); by the driver itself when it is a Ray Client whose index folder no node of
        the cluster reaches. ``embedder``: this build's (``embedding``)."""
        from ingest.run.ray_segments import DriverSegmentSink, RaySegmentSink

        ray = self._require()
        if not isinstance(embedder, RayEmbedder):
            raise TypeError("a Ray build embeds with the executor's actors: RayExecutor.embedding")
        anywhere = self.settings.shared_index or bool(target.bucket_url)
        if ray.util.client.ray.is_connected() and not anywhere:
            return DriverSegmentSink(self, target, embedder, live)
        node = None if anywhere else ray.get_runtime_context().get_node_id()
        return RaySegmentSink(ray, target, embedder.actors, self.settings.segment_documents, live, node)

    def _finish(self, flight: _Flight, window: collections.deque[_Flight], timeout_s: float | None) -> DocResult:
        ray = self._ray
        while True:
            if not self._wait(flight, window, timeout_s):
                return self._stop(flight, timeout_s)
            try:
                summary = ray.get(flight.task)
                # its rows and bytes, on the cluster (the bytes the task read, for an object in a store)
                summary.remote = RemoteRows(flight.rows, flight.read if flight.source is None else flight.source)
                return summary
            except _crash_errors(ray):
                if flight.attempts > self.settings.crash_retries:
                    return crashed_result(flight.job)
                flight.attempts += 1
                self._launch(flight)
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause
                if isinstance(cause, ClusterError):
                    raise ClusterError(cause.message) from None
                raise ClusterError(f"the Ray task failed outside the parser: {cause!r}", doc_id=flight.job.doc_id) from exc

    def _wait(self, flight: _Flight, window: collections.deque[_Flight], timeout_s: float | None) -> bool:
        """Until ``flight``'s task is done (True), or has run ``timeout_s`` since it started (False).

        Tasks behind it that overrun their time are stopped meanwhile: a younger task stuck
        in a loop would otherwise hold the worker the one waited for needs.
        """
        ray = self._ray
        if timeout_s is None:
            ray.wait([flight.task], timeout=None)
            return True
        while True:
            running = [f for f in (flight, *window) if f.result is None and f.task is not None]
            self._learn_starts(running)
            now = time.time()
            for other in running[1:]:
                if other.started_at is not None and now >= other.started_at + timeout_s:
                    if not ray.wait([other.task], timeout=0)[0]:
                        other.result = self._stop(other, timeout_s)
            deadlines = [f.started_at + timeout_s for f in running if f.started_at is not None and f.result is None]
            left = min([now + POLL_S, *deadlines]) - now
            ready, _ = ray.wait([flight.task], timeout=max(0.0, left))
            if ready:
                return True
            if flight.started_at is not None and time.time() >= flight.started_at + timeout_s:
                return False

    def _learn_starts(self, flights: list[_Flight]) -> None:
        """When the tasks that had not yet signed in on the start board started, if they have."""
        waiting = [f for f in flights if f.started_at is None]
        if not waiting:
            return
        try:
            signed_in = self._ray.get(self._board.since.remote([f.key for f in waiting]))
        except self._ray.exceptions.RayActorError as exc:
            raise ClusterError(f"the start board did not start: {_actor_failure(exc)}") from None
        for f in waiting:
            if signed_in.get(f.key) is not None:  # a worker's clock: bounded by what the driver saw
                f.started_at = min(time.time(), max(f.submitted_at, signed_in[f.key]))

    def _stop(self, flight: _Flight, timeout_s: float) -> DocResult:
        self._ray.cancel(flight.task, force=True)  # kills its worker process: a parser stuck in a loop stops
        return timed_out_result(flight.job, timeout_s)

    # -- embedding -----------------------------------------------------------------------

    @contextlib.contextmanager
    def embedding(self, model: ModelInfo, embedder: Embedder | None = None,
                  backend: EmbedBackend = EmbedBackend.TORCH, device: Device = Device.AUTO) -> Iterator[RayEmbedder]:
        """A pool of actors, each loading ``model`` once (or running ``embedder``, shipped to them),
        for the length of the ``with`` block: their CPUs or GPUs are the cluster's again after it."""
        ray = self._require()
        gpus = int(ray.cluster_resources().get("GPU", 0))
        size = self.settings.embed_actors or max(gpus, 1)
        options = dict(num_gpus=1, num_cpus=1) if gpus else dict(num_cpus=1)
        actor_class = ray.remote(max_restarts=1, max_task_retries=1, **options)(EmbedActor)
        expected = node_expectations(model)
        actors = [actor_class.remote(model, embedder, expected, backend, device) for _ in range(size)]
        self._actors.extend(actors)
        try:
            yield RayEmbedder(ray, actors)
        finally:
            for actor in actors:
                ray.kill(actor, no_restart=True)
                self._actors.remove(actor)


@dataclass(slots=True, eq=False)
class _Flight:
    """One file between the driver and the cluster."""

    job: FileJob
    result: DocResult | None = None  # known without a task (unreadable, unchanged, too large)
    source: object = None  # the ObjectRef of the file's bytes
    call: tuple = ()
    task: object = None  # the ObjectRef of the task's DocResult (its summary)
    rows: object = None  # the ObjectRef of the task's DocRows
    read: object = None  # the ObjectRef of the bytes the task read (an object in a store), or of None
    key: int = -1  # the task's entry on the start board
    keys: list[int] = dataclasses.field(default_factory=list)  # every attempt's
    submitted_at: float = 0.0
    started_at: float | None = None
    attempts: int = 1


# How a Ray Client head says that the server it starts for each driver did not come up: the
# proxier's own error, or a traceback from inside its start (the new server already dead, a zombie).
_CLIENT_SERVER_FAILED = ("Starting Ray client server failed", "start_specific_server")


def _join(ray, address: str, options: dict, attempts: int = 5, pause_s: float = 2.0) -> None:
    """``ray.init`` on a running cluster. A Ray Client head starts a server process for each
    driver, and that start fails now and then (slow on a loaded head; on an idle one the new
    process died at once, forked while the head's gRPC threads ran; on a head with both cores
    taken, three tries 2 s and 4 s apart all failed once): that failure is tried again, for 20 s.

    >>> class FlakyHead:
    ...     calls = 0
    ...     def init(self, address, **options):
    ...         FlakyHead.calls += 1
    ...         if FlakyHead.calls == 1:
    ...             raise ConnectionAbortedError("Initialization failure from server: in start_specific_server")
    ...     def shutdown(self): pass
    >>> _join(FlakyHead(), "ray://head:10001", {}, pause_s=0); FlakyHead.calls
    2
    """
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=address, **options)
            return
        except ConnectionError as exc:
            if attempt == attempts or not any(sign in str(exc) for sign in _CLIENT_SERVER_FAILED):
                raise
            ray.shutdown()  # whatever the failed attempt left connected
            time.sleep(pause_s * attempt)


def _crash_errors(ray) -> tuple[type[BaseException], ...]:
    """The failures that take a task's worker (or its node) down: not the file's text, its process."""
    e = ray.exceptions
    return (e.WorkerCrashedError, e.OutOfMemoryError, e.NodeDiedError, e.LocalRayletDiedError, e.ObjectLostError)


class RayEmbedder:
    """An ``Embedder`` on a pool of Ray actors: a build's batches go to them in turn, two per
    actor in flight (``embed_later``); ``embed`` splits one batch over all of them."""

    def __init__(self, ray, actors: list) -> None:
        self._ray = ray
        self.actors = actors
        self.batches_ahead = 2 * len(actors)
        self._turn = itertools.cycle(actors)
        try:
            identities = ray.get([actor.identity.remote() for actor in actors])
        except ray.exceptions.RayActorError as exc:
            raise ClusterError(f"an embedding actor did not start: {_actor_failure(exc)}") from None
        if len({(model_id, dim, backend) for model_id, dim, _, backend, _ in identities}) != 1:
            raise ClusterError(f"the embedding actors disagree on the model: {sorted(set(identities))}")
        self.model_id, self.dim, _, self.backend, _ = identities[0]
        self.devices = collections.Counter(where for _, _, where, _, _ in identities)
        # The manifest records one device: the actors' commonest (all alike on a uniform cluster).
        self.device = collections.Counter(device for *_, device in identities).most_common(1)[0][0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = -(-len(texts) // len(self.actors))
        pieces = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        calls = [actor.embed.remote(piece) for actor, piece in zip(self.actors, pieces)]
        return _PendingVectors(self._ray, calls).result()

    def embed_later(self, texts: Sequence[str]) -> _PendingVectors:
        return _PendingVectors(self._ray, [next(self._turn).embed.remote(list(texts))])


@dataclass(frozen=True, slots=True)
class _PendingVectors:
    _ray: object
    calls: list

    def result(self) -> np.ndarray:
        try:
            return np.concatenate(self._ray.get(self.calls)).astype(np.float32, copy=False)
        except self._ray.exceptions.RayError as exc:
            raise ClusterError(f"embedding failed on the cluster: {_actor_failure(exc)}") from None


def _actor_failure(exc) -> str:
    cause = getattr(exc, "cause", None)
    return str(cause.message if isinstance(cause, ClusterError) else cause or exc).strip().splitlines()[-1]


def _check_reachable(address: str) -> None:
    """Refuse an address nothing listens on: Ray would retry a GCS address forever."""
    if address == "auto":
        return  # Ray finds the cluster this machine runs, or says there is none
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=10).close()
    except ValueError:
        raise ClusterError(f"--ray-address {address!r} is not auto, HOST:PORT or ray://HOST:PORT") from None
    except OSError as exc:
        raise ClusterError(f"no Ray cluster answers at {address!r}: {exc.strerror or exc}") from None


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ClusterError("--executor ray needs Ray on this machine: pip install 'spanindex[ray]'") from None
    return ray
