"""What the viewer shows for a span: page images with boxes, marked HTML source, or marked text.

One record, ``SourceView``, is built here for a citation, a search hit or a
chunk, and rendered by the same template everywhere (the self-contained
report, the server's pages). Boxes are kept in percent of the displayed page,
so they sit on the page image at whatever size the browser draws it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from index.inspect import ChunkPlace
from index.reader import Index
from index.viewer.marked_source import MarkedText, marked_html, marked_text
from index.viewer.page_images import html_pages_unavailable
from index.viewer.sheet_grid import SheetGrid, sheet_grid
from schemas.citations import Citation
from schemas.limits import VIEW_SOURCE_CHARS
from schemas.records import OFFICE_TYPES, DocumentRecord, MediaType, PdfPage, Rect
from schemas.tables import HTML_PAGE_HEIGHT, HTML_PAGE_WIDTH


class ViewKind(StrEnum):
    PDF = "pdf"  # page images with highlight boxes
    HTML = "html"  # the decoded source, defused, the span marked, in a sandboxed iframe (and, laid
    # out by the build's browser, the page images with boxes, as for a PDF)
    TEXT = "text"  # Markdown or plain text, the span marked
    OFFICE = "office"  # a Word or PowerPoint file (or OpenDocument, EPUB): its text, the span marked, and
    # where LibreOffice rendered it, its pages with boxes
    SHEET = "sheet"  # a spreadsheet: the cells around the span as a grid, the cited cells marked
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
    width: float  # points, as displayed (PDF); CSS px of the layout (HTML)
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
    windows: tuple[tuple[int, int], ...] = ()  # HTML: the parts of a large page shown (none: all of it)
    source_chars: int = 0  # HTML: the length of the decoded source
    text: MarkedText | None = None  # TEXT, OFFICE, SHEET
    grid: SheetGrid | None = None  # SHEET
    part: str = ""  # OFFICE, SHEET: the part of the file the span came from ("word/document.xml")
    note: str = ""  # a warning (document changed) or why there is nothing to show


class ViewBuilder:
    """Builds views against one index (whose page sizes and source maps are built once per document).

    >>> views = ViewBuilder(index.open("build/sample-index"))        # doctest: +SKIP
    >>> views.citation(citation).pages[0].boxes[0].left               # doctest: +SKIP
    12.5
    """

    def __init__(self, index: Index, *, inline_html: bool = True, html_pages: bool | None = None) -> None:
        """``inline_html=False``: HTML views carry their source ranges but no page of their own,
        for a caller that marks one shared copy of each page (the report). ``html_pages``: whether
        HTML views show page images with boxes (None: where the index has them and this machine's
        browser is the one that laid them out)."""
        self.index = index
        self.inline_html = inline_html
        self._html_pages = html_pages

    @property
    def html_pages(self) -> bool:
        if self._html_pages is None:
            self._html_pages = html_pages_unavailable(self.index.manifest.html_layout) is None
        return self._html_pages

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
            source = self.index.decoded_source(doc_id)
            windows = self.html_windows(doc_id, ranges, len(source))
            srcdoc = ""
            if self.inline_html:
                srcdoc = marked_html(source, ranges, windows=windows or None)
            note = _windows_note(windows, len(source)) if windows else ""
            pages = _page_views(doc_id, tuple(rects), page, lambda _: _HTML_PAGE) if self.html_pages else ()
            where = "HTML" + (f", p. {pages[0].page}" if pages else "")
            return SourceView(ViewKind.HTML, doc_id, where, pages=pages, srcdoc=srcdoc, source_ranges=ranges,
                              windows=windows, source_chars=len(source), note=note)
        if doc.media_type in OFFICE_TYPES:
            return self._office_view(doc, start, end, tuple(rects), page)
        return self._text_view(doc, doc_version, start, end)

    def _office_view(self, doc: DocumentRecord, start: int, end: int, rects: tuple[Rect, ...],
                     page: int | None) -> SourceView:
        """The document text with the span marked; a sheet's grid, or the rendered pages with boxes."""
        source_map = self.index.office_source_map(doc.doc_id)
        text = self.index.doc_text(doc.doc_version)
        marked = marked_text(text, start, end)
        source = source_map.source_range(start, end)
        part = source[0] if source else ""
        sheet = next((p for p in source_map.pages if p.start <= start < p.end), None)
        if doc.media_type in SHEET_TYPES and sheet is not None:
            grid = sheet_grid(text, sheet, source_map.cells, start, end)
            cells = source_map.cells_of(start, end)
            where = cells[0] if len(cells) == 1 else f"{sheet.name}, {len(cells)} cells" if cells else sheet.name
            return SourceView(ViewKind.SHEET, doc.doc_id, where, text=marked, grid=grid, part=part)
        pages = ()
        if self.index.rendered_path(doc.doc_id) is not None:
            pages = _page_views(doc.doc_id, rects, page, lambda n: self.index.office_render_page(doc.doc_id, n))
        slides = doc.media_type in SLIDE_TYPES
        if pages:
            where = f"slide {pages[0].page}" if slides else f"p. {pages[0].page}"
        else:
            where = f"slide {page}" if slides and page else _OFFICE_NAMES.get(doc.media_type, "office")
        return SourceView(ViewKind.OFFICE, doc.doc_id, where, pages=pages, text=marked, part=part)

    def html_windows(self, doc_id: str, ranges: Sequence[tuple[int, int]], source_chars: int) -> tuple[tuple[int, int], ...]:
        """The parts of a page's decoded source to show for a span of ``ranges``: none (the whole
        page) for a page of at most ``VIEW_SOURCE_CHARS``; else each range with a little source
        around it (merged where they meet), the first widened backwards and the last forwards to
        about ``VIEW_SOURCE_CHARS`` in all, and no more than that. Each starts where the source
        is character data, so that it is tokenized (and defused) as the whole page would be."""
        if source_chars <= VIEW_SOURCE_CHARS:
            return ()
        source_map = self.index.html_source_map(doc_id)
        windows: list[tuple[int, int]] = []
        budget = VIEW_SOURCE_CHARS
        for a, b in ranges or [(0, 0)]:
            if budget <= 0:
                break
            lo = max(0, a - _RANGE_MARGIN)
            start = source_map.data_position(lo) if lo else 0
            lo = a if start is None else min(a, start)
            hi = min(source_chars, b + _RANGE_MARGIN, lo + budget)
            if windows and lo <= windows[-1][1]:
                budget -= hi - windows[-1][1]
                windows[-1] = (windows[-1][0], max(hi, windows[-1][1]))
            else:
                budget -= hi - lo
                windows.append((lo, hi))
        if budget > 0:  # what is left: context before the span and after it
            before = min(budget // 3, windows[0][0])
            lo = windows[0][0] - before
            start = source_map.data_position(lo) if lo else 0
            lo = windows[0][0] if start is None else min(windows[0][0], start)
            windows[0] = (lo, windows[0][1])
            budget -= before
            windows[-1] = (windows[-1][0], min(source_chars, windows[-1][1] + max(0, budget)))
        return tuple(windows)

    def _text_view(self, doc: DocumentRecord, doc_version: str, start: int, end: int, note: str = "") -> SourceView:
        where = {MediaType.MARKDOWN: "Markdown", MediaType.HTML: "HTML text"}.get(doc.media_type, "text")
        text = marked_text(self.index.doc_text(doc_version), start, end)
        return SourceView(ViewKind.TEXT, doc.doc_id, where, text=text, note=note)

    def _pdf_view(self, doc: DocumentRecord, rects: tuple[Rect, ...], page: int | None) -> SourceView:
        pages = _page_views(doc.doc_id, rects, page, lambda number: self.index.pdf_page(doc.doc_id, number))
        if not pages:
            return SourceView(ViewKind.NONE, doc.doc_id, "PDF", note="no page to show")
        first = pages[0]
        if len(pages) > 1:
            where = f"pp. {first.page}–{pages[-1].page}"
        else:
            where = f"p. {first.page}" + (f" (printed {first.label})" if first.label and first.label != str(first.page) else "")
        return SourceView(ViewKind.PDF, doc.doc_id, where, pages=pages)


SHEET_TYPES = frozenset({MediaType.XLSX, MediaType.ODS, MediaType.XLS})
SLIDE_TYPES = frozenset({MediaType.PPTX, MediaType.ODP, MediaType.PPT})
_OFFICE_NAMES = {MediaType.DOCX: "Word", MediaType.DOC: "Word", MediaType.ODT: "OpenDocument text",
                 MediaType.EPUB: "EPUB", MediaType.PPTX: "PowerPoint", MediaType.PPT: "PowerPoint",
                 MediaType.ODP: "OpenDocument presentation"}

# An HTML page of the browser layout: what its boxes are measured against.
_HTML_PAGE = PdfPage(page=0, start=0, end=0, width=HTML_PAGE_WIDTH, height=HTML_PAGE_HEIGHT, rotation=0,
                     label="", has_text=True)


def _page_views(doc_id: str, rects: tuple[Rect, ...], page: int | None, size_of) -> tuple[PageView, ...]:
    """The pages the rectangles lie on, each with its boxes (``page`` alone where there are none)."""
    by_page: dict[int, list[Rect]] = {}
    for rect in rects:
        by_page.setdefault(rect.page, []).append(rect)
    if not by_page and page:
        by_page[page] = []  # a span of synthetic characters only: the page, no boxes
    pages = []
    for number in sorted(by_page):
        size = size_of(number)
        if size is None:
            continue
        boxes = tuple(_box(r, size) for r in by_page[number])
        pages.append(PageView(doc_id, number, size.label, size.width, size.height, boxes))
    return tuple(pages)


_RANGE_MARGIN = 200  # source shown around each part of a span on a large page


def _windows_note(windows: Sequence[tuple[int, int]], source_chars: int) -> str:
    shown = sum(hi - lo for lo, hi in windows)
    return (f"A large page ({source_chars:,} characters of source): the span and the source around it are shown, "
            f"{shown:,} characters from {windows[0][0]:,} to {windows[-1][1]:,}.")


def _box(rect: Rect, page: PdfPage) -> Box:
    return Box(
        left=100.0 * rect.x0 / page.width,
        top=100.0 * rect.y0 / page.height,
        width=100.0 * (rect.x1 - rect.x0) / page.width,
        height=100.0 * (rect.y1 - rect.y0) / page.height,
        rect=rect,
    )
