"""Open an index and read one generation of it.

A reader resolves CURRENT once and then reads only that generation's files,
which are never modified after they are published; a build running at the
same time writes a new generation beside it. Tables are read on first use.

A document's rows are read from the row groups that hold them alone: a build writes every
table grouped by doc_id in doc_id order, so the doc_id bounds in each row group's Parquet
statistics locate a document by binary search (``RowGroups``). A table without them (or
not in order) is read whole, as before.
"""

from __future__ import annotations

import bisect
import functools
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from schemas.errors import IndexFormatError
from schemas.layout import FAISS_FILE, GENERATION_FILES, LEXICAL_FILE, TABLE_FILES, VECTORS_FILE, IndexPaths, read_current
from schemas.manifest import ann_params, read_manifest
from schemas.records import Manifest
from schemas.tables import check_schema, doc_slices, read_table, vector_count


GROUPS_KEPT = 16  # decoded row groups a generation keeps (a few MB each at most)


class Generation:
    """One immutable generation: manifest, tables, vectors, FAISS, the lexical table."""

    def __init__(self, paths: IndexPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.dir = paths.generation(name)
        self.manifest: Manifest = read_manifest(self.dir)
        # Map every file now: a mapping stays readable after a later build retires this
        # generation and unlinks its files, so a reader never fails half-way.
        self._files = {}
        # The lexical table exists in generations built since it was added; the manifest says so.
        lexical = (LEXICAL_FILE,) if self.manifest.lexical_tokenizer_version else ()
        for file_name in (*GENERATION_FILES, *lexical):
            try:
                self._files[file_name] = pa.memory_map(str(self.dir / file_name))
            except FileNotFoundError:
                raise IndexFormatError(f"{self.dir / file_name}: missing") from None
        self._tables: dict[str, pa.Table] = {}
        self._slices: dict[str, dict[str, tuple[int, int]]] = {}
        self._groups: dict[str, RowGroups | None] = {}
        self._recent: dict[tuple[str, tuple[int, ...]], pa.Table] = {}  # row groups read, least recent first
        self.row_groups_read = 0  # row groups read for one document's rows (what a citation costs)
        self._lock = threading.Lock()
        self._faiss = None

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A whole table (cached), or some columns of it (not cached)."""
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
        """The tables read whole so far (a citation reads none: only its document's row groups)."""
        return tuple(self._tables)

    @property
    def has_lexical(self) -> bool:
        return LEXICAL_FILE in self._files

    def lexical_table(self) -> pa.Table:
        """The BM25 postings (``schemas.tables.LEXICAL``); refused when the generation predates them."""
        if not self.has_lexical:
            raise IndexFormatError(
                f"{self.dir}: this generation has no lexical index (it was built before spanindex had one); "
                "run `spanindex build` again to add it"
            )
        return read_table(self._files[LEXICAL_FILE], "lexical", str(self.dir / LEXICAL_FILE))

    def doc_slices(self, name: str) -> dict[str, tuple[int, int]]:
        """doc_id -> (first row, row count) of a table whose rows are grouped by document."""
        if name not in self._slices:
            self._slices[name] = doc_slices(self.table(name).column("doc_id").to_pylist())
        return self._slices[name]

    def rows_of(self, name: str, doc_id: str) -> pa.Table:
        """One document's rows of a table: from the row groups that hold them, or from the whole
        table where it is already read (or cannot be located by row group)."""
        groups = None if name in self._tables else self.row_groups(name)
        if groups is None:
            first, count = self.doc_slices(name).get(doc_id, (0, 0))
            return self.table(name).slice(first, count)
        picked = groups.holding(doc_id)
        if not picked:
            return self._reader(name).schema_arrow.empty_table()
        rows = self._read_groups(name, picked)
        return rows.filter(pc.equal(rows.column("doc_id"), doc_id))

    def row_at(self, name: str, row: int) -> pa.Table:
        """Row ``row`` of a table (a chunk by vector_id), read from its row group alone."""
        groups = None if name in self._tables else self.row_groups(name)
        if groups is None:
            return self.table(name).slice(row, 1)
        group, first = groups.containing(row)
        return self._read_groups(name, [group]).slice(row - first, 1)

    def row_groups(self, name: str) -> RowGroups | None:
        """Where each document's rows of a table lie, by row group; None where the file cannot tell."""
        if name not in self._groups:
            self._groups[name] = RowGroups.of(self._reader(name).metadata)
        return self._groups[name]

    def _reader(self, name: str) -> pq.ParquetFile:
        file_name = TABLE_FILES[name]
        return pq.ParquetFile(self._files[file_name])

    def _read_groups(self, name: str, picked: list[int]) -> pa.Table:
        """Row groups of a table; the last ``GROUPS_KEPT`` read stay decoded (a document's
        neighbours, asked for next, are often in the same group)."""
        key = (name, tuple(picked))
        with self._lock:  # one reader of a shared mapped file at a time
            rows = self._recent.pop(key, None)
            if rows is None:
                self.row_groups_read += len(picked)
                rows = self._reader(name).read_row_groups(picked)
                check_schema(name, rows.schema, str(self.dir / TABLE_FILES[name]))
            self._recent[key] = rows
            while len(self._recent) > GROUPS_KEPT:
                self._recent.pop(next(iter(self._recent)))
        return rows

    def vectors(self) -> np.ndarray:
        """All vectors, row = vector_id (memory-mapped, read on touch)."""
        mapped = self._files[VECTORS_FILE]
        dim = self.manifest.model_dim
        if vector_count(mapped.size(), dim, str(self.dir / VECTORS_FILE)) == 0:
            return np.zeros((0, dim), dtype=np.float32)
        return np.frombuffer(_whole(mapped), dtype=np.float32).reshape(-1, dim)

    def faiss(self):
        """The FAISS index, with the search parameters the manifest records (nprobe, efSearch)."""
        if self._faiss is None:
            import faiss

            from ingest.store import apply_search_params

            serialized = np.frombuffer(_whole(self._files[FAISS_FILE]), dtype=np.uint8)
            index = faiss.deserialize_index(serialized)
            apply_search_params(index, ann_params(self.manifest))
            self._faiss = index
        return self._faiss


@dataclass(frozen=True, slots=True, eq=False)
class RowGroups:
    """The row groups of a table grouped by doc_id in doc_id order: each one's first row and the
    least and greatest doc_id in it (from the Parquet statistics the writer keeps)."""

    indices: list[int]  # of the non-empty row groups, in file order
    first_rows: list[int]
    lows: list[str]
    highs: list[str]

    @classmethod
    def of(cls, metadata: pq.FileMetaData) -> RowGroups | None:
        """None where a row group has no doc_id bounds or the groups are out of doc_id order."""
        names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
        if "doc_id" not in names:
            return None
        column = names.index("doc_id")
        indices, first_rows, lows, highs, row = [], [], [], [], 0
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
                first_rows.append(row)
                lows.append(low)
                highs.append(high)
            row += group.num_rows
        return cls(indices, first_rows, lows, highs)

    def holding(self, doc_id: str) -> list[int]:
        """The row groups whose doc_id bounds take in ``doc_id`` (a document may span several)."""
        first = bisect.bisect_left(self.highs, doc_id)
        last = bisect.bisect_right(self.lows, doc_id)
        return [self.indices[i] for i in range(first, last)]

    def containing(self, row: int) -> tuple[int, int]:
        """The row group that holds table row ``row``, and the table row it starts at."""
        at = bisect.bisect_right(self.first_rows, row) - 1
        return self.indices[at], self.first_rows[at]


_seek_lock = threading.Lock()


def _whole(mapped: pa.MemoryMappedFile) -> pa.Buffer:
    """The whole mapped file as a zero-copy buffer."""
    with _seek_lock:  # seek and read are two steps on a shared file object
        mapped.seek(0)
        return mapped.read_buffer(mapped.size())


def open_generation(paths: IndexPaths, name: str | None = None) -> Generation:
    """The named generation, or the live one.

    A build may replace CURRENT and retire old generations between our reading
    CURRENT and opening its folder; reading CURRENT again then finds the new one.
    """
    for _ in range(5):
        live = name or read_current(paths)
        if live is None:
            raise IndexFormatError(f"{paths.root}: no index here (no CURRENT); run `spanindex build` first")
        try:
            return Generation(paths, live)
        except IndexFormatError:
            if name is not None or read_current(paths) == live:
                raise
    raise IndexFormatError(f"{paths.root}: CURRENT keeps changing; is a build looping?")


@functools.lru_cache(maxsize=64)
def _read_text(path: Path) -> str:
    # Bytes, not read_text(): universal newlines would turn CRLF into LF and shift offsets.
    return path.read_bytes().decode("utf-8")


def read_text_file(path: Path) -> str:
    try:
        return _read_text(path)
    except FileNotFoundError:
        raise IndexFormatError(f"{path}: stored text missing") from None
