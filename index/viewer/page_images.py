"""Pages as images: PDF pages rendered by PyMuPDF, HTML pages by the browser that laid them out.

A PDF page is rendered as displayed (rotation applied, cropbox), so a highlight
rectangle in points lands on the image by scaling alone: pixel = point * zoom.
An HTML page (an index built with ``--html-layout``) is a tile of the browser
layout, ``HTML_PAGE_WIDTH`` x ``HTML_PAGE_HEIGHT`` CSS px at one pixel each, its
boxes in those pixels; it is shown only where this machine's browser is the one
the build used (another version could lay the page out otherwise). Renders are
cached by (source file, page, zoom); the stored sources are named by content
hash, so a cached image can never belong to other bytes.
"""

from __future__ import annotations

import base64
import collections
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from ingest.formats import LayoutError, layout_engine, shared_browser
from schemas.errors import SpanindexError
from schemas.tables import HTML_PAGE_HEIGHT, HTML_PAGE_WIDTH

DEFAULT_ZOOM = 1.5  # 108 dpi: sharp enough to read a footnote, ~100-300 KB a page


@dataclass(frozen=True, slots=True)
class PageImage:
    png: bytes
    width_px: int
    height_px: int
    zoom: float
    render_seconds: float

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def render_page(source: str | Path, page: int, zoom: float = DEFAULT_ZOOM, *, doc_id: str | None = None) -> PageImage:
    """Page ``page`` (1-based) of the PDF at ``source`` as a PNG.

    >>> render_page("sample_corpus/pricing/rate-card.pdf", 1).width_px   # doctest: +SKIP
    918
    """
    started = time.perf_counter()
    try:
        with pymupdf.open(source) as document:
            if document.needs_pass:  # an index from before decrypted copies were kept
                raise SpanindexError("password-protected: its pages cannot be rendered (no password is stored)",
                                     doc_id=doc_id, page=page)
            if not 1 <= page <= document.page_count:
                raise SpanindexError(f"no such page (the document has {document.page_count})", doc_id=doc_id, page=page)
            pixmap = document[page - 1].get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
            png = pixmap.tobytes("png")
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise SpanindexError(f"cannot render {source}: {exc}", doc_id=doc_id, page=page) from exc
    return PageImage(png, pixmap.width, pixmap.height, zoom, time.perf_counter() - started)


class PageImageCache:
    """Rendered pages, least recently used dropped first once ``max_bytes`` is exceeded.

    Safe to share between threads: PyMuPDF is not thread-safe, so renders are serialised.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._images: collections.OrderedDict[tuple[str, int, float], PageImage] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(
        self, source: str | Path, page: int, zoom: float = DEFAULT_ZOOM, *, doc_id: str | None = None
    ) -> tuple[PageImage, bool]:
        """The page image, and whether it came from the cache."""
        return self._get((str(source), page, zoom), lambda: render_page(source, page, zoom, doc_id=doc_id))

    def get_html(self, decoded_source: Path, page: int, *, doc_id: str | None = None) -> tuple[PageImage, bool]:
        """A page of an HTML document's layout (from its stored decoded source), and whether it was cached."""
        return self._get((str(decoded_source), page, 0.0), lambda: render_html_page(decoded_source, page, doc_id=doc_id))

    def _get(self, key: tuple[str, int, float], render) -> tuple[PageImage, bool]:
        with self._lock:
            image = self._images.get(key)
            if image is not None:
                self._images.move_to_end(key)
                return image, True
            image = render()
            self._images[key] = image
            self._bytes += len(image.png)
            while self._bytes > self.max_bytes and len(self._images) > 1:
                _, dropped = self._images.popitem(last=False)
                self._bytes -= len(dropped.png)
            return image, False


_engine_here: list[str] = []  # this machine's layout engine, or why there is none: asked once


def html_pages_unavailable(engine: str) -> str | None:
    """Why the HTML pages of an index laid out by ``engine`` (its manifest's ``html_layout``)
    cannot be shown as images here, or None when they can."""
    if not engine:
        return "the index was built without --html-layout"
    if not _engine_here:
        try:
            _engine_here.append(layout_engine())
        except LayoutError as exc:
            _engine_here.append(exc.message)
    here = _engine_here[0]
    if here != engine:
        return f"the pages were laid out by {engine}; here: {here}"
    return None


_browser_lock = threading.Lock()


def render_html_page(decoded_source: str | Path, page: int, *, doc_id: str | None = None) -> PageImage:
    """Page ``page`` (1-based) of the browser layout of a stored decoded HTML source, as a PNG."""
    started = time.perf_counter()
    source = Path(decoded_source).read_bytes().decode("utf-8")
    with _browser_lock:  # one page in one browser for the process
        png = shared_browser().page_image(source, page, doc_id=doc_id or "")
    return PageImage(png, HTML_PAGE_WIDTH, HTML_PAGE_HEIGHT, 1.0, time.perf_counter() - started)
