"""Arrow schemas of the Parquet tables: the on-disk contract.

Column names are fixed (see DESIGN.md); columns may be added. Every file
carries its table name and format version in the schema metadata, plus the
embedding model id and dimension, and a reader refuses what it does not know.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.errors import IndexFormatError
from schemas.records import (
    RUN_KINDS,
    Chunk,
    DocStatus,
    DocumentRecord,
    HiddenReason,
    HiddenRun,
    HtmlRun,
    HtmlRuns,
    MediaType,
    OfficeCell,
    OfficePage,
    OfficeRun,
    OfficeRuns,
    OfficeShape,
    PdfCharRun,
    PdfPage,
    RunKind,
)

FORMAT_VERSION = 9  # 2: documents.source_url; 3: hidden_text, chunks.n_hidden, documents.n_hidden_chars;
# 4: html_boxes, pdf_pages.ocr, pdf_chars.ocr_confidence; 5: office_map, office_pages, office_cells;
# 6: office_boxes, office_render_pages, office_shapes; 7: segments, deleted, stable vector ids;
# 8: documents.metadata (the user's fields), documents.created, documents.language; chunks.title and
#    chunks.headings (section context, also in each chunk's BM25 text), chunks.language (ISO 639-1,
#    "" undetermined), documents.source_etag (an object's ETag: a corpus in a store is known unchanged
#    by its listing)
# 9: each segment's chunks also as an uncompressed Arrow IPC file (layout.HITS_FILE), a search's rows
META_TABLE = b"spanindex.table"
META_FORMAT = b"spanindex.format_version"
META_MODEL = b"spanindex.model_id"
META_DIM = b"spanindex.model_dim"

DOCUMENTS = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("source_sha256", pa.string()),
        ("media_type", pa.string()),
        ("n_chars", pa.int64()),
        ("n_pages", pa.int32()),
        ("title", pa.string()),
        ("encoding", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("pages_without_text", pa.int32()),
        ("n_chunks", pa.int32()),
        ("source_bytes", pa.int64()),
        ("source_mtime_ns", pa.int64()),
        ("source_etag", pa.string()),  # an object in a store: its ETag when read; "" for a file
        ("warning", pa.string()),
        ("source_url", pa.string()),
        ("n_hidden_chars", pa.int64()),
        ("metadata", pa.string()),  # the user's fields (ingest.user_metadata), canonical JSON; "{}" none
        ("created", pa.string()),  # the document's own date, ISO 8601; null where it has none
        ("language", pa.string()),
    ]
)

CHUNKS = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("seq", pa.int32()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("text", pa.string()),
        ("text_sha256", pa.string()),
        ("token_start", pa.int32()),
        ("n_tokens", pa.int32()),
        ("page_start", pa.int32()),
        ("page_end", pa.int32()),
        ("vector_id", pa.int64()),
        ("embed_sha256", pa.string()),
        ("n_hidden", pa.int32()),
        ("title", pa.string()),
        ("headings", pa.list_(pa.string())),  # outermost first
        ("language", pa.string()),
    ]
)

PDF_CHARS = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("page", pa.int32()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("boxes", pa.list_(pa.float32())),
        ("ocr_confidence", pa.list_(pa.uint8())),  # null for characters of a text layer
    ]
)

# The same shape as pdf_chars: per-character boxes of the browser layout of an HTML page
# (CSS px, relative to the top of their page of HTML_PAGE_HEIGHT; see ingest.formats.html.layout).
HTML_BOXES = PDF_CHARS
HTML_PAGE_WIDTH = 1280  # CSS px: the width the browser lays HTML pages out at
HTML_PAGE_HEIGHT = 1600  # CSS px: the height of the pages its layout is cut into

PDF_PAGES = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("page", pa.int32()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("width", pa.float32()),
        ("height", pa.float32()),
        ("rotation", pa.int16()),
        ("label", pa.string()),
        ("has_text", pa.bool_()),
        ("ocr", pa.bool_()),
    ]
)

HTML_MAP = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("src_start", pa.int64()),
        ("src_end", pa.int64()),
        ("kind", pa.string()),
    ]
)

# DOCX, PPTX, XLSX: runs where part[src_start:src_end] (the zip member's XML decoded as UTF-8,
# in code points) produced text[start:end]; kind as in html_map (synthetic: part "", empty range).
OFFICE_MAP = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("part", pa.string()),
        ("src_start", pa.int64()),
        ("src_end", pa.int64()),
        ("kind", pa.string()),
    ]
)

# PPTX slides and XLSX sheets: each one's slice of the text (page: the slide's number, the
# sheet's place in the workbook; name: the sheet's name or the slide's part).
OFFICE_PAGES = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("page", pa.int32()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("name", pa.string()),
        ("hidden", pa.bool_()),
    ]
)

# XLSX: the text of each cell and its reference ("Sheet1!B7").
OFFICE_CELLS = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("ref", pa.string()),
    ]
)

# The same shapes as pdf_chars and pdf_pages: an office document as LibreOffice renders it (the
# PDF kept as sources/<sha256>.rendered.pdf), each character's glyph box in points on its
# rendered page; a rendered page's start and end span the characters boxed on it.
OFFICE_BOXES = PDF_CHARS
OFFICE_RENDER_PAGES = PDF_PAGES

# PPTX: each text shape's frame on its slide, in points from the slide's top left (the slide's
# own geometry: layout and master placeholders and group transforms resolved).
OFFICE_SHAPES = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("page", pa.int32()),
        ("x0", pa.float32()),
        ("y0", pa.float32()),
        ("x1", pa.float32()),
        ("y1", pa.float32()),
    ]
)

# A segment's BM25 postings, one row per token (ingest.store.lexical writes it, index.search.lexical
# reads it): the chunks (vector_ids) that hold the token, how often (counts), and each chunk's length
# in tokens. The weights depend on the whole live corpus (chunk count, document frequencies, mean
# length), so a reader computes them from the generation's statistics, as a full rebuild would.
LEXICAL = pa.schema(
    [
        ("token", pa.string()),
        ("vector_ids", pa.list_(pa.int64())),
        ("counts", pa.list_(pa.int32())),
        ("lengths", pa.list_(pa.int32())),
    ]
)
META_LEXICAL = b"spanindex.lexical"  # JSON: tokenizer version, BM25 k1, b and method, chunk count, token count

# The documents a generation masks in its segments (ingest.store.segments): a changed or removed
# document's rows stay in the segment that holds them until a merge drops them.
DELETED = pa.schema([("segment", pa.string()), ("doc_id", pa.string()),
                     ("first_vector_id", pa.int64()),  # its chunks' vector ids, contiguous in the segment
                     ("n_vectors", pa.int32()),
                     ("n_tokens", pa.int64())])  # its chunks' BM25 lengths summed: what leaves the mean length

HIDDEN_TEXT = pa.schema(
    [
        ("doc_id", pa.string()),
        ("doc_version", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("reason", pa.string()),  # a HiddenReason
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "documents": DOCUMENTS,
    "chunks": CHUNKS,
    "pdf_chars": PDF_CHARS,
    "pdf_pages": PDF_PAGES,
    "html_map": HTML_MAP,
    "hidden_text": HIDDEN_TEXT,
    "html_boxes": HTML_BOXES,
    "office_map": OFFICE_MAP,
    "office_pages": OFFICE_PAGES,
    "office_cells": OFFICE_CELLS,
    "office_boxes": OFFICE_BOXES,
    "office_render_pages": OFFICE_RENDER_PAGES,
    "office_shapes": OFFICE_SHAPES,
    "lexical": LEXICAL,
    "deleted": DELETED,
}
# Tables whose rows belong to one document each, grouped by doc_id: carried over with an
# unchanged document, checked against its text by fsck.
DOCUMENT_MAP_TABLES = ("pdf_pages", "pdf_chars", "html_map", "hidden_text", "html_boxes", "office_map", "office_pages",
                       "office_cells", "office_boxes", "office_render_pages", "office_shapes")

# Record type behind each table, and record field -> column where names differ.
RECORD_TYPES: dict[str, tuple[type, dict[str, str]]] = {
    "documents": (DocumentRecord, {}),
    "chunks": (Chunk, {}),
    "pdf_chars": (PdfCharRun, {"glyph_boxes": "boxes"}),
    "pdf_pages": (PdfPage, {}),
    "html_map": (HtmlRun, {}),
    "hidden_text": (HiddenRun, {}),
    "html_boxes": (PdfCharRun, {"glyph_boxes": "boxes"}),
    "office_map": (OfficeRun, {}),
    "office_pages": (OfficePage, {}),
    "office_cells": (OfficeCell, {}),
    "office_boxes": (PdfCharRun, {"glyph_boxes": "boxes"}),
    "office_render_pages": (PdfPage, {}),
    "office_shapes": (OfficeShape, {}),
}


def with_metadata(table_name: str, model_id: str, model_dim: int) -> pa.Schema:
    """The schema of a table as written: contract schema plus identifying metadata."""
    return SCHEMAS[table_name].with_metadata(
        {
            META_TABLE: table_name.encode(),
            META_FORMAT: str(FORMAT_VERSION).encode(),
            META_MODEL: model_id.encode(),
            META_DIM: str(model_dim).encode(),
        }
    )


def check_schema(table_name: str, schema: pa.Schema, where: str = "") -> None:
    """Refuse a file that is not this table in a format version we know."""
    meta = schema.metadata or {}
    if meta.get(META_TABLE) != table_name.encode():
        raise IndexFormatError(f"{where or table_name}: not a spanindex {table_name} table")
    version = meta.get(META_FORMAT, b"?").decode()
    if version != str(FORMAT_VERSION):
        raise IndexFormatError(
            f"{where or table_name}: format version {version}, this spanindex reads {FORMAT_VERSION}"
        )
    missing = [f.name for f in SCHEMAS[table_name] if f.name not in schema.names]
    if missing:
        raise IndexFormatError(f"{where or table_name}: missing columns {missing}")


def read_table(source, table_name: str, where: str, columns: list[str] | None = None) -> pa.Table:
    """A table file (a path or an open file), refused unless it is ``table_name`` in a format we read."""
    parquet = pq.ParquetFile(source)
    check_schema(table_name, parquet.schema_arrow, where)
    return parquet.read(columns=columns)


def doc_slices(doc_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """doc_id -> (first row, row count) of a table whose rows are grouped by document.

    >>> doc_slices(["a", "a", "b"])
    {'a': (0, 2), 'b': (2, 1)}
    """
    slices: dict[str, tuple[int, int]] = {}
    first = 0
    for i in range(1, len(doc_ids) + 1):
        if i == len(doc_ids) or doc_ids[i] != doc_ids[first]:
            slices[doc_ids[first]] = (first, i - first)
            first = i
    return slices


def vector_count(n_bytes: int, dim: int, where: str) -> int:
    """Rows of a raw vectors file (float32, ``dim`` per row) of ``n_bytes``; refused when not whole."""
    if n_bytes % (4 * dim):
        raise IndexFormatError(f"{where}: size {n_bytes} is not a whole number of {dim}-d vectors")
    return n_bytes // (4 * dim)


def _column(values: list, arrow_type: pa.DataType) -> pa.Array:
    return pa.array(values, type=arrow_type)


def documents_table(records: Sequence[DocumentRecord]) -> pa.Table:
    return _records_table(records, DOCUMENTS)


def chunks_table(chunks: Sequence[Chunk]) -> pa.Table:
    return _records_table(chunks, CHUNKS)


def pdf_pages_table(doc_id: str, doc_version: str, pages: Sequence[PdfPage]) -> pa.Table:
    return _records_table(pages, PDF_PAGES, doc_id=doc_id, doc_version=doc_version)


def html_map_table(doc_id: str, doc_version: str, runs: Sequence[HtmlRun]) -> pa.Table:
    """The runs' rows, made from their columns (no object per run).

    >>> html_map_table("a.html", "v", [HtmlRun(0, 1, 3, 8, RunKind.ENTITY)]).column("kind").to_pylist()
    ['entity']
    """
    if not isinstance(runs, HtmlRuns):
        runs = HtmlRuns.from_records(runs)
    n = len(runs)
    kinds = pa.DictionaryArray.from_arrays(pa.array(runs.kind, pa.int8()), pa.array([k.value for k in RUN_KINDS]))
    return pa.Table.from_arrays(
        [
            _repeated(doc_id, n),
            _repeated(doc_version, n),
            pa.array(runs.start, pa.int64()),
            pa.array(runs.end, pa.int64()),
            pa.array(runs.src_start, pa.int64()),
            pa.array(runs.src_end, pa.int64()),
            kinds.cast(pa.string()),
        ],
        schema=HTML_MAP,
    )


def office_map_table(doc_id: str, doc_version: str, runs: Sequence[OfficeRun]) -> pa.Table:
    """The runs' rows, made from their columns, as ``html_map_table`` makes them.

    >>> office_map_table("a.docx", "v", [OfficeRun(0, 1, "word/document.xml", 3, 4, RunKind.TEXT)]).column("part").to_pylist()
    ['word/document.xml']
    """
    if not isinstance(runs, OfficeRuns):
        runs = OfficeRuns.from_records(runs)
    n = len(runs)
    kinds = pa.DictionaryArray.from_arrays(pa.array(runs.kind, pa.int8()), pa.array([k.value for k in RUN_KINDS]))
    parts = pa.DictionaryArray.from_arrays(pa.array(runs.part_code, pa.int32()), pa.array(runs.parts, pa.string()))
    return pa.Table.from_arrays(
        [
            _repeated(doc_id, n),
            _repeated(doc_version, n),
            pa.array(runs.start, pa.int64()),
            pa.array(runs.end, pa.int64()),
            parts.cast(pa.string()),
            pa.array(runs.src_start, pa.int64()),
            pa.array(runs.src_end, pa.int64()),
            kinds.cast(pa.string()),
        ],
        schema=OFFICE_MAP,
    )


def office_pages_table(doc_id: str, doc_version: str, pages: Sequence[OfficePage]) -> pa.Table:
    return _records_table(pages, OFFICE_PAGES, doc_id=doc_id, doc_version=doc_version)


def office_cells_table(doc_id: str, doc_version: str, cells: Sequence[OfficeCell]) -> pa.Table:
    return _records_table(cells, OFFICE_CELLS, doc_id=doc_id, doc_version=doc_version)


def office_shapes_table(doc_id: str, doc_version: str, shapes: Sequence[OfficeShape]) -> pa.Table:
    return _records_table(shapes, OFFICE_SHAPES, doc_id=doc_id, doc_version=doc_version)


def office_run_records(table: pa.Table) -> OfficeRuns:
    """The office_map rows of one document as ``OfficeRuns`` (columns, no object per run)."""
    parts = table.column("part").combine_chunks().dictionary_encode() if table.num_rows else None
    kinds = table.column("kind").to_pylist()
    return OfficeRuns(
        table.column("start").to_numpy(), table.column("end").to_numpy(),
        parts.indices.to_numpy(zero_copy_only=False).astype(np.int32) if parts is not None else np.zeros(0, np.int32),
        table.column("src_start").to_numpy(), table.column("src_end").to_numpy(),
        np.array([RUN_KINDS.index(RunKind(k)) for k in kinds], dtype=np.int8),
        tuple(parts.dictionary.to_pylist()) if parts is not None else ("",),
    )


def office_page_records(table: pa.Table) -> list[OfficePage]:
    return [OfficePage(**row) for row in table.select([f.name for f in fields(OfficePage)]).to_pylist()]


def office_cell_records(table: pa.Table) -> list[OfficeCell]:
    return [OfficeCell(**row) for row in table.select([f.name for f in fields(OfficeCell)]).to_pylist()]


def office_shape_records(table: pa.Table) -> list[OfficeShape]:
    return [OfficeShape(**row) for row in table.select([f.name for f in fields(OfficeShape)]).to_pylist()]


def _repeated(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int8)), pa.array([value])).cast(pa.string())


def hidden_text_table(doc_id: str, doc_version: str, runs: Sequence[HiddenRun]) -> pa.Table:
    return _records_table(runs, HIDDEN_TEXT, doc_id=doc_id, doc_version=doc_version)


def html_boxes_table(doc_id: str, doc_version: str, runs: Sequence[PdfCharRun]) -> pa.Table:
    """Character boxes of an HTML page's layout: runs on one line of one page, as ``pdf_chars``."""
    return pdf_chars_table(doc_id, doc_version, runs)


