"""`spanindex serve`: search, verify and inspect an index in the browser, plus a JSON API.

Pages: ``/`` search (hits highlighted on their page image or HTML source),
``/verify`` (an answer in, the report view out), ``/inspect`` (one chunk: text,
offsets, tokens, line rectangles on the page). Documents are served only by
id, looked up in the index: ``/documents/{doc_id}/pages/{n}.png`` (rendered by
PyMuPDF on request, cached), ``/file`` (the stored original), ``/view`` (a
stored HTML page, defused, where a text fragment can land). API under
``/api``, described at ``/openapi.json``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from index.viewer.chunk_tokens import chunk_tokens
from index.inspect import inspect_chunk
from index.search.filters import MAX_FILTER_CHARS
from index.search.modes import search_mode
from index.citations.verify import verify_answer
from index.viewer.claims import answer_views
from index.viewer.marked_source import defused_html
from index.viewer.page_images import DEFAULT_ZOOM
from index.viewer.server import api
from index.viewer.server.security import MAX_BODY_BYTES, PDF_CSP, SANDBOX_CSP, BodyLimit, SecurityHeaders
from index.viewer.server.state import ServerState, refuse_answer
from index.viewer.templating import environment
from ingest.embed import Embedder
from schemas.answer_json import parse_answer
from schemas.citations import Policy
from schemas.errors import AnswerFormatError, FilterError, SpanindexError
from schemas.json_input import loads, replace_surrogates
from schemas.limits import VIEW_SIBLINGS
from schemas.records import OFFICE_TYPES, MediaType, SearchMode

LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]", "::1"]
MAX_PAGE_HITS = 50


def create_app(
    index_dir: str | Path,
    *,
    zoom: float = DEFAULT_ZOOM,
    max_body_bytes: int = MAX_BODY_BYTES,
    allowed_hosts: list[str] | None = None,
    embedder: Embedder | None = None,
    cache_bytes: int | None = None,
) -> FastAPI:
    """The viewer over the live generation of ``index_dir``.

    ``allowed_hosts`` defaults to loopback names: a page elsewhere that rebinds its
    DNS name to 127.0.0.1 must not read the index through the browser. ``embedder``: for an
    index built with an embedder the manifest cannot name; ``cache_bytes``: for an index in a bucket
    (see ``index.open``).

    >>> app = create_app("build/sample-index")   # doctest: +SKIP
    """
    server = ServerState(index_dir, zoom=zoom, embedder=embedder, cache_bytes=cache_bytes)
    app = FastAPI(
        title="spanindex viewer",
        summary="Search, verify and inspect an offset-preserving chunk index.",
        version="1",
        docs_url=None,  # Swagger UI would load scripts from a CDN
        redoc_url=None,
    )
    app.state.server = server
    app.include_router(api.router)
    generated_openapi = app.openapi

    def openapi() -> dict:
        """FastAPI's description of the routes, with the contract's records as generated from their types."""
        if app.openapi_schema is None:
            generated_openapi().setdefault("components", {}).setdefault("schemas", {}).update(api.openapi_components())
        return app.openapi_schema

    app.openapi = openapi
    app.mount("/static", StaticFiles(packages=[("index.viewer", "static")]), name="static")
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or LOOPBACK_HOSTS)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(SecurityHeaders)  # added last: outermost, so every answer carries it

    def page(template: str, status_code: int = 200, **context) -> HTMLResponse:
        html = environment().get_template(template).render(
            inline_assets=False, csp="", links=server.links, generation=server.index.generation.name, **context
        )
        return HTMLResponse(html, status_code=status_code)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        return page("error.html", exc.status_code, title=str(exc.status_code), active="",
                    status=exc.status_code, message=exc.detail)

    @app.exception_handler(SpanindexError)
    async def index_error(request: Request, exc: SpanindexError):
        # A damaged index or source: say what and where instead of a bare 500.
        return await http_error(request, StarletteHTTPException(500, str(exc)))

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def search_page(
        q: Annotated[str, Query(max_length=2000)] = "",
        k: Annotated[int, Query(ge=1, le=MAX_PAGE_HITS)] = 5,
        mode: Annotated[SearchMode | None, Query()] = None,
        where: Annotated[str, Query(max_length=MAX_FILTER_CHARS)] = "",
    ):
        hits, error = [], ""
        with server.reading():
            used = search_mode(server.index, mode)
            if q.strip():
                try:
                    found = server.index.search(q, k, mode=used, where=where.strip() or None)
                except FilterError as exc:  # the page says why, beside the form that holds the filter
                    found, error = [], str(exc)
                for hit in found:
                    hits.append({"hit": hit, "view": server.views.chunk(inspect_chunk(server.index, hit.chunk_id))})
        return page("search.html", 400 if error else 200, title="Search", active="search", query=q, k=k,
                    max_k=MAX_PAGE_HITS, hits=hits, mode=used.value, modes=[m.value for m in SearchMode], where=where,
                    error=error)

    @app.get("/verify", response_class=HTMLResponse, include_in_schema=False)
    def verify_form():
        return _verify_form()

    def _verify_form(status: int = 200, error: str = "", answer_text: str = "", policy: str = "mark"):
        return page("verify.html", status, title="Verify", active="verify", answers=[], refused=False, error=error,
                    answer_text=answer_text, policy=policy, policies=[p.value for p in Policy])

    @app.post("/verify", response_class=HTMLResponse, include_in_schema=False)
    def verify_page(
        request: Request,
        answer: Annotated[str, Form()] = "",
        answer_file: Annotated[UploadFile | None, File()] = None,
        policy: Annotated[Policy, Form()] = Policy.MARK,
    ):
        uploaded = answer_file is not None and answer_file.filename
        # Text that is not UTF-8 stays so ("surrogatepass"): the reader refuses it with a reason.
        raw = answer_file.file.read() if uploaded else answer.encode("utf-8", "surrogatepass")
        try:
            parsed = parse_answer(loads(raw, "the answer"), where="the answer")
        except AnswerFormatError as exc:
            refuse_answer(request, exc)
            return _verify_form(422, str(exc), replace_surrogates(answer), policy.value)
        if not parsed.claims:
            return _verify_form(200, "the answer has no claims: nothing to verify", replace_surrogates(answer), policy.value)
        with server.reading():
            records, summary = verify_answer(server.index, parsed, policy=policy)
            answers = answer_views(records, server.views)
        return page("verify.html", title=f"Answer {parsed.answer_id}", active="verify", answers=answers,
                    refused=summary.refused)

    @app.get("/inspect", response_class=HTMLResponse, include_in_schema=False)
    def inspect_page(chunk_id: Annotated[str, Query(max_length=2000)] = ""):
        context = {"title": "Inspect", "active": "inspect", "chunk_id": chunk_id, "place": None}
        if chunk_id:
            with server.reading():
                chunk = server.index.chunk(chunk_id)
                if chunk is None:
                    raise HTTPException(404, f"no chunk {chunk_id!r} in this index")
                place = inspect_chunk(server.index, chunk_id)
                siblings = [c.chunk_id for c in sorted(server.index.chunks_of(chunk.doc_id), key=lambda c: c.seq)]
                at = siblings.index(chunk_id)
                first = max(0, at - VIEW_SIBLINGS)  # the list around this chunk, not the whole document's
                context.update(
                    title=f"Chunk {chunk_id}", place=place, view=server.views.chunk(place),
                    tokens=chunk_tokens(server.index.manifest, chunk), n_siblings=len(siblings),
                    siblings=siblings[first : at + VIEW_SIBLINGS + 1], siblings_start=first,
                    previous=siblings[at - 1] if at > 0 else "", next=siblings[at + 1] if at + 1 < len(siblings) else "",
                )
        return page("inspect.html", **context)

    @app.get("/documents/{doc_id:path}/pages/{page}.png", include_in_schema=False)
    def page_image(doc_id: str, page: int):
        started = time.perf_counter()
        with server.reading():
            doc = server.document(doc_id)
            if doc is not None and doc.media_type is MediaType.HTML:  # a page of the browser layout
                boxes = server.index.html_box_map(doc_id)
                if boxes is None or not server.views.html_pages or not 1 <= page <= int(boxes.run_pages.max()):
                    raise HTTPException(404, "no such page")
                image, cached = server.images.get_html(server.index.decoded_source_path(doc_id), page,
                                                       doc_id=doc_id)
                renderer = "chromium"
            elif doc is not None and doc.media_type in OFFICE_TYPES:  # a page as LibreOffice rendered it
                rendered = server.index.rendered_path(doc_id)
                if rendered is None or server.index.office_render_page(doc_id, page) is None:
                    raise HTTPException(404, "no such page")
                image, cached = server.images.get(rendered, page, server.zoom, doc_id=doc_id)
                renderer = "pymupdf"
            elif doc is None or doc.media_type is not MediaType.PDF or not 1 <= page <= doc.n_pages:
                raise HTTPException(404, "no such page")
            else:
                image, cached = server.images.get(server.index.source_path(doc_id), page, server.zoom, doc_id=doc_id)
                renderer = "pymupdf"
        took = (time.perf_counter() - started) * 1000
        return Response(image.png, media_type="image/png", headers={
            "Cache-Control": "private, max-age=3600",
            "Server-Timing": f'render;dur={took:.1f};desc="{"cached" if cached else renderer}"',
        })

    @app.get("/documents/{doc_id:path}/file", include_in_schema=False)
    def source_file(doc_id: str):
        with server.reading():
            doc = server.document(doc_id)
            path = server.index.source_path(doc_id) if doc else None
        if doc is None or not path.is_file():
            raise HTTPException(404, "no such document")
        name = Path(doc_id).name
        if doc.media_type is MediaType.PDF:
            return FileResponse(path, media_type="application/pdf", filename=name, content_disposition_type="inline",
                                headers={"Content-Security-Policy": PDF_CSP})
        # Markup is shown as text, never rendered from our origin.
        return FileResponse(path, media_type=f"text/plain; charset={doc.encoding or 'utf-8'}", filename=name,
                            content_disposition_type="inline", headers={"Content-Security-Policy": SANDBOX_CSP})

    @app.get("/documents/{doc_id:path}/view", include_in_schema=False)
    def stored_page(doc_id: str):
        with server.reading():
            doc = server.document(doc_id)
            if doc is None or doc.media_type is not MediaType.HTML:
                raise HTTPException(404, "no such HTML document")
            source = server.index.decoded_source(doc_id)
        # The whole page, on request only: streamed as it is defused, never held whole a second time.
        return StreamingResponse(_in_blocks(defused_html(source)), media_type="text/html; charset=utf-8",
                                 headers={"Content-Security-Policy": SANDBOX_CSP})

    return app


def _in_blocks(pieces, size: int = 1 << 16):
    """Many small strings as UTF-8 blocks of about ``size`` bytes: what a stream sends."""
    block: list[str] = []
    length = 0
    for piece in pieces:
        block.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(block).encode("utf-8")
            block, length = [], 0
    if block:
        yield "".join(block).encode("utf-8")
