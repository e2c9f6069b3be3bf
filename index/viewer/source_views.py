"""What the viewer shows for a span: page images with boxes, marked HTML source, or marked text.

One record, ``SourceView``, is built here for a citation, a search hit or a
chunk, and rendered by the same template everywhere (the self-contained
report, the server's pages). Boxes are kept in percent of the displayed page,
so they sit on the page image at whatever size the browser draws it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from index.inspect import ChunkPlace
from index.reader import Index
from index.viewer.marked_source import MarkedText, marked_html, marked_text
from schemas.citations import Citation
from schemas.records import DocumentRecord, MediaType, PdfPage, Rect


class ViewKind(StrEnum):
    PDF = "pdf"  # page images with highlight boxes
    HTML = "html"  # the decoded source, defused, the span marked, in a sandboxed iframe
    TEXT = "text"  # Markdown or plain text, the span marked
    NONE = "none"  # nothing to show (unverified citation, document gone); ``note`` says why


@dataclass(frozen=True, slots=True)
class Box:
    """A highlight on a page image, in percent of the displayed page."""

    left: float
    top: float
    width: float
    height: float
    rect: Rect  # the rectangle in points it was made from


@dataclass(frozen=True, slots=True)
class PageView:
    doc_id: str
    page: int  # 1-based
    label: str  # printed page label, "" where the PDF has none
    width: float  # points, as displayed
    height: float
    boxes: tuple[Box, ...]


@dataclass(frozen=True, slots=True)
class SourceView:
    kind: ViewKind
    doc_id: str
    where: str  # "p. 7", "HTML", "Markdown", "text": how a popup names the place
    pages: tuple[PageView, ...] = ()
    srcdoc: str = ""  # HTML: the page to show in the sandboxed iframe ("" when the page is shared)
    source_ranges: tuple[tuple[int, int], ...] = ()  # HTML: the decoded-source ranges of the span
    text: MarkedText | None = None  # TEXT
    note: str = ""  # a warning (document changed) or why there is nothing to show


class ViewBuilder:
    """Builds views against one index (whose page sizes and source maps are built once per document).

    >>> views = ViewBuilder(index.open("build/sample-index"))        # doctest: +SKIP
    >>> views.citation(citation).pages[0].boxes[0].left               # doctest: +SKIP
    12.5
    """

    def __init__(self, index: Index, *, inline_html: bool = True) -> None:
        """``inline_html=False``: HTML views carry their source ranges but no page of their own,
        for a caller that marks one shared copy of each page (the report)."""
        self.index = index
        self.inline_html = inline_html

    def citation(self, citation: Citation) -> SourceView:
        if not citation.status.verified:
            return SourceView(ViewKind.NONE, citation.doc_id, citation.status.value,
                              note=f"not verified: {citation.status.value}")
        return self.span(
            citation.doc_id,
            citation.doc_version,
            citation.doc_start,
            citation.doc_end,
            rects=citation.rects,
            page=citation.page,
        )

    def chunk(self, place: ChunkPlace) -> SourceView:
        return self.span(
            place.doc_id,
            place.doc_version,
            place.start,
            place.end,
            rects=place.rects,
            page=place.page_start,
        )

    def span(
        self,
        doc_id: str,
        doc_version: str,
        start: int,
        end: int,
        *,
        rects: Iterable[Rect] = (),
        page: int | None = None,
    ) -> SourceView:
        """The view of ``[start, end)`` of one version of a document."""
        doc = self.index.document(doc_id)
        if doc is None:
            return SourceView(ViewKind.NONE, doc_id, "gone", note="the document is not in this index")
        if doc.doc_version != doc_version:
            # Page images, boxes and source offsets belong to the current bytes: show the
            # cited version's text instead, when it was kept.
            note = "the document changed since this span was located (run `spanindex check`)"
            if doc_version and self.index.has_text(doc_version):
                return self._text_view(doc, doc_version, start, end, note)
            return SourceView(ViewKind.NONE, doc_id, "changed", note=note)
        if doc.media_type is MediaType.PDF:
            return self._pdf_view(doc, tuple(rects), page)
        if doc.media_type is MediaType.HTML:
            ranges = tuple(self.index.html_source_map(doc_id).source_ranges(start, end))
            srcdoc = marked_html(self.index.decoded_source(doc_id), ranges) if self.inline_html else ""
            return SourceView(ViewKind.HTML, doc_id, "HTML", srcdoc=srcdoc, source_ranges=ranges)
        return self._text_view(doc, doc_version, start, end)

    def _text_view(self, doc: DocumentRecord, doc_version: str, start: int, end: int, note: str = "") -> SourceView:
        where = {MediaType.MARKDOWN: "Markdown", MediaType.HTML: "HTML text"}.get(doc.media_type, "text")
        text = marked_text(self.index.doc_text(doc_version), start, end)
        return SourceView(ViewKind.TEXT, doc.doc_id, where, text=text, note=note)

    def _pdf_view(self, doc: DocumentRecord, rects: tuple[Rect, ...], page: int | None) -> SourceView:
        by_page: dict[int, list[Rect]] = {}
        for rect in rects:
            by_page.setdefault(rect.page, []).append(rect)
        if not by_page and page:
            by_page[page] = []  # a span of synthetic characters only: the page, no boxes
        pages = []
        for number in sorted(by_page):
            size = self.index.pdf_page(doc.doc_id, number)
            if size is None:
                continue
            boxes = tuple(_box(r, size) for r in by_page[number])
            pages.append(PageView(doc.doc_id, number, size.label, size.width, size.height, boxes))
        if not pages:
            return SourceView(ViewKind.NONE, doc.doc_id, "PDF", note="no page to show")
        first = pages[0]
        if len(pages) > 1:
            where = f"pp. {first.page}–{pages[-1].page}"
        else:
            where = f"p. {first.page}" + (f" (printed {first.label})" if first.label and first.label != str(first.page) else "")
        return SourceView(ViewKind.PDF, doc.doc_id, where, pages=tuple(pages))


def _box(rect: Rect, page: PdfPage) -> Box:
    return Box(
        left=100.0 * rect.x0 / page.width,
        top=100.0 * rect.y0 / page.height,
        width=100.0 * (rect.x1 - rect.x0) / page.width,
        height=100.0 * (rect.y1 - rect.y0) / page.height,
        rect=rect,
    )
