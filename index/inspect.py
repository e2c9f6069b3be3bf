"""Everything known about one chunk's place in its document (the `show` command, the inspector)."""

from __future__ import annotations

from dataclasses import dataclass

from index.citations.locate import PdfCharMap
from index.reader import Index
from schemas.errors import SpanindexError
from schemas.records import Chunk, MediaType, Rect


@dataclass(frozen=True, slots=True)
class ChunkPlace:
    chunk_id: str
    doc_id: str
    doc_version: str
    media_type: str
    start: int
    end: int
    n_tokens: int
    page_start: int | None
    page_end: int | None
    rects: list[Rect]  # one per line; or one per glyph when asked
    src_start: int | None
    src_end: int | None
    text: str


def inspect_chunk(index: Index, chunk_id: str, *, glyph_boxes: bool = False) -> ChunkPlace:
    """Where ``chunk_id`` lies: offsets, pages and rectangles (PDF) or source range (HTML)."""
    with index.request():
        return _inspect(index, chunk_id, glyph_boxes)


def _inspect(index: Index, chunk_id: str, glyph_boxes: bool) -> ChunkPlace:
    chunk = index.chunk(chunk_id)
    if chunk is None:
        raise SpanindexError(f"no chunk {chunk_id!r} in generation {index.generation.name}")
    doc = index.document(chunk.doc_id)
    rects: list[Rect] = []
    src = (None, None)
    if doc.media_type is MediaType.PDF:
        char_map = index.pdf_char_map(chunk.doc_id)
        if glyph_boxes:
            rects = _glyph_rects(char_map, chunk)
        else:
            rects = char_map.rects(index.doc_text(chunk.doc_version), chunk.start, chunk.end)
    elif doc.media_type is MediaType.HTML:
        src = index.html_source_map(chunk.doc_id).source_range(chunk.start, chunk.end)
        box_map = index.html_box_map(chunk.doc_id)
        if box_map is not None:
            rects = (_glyph_rects(box_map, chunk) if glyph_boxes
                     else box_map.rects(index.doc_text(chunk.doc_version), chunk.start, chunk.end))
    return ChunkPlace(
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        doc_version=chunk.doc_version,
        media_type=doc.media_type.value,
        start=chunk.start,
        end=chunk.end,
        n_tokens=chunk.n_tokens,
        page_start=chunk.page_start,
        page_end=chunk.page_end,
        rects=rects,
        src_start=src[0],
        src_end=src[1],
        text=chunk.text,
    )


def _glyph_rects(char_map: PdfCharMap, chunk: Chunk) -> list[Rect]:
    rects = []
    for i, (a, b) in enumerate(zip(char_map.run_starts, char_map.run_ends)):
        if b <= chunk.start or a >= chunk.end:
            continue
        base = int(char_map.box_offsets[i]) - int(a)
        for offset in range(max(chunk.start, int(a)), min(chunk.end, int(b))):
            x0, y0, x1, y1 = (float(v) for v in char_map.boxes[base + offset])
            rects.append(Rect(int(char_map.run_pages[i]), x0, y0, x1, y1))
    return rects
