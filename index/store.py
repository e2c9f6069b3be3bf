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
from schemas.layout import DELETED_FILE, GENERATION_FILES, IndexPaths, read_current
from schemas.manifest import ann_params, read_manifest
from schemas.records import Manifest
from schemas.segments import OpenedFiles, RowGroups, SegmentFiles, open_segments, read_deleted, whole  # noqa: F401 - RowGroups
from schemas.tables import doc_slices, with_metadata


class Generation:
    """One immutable generation: its manifest, its segments (tables, vectors, BM25 postings, FAISS
    shards) with its deletions applied. Opening it maps files and reads metadata; rows are read on first use."""

    def __init__(self, paths: IndexPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.dir = paths.generation(name)
        self.manifest: Manifest = read_manifest(self.dir)
        # Map every file now: a mapping stays readable after a later build retires this generation and
        # unlinks its files, so a reader never fails half-way. (In a bucket: each file on first read.)
        self._files = OpenedFiles(self.dir, GENERATION_FILES, paths.files)
        deleted = read_deleted(self._files[DELETED_FILE], str(self.dir / DELETED_FILE))
        self.live = open_segments(paths.segments, self.manifest.segments, self.manifest.model_dim, deleted, paths.files)
        # An inverted file's shards share its coarse quantizer (``ingest.store.ann_shards``).
        template = ann_params(self.manifest).template
        self._ann_names = ["template.faiss", *(paths.ann_shard(template, s.name).name for s in self.segments)] \
            if self.segments else []
        self._ann = OpenedFiles(paths.ann / template, self._ann_names, paths.files)
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
        table = self.live.table(name, columns)
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

    def chunks_at(self, vector_ids: list[int]) -> list[dict]:
        """The chunks rows of ``vector_ids`` (a search's hits), in their order."""
        return self.live.chunks_at_vectors(vector_ids)

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """(vector ids, vectors) of every live chunk, segment by segment."""
        ids = [self.live.live_vector_ids(s) for s in self.segments]
        all_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        return all_ids, self.live.vectors_of(all_ids)

    def faiss(self) -> VectorShards:
        """The vector index: each segment's shard, searched as the manifest says (nprobe, efSearch)."""
        if self._faiss is None:
            import faiss

            def read(file_name: str):
                return faiss.deserialize_index(np.frombuffer(whole(self._ann[file_name]), dtype=np.uint8))

            template = read(self._ann_names[0]) if self._ann_names else None
            shards = [(read(file_name), self.live.dead_vector_ids(segment))
                      for segment, file_name in zip(self.segments, self._ann_names[1:])]
            self._faiss = VectorShards(shards, ann_params(self.manifest), template)
        return self._faiss


class VectorShards:
    """A generation's vector index: one FAISS shard per segment, each searched with its masked
    vector ids excluded, the best hits over all kept (``ingest.store.ann_shards``)."""

    def __init__(self, shards: list[tuple[object, np.ndarray]], params, template=None) -> None:
        """``shards``: (a FAISS index, the vector ids in it that are masked) per segment; ``template``:
        the trained index they are copies of, whose coarse quantizer an inverted file's shards share
        (none: each shard has its own)."""
        import faiss

        from ingest.store import apply_search_params, attach_quantizer

        self.params = params
        self.shards = []
        self._selectors = []
        self._template = template  # holds the quantizer the shards point to
        self._quantizer = None
        if template is not None and isinstance(faiss.downcast_index(template), faiss.IndexIVF):
            # (under a transform such as PCA the query is quantized after it: each shard searches whole)
            apply_search_params(template, params)
            self._quantizer = faiss.extract_index_ivf(template)
        for index, dead in shards:
            if template is not None:
                attach_quantizer(index, template)
            apply_search_params(index, params)
            batch = faiss.IDSelectorBatch(dead) if len(dead) else None
            selector = faiss.IDSelectorNot(batch) if batch is not None else None
            self._selectors.append(batch)  # IDSelectorNot holds a raw pointer to it: kept alive here
            self.shards.append((index, dead, selector))
        self.ntotal = sum(index.ntotal - len(dead) for index, dead, _ in self.shards)
        self.d = self.shards[0][0].d if self.shards else 0

    def tune(self, params) -> None:
        """Search with other ``nprobe`` / ``efSearch`` (an ``AnnParams``) from now on."""
        from ingest.store import apply_search_params

        self.params = params
        for index in [*(idx for idx, _, _ in self.shards), *([self._template] if self._quantizer else [])]:
            apply_search_params(index, params)

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, vector ids) of the ``k`` best live vectors per query, best first (id -1: none).

        ``allowed``: live vector ids to search among (a filter's, ``index.search.filtered``); every
        other vector is skipped inside FAISS, as masked ones are, never dropped after it."""
        import faiss

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        found_scores, found_ids = [], []
        # Shards sharing one quantizer probe the same lists: the query is quantized once, not per shard.
        coarse = self._quantizer.quantizer.search(queries, int(self._quantizer.nprobe)) if self._quantizer else None
        if allowed is not None:  # a subset of the live ids: it needs no deletion mask beside it
            bitmap = _bitmap(allowed)  # the selector holds a raw pointer to it: kept alive here
            admitted = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        for index, _, selector in self.shards:
            if index.ntotal == 0:
                continue
            if allowed is not None:
                selector = admitted
            if coarse is not None:
                scores, ids = self._search_preassigned(index, queries, min(k, index.ntotal), coarse, selector)
            else:
                scores, ids = index.search(queries, min(k, index.ntotal), params=self._parameters(index, selector))
            found_scores.append(scores)
            found_ids.append(ids)
        out_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        out_ids = np.full((len(queries), k), -1, dtype=np.int64)
        if not found_ids:
            return out_scores, out_ids
        scores, ids = np.hstack(found_scores), np.hstack(found_ids)
        for row in range(len(queries)):
            valid = ids[row] >= 0
            order = np.lexsort((ids[row][valid], -scores[row][valid]))[:k]
            out_scores[row, : len(order)] = scores[row][valid][order]
            out_ids[row, : len(order)] = ids[row][valid][order]
        return out_scores, out_ids

    def _search_preassigned(self, index, queries: np.ndarray, k: int, coarse, selector):
        import faiss

        centroid_scores, lists = coarse
        ivf = faiss.extract_index_ivf(index)
        scores = np.empty((len(queries), k), dtype=np.float32)
        ids = np.empty((len(queries), k), dtype=np.int64)
        params = faiss.SearchParametersIVF(sel=selector, nprobe=lists.shape[1])  # as many lists as quantized
        ptr = faiss.swig_ptr
        ivf.search_preassigned_c(len(queries), ptr(queries), k, ptr(lists), ptr(centroid_scores), ptr(scores), ptr(ids),
                                 False, params)
        return scores, ids

    def _parameters(self, index, selector):
        import faiss

        ivf = faiss.try_extract_index_ivf(index)
        if ivf is not None:
            return faiss.SearchParametersIVF(sel=selector, nprobe=int(ivf.nprobe)) if selector else None
        inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap2) else index
        if isinstance(inner, faiss.IndexHNSW):
            return faiss.SearchParametersHNSW(sel=selector, efSearch=int(inner.hnsw.efSearch)) if selector else None
        return faiss.SearchParameters(sel=selector) if selector else None


def _bitmap(vector_ids: np.ndarray) -> np.ndarray:
    """``vector_ids`` as FAISS's ``IDSelectorBitmap`` reads them (bit i % 8 of byte i // 8).

    >>> _bitmap(np.array([0, 9])).tolist()
    [1, 2]
    """
    bits = np.zeros(int(vector_ids.max()) + 1 if len(vector_ids) else 0, dtype=bool)
    bits[vector_ids] = True
    return np.packbits(bits, bitorder="little")


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
