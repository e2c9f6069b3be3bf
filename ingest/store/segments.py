"""What a build does with segments besides writing its own: masks documents, merges segments.

A build writes the documents that changed to one new segment and masks their old rows (and
removed documents' rows) in the segments that hold them; an unchanged document is never
copied. Merges keep the number of segments small and the masked share bounded, Lucene's
tiered way: segments whose live sizes lie in one power-of-ten tier are merged together once
``SEGMENTS_PER_TIER`` of them are there, and a segment whose masked share passes
``MAX_DELETED_SHARE`` is rewritten. A build merges at most one group (a bounded amount of
work a time); ``spanindex compact`` merges everything into one segment. A merge copies each
live document's rows as they are, so chunk ids, offsets, vectors and BM25 scores stay; only
vector ids are new (those of the merged segment's range).
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.store.lexical import ANALYSED_CHUNK_COLUMNS, chunk_analyses, lexical_tokens
from ingest.store.publish import fsync_dir
from ingest.store.write import SegmentWriter
from schemas.errors import IndexFormatError
from schemas.records import MaskedDocument, SegmentRef
from schemas.segments import Deletions, LiveSegments, SegmentFiles
from schemas.tables import DOCUMENT_MAP_TABLES, document_records

SEGMENTS_PER_TIER = 8  # segments of one size tier merged together once this many are there
MAX_DELETED_SHARE = 0.5  # a segment more masked than this is rewritten


def tier_of(ref: SegmentRef) -> int:
    """The power-of-ten tier of a segment's live size (documents).

    >>> tier_of(SegmentRef("a", 0, 10, 9)), tier_of(SegmentRef("b", 0, 10, 1200, n_deleted=200))
    (0, 3)
    """
    return int(math.log10(max(ref.n_documents - ref.n_deleted, 1)))


def plan_merge(refs: list[SegmentRef], everything: bool = False) -> list[str]:
    """The segments to merge into one now (none: []): every one with ``everything``; else the
    smallest tier holding ``SEGMENTS_PER_TIER`` segments, or one holding a segment whose masked
    share passes ``MAX_DELETED_SHARE`` (with the rest of its tier, so it is not left small).

    >>> plan_merge([SegmentRef(str(i), 0, 1, 5) for i in range(8)])
    ['0', '1', '2', '3', '4', '5', '6', '7']
    >>> plan_merge([SegmentRef("big", 0, 1, 5000), SegmentRef("new", 0, 1, 3)])
    []
    >>> plan_merge([SegmentRef("big", 0, 1, 5000, n_deleted=3000), SegmentRef("new", 0, 1, 3)])
    ['big']
    """
    if everything:
        return [r.name for r in refs] if len(refs) > 1 or any(r.n_deleted for r in refs) else []
    tiers: dict[int, list[SegmentRef]] = {}
    for ref in refs:
        tiers.setdefault(tier_of(ref), []).append(ref)
    for tier in sorted(tiers):
        members = tiers[tier]
        dirty = any(r.n_deleted > MAX_DELETED_SHARE * r.n_documents for r in members)
        if len(members) >= SEGMENTS_PER_TIER or dirty:
            return [r.name for r in members]
    return []


MERGE_BATCH_DOCUMENTS = 512  # documents a merge copies at a time: what it holds of each table


def merge_segments(live: LiveSegments, names: list[str], writer: SegmentWriter, vector_base: int) -> None:
    """Copy the live documents of the segments ``names`` into ``writer``, in doc_id order, their
    chunks given vector ids from ``vector_base`` on.

    A few hundred documents at a time, table by table: each segment's rows of them read in one
    pass over the row groups holding them and put in doc_id order together (a read per document
    and table cost a 100,000-document compaction most of its 170 s).
    """
    merged = [s for s in live.segments if s.name in names]
    documents: list[tuple[str, int]] = []
    for at, segment in enumerate(merged):
        masked = live.masked(segment)
        doc_ids = segment.table("documents", ["doc_id"]).column("doc_id").to_pylist()
        documents.extend((doc_id, at) for doc_id in doc_ids if doc_id not in masked)
    documents.sort()
    next_id = vector_base
    for first in range(0, len(documents), MERGE_BATCH_DOCUMENTS):
        batch = documents[first : first + MERGE_BATCH_DOCUMENTS]
        by_segment: dict[int, list[str]] = {}
        for doc_id, at in batch:
            by_segment.setdefault(at, []).append(doc_id)
        for record in document_records(_in_doc_order(merged, by_segment, "documents")[0]):
            writer.add_document(record)
        for table_name in DOCUMENT_MAP_TABLES:
            writer.add_rows(table_name, _in_doc_order(merged, by_segment, table_name)[0])
        chunks, vectors = _in_doc_order(merged, by_segment, "chunks")
        if chunks.num_rows:
            writer.add_vectors(vectors)
            ids = pa.array(np.arange(next_id, next_id + chunks.num_rows, dtype=np.int64))
            next_id += chunks.num_rows
            writer.add_rows("chunks", chunks.set_column(chunks.schema.get_field_index("vector_id"), "vector_id", ids))


def _in_doc_order(merged: list[SegmentFiles], by_segment: dict[int, list[str]],
                  table_name: str) -> tuple[pa.Table, np.ndarray | None]:
    """The rows of some documents from the segments holding them, in doc_id order, each
    document's rows in their stored order; for chunks, their vectors in the same order."""
    pieces, vectors = [], []
    for at, doc_ids in by_segment.items():
        rows = merged[at].rows_of_documents(table_name, doc_ids)
        pieces.append(rows)
        if table_name == "chunks" and rows.num_rows:
            old = rows.column("vector_id").to_numpy().astype(np.int64)
            vectors.append(merged[at].vectors()[old - merged[at].ref.vector_base])
    rows = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
    # a stable sort by doc_id: rows of one document come from one segment, in their order
    order = pc.sort_indices(rows.append_column("_at", pa.array(np.arange(rows.num_rows, dtype=np.int64))),
                            sort_keys=[("doc_id", "ascending"), ("_at", "ascending")])
    ordered = rows.take(order)
    if table_name != "chunks":
        return ordered, None
    joined = np.concatenate(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
    return ordered, joined[order.to_numpy()] if len(joined) else joined


def carried_rows(live: LiveSegments, doc_id: str) -> tuple[pa.Table, dict[str, pa.Table]]:
    """A live document's chunks and offset maps as the segment holding them has them, to be
    written again under a new documents row (its user metadata changed, nothing else): its
    chunks get new vector ids from the build, with their stored vectors. The caller masks its
    old rows."""
    segment = live.segment_of(doc_id)
    if segment is None:
        raise IndexFormatError(f"{doc_id}: not in the live generation, nothing to carry over")
    maps = {name: segment.rows_of(name, doc_id) for name in DOCUMENT_MAP_TABLES}
    return segment.rows_of("chunks", doc_id), {name: rows for name, rows in maps.items() if rows.num_rows}


def _copy_maps(segment: SegmentFiles, doc_id: str, writer: SegmentWriter) -> None:
    for table_name in DOCUMENT_MAP_TABLES:
        writer.add_rows(table_name, segment.rows_of(table_name, doc_id))


def write_merged(paths, live: LiveSegments, names: list[str], generation: str, vector_base: int, model_id: str,
                 dim: int) -> SegmentRef:
    """Merge the segments ``names`` into a new segment folder; its ref."""
    name = f"{generation}-merged"
    tmp = paths.segments / f".{name}.tmp-{os.getpid()}"
    writer = SegmentWriter(tmp, model_id, dim)
    try:
        merge_segments(live, names, writer, vector_base)
        # a document's mtime stays as trusted as the least trusted of the segments it may come from
        trusted_before = min(s.ref.mtimes_trusted_before_ns for s in live.segments if s.name in names)
        ref = writer.finish(name, vector_base, trusted_before)
        os.rename(tmp, paths.segment(name))
        fsync_dir(paths.segments)
    except BaseException:
        writer.abort()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ref


def masked_refs(refs: list[SegmentRef], masked: Deletions) -> list[SegmentRef]:
    """``refs`` with their deletion counts as ``masked`` says (documents and their chunks)."""
    return [dataclasses.replace(ref, n_deleted=len(masked.get(ref.name, {})),
                                n_deleted_vectors=sum(m.n_vectors for m in masked.get(ref.name, {}).values()))
            for ref in refs]


def masked_document(live: LiveSegments, doc_id: str) -> MaskedDocument | None:
    """What masking a live document takes out of the generation: its segment, its chunks' vector
    ids (contiguous: a segment writes a document's chunks together) and their BM25 length."""
    segment = live.segment_of(doc_id)
    if segment is None:
        return None
    chunks = segment.rows_of("chunks", doc_id)
    ids = chunks.column("vector_id").to_numpy().astype(np.int64)
    if len(ids) and not np.array_equal(ids, np.arange(ids[0], ids[0] + len(ids))):
        raise IndexFormatError(f"{segment.dir}: the chunks of {doc_id!r} do not hold consecutive vector ids")
    hidden = segment.rows_of("hidden_text", doc_id)
    batches = chunks.select(list(ANALYSED_CHUNK_COLUMNS)).to_batches()  # the text the build counted
    n_tokens = sum(len(lexical_tokens(text, language)) for text, language in chunk_analyses(batches, hidden))
    return MaskedDocument(segment.name, doc_id, int(ids[0]) if len(ids) else segment.ref.vector_base, len(ids), n_tokens)
