"""A Ray build's segments, written on the cluster: the driver routes, actors write, the driver commits.

The driver takes each file's summary in file order (``RayExecutor.process``) and passes the
reference to its rows and bytes on to a ``SegmentWriterActor``, which resolves them where it
runs, stores the document's text and source, embeds its chunks on the build's embedding
actors and writes the rows into a segment folder under the index (a folder every node
reaches). Each writer takes a run of ``segment_documents`` consecutive files: the driver
knows each file's chunk count from its summary, so it gives each writer the first vector id
of its run, and the vector ids, the rows and their order are those of a local build. What
comes back is what the manifest needs: the segment's ref and its counts. The driver's memory
therefore holds no table, however large the corpus.

For an index in a bucket (``SegmentTarget.bucket_url``) writers run on any node: each writes its
segment, the texts and sources of its documents and the segment's vector shard (of the template
the driver expects to keep) in a folder of its own on its node, uploads them to the bucket under
the generation the build has claimed, and removes the folder. The driver uploads only the
generation's manifest and deletions: no folder is shared, and no segment passes through the driver.
"""

from __future__ import annotations

import collections
import dataclasses
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ingest.corpus import store_location
from ingest.run.ray_nodes import check_code, code_fingerprint
from ingest.run.segment_sink import (
    KnownChunks,
    KnownVectorStore,
    LocalSegmentSink,
    SegmentFeed,
    SegmentTarget,
    SinkReport,
    merged_here,
    segment_folder,
)
from ingest.run.worker import DocResult, DocRows, store_document
from schemas.errors import ClusterError, IndexWriteError, SpanindexError
from schemas.layout import IndexPaths
from schemas.records import DocumentRecord, SegmentRef

CALLS_AHEAD = 64  # documents sent to writers and not yet written: what the object store holds for them


class SegmentWriterActor:
    """Writes one segment on a node: documents in file order, then ``finish``."""

    def __init__(self, target: SegmentTarget, name: str, first_vector_id: int, embed_actors: list,
                 expected_code: str) -> None:
        import ray

        from ingest.run.ray_driver import RayEmbedder

        check_code(expected_code)
        self.scratch = None  # an index in a bucket: this writer's own folder on its node, uploaded at the end
        if target.bucket_url:
            self.scratch = Path(tempfile.mkdtemp(prefix=f"spanindex-segment-{name}-"))
            target = dataclasses.replace(target, paths=IndexPaths(self.scratch))
        self.target = target
        self.name = name
        target.paths.segments.mkdir(parents=True, exist_ok=True)
        self.known: dict[str, int] = {}
        self.known_vectors = KnownVectorStore(target.dim)
        self.feed = SegmentFeed(segment_folder(target.paths, name), target, RayEmbedder(ray, embed_actors),
                                first_vector_id, self.known, self.known_vectors)

    def add(self, record: DocumentRecord, rows: DocRows | None, source: bytes | None,
            known: list[tuple[str, np.ndarray]]) -> None:
        self.known_vectors.learn(self.known, known)
        if rows is not None and rows.files is not None:
            store_document(self.target.paths.root, record, source, rows.files)
        self.feed.add(record, rows)

    def finish(self) -> SinkReport:
        report = self.feed.finish(self.name)
        if self.scratch is not None:
            try:
                report.uploaded = self._upload(report)
            finally:
                shutil.rmtree(self.scratch, ignore_errors=True)
        return report

    def _upload(self, report: SinkReport) -> dict[str, int]:
        """The segment, its shard and its documents' texts and sources, uploaded to the index's bucket."""
        from ingest.store import IndexBucket

        bucket = IndexBucket(self.target.bucket_url, self.scratch, error=IndexWriteError)
        return _uploaded(bucket, self.target, report.segments[0] if report.segments else None, ("texts", "sources"))

    def abort(self) -> None:
        self.feed.abort()
        if self.scratch is not None:  # what it uploaded is debris the next build removes
            shutil.rmtree(self.scratch, ignore_errors=True)


def merge_on_a_node(target: SegmentTarget, merging: list[SegmentRef], masked, vector_base: int,
                    expected_code: str) -> tuple[SegmentRef, dict[str, int]]:
    """A Ray task's merge of segments of an index in a bucket: read from the bucket by ranges into a
    folder of its own, written there with its shard, uploaded, the folder removed. (Its ref, what it uploaded.)"""
    from ingest.store import IndexBucket, write_merged
    from schemas.segments import open_segments

    check_code(expected_code)
    scratch = Path(tempfile.mkdtemp(prefix=f"spanindex-merge-{target.generation}-"))
    try:
        bucket = IndexBucket(target.bucket_url, scratch, error=IndexWriteError)
        paths = bucket.paths
        live = open_segments(paths.segments, merging, target.dim, masked, paths.files)
        ref = write_merged(paths, live, [r.name for r in merging], target.generation, vector_base,
                           target.model_id, target.dim)
        return ref, _uploaded(bucket, target, ref)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _uploaded(bucket, target: SegmentTarget, segment: SegmentRef | None, also: tuple[str, ...] = ()) -> dict[str, int]:
    """``segment``, written in ``bucket``'s copy (a writer's or a merge's own folder), with its shard of
    the template the build expects, and the files under the folders ``also``, uploaded: their keys and sizes."""
    from ingest.store import write_shard
    from schemas.segments import open_segments

    paths = bucket.paths
    if segment is not None and target.shard_template is not None:
        write_shard(paths, *target.shard_template, open_segments(paths.segments, [segment], target.dim, {}).segments[0])
    keys = [path.relative_to(paths.root).as_posix() for folder in ("segments", "ann", *also)
            for path in sorted((paths.root / folder).rglob("*")) if path.is_file()]
    return bucket.upload_written(target.generation, keys)


