"""Filtered search: the chunks of the documents a filter keeps, searched before ranking.

A filter (``index.search.filters``) picks documents from the live documents table; their
chunks are contiguous vector-id ranges of the segment that holds them (row i of a segment's
chunks table is vector id ``vector_base + i``, grouped by doc_id), so the kept documents
become a sorted array of vector ids. Every mode ranks only those: lexical search masks its
score array to them before taking the top k, dense search asks FAISS with an ``IDSelector``
that admits them alone (``index.store.VectorShards``), or, when few match in an approximate
index, scores them exactly. Never a post-filter of a fixed candidate list: a filtered search
returns k hits whenever k chunks match, however selective the filter.

A Flat index is searched with the selector always: it is exact, and FAISS computes the inner
products of the admitted vectors alone (on a loaded 2-core machine, 200,000 vectors: 0.5 ms
for 1,000 admitted, 6.5 ms for 16,384, against 59 ms unfiltered), cheaper than gathering
their rows. An approximate index cannot be trusted with a selective filter: an inverted file
probes ``nprobe`` lists and an HNSW graph walks from its entry points, so the few admitted
vectors may lie in no list probed and no node reached, and FAISS returns fewer than k. There
the admitted vectors are scored exactly (their stored float32 rows times the query) when at
most ``EXACT_MAX_VECTORS`` match (16,384 x 384 floats, 24 MiB gathered: tens of milliseconds
at most, the cost of one unfiltered Flat scan of some 100,000 vectors), and above it the
shards are asked with the selector; should they still return fewer than asked, the exact
search answers instead.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow.compute as pc

from index.search.filters import DocumentFilter, filter_table

EXACT_MAX_VECTORS = 16_384


def allowed_vector_ids(generation, flt: DocumentFilter) -> np.ndarray:
    """The vector ids of the chunks of the live documents ``flt`` keeps, ascending.

    >>> allowed_vector_ids(idx.generation, compile_filter("doc_id LIKE 'pricing/%'"))[:3]   # doctest: +SKIP
    array([12, 13, 14])
    """
    parts = [chunk_vector_ids(segment, doc_ids) for segment, doc_ids in _kept_by_segment(generation, flt) if doc_ids]
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def kept_doc_ids(generation, flt: DocumentFilter) -> list[str]:
    """The doc_ids of the live documents ``flt`` keeps, in segment order."""
    return [doc_id for _, doc_ids in _kept_by_segment(generation, flt) for doc_id in doc_ids]


def _kept_by_segment(generation, flt: DocumentFilter):
    ocr_doc_ids = _ocr_doc_ids(generation)
    for segment, documents in generation.live.live_tables("documents"):
        if documents.num_rows:
            kept = filter_table(documents, flt, ocr_doc_ids).filter(flt.expression)
            yield segment, kept.column("doc_id").to_pylist()


def _ocr_doc_ids(generation):
    @functools.cache
    def read() -> list[str]:
        pages = generation.table("pdf_pages", ["doc_id", "ocr"])
        return pc.unique(pages.filter(pc.equal(pages.column("ocr"), True)).column("doc_id")).to_pylist()

    return read


def chunk_vector_ids(segment, doc_ids: list[str]) -> np.ndarray:
    """The vector ids of ``doc_ids``' chunks in ``segment`` (each document's rows are one range)."""
    slices = segment.doc_slices("chunks")
    ranges = [slices[d] for d in doc_ids if d in slices]
    if not ranges:
        return np.zeros(0, dtype=np.int64)
    firsts, counts = np.array(ranges, dtype=np.int64).T
    # each range's first row, repeated over its rows, plus the row's place in its range
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return segment.ref.vector_base + np.repeat(firsts, counts) + within


def dense_ranked(generation, vector: np.ndarray, depth: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(scores, vector ids) of the ``depth`` nearest live chunks to ``vector`` (one query row),
    among ``allowed`` where given (see the module for when the search is exact)."""
    shards = generation.faiss()
    if allowed is None:
        scores, ids = shards.search(vector, depth)
        return scores[0], ids[0]
    depth = min(depth, len(allowed))
    if shards.params.approximate and len(allowed) <= EXACT_MAX_VECTORS:
        return exact_ranked(generation, vector, depth, allowed)
    scores, ids = shards.search(vector, depth, allowed=allowed)
    if int((ids[0] >= 0).sum()) < depth:
        return exact_ranked(generation, vector, depth, allowed)
    return scores[0], ids[0]


def exact_ranked(generation, vector: np.ndarray, depth: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``depth`` best of ``allowed`` by inner product with their stored vectors, ties by vector id."""
    # einsum, not @: a one-query matrix-vector product handed to a threaded BLAS cost 13 ms for
    # 11,297 vectors on a loaded 2-core machine, the plain loop 0.7 ms
    scores = np.einsum("ij,j->i", generation.live.vectors_of(allowed), np.asarray(vector, dtype=np.float32)[0])
    if len(scores) > depth:
        kth = np.partition(-scores, depth - 1)[depth - 1]
        keep = -scores <= kth  # the best ``depth`` and every vector tied with the last of them
        candidates, scores = allowed[keep], scores[keep]
    else:
        candidates = allowed
    order = np.lexsort((candidates, -scores))[:depth]
    return scores[order].astype(np.float32), candidates[order]
