"""Write a segment (Parquet tables in row groups, vectors) and a generation over segments
(its deletions, FAISS, the lexical index, its manifest).

Rows stream in as documents are processed and leave memory in row groups, so
a build holds one batch of rows per table, not the corpus. A build writes one
segment of the documents that changed; the documents that did not stay where
they are. Nothing here is visible to readers until the build renames the
finished folders and replaces CURRENT.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from ingest.store.lexical import ANALYSED_CHUNK_COLUMNS, POSTINGS_BATCH, TOKENIZER_VERSION, chunk_analyses, write_lexical
from ingest.store.publish import fsync_dir, fsync_file
from schemas.layout import DELETED_FILE, HITS_FILE, LEXICAL_FILE, MANIFEST, SEGMENT_FILES, SEGMENT_MANIFEST, TABLE_FILES, VECTORS_FILE
from schemas.manifest import manifest_to_json, segment_to_json
from schemas.records import DocumentRecord, Manifest, MaskedDocument, SegmentRef
from schemas.tables import SCHEMAS, documents_table, with_metadata

# Rows per row group: what a build holds of a table before writing it, and what it holds again
# while reading the chunk texts back for the lexical index. Sized to a few MB each (a pdf_chars
# row, a run of characters with their boxes, is ~230 bytes in Arrow; a chunk ~0.9 KB): with 65,536
# and 4,096 rows, a 10x corpus's build peaked 38 MB above a 1x one's, which never filled one.
# They are also what a citation reads of each table: a pdf_chars group of 4,096 runs is ~0.3 MB on
# disk (16,384 were ~1.1 MB: what a reader of an index in a bucket fetched to cite one page).
ROW_GROUP_ROWS = {"chunks": 1024, "pdf_chars": 4096, "pdf_pages": 65536, "html_map": 16384, "hidden_text": 65536,
                  "html_boxes": 16384, "office_map": 16384, "office_pages": 65536, "office_cells": 65536,
                  "office_boxes": 16384, "office_render_pages": 65536, "office_shapes": 65536}

DOCUMENT_ROWS = 4096  # rows per row group of the documents table

# Columns written dictionary-encoded: strings that repeat from row to row. The others are
# written plain: for an offset or a box column Parquet builds a dictionary and then drops it
# (too many distinct values), and that costs the build several times the rows in memory (the
# shared corpus's pdf_chars, 40,711 rows, 8.7 MB in Arrow: +41 MB at its write, +17 MB with
# these alone), for a file no larger (that one 5% smaller: zstd compresses plain pages well).
DICTIONARY_COLUMNS = frozenset({"doc_id", "doc_version", "kind", "label", "reason", "part"})


@contextlib.contextmanager
def system_memory_pool() -> Iterator[None]:
    """Arrow allocates from the C library's malloc for the length of the block (a build), unless
    ARROW_DEFAULT_MEMORY_POOL chooses a pool.

    Arrow's default here, mimalloc, keeps the pages of freed buffers resident: reading the chunk
    texts of a generation back, a row group at a time, grew the process by 27 MB at 1,037 chunks
    and 47 MB at 10,316 (13 MB with malloc, whose live peak was 4 MB), so a build's memory grew
    with its corpus.

    This reaches what pyarrow allocates for Python only: Arrow's C++ code (Parquet's readers and
    writers) keeps the pool it found when pyarrow was imported. The `spanindex` command therefore
    sets ARROW_DEFAULT_MEMORY_POOL before that (index.cli); with mimalloc still under Parquet, a
    10x corpus's build process held 30 MB more than with malloc throughout.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        yield
        return
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)  # a buffer is given back to the pool that allocated it


def return_free_heap() -> None:
    """Give the pages of the C heap's free blocks back to the system (glibc's ``malloc_trim``;
    nothing where the C library has no such call).

    malloc keeps freed blocks for reuse; blocks freed between live ones (a flushed row group's
    buffers between the rows still pending) are never returned on their own. Without this, a
    10x corpus's build held 50 MB more after streaming its rows than a 1x one did, memory it no
    longer used, and the vector index was then built on top of it.
    """
    trim = getattr(_C_LIBRARY, "malloc_trim", None)
    if trim is not None:
        trim(0)


_C_LIBRARY = ctypes.CDLL(None)


