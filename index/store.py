"""Open an index and read one generation of it.

A reader resolves CURRENT once and then reads only that generation's files and the
segments it names, which are never modified after they are published; a build running
at the same time writes a new generation beside it.

A document's rows are read from the row groups of the segment that holds them alone
(``schemas.segments``): opening a generation reads its manifest, its deletions and the
segments' Parquet footers, never a table.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa

from schemas.errors import IndexFormatError
from schemas.layout import DELETED_FILE, FAISS_FILE, GENERATION_FILES, IndexPaths, read_current
from schemas.manifest import ann_params, read_manifest
from schemas.records import Manifest
from schemas.segments import RowGroups, SegmentFiles, open_segments, read_deleted, whole  # noqa: F401 - RowGroups
from schemas.tables import doc_slices, with_metadata


class Generation:
    """One immutable generation: its manifest, its segments (tables, vectors, BM25 postings) with its
    deletions applied, FAISS. Opening it maps files and reads metadata; rows are read on first use."""

    def __init__(self, paths: IndexPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.dir = paths.generation(name)
        self.manifest: Manifest = read_manifest(self.dir)
        # Map every file now: a mapping stays readable after a later build retires this
        # generation and unlinks its files, so a reader never fails half-way.
        self._files = {}
        for file_name in GENERATION_FILES:
            try:
                self._files[file_name] = pa.memory_map(str(self.dir / file_name))
            except FileNotFoundError:
                raise IndexFormatError(f"{self.dir / file_name}: missing") from None
        deleted = read_deleted(self._files[DELETED_FILE], str(self.dir / DELETED_FILE))
        self.live = open_segments(paths.segments, self.manifest.segments, self.manifest.model_dim, deleted)
        self._tables: dict[str, pa.Table] = {}
        self._lock = threading.Lock()
        self._faiss = None

    @property
    def segments(self) -> list[SegmentFiles]:
        return self.live.segments

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A table's live rows across segments, whole (kept), or some columns of it (not kept)."""
        if columns is None and name in self._tables:
            return self._tables[name]
        parts = [rows for _, rows in self.live.live_tables(name, columns)]
        schema = with_metadata(name, self.manifest.model_id, self.manifest.model_dim)
        table = pa.concat_tables(parts) if parts else schema.empty_table().select(columns or schema.names)
        if columns is None:
            with self._lock:
                self._tables[name] = table
        return table

    @property
    def whole_tables(self) -> tuple[str, ...]:
        """The tables read whole so far (a citation reads none: only its document's row groups)."""
        return tuple(dict.fromkeys([*self._tables, *self.live.whole_tables]))

    @property
    def row_groups_read(self) -> int:
        """Row groups read for one document's rows (what a citation costs)."""
        return self.live.row_groups_read

    @property
    def has_lexical(self) -> bool:
        return True

    def doc_slices(self, name: str) -> dict[str, tuple[int, int]]:
        """doc_id -> (first row, row count) of ``table(name)``, the live rows grouped by document."""
        return doc_slices(self.table(name).column("doc_id").to_pylist())

    def rows_of(self, name: str, doc_id: str) -> pa.Table:
        """One live document's rows of a table, from the row groups of the segment that holds it."""
        rows = self.live.rows_of(name, doc_id)
        if rows is None:
            return with_metadata(name, self.manifest.model_id, self.manifest.model_dim).empty_table()
        return rows

    def row_at(self, name: str, vector_id: int) -> pa.Table:
        """The chunk (or other row) whose vector id is ``vector_id``, read from its row group alone."""
        return self.live.row_at_vector(name, vector_id)

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """(vector ids, vectors) of every live chunk, segment by segment."""
        ids = [self.live.live_vector_ids(s) for s in self.segments]
        all_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        return all_ids, self.live.vectors_of(all_ids)

    def faiss(self):
        """The FAISS index, with the search parameters the manifest records (nprobe, efSearch)."""
        if self._faiss is None:
            import faiss

            from ingest.store import apply_search_params

            serialized = np.frombuffer(whole(self._files[FAISS_FILE]), dtype=np.uint8)
            index = faiss.deserialize_index(serialized)
            apply_search_params(index, ann_params(self.manifest))
            self._faiss = index
        return self._faiss


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