def pdf_chars_table(doc_id: str, doc_version: str, runs: Sequence[PdfCharRun]) -> pa.Table:
    n = len(runs)
    lengths = np.fromiter((4 * (r.end - r.start) for r in runs), dtype=np.int32, count=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = (
        np.concatenate([r.glyph_boxes.reshape(-1) for r in runs]).astype(np.float32, copy=False)
        if n
        else np.zeros(0, dtype=np.float32)
    )
    boxes = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=pa.float32()))
    confidence = pa.array(
        [None if r.ocr_confidence is None else r.ocr_confidence.tolist() for r in runs], pa.list_(pa.uint8())
    )
    return pa.Table.from_arrays(
        [
            pa.array([doc_id] * n, pa.string()),
            pa.array([doc_version] * n, pa.string()),
            pa.array([r.page for r in runs], pa.int32()),
            pa.array([r.start for r in runs], pa.int64()),
            pa.array([r.end for r in runs], pa.int64()),
            boxes,
            confidence,
        ],
        schema=PDF_CHARS,
    )


def _records_table(records: Sequence, schema: pa.Schema, **constants: str) -> pa.Table:
    columns = []
    for f in schema:
        if f.name in constants:
            columns.append(pa.array([constants[f.name]] * len(records), f.type))
        else:
            columns.append(_column([_plain(getattr(r, f.name)) for r in records], f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _plain(value):
    # StrEnum is a str already; pyarrow wants the plain value.
    return value.value if isinstance(value, (MediaType, DocStatus, RunKind, HiddenReason)) else value


def document_records(table: pa.Table) -> list[DocumentRecord]:
    rows = table.select([f.name for f in DOCUMENTS]).to_pylist()
    return [
        DocumentRecord(
            **{**row, "media_type": MediaType(row["media_type"]), "status": DocStatus(row["status"])}
        )
        for row in rows
    ]


def chunk_records(table: pa.Table) -> list[Chunk]:
    return [chunk_of_row(row) for row in table.select([f.name for f in CHUNKS]).to_pylist()]


def chunk_of_row(row: dict) -> Chunk:
    """A chunks row (``to_pylist`` form) as its record: the headings list becomes a tuple."""
    return Chunk(**{**row, "headings": tuple(row["headings"] or ())})


def pdf_page_records(table: pa.Table) -> list[PdfPage]:
    names = [f.name for f in fields(PdfPage)]
    return [PdfPage(**row) for row in table.select(names).to_pylist()]


def html_run_records(table: pa.Table) -> list[HtmlRun]:
    names = [f.name for f in fields(HtmlRun)]
    return [
        HtmlRun(**{**row, "kind": RunKind(row["kind"])}) for row in table.select(names).to_pylist()
    ]


def hidden_run_records(table: pa.Table) -> list[HiddenRun]:
    return [
        HiddenRun(start, end, HiddenReason(reason))
        for start, end, reason in zip(
            table.column("start").to_pylist(), table.column("end").to_pylist(), table.column("reason").to_pylist()
        )
    ]


def pdf_char_runs(table: pa.Table) -> list[PdfCharRun]:
    pages = table.column("page").to_pylist()
    starts = table.column("start").to_pylist()
    ends = table.column("end").to_pylist()
    boxes = table.column("boxes").combine_chunks()
    flat = boxes.values.to_numpy(zero_copy_only=False)
    offsets = boxes.offsets.to_numpy()
    confidences = table.column("ocr_confidence").to_pylist()
    return [
        PdfCharRun(
            p, s, e, flat[offsets[i] : offsets[i + 1]].reshape(-1, 4),
            None if confidences[i] is None else np.asarray(confidences[i], dtype=np.uint8),
        )
        for i, (p, s, e) in enumerate(zip(pages, starts, ends))
    ]


def concat(tables: Iterable[pa.Table], schema: pa.Schema) -> pa.Table:
    tables = list(tables)
    return pa.concat_tables(tables) if tables else schema.empty_table()