class SegmentWriter:
    """Streams the tables and vectors of one segment into ``gen_dir`` (a folder no reader looks at)."""

    def __init__(self, gen_dir: Path, model_id: str, dim: int) -> None:
        self.gen_dir = gen_dir
        self.model_id = model_id
        self.dim = dim
        gen_dir.mkdir(parents=True, exist_ok=False)
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._hits: ipc.RecordBatchFileWriter | None = None
        self._pending: dict[str, list[pa.Table]] = {name: [] for name in ROW_GROUP_ROWS}
        self._pending_rows: dict[str, int] = {name: 0 for name in ROW_GROUP_ROWS}
        self._documents: list[DocumentRecord] = []
        self._vectors = open(gen_dir / VECTORS_FILE, "wb")
        self.n_vectors = 0
        self.n_rows = {name: 0 for name in ROW_GROUP_ROWS}
        self.lexical_seconds = 0.0

    @property
    def n_documents(self) -> int:
        return len(self._documents)

    def add_document(self, record: DocumentRecord) -> None:
        self._documents.append(record)

    def add_rows(self, table_name: str, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        self._pending[table_name].append(rows)
        self._pending_rows[table_name] += rows.num_rows
        self.n_rows[table_name] += rows.num_rows
        if self._pending_rows[table_name] >= ROW_GROUP_ROWS[table_name]:
            self._flush(table_name)

    def add_vectors(self, vectors: np.ndarray) -> None:
        """Vectors in vector_id order, continuing from the last call."""
        if vectors.shape[0] == 0:
            return
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vector dimension {vectors.shape[1]}, index dimension {self.dim}")
        with _naming(self.gen_dir / VECTORS_FILE):
            self._vectors.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        self.n_vectors += vectors.shape[0]

    def vectors_written(self) -> np.ndarray:
        """The vectors added so far, as (n, dim) float32 read back from disk."""
        if not self._vectors.closed:
            self._vectors.flush()
        if self.n_vectors == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.memmap(self.gen_dir / VECTORS_FILE, dtype=np.float32, mode="r", shape=(self.n_vectors, self.dim))

    def _flush(self, table_name: str) -> None:
        if not self._pending[table_name]:
            return
        batch = pa.concat_tables(self._pending[table_name])
        with _naming(self.gen_dir / TABLE_FILES[table_name]):
            writer = self._writer(table_name)
            rows = batch.cast(writer.schema)
            writer.write_table(rows, row_group_size=ROW_GROUP_ROWS[table_name])
        if table_name == "chunks":
            with _naming(self.gen_dir / HITS_FILE):
                # one record batch a flush (the rows came a document at a time): a reader finds a
                # row among a segment's batches by binary search, and each costs it a lookup
                self._hits_writer().write_table(rows.combine_chunks())
        self._pending[table_name] = []
        self._pending_rows[table_name] = 0
        return_free_heap()

    def _writer(self, table_name: str) -> pq.ParquetWriter:
        if table_name not in self._writers:
            self._writers[table_name] = pq.ParquetWriter(
                self.gen_dir / TABLE_FILES[table_name],
                with_metadata(table_name, self.model_id, self.dim),
                compression="zstd",
                use_dictionary=[name for name in SCHEMAS[table_name].names if name in DICTIONARY_COLUMNS],
            )
        return self._writers[table_name]

    def _hits_writer(self) -> ipc.RecordBatchFileWriter:
        if self._hits is None:
            self._hits = ipc.new_file(self.gen_dir / HITS_FILE, with_metadata("chunks", self.model_id, self.dim))
        return self._hits

    def finish(self, name: str, vector_base: int, mtimes_trusted_before_ns: int) -> SegmentRef:
        """Close every table and the vectors, write the documents table and segment.json, fsync it all."""
        for table_name in ROW_GROUP_ROWS:
            self._flush(table_name)
            with _naming(self.gen_dir / TABLE_FILES[table_name]):
                self._writer(table_name).close()  # opens it first when no row came: an empty table
        with _naming(self.gen_dir / HITS_FILE):
            self._hits_writer().close()
        with _naming(self.gen_dir / VECTORS_FILE):
            self._vectors.flush()
            self._vectors.close()
        documents = sorted(self._documents, key=lambda d: d.doc_id)
        with _naming(self.gen_dir / TABLE_FILES["documents"]):
            pq.write_table(
                documents_table(documents).cast(with_metadata("documents", self.model_id, self.dim)),
                self.gen_dir / TABLE_FILES["documents"],
                compression="zstd",
                row_group_size=DOCUMENT_ROWS,  # a reader of one document reads its row group alone
            )
        started = time.perf_counter()
        with _naming(self.gen_dir / LEXICAL_FILE):
            ids: list[np.ndarray] = []
            _, n_tokens = write_lexical(self.gen_dir / LEXICAL_FILE, self._chunk_texts(ids), self.model_id, self.dim,
                                        _Joined(ids))
        self.lexical_seconds = time.perf_counter() - started
        ref = SegmentRef(name, vector_base, self.n_vectors, len(documents), n_tokens=n_tokens,
                         mtimes_trusted_before_ns=mtimes_trusted_before_ns)
        checksums = {file_name: file_sha256(self.gen_dir / file_name) for file_name in SEGMENT_FILES}
        with _naming(self.gen_dir / SEGMENT_MANIFEST):
            (self.gen_dir / SEGMENT_MANIFEST).write_text(
                segment_to_json(ref, checksums, {**self.n_rows, "documents": len(documents)}), encoding="utf-8")
        for file_name in [*checksums, SEGMENT_MANIFEST]:
            fsync_file(self.gen_dir / file_name)
        fsync_dir(self.gen_dir)
        return_free_heap()
        return ref

    def _chunk_texts(self, ids: list[np.ndarray]):
        """What the lexical index takes of every chunk written, and its language, in vector id order, read back by row
        group; their vector ids are appended to ``ids`` as they are read."""
        chunks = pq.ParquetFile(self.gen_dir / TABLE_FILES["chunks"])
        hidden = pq.read_table(self.gen_dir / TABLE_FILES["hidden_text"])

        def batches():
            # In batches of a lexical step, not Arrow's 65,536 rows: each becomes Python strings.
            for batch in chunks.iter_batches(batch_size=POSTINGS_BATCH, columns=[*ANALYSED_CHUNK_COLUMNS, "vector_id"]):
                ids.append(batch.column("vector_id").to_numpy().astype(np.int64))
                yield batch

        yield from chunk_analyses(batches(), hidden)

    def abort(self) -> None:
        """Close what is open, as well as a failing disk allows: the folder is removed next."""
        for closable in [*self._writers.values(), *filter(None, [self._hits]), self._vectors]:
            try:
                closable.close()
            except OSError:
                pass


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An OS error while writing ``path`` names it (Arrow's and buffered writes' errors name no file)."""
    try:
        yield
    except OSError as exc:
        if exc.filename:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def write_generation(gen_dir: Path, manifest: Manifest, deleted: pa.Table) -> Manifest:
    """A generation's own files beside its segments and vector shards: its deletions, and the
    manifest last; all fsynced. Returns the manifest as written."""
    gen_dir.mkdir(parents=True, exist_ok=False)
    with _naming(gen_dir / DELETED_FILE):
        pq.write_table(deleted.cast(with_metadata("deleted", manifest.model_id, manifest.model_dim)),
                       gen_dir / DELETED_FILE, compression="zstd")
    checksums = {name: file_sha256(gen_dir / name) for name in (DELETED_FILE,)}
    manifest = dataclasses.replace(manifest, table_sha256=checksums, lexical_tokenizer_version=TOKENIZER_VERSION)
    with _naming(gen_dir / MANIFEST):
        (gen_dir / MANIFEST).write_text(manifest_to_json(manifest), encoding="utf-8")
    for name in [*checksums, MANIFEST]:
        fsync_file(gen_dir / name)
    fsync_dir(gen_dir)
    return manifest


def deleted_table(masked: Iterable[MaskedDocument]) -> pa.Table:
    """The rows of deleted.parquet, by segment and doc_id."""
    rows = sorted(masked, key=lambda m: (m.segment, m.doc_id))
    return pa.Table.from_pylist([dataclasses.asdict(m) for m in rows], schema=SCHEMAS["deleted"])


class _Joined:
    """Arrays appended to a list while texts are read, joined into one when numpy asks for it."""

    def __init__(self, parts: list[np.ndarray]) -> None:
        self.parts = parts

    def __array__(self, dtype=None, copy=None):
        joined = np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.int64)
        return joined if dtype is None else joined.astype(dtype)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


assert set(ROW_GROUP_ROWS) | {"documents", "lexical", "deleted"} == set(SCHEMAS)
