"""Reading one segment's files: a document's rows by row group, a chunk by vector id, vectors.

A segment is written once (``ingest.store.write``) and never changed: its tables are grouped
by doc_id in doc_id order, so the doc_id bounds in each row group's Parquet statistics locate
a document by binary search (``RowGroups``), and row i of its chunks table and of its vectors
holds vector id ``vector_base + i``. The build and the reader both read segments through this
class; which documents of a segment are live is the generation's business (its deletions).
"""

from __future__ import annotations

import bisect
import itertools
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from schemas.errors import IndexFormatError
from schemas.layout import HITS_FILE, LEXICAL_FILE, LOCAL_FILES, SEGMENT_FILES, TABLE_FILES, VECTORS_FILE, IndexFiles
from schemas.records import MaskedDocument, SegmentRef
from schemas.tables import SCHEMAS, check_schema, doc_slices, read_table, vector_count

GROUPS_KEPT = 64  # decoded row groups a segment keeps (~1 MB each at most: a search reads its hits' groups)

Deletions = dict[str, dict[str, MaskedDocument]]  # segment -> doc_id -> its masked rows


class SegmentFiles:
    """One segment, its files mapped at open: a mapping stays readable after a later build
    retires the segment and unlinks its files, so a reader never fails half-way."""

    def __init__(self, folder: Path, ref: SegmentRef, dim: int, files: IndexFiles = LOCAL_FILES) -> None:
        self.dir = folder
        self.ref = ref
        self.dim = dim
        self.files = files
        self._files = OpenedFiles(folder, SEGMENT_FILES, files)
        self._tables: dict[str, pa.Table] = {}
        self._slices: dict[str, dict[str, tuple[int, int]]] = {}
        self._groups: dict[str, RowGroups | None] = {}
        self._recent: dict[tuple[str, tuple[int, ...]], pa.Table] = {}  # row groups read, least recent first
        self._readers: dict[str, pq.ParquetFile] = {}
        self._hits: pa.Table | None = None
        self._starts: list[int] | None = None
        self.row_groups_read = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.ref.name

    def holds_vector(self, vector_id: int) -> bool:
        return self.ref.vector_base <= vector_id < self.ref.vector_base + self.ref.n_vectors

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A whole table (kept), or some columns of it (not kept)."""
        if columns is None and name in self._tables:
            return self._tables[name]
        file_name = TABLE_FILES[name]
        table = read_table(self._files[file_name], name, str(self.dir / file_name), columns)
        if columns is None:
            with self._lock:
                self._tables[name] = table
        return table

    @property
    def whole_tables(self) -> tuple[str, ...]:
        return tuple(self._tables)

    def doc_slices(self, name: str) -> dict[str, tuple[int, int]]:
        """doc_id -> (first row, row count) of a table."""
        if name not in self._slices:
            self._slices[name] = doc_slices(self.table(name, ["doc_id"]).column("doc_id").to_pylist())
        return self._slices[name]

    def rows_of(self, name: str, doc_id: str) -> pa.Table:
        """One document's rows of a table: its chunks from the mapped hits file, others from the
        row groups that hold them, or from the whole table where it is already read (or cannot be
        located by row group)."""
        if name == "chunks" and self._hits_at_hand():
            hits = self.hits()
            ids = hits.column("doc_id")
            rows = range(hits.num_rows)  # grouped by doc_id in doc_id order: a binary search
            first = bisect.bisect_left(rows, doc_id, key=lambda row: ids[row].as_py())
            last = bisect.bisect_right(rows, doc_id, lo=first, key=lambda row: ids[row].as_py())
            return hits.slice(first, last - first)
        groups = None if name in self._tables else self.row_groups(name)
        if groups is None:
            first, count = self.doc_slices(name).get(doc_id, (0, 0))
            return self.table(name).slice(first, count)
        picked = groups.holding(doc_id)
        if not picked:
            return self._reader(name).schema_arrow.empty_table()
        rows = self._read_groups(name, picked)
        return rows.filter(pc.equal(rows.column("doc_id"), doc_id))

    def rows_of_documents(self, name: str, doc_ids: list[str]) -> pa.Table:
        """The rows of several documents of a table, in table order: the row groups that hold
        them read once, filtered once (a merge copies its documents a few hundred at a time)."""
        wanted = pa.array(doc_ids, pa.string())
        groups = None if name in self._tables else self.row_groups(name)
        if groups is None:
            table = self.table(name)
            return table.filter(pc.is_in(table.column("doc_id"), value_set=wanted))
        picked = sorted({group for doc_id in doc_ids for group in groups.holding(doc_id)})
        if not picked:
            return self._reader(name).schema_arrow.empty_table()
        with self._lock:
            rows = self._decoded(name, picked)  # not kept: a merge moves on to the next documents
        return rows.filter(pc.is_in(rows.column("doc_id"), value_set=wanted))

    def batches(self, name: str, columns: list[str], batch_size: int):
        """A table's rows a batch at a time (a whole segment is never held)."""
        reader = self._reader(name)
        check_schema(name, reader.schema_arrow, str(self.dir / TABLE_FILES[name]))
        yield from reader.iter_batches(batch_size=batch_size, columns=columns)

    def lexical_table(self) -> pa.Table:
        """The segment's BM25 postings (``schemas.tables.LEXICAL``)."""
        return read_table(self._files[LEXICAL_FILE], "lexical", str(self.dir / LEXICAL_FILE))

    def holds(self, doc_id: str) -> bool:
        """Whether the segment has a documents row for ``doc_id`` (masked or not)."""
        return self.rows_of("documents", doc_id).num_rows > 0

    def hits(self) -> pa.Table:
        """The segment's chunks, mapped from its Arrow file: nothing is read until a row is."""
        if self._hits is None:
            with self._lock:
                if self._hits is None:
                    where = str(self.dir / HITS_FILE)
                    try:
                        hits = ipc.open_file(self._files[HITS_FILE]).read_all()
                    except pa.ArrowInvalid as exc:
                        raise IndexFormatError(f"{where}: not an Arrow file ({exc})") from None
                    check_schema("chunks", hits.schema, where)
                    if hits.num_rows != self.ref.n_vectors:
                        raise IndexFormatError(f"{where}: {hits.num_rows} chunks, its generation says {self.ref.n_vectors}")
                    self._hits = hits
        return self._hits

    def chunk_rows(self, rows: list[int]) -> pa.Table:
        """Rows of the chunks table by position (row i holds vector id base + i), in the order asked:
        sliced from the mapped hits file; in a bucket, until that file is here, from the row groups
        that hold them (a search fetches its hits' row groups, not the segment's hits file)."""
        if self._hits_at_hand():
            hits = self.hits()  # slices, not take: Arrow's take joins a mapped table's batches into one copy first
            return pa.concat_tables([hits.slice(row, 1) for row in rows])
        starts = self._group_starts()
        groups = [bisect.bisect_right(starts, row) - 1 for row in rows]
        read = {group: self._read_groups("chunks", [group]) for group in dict.fromkeys(groups)}
        return pa.concat_tables([read[group].slice(row - starts[group], 1) for row, group in zip(rows, groups)])

    def _hits_at_hand(self) -> bool:
        """Whether chunk rows come from the hits file: mapped here, or already fetched (in a bucket it
        is fetched whole, which a citation or a search's few hits do not need)."""
        return self._hits is not None or not self.files.lazy

    def _group_starts(self) -> list[int]:
        """The first row of each row group of the chunks table (read once, from its footer)."""
        if self._starts is None:
            metadata = self._reader("chunks").metadata
            self._starts = [0, *itertools.accumulate(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))]
        return self._starts

    def row_groups(self, name: str) -> RowGroups | None:
        if name not in self._groups:
            self._groups[name] = RowGroups.of(self._reader(name).metadata)
        return self._groups[name]

    def _reader(self, name: str) -> pq.ParquetFile:
        """The table's Parquet reader, its footer parsed once (a search reads its hits' row groups)."""
        reader = self._readers.get(name)
        if reader is None:
            # pre_buffer: a row group's column chunks in one read (one request, for a file in a bucket)
            reader = self._readers[name] = pq.ParquetFile(self._files[TABLE_FILES[name]], pre_buffer=self.files.lazy)
        return reader

    def _read_groups(self, name: str, picked: list[int]) -> pa.Table:
        """Row groups of a table; the last ``GROUPS_KEPT`` read stay decoded (a document's
        neighbours, asked for next, are often in the same group)."""
        key = (name, tuple(picked))
        with self._lock:  # one reader of a shared mapped file at a time
            rows = self._recent.pop(key, None)
            if rows is None:
                rows = self._decoded(name, picked)
            self._recent[key] = rows
            while len(self._recent) > GROUPS_KEPT:
                self._recent.pop(next(iter(self._recent)))
        return rows

    def _decoded(self, name: str, picked: list[int]) -> pa.Table:
        """Row groups of a table, read and checked (the caller holds the lock)."""
        self.row_groups_read += len(picked)
        rows = self._reader(name).read_row_groups(picked)
        check_schema(name, rows.schema, str(self.dir / TABLE_FILES[name]))
        return rows

    def vectors(self) -> np.ndarray:
        """The segment's vectors, row i = vector id base + i (mapped, read on touch)."""
        mapped = self._files[VECTORS_FILE]
        count = vector_count(mapped.size(), self.dim, str(self.dir / VECTORS_FILE))
        if count != self.ref.n_vectors:
            raise IndexFormatError(f"{self.dir / VECTORS_FILE}: {count} vectors, its generation says {self.ref.n_vectors}")
        if count == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.frombuffer(whole(mapped), dtype=np.float32).reshape(-1, self.dim)


