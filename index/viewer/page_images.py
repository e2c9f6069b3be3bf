"""PDF pages as images, rendered by PyMuPDF from the stored source.

A page is rendered as displayed (rotation applied, cropbox), so a highlight
rectangle in points lands on the image by scaling alone: pixel = point * zoom.
Renders are cached by (source file, page, zoom); the stored sources are named
by content hash, so a cached image can never belong to other bytes.
"""

from __future__ import annotations

import base64
import collections
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from schemas.errors import SpanindexError

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
        key = (str(source), page, zoom)
        with self._lock:
            image = self._images.get(key)
            if image is not None:
                self._images.move_to_end(key)
                return image, True
            image = render_page(source, page, zoom, doc_id=doc_id)
            self._images[key] = image
            self._bytes += len(image.png)
            while self._bytes > self.max_bytes and len(self._images) > 1:
                _, dropped = self._images.popitem(last=False)
                self._bytes -= len(dropped.png)
            return image, False
