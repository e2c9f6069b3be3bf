"""Where a build's new rows go: into segments, written where the executor writes them.

A build hands every document it processed to a sink, in file order. The sink gives the
document's chunks their vector ids (continuing the index's sequence), has them embedded or
reuses known vectors, and writes the rows into segment folders under ``segments/``; at the
end it returns the segments it wrote, in vector id order. ``LocalSegmentSink`` writes one
segment in the build's process. A Ray build's sink (``ingest.run.ray_segments``) has writer
actors on the cluster write a segment per run of files, so its driver never holds a row.
Either way the rows, their order and their vector ids are the same.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow.compute as pc

from ingest.embed import Embedder, VectorQueue
from ingest.run.worker import EMBED_TEXT, DocResult, DocRows
from ingest.store import SPILL_FOLDER, SegmentWriter, fsync_dir, read_spill
from schemas.layout import IndexPaths
from schemas.records import DocumentRecord, SegmentRef


@dataclass(frozen=True, slots=True)
class SegmentTarget:
    """What every segment of one build shares: where it goes, its model, and where its ids start."""

    paths: IndexPaths
    generation: str  # the build's generation: segments are named after it
    model_id: str
    dim: int
    embed_batch: int
    first_vector_id: int
    mtimes_trusted_before_ns: int  # taken before the build read any file (ingest.run.worker)
    # An index in a bucket: its URL, where writers that run elsewhere upload their segments themselves
    # (the build has claimed its generation's name there), and the vector template they write shards of.
    bucket_url: str = ""
    shard_template: tuple[str, bytes] | None = None  # (name, bytes): ingest.store.ann_shards.expected_template


@dataclass(slots=True)
class SinkReport:
    """What a sink wrote: its segments, and what it cost."""

    segments: list[SegmentRef] = field(default_factory=list)
    next_vector_id: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    embed_seconds: float = 0.0
    lexical_seconds: float = 0.0
    ocr_pages: int = 0
    uploaded: dict[str, int] = field(default_factory=dict)  # objects writers put in the index's bucket, with sizes

    def add(self, other: SinkReport) -> None:
        """``other``'s segments after this one's, its costs added (the next id is the caller's)."""
        self.segments.extend(other.segments)
        self.chunks_embedded += other.chunks_embedded
        self.chunks_reused += other.chunks_reused
        self.embed_seconds += other.embed_seconds
        self.lexical_seconds += other.lexical_seconds
        self.ocr_pages += other.ocr_pages
        self.uploaded.update(other.uploaded)


KnownChunks = list[tuple[str, int]]  # (embed_sha256, live vector id) a build has just learnt of


class SegmentSink(Protocol):
    spill_dir: Path | None  # where this build's workers spill large tables (None: they do not)

    def add(self, result: DocResult, known: KnownChunks) -> None:
        """A processed document (not an unchanged one), in file order; ``known``: live chunks whose
        vectors its chunks may reuse, learnt for it (the local sink reads the live map itself)."""
        ...

    def finish(self) -> SinkReport:
        """Every row written, every segment finished and in place under segments/."""
        ...

    def abort(self) -> None:
        """Nothing this sink began is left but debris the next build removes."""
        ...

    def merge(self, live, names: list[str], vector_base: int) -> tuple[SegmentRef, dict[str, int]]:
        """After ``finish``: the segments ``names`` of ``live`` (``schemas.segments.LiveSegments``)
        merged into one, ``<generation>-merged``, its vector ids from ``vector_base``; (its ref,
        the objects uploaded to the index's bucket where it was written elsewhere)."""
        ...


def merged_here(target: SegmentTarget, live, names: list[str], vector_base: int) -> tuple[SegmentRef, dict[str, int]]:
    """A merge written into the index folder (or its copy) by this process."""
    from ingest.store import write_merged

    return write_merged(target.paths, live, names, target.generation, vector_base, target.model_id, target.dim), {}


class SegmentFeed:
    """One segment being written into a folder no reader looks at: rows in, vector ids given,
    vectors embedded (or reused) and written in id order."""

    def __init__(self, folder: Path, target: SegmentTarget, embedder: Embedder, first_vector_id: int,
                 known: dict[str, int] | None = None, known_vectors=None) -> None:
        self.target = target
        self.first_vector_id = first_vector_id
        self.writer = SegmentWriter(folder, target.model_id, target.dim)
        self.vectors = VectorQueue(embedder, self.writer.add_vectors, target.embed_batch, known=known,
                                   known_vectors=known_vectors, first_id=first_vector_id)
        self.ocr_pages = 0

    @property
    def n_documents(self) -> int:
        return self.writer.n_documents

    def add(self, record: DocumentRecord, rows: DocRows | None, spilled: dict[str, Path] | None = None) -> None:
        if rows is not None:
            for table_name, table in rows.tables.items():
                self._add_rows(table_name, table)
        for table_name, path in (spilled or {}).items():
            self._copy_spilled(table_name, path)
        if rows is not None and rows.chunks is not None:
            self.writer.add_rows("chunks", self.vectors.assign(rows.chunks, rows.embed_texts))
        self.writer.add_document(record)

    def _add_rows(self, table_name: str, rows) -> None:
        self.writer.add_rows(table_name, rows)
        if table_name == "pdf_pages":
            self.ocr_pages += int(pc.sum(rows.column("ocr")).as_py() or 0)

    def _copy_spilled(self, table_name: str, path: Path) -> None:
        """A table a worker spilled, copied into the segment one row group at a time."""
        for rows in read_spill(path):
            if table_name == "chunks":
                texts = rows.column(EMBED_TEXT).to_pylist()
                self.writer.add_rows("chunks", self.vectors.assign(rows.drop_columns([EMBED_TEXT]), texts))
            else:
                self._add_rows(table_name, rows)

    def finish(self, name: str) -> SinkReport:
        """The segment finished and renamed into segments/ as ``name`` (none when it holds no document)."""
        self.vectors.flush()
        report = SinkReport(next_vector_id=self.vectors.next_id, chunks_embedded=self.vectors.embedded,
                            chunks_reused=self.vectors.reused, embed_seconds=self.vectors.seconds,
                            ocr_pages=self.ocr_pages)
        shutil.rmtree(self.writer.gen_dir / SPILL_FOLDER, ignore_errors=True)  # what results never consumed
        if not self.writer.n_documents:
            self.abort()
            return report
        paths = self.target.paths
        ref = self.writer.finish(name, self.first_vector_id, self.target.mtimes_trusted_before_ns)
        report.lexical_seconds = self.writer.lexical_seconds
        os.rename(self.writer.gen_dir, paths.segment(name))
        fsync_dir(paths.segments)  # the rename is durable before any generation names the segment
        report.segments.append(ref)
        return report

    def abort(self) -> None:
        self.writer.abort()
        shutil.rmtree(self.writer.gen_dir, ignore_errors=True)


def segment_folder(paths: IndexPaths, name: str) -> Path:
    """Where a segment is written before it is renamed into place (debris if its writer dies)."""
    return paths.segments / f".{name}.tmp-{os.getpid()}"


class LocalSegmentSink:
    """One segment, written in this process, named after the generation."""

    def __init__(self, target: SegmentTarget, embedder: Embedder, known: dict[str, int] | None = None,
                 known_vectors=None) -> None:
        target.paths.segments.mkdir(parents=True, exist_ok=True)
        self.feed = SegmentFeed(segment_folder(target.paths, target.generation), target, embedder,
                                target.first_vector_id, known, known_vectors)
        self.spill_dir = self.feed.writer.gen_dir / SPILL_FOLDER
        self.spill_dir.mkdir()

    @classmethod
    def over(cls, target: SegmentTarget, embedder: Embedder, live=None) -> LocalSegmentSink:
        """A sink whose chunks reuse the vectors of the live generation (``ingest.store.LiveGeneration``)."""
        from ingest.store import KnownVectors

        if live is None:
            return cls(target, embedder)
        return cls(target, embedder, live.embed_cache, KnownVectors(live))

    def add(self, result: DocResult, known: KnownChunks) -> None:
        rows = DocRows(result.chunks, result.embed_texts, result.tables, None)
        self.feed.add(result.record, rows, result.spilled)

    def finish(self) -> SinkReport:
        return self.feed.finish(self.feed.target.generation)

    def abort(self) -> None:
        self.feed.abort()

    def merge(self, live, names: list[str], vector_base: int) -> tuple[SegmentRef, dict[str, int]]:
        return merged_here(self.feed.target, live, names, vector_base)


class KnownVectorStore:
    """Vectors a remote writer was sent, indexed as ``VectorQueue`` indexes known vectors."""

    def __init__(self, dim: int) -> None:
        self._vectors: list[np.ndarray] = []
        self.dim = dim

    def learn(self, known: dict[str, int], entries: Iterable[tuple[str, np.ndarray]]) -> None:
        for key, vector in entries:
            if key not in known:
                known[key] = len(self._vectors)
                self._vectors.append(np.asarray(vector, dtype=np.float32))

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[i] for i in rows.tolist()])