class RaySegmentSink:
    """The driver's side: routes documents to writer actors, a run of files each, and gathers their segments."""

    spill_dir = None  # tasks return their rows whole: nothing spills

    def __init__(self, ray, target: SegmentTarget, embed_actors: list, segment_documents: int, live=None,
                 node_id: str | None = None) -> None:
        self._ray = ray
        self.target = target
        self.embed_actors = embed_actors
        self.segment_documents = max(1, segment_documents)
        self.live = live  # the live generation (ingest.store.LiveGeneration): known vectors are read from it
        self.next_vector_id = target.first_vector_id
        options = dict(num_cpus=0, max_restarts=0)
        location = store_location()
        # where the index's URL points, as the driver sees it (never a credential)
        self._runtime = {"runtime_env": {"env_vars": location}} if target.bucket_url and location else {}
        options.update(self._runtime)
        if node_id is not None:  # the index folder is the driver's node's: writers run there
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
        self._writer_class = ray.remote(**options)(SegmentWriterActor)
        # the driver's copy of an index in a bucket reads through its bucket: writers are given the folder's name only
        self._shipped = dataclasses.replace(target, paths=IndexPaths(target.paths.root))
        self._writers: list = []  # every writer started, in vector id order
        self._writer = None  # the one taking documents now
        self._in_writer = 0
        self._calls: collections.deque = collections.deque()
        self._finishing: list = []

    def add(self, result: DocResult, known: KnownChunks) -> None:
        if self._writer is None:
            self._start_writer()
        remote = result.remote
        if remote is not None:  # a task's rows, left on the cluster
            rows, source = remote.rows, remote.source
        else:  # rows the driver has (a document carried over), or none (an error row)
            rows, source = DocRows(result.chunks, result.embed_texts, result.tables, result.files), None
        self._calls.append(self._writer.add.remote(result.record, rows, source, self._known_vectors(known)))
        self.next_vector_id += result.record.n_chunks
        self._in_writer += 1
        while len(self._calls) > CALLS_AHEAD:
            self._get(self._calls.popleft())
        if self._in_writer >= self.segment_documents:
            self._finish_writer()

    def _start_writer(self) -> None:
        name = f"{self.target.generation}-{len(self._writers):04d}"
        self._writer = self._writer_class.remote(self._shipped, name, self.next_vector_id, self.embed_actors,
                                                 code_fingerprint())
        self._writers.append(self._writer)
        self._in_writer = 0

    def _finish_writer(self) -> None:
        self._finishing.append(self._writer.finish.remote())  # runs after its adds: an actor's calls keep their order
        self._writer = None

    def _known_vectors(self, known: KnownChunks) -> list[tuple[str, np.ndarray]]:
        if not known or self.live is None:
            return []
        vectors = self.live.generation.live.vectors_of(np.array([vector_id for _, vector_id in known], dtype=np.int64))
        return [(key, vector) for (key, _), vector in zip(known, vectors)]

    def finish(self) -> SinkReport:
        if self._writer is not None:
            self._finish_writer()
        while self._calls:
            self._get(self._calls.popleft())
        report = SinkReport(next_vector_id=self.next_vector_id)
        for finishing in self._finishing:
            report.add(self._get(finishing))
        for writer in self._writers:
            self._ray.kill(writer)
        self._writers = []
        return report

    def merge(self, live, names: list[str], vector_base: int) -> tuple[SegmentRef, dict[str, int]]:
        """Where the index is a folder, by the driver into it; for an index in a bucket, by a task on
        any node that reads the segments from the bucket and uploads the merged one (and its shard)."""
        if not self.target.bucket_url:
            return merged_here(self.target, live, names, vector_base)
        merging = [s.ref for s in live.segments if s.name in names]
        masked = {name: docs for name, docs in live.deleted.items() if name in names}
        task = self._ray.remote(num_cpus=1, max_retries=0, **self._runtime)(merge_on_a_node)
        return self._get(task.remote(self._shipped, merging, masked, vector_base, code_fingerprint()))

    def abort(self) -> None:
        for writer in self._writers:  # a writer's folder is debris the next build removes, if not now
            try:
                self._ray.get(writer.abort.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a dead writer left its folder: the next build removes it
                pass
            self._ray.kill(writer)
        self._writers = []

    def _get(self, ref):
        """A writer's answer; its failure as the error it raised there (a full disk is an OSError)."""
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, (OSError, SpanindexError)):
                raise cause from None
            raise ClusterError(f"a segment writer failed: {cause!r}") from exc
        except ray.exceptions.RayActorError as exc:
            raise ClusterError(f"a segment writer died: {str(exc).strip().splitlines()[-1]}") from None


class DriverSegmentSink:
    """The driver writes the segment, as a local build does, from rows it fetches: for a Ray
    Client driver, whose index folder lies on a machine outside the cluster."""

    def __init__(self, executor, target: SegmentTarget, embedder, live=None) -> None:
        self.executor = executor
        self.root = target.paths.root
        self.local = LocalSegmentSink.over(target, embedder, live)
        self.spill_dir = None  # tasks return their rows whole: nothing spills

    def add(self, result: DocResult, known: KnownChunks) -> None:
        self.local.add(self.executor.fetch(result, self.root), known)

    def finish(self) -> SinkReport:
        return self.local.finish()

    def abort(self) -> None:
        self.local.abort()

    def merge(self, live, names: list[str], vector_base: int) -> tuple[SegmentRef, dict[str, int]]:
        return self.local.merge(live, names, vector_base)
