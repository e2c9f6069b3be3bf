"""What the server's routes share: one open index, its views, rendered pages, and URLs.

Readers, the view builder and PyMuPDF are not made for concurrent use, so the
routes (run in a thread pool) read the index only inside ``reading()``, which
holds a lock for the request (milliseconds) and makes it one request of the
index: it moves to the live generation if a reindex replaced it and reads that
one throughout, so the server never serves a generation that retention is
about to delete.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote as percent_encode

from index.reader import Index
from index.viewer.claims import Links
from index.viewer.page_images import DEFAULT_ZOOM, PageImageCache
from index.viewer.source_views import PageView, ViewBuilder
from ingest.embed import Embedder
from schemas.errors import SpanindexError
from schemas.records import DocStatus, DocumentRecord

log = logging.getLogger("spanindex.server")


class ServerState:
    def __init__(self, index_dir: str | Path, *, zoom: float = DEFAULT_ZOOM, embedder: Embedder | None = None,
                 cache_bytes: int | None = None) -> None:
        self.index = Index(index_dir, embedder=embedder, cache_bytes=cache_bytes)
        self.views = ViewBuilder(self.index)
        self.images = PageImageCache()
        self.zoom = zoom
        self.lock = threading.RLock()
        self.links = Links(
            page_image=lambda page: ("data-src", page_image_url(page)),
            source_file=lambda doc_id, page: document_url(doc_id, "file") + (f"#page={page}" if page else ""),
            live_page=lambda doc_id, locator: document_url(doc_id, "view") + locator,
            chunk=chunk_url,
        )

    @contextlib.contextmanager
    def reading(self) -> Iterator[ServerState]:
        """Hold the lock, on the live generation, for one request."""
        with self.lock, self.index.request():  # page images stay across generations: keyed by content hash
            yield self

    def document(self, doc_id: str) -> DocumentRecord | None:
        """The document by id, if the index holds its source; never a path from the request."""
        doc = self.index.document(doc_id)
        if doc is None or doc.status is not DocStatus.OK:
            return None
        return doc


def refuse_answer(request, error: SpanindexError) -> None:
    """One log line for an answer the server refused (the client gets the reason in its 422)."""
    reason = str(error).encode("unicode_escape").decode("ascii")[:300]  # one line, whatever it quotes
    log.warning("refused %s %s: %s", request.method, request.url.path, reason)


def document_url(doc_id: str, what: str) -> str:
    return f"/documents/{percent_encode(doc_id)}/{what}"


def page_image_url(page: PageView) -> str:
    return document_url(page.doc_id, f"pages/{page.page}.png")


def chunk_url(chunk_id: str) -> str:
    return "/inspect?chunk_id=" + percent_encode(chunk_id, safe="")