@dataclass(frozen=True, slots=True, eq=False)
class RowGroups:
    """The row groups of a table grouped by doc_id in doc_id order: the least and greatest doc_id
    in each (from the Parquet statistics the writer keeps)."""

    indices: list[int]  # of the non-empty row groups, in file order
    lows: list[str]
    highs: list[str]

    @classmethod
    def of(cls, metadata: pq.FileMetaData) -> RowGroups | None:
        """None where a row group has no doc_id bounds or the groups are out of doc_id order."""
        names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
        if "doc_id" not in names:
            return None
        column = names.index("doc_id")
        indices, lows, highs = [], [], []
        for i in range(metadata.num_row_groups):
            group = metadata.row_group(i)
            stats = group.column(column).statistics
            if group.num_rows and (stats is None or not stats.has_min_max):
                return None
            if group.num_rows:
                low, high = stats.min, stats.max
                if isinstance(low, bytes):
                    low, high = low.decode("utf-8"), high.decode("utf-8")
                if highs and low < highs[-1]:
                    return None
                indices.append(i)
                lows.append(low)
                highs.append(high)
        return cls(indices, lows, highs)

    def holding(self, doc_id: str) -> list[int]:
        """The row groups whose doc_id bounds take in ``doc_id`` (a document may span several)."""
        first = bisect.bisect_left(self.highs, doc_id)
        last = bisect.bisect_right(self.lows, doc_id)
        return [self.indices[i] for i in range(first, last)]


