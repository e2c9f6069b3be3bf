"""Open an index and read one generation of it.

A reader resolves CURRENT once and then reads only that generation's files,
which are never modified after they are published; a build running at the
same time writes a new generation beside it. Tables are read on first use.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa

from schemas.errors import IndexFormatError
from schemas.layout import FAISS_FILE, GENERATION_FILES, LEXICAL_FILE, TABLE_FILES, VECTORS_FILE, IndexPaths, read_current
from schemas.manifest import ann_params, read_manifest
from schemas.records import Manifest
from schemas.tables import doc_slices, read_table, vector_count


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
        first, count = self.doc_slices(name).get(doc_id, (0, 0))
        return self.table(name).slice(first, count)

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
