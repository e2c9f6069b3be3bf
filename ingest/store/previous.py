"""The generations a build replaces, as the build reads them.

A build reads what earlier builds published: the live generation, to carry
over unchanged documents and reuse known vectors, and the generations it
keeps, to know which texts and sources they still reference. It reads whole
tables and the raw vectors through the format's own names and checks
(``schemas``); looking things up by id for a reader is ``index.store``'s job.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from schemas.errors import IndexFormatError
from schemas.layout import GENERATION_FILES, TABLE_FILES, VECTORS_FILE, IndexPaths
from schemas.manifest import read_manifest
from schemas.records import Manifest
from schemas.tables import doc_slices, read_table, vector_count


class PublishedGeneration:
    """One complete generation on disk; refused (IndexFormatError) when a file is missing."""

    def __init__(self, paths: IndexPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.dir = paths.generation(name)
        self.manifest: Manifest = read_manifest(self.dir)
        for file_name in GENERATION_FILES:
            if not (self.dir / file_name).is_file():
                raise IndexFormatError(f"{self.dir / file_name}: missing")
        self._tables: dict[str, pa.Table] = {}
        self._slices: dict[str, dict[str, tuple[int, int]]] = {}

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """A whole table (kept), or some columns of it (not kept)."""
        if columns is None and name in self._tables:
            return self._tables[name]
        path = self.dir / TABLE_FILES[name]
        table = read_table(path, name, str(path), columns)
        if columns is None:
            self._tables[name] = table
        return table

    def rows_of(self, name: str, doc_id: str) -> pa.Table:
        """The rows of one document in a table grouped by document."""
        if name not in self._slices:
            self._slices[name] = doc_slices(self.table(name).column("doc_id").to_pylist())
        first, count = self._slices[name].get(doc_id, (0, 0))
        return self.table(name).slice(first, count)

    def vectors(self) -> np.ndarray:
        """All vectors, row = vector_id (memory-mapped)."""
        path = self.dir / VECTORS_FILE
        dim = self.manifest.model_dim
        count = vector_count(path.stat().st_size, dim, str(path))
        if count == 0:
            return np.zeros((0, dim), dtype=np.float32)
        return np.memmap(path, dtype=np.float32, mode="r", shape=(count, dim))