_seek_lock = threading.Lock()


def whole(mapped: pa.MemoryMappedFile) -> pa.Buffer:
    """A whole mapped file as a zero-copy buffer."""
    with _seek_lock:  # seek and read are two steps on a shared file object
        mapped.seek(0)
        return mapped.read_buffer(mapped.size())


def read_deleted(source, where: str) -> Deletions:
    """deleted.parquet: segment name -> doc_id -> what is masked of it there."""
    deleted: Deletions = {}
    for row in read_table(source, "deleted", where).to_pylist():
        deleted.setdefault(row["segment"], {})[row["doc_id"]] = MaskedDocument(**row)
    return deleted


class LiveSegments:
    """The segments of one generation with its deletions applied: which segment holds a
    document's live rows, a table's live rows, a chunk by vector id.

    A live document is in exactly one segment (a build writes a changed document to its new
    segment and masks it in the old one), so it is found by asking the segments, newest first,
    whose deletions do not mask it; the documents table's row-group bounds answer without
    reading rows in all but one of them.
    """

    def __init__(self, segments: list[SegmentFiles], deleted: Deletions) -> None:
        self.segments = segments
        self.deleted = deleted
        self._bases = [s.ref.vector_base for s in segments]
        self._order = sorted(range(len(segments)), key=lambda i: self._bases[i])
        self._located: dict[str, SegmentFiles | None] = {}

    def masked(self, segment: SegmentFiles) -> frozenset[str]:
        """The doc_ids masked in ``segment``."""
        return frozenset(self.deleted.get(segment.name, ()))

    def dead_vector_ids(self, segment: SegmentFiles) -> np.ndarray:
        """The vector ids of the masked documents' chunks in ``segment``, ascending."""
        ranges = [np.arange(m.first_vector_id, m.first_vector_id + m.n_vectors, dtype=np.int64)
                  for m in self.deleted.get(segment.name, {}).values()]
        return np.sort(np.concatenate(ranges)) if ranges else np.zeros(0, dtype=np.int64)

    def segment_of(self, doc_id: str) -> SegmentFiles | None:
        """The segment that holds ``doc_id``'s live rows, or None."""
        if doc_id in self._located:
            return self._located[doc_id]
        if not self._located and len(self.segments) > 1:  # their footers together, not one after another
            self.segments[0].files.prefetch([s.dir / TABLE_FILES["documents"] for s in self.segments])
        found = None
        for segment in reversed(self.segments):
            if doc_id not in self.masked(segment) and segment.holds(doc_id):
                found = segment
                break
        if len(self._located) >= 65_536:
            self._located.clear()
        self._located[doc_id] = found
        return found

    def rows_of(self, name: str, doc_id: str) -> pa.Table | None:
        """One live document's rows of a table; None when no segment holds it."""
        segment = self.segment_of(doc_id)
        return None if segment is None else segment.rows_of(name, doc_id)

    def segment_of_vector(self, vector_id: int) -> SegmentFiles:
        at = bisect.bisect_right([self._bases[i] for i in self._order], vector_id) - 1
        segment = self.segments[self._order[at]] if at >= 0 else None
        if segment is None or not segment.holds_vector(vector_id):
            raise IndexFormatError(f"vector id {vector_id}: no segment holds it")
        return segment

    def chunks_at_vectors(self, vector_ids: list[int]) -> list[dict]:
        """The chunks rows (``to_pylist`` form) of ``vector_ids``, in their order: taken from each
        segment's hits file together (a search's k hits: ~20 us a row, ~60 us one at a time)."""
        by_segment: dict[str, tuple[SegmentFiles, list[int]]] = {}
        for at, vector_id in enumerate(vector_ids):
            segment = self.segment_of_vector(vector_id)
            by_segment.setdefault(segment.name, (segment, []))[1].append(at)
        rows: list[dict] = [{}] * len(vector_ids)
        for segment, positions in by_segment.values():
            picked = segment.chunk_rows([vector_ids[at] - segment.ref.vector_base for at in positions])
            for at, row in zip(positions, picked.to_pylist()):
                rows[at] = row
        return rows

    def live_tables(self, name: str, columns: list[str] | None = None):
        """(segment, its live rows of a table), segment by segment, oldest first."""
        for segment in self.segments:
            masked = self.masked(segment)
            wanted = columns if columns is None or "doc_id" in columns or not masked else [*columns, "doc_id"]
            table = segment.table(name, wanted)
            if masked:
                table = table.filter(pc.invert(pc.is_in(table.column("doc_id"), pa.array(sorted(masked), pa.string()))))
                if columns is not None and wanted is not columns:
                    table = table.select(columns)
            yield segment, table

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A table's live rows across the segments, in segment order (or some columns of them)."""
        parts = [rows for _, rows in self.live_tables(name, columns)]
        if not parts:
            return SCHEMAS[name].empty_table().select(columns or SCHEMAS[name].names)
        return pa.concat_tables(parts)

    def live_vector_ids(self, segment: SegmentFiles) -> np.ndarray:
        """The vector ids of a segment's live chunks (its masked documents' left out)."""
        base, n = segment.ref.vector_base, segment.ref.n_vectors
        return np.setdiff1d(np.arange(base, base + n, dtype=np.int64), self.dead_vector_ids(segment), assume_unique=True)

    def vectors_of(self, vector_ids: np.ndarray) -> np.ndarray:
        """The vectors of ``vector_ids`` (any segments, any order), as one (n, dim) array."""
        vector_ids = np.asarray(vector_ids, dtype=np.int64)
        dim = self.segments[0].dim if self.segments else 0
        out = np.empty((len(vector_ids), dim), dtype=np.float32)
        for segment in self.segments:
            base, n = segment.ref.vector_base, segment.ref.n_vectors
            inside = (vector_ids >= base) & (vector_ids < base + n)
            if inside.any():
                out[inside] = segment.vectors()[vector_ids[inside] - base]
        return out

    @property
    def live_tokens(self) -> int:
        """BM25 tokens in all live chunks (the mean chunk length's numerator)."""
        return sum(s.ref.n_tokens for s in self.segments) - sum(
            m.n_tokens for masked in self.deleted.values() for m in masked.values())

    @property
    def row_groups_read(self) -> int:
        return sum(s.row_groups_read for s in self.segments)

    @property
    def whole_tables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for s in self.segments for name in s.whole_tables))


def open_segments(segments_dir: Path, refs, dim: int, deleted: Deletions, files: IndexFiles = LOCAL_FILES) -> LiveSegments:
    return LiveSegments([SegmentFiles(segments_dir / ref.name, ref, dim, files) for ref in refs], deleted)


class OpenedFiles(dict):
    """File name -> the file open for reading: each one opened now, or for lazy files (an index in a
    bucket) on first use; a missing one is an ``IndexFormatError`` naming it."""

    def __init__(self, folder: Path, names, files: IndexFiles) -> None:
        super().__init__()
        self.folder = folder
        self.files = files
        if not files.lazy:
            for name in names:
                self[name]  # noqa: B018 — opened by __missing__

    def __missing__(self, name: str) -> pa.NativeFile:
        path = self.folder / name
        try:
            opened = self.files.map(path)
        except FileNotFoundError:
            raise IndexFormatError(f"{path}: missing") from None
        self[name] = opened
        return opened
