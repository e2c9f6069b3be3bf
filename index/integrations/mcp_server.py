"""`spanindex mcp DIR`: an index as Model Context Protocol tools, over stdio (``pip install 'spanindex[mcp]'``).

Three tools, each with a JSON Schema for its input and its output:

- ``search(query, k, mode)``: chunks with their exact spans, pages and the locator that opens them;
- ``verify(claims, policy)``: an answer's quotes checked against the chunks they cite, each
  located to pages and rectangles or to an HTML source range;
- ``resolve(chunk_id, quote)``: one quote against one chunk.

An agent can retrieve, cite by ``chunk_id`` with a verbatim ``quote``, and check itself
before it answers. The server follows reindexes: each call reads the live generation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from typing_extensions import TypedDict

from index.search.hit_links import hit_link
from schemas.errors import SpanindexError

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the extra
    raise ImportError("`spanindex mcp` needs the MCP SDK: pip install 'spanindex[mcp]'") from exc

INSTRUCTIONS = (
    "spanindex: a document index whose every chunk knows its exact span. Use `search` to find "
    "chunks; support each claim of your answer with the `chunk_id` of a chunk and a `quote` copied "
    "verbatim from its text; call `verify` with your claims before answering, and drop or fix any "
    "claim whose citations are not verified (status exact, normalized or fuzzy)."
)


class Hit(TypedDict):
    rank: int
    score: float
    chunk_id: str
    doc_id: str
    doc_version: str
    start: int  # code points into the document text, half-open
    end: int
    page_start: int | None
    page_end: int | None
    title: str
    headings: list[str]  # the section the chunk starts in, outermost heading first
    locator: str  # "#page=N" or a text fragment "#:~:text=..."
    url: str  # the page's own address with the locator, "" when unknown
    text: str


class SearchResult(TypedDict):
    query: str
    mode: str
    hits: list[Hit]


class SupportIn(TypedDict):
    chunk_id: str
    quote: str


class ClaimIn(TypedDict):
    claim_id: str
    text: str
    support: list[SupportIn]


class VerifyResult(TypedDict):
    summary: dict[str, Any]
    records: list[dict[str, Any]]


def make_server(index_dir: str | Path, *, embedder=None, cache_bytes: int | None = None) -> MCPServer:
    """The MCP server of the index at ``index_dir`` (call ``.run("stdio")`` to serve it).
    ``embedder``: for an index built with an embedder of your own; ``cache_bytes``: for an index in a
    bucket (see ``index.open``).

    >>> make_server("build/sample-index").run("stdio")   # doctest: +SKIP
    """
    import index

    # The reader follows the builds itself: each tool call reads the live generation, whole.
    idx = index.open(index_dir, embedder=embedder, cache_bytes=cache_bytes)

    server = MCPServer(name="spanindex", instructions=INSTRUCTIONS)

    @server.tool(
        title="Search the index",
        description="The k chunks that best match `query`, best first, each with its exact text, its "
        "span (code points into the document text), its pages and a locator that opens the source "
        "there. mode: dense (embeddings), lexical (BM25: names, numbers, exact phrases) or hybrid "
        "(both, fused by trust-weighted scores); omit it for the default (lexical). where: a SQL condition on "
        "the documents, applied before ranking, e.g. \"doc_id LIKE 'contracts/%' AND meta['team'] = 'legal'\" "
        "(columns doc_id, media_type, title, pages, modified, ocr, n_hidden_chars, meta['key'], ...).",
    )
    def search(query: str, k: int = 5, mode: Literal["dense", "lexical", "hybrid"] | None = None,
               where: str | None = None) -> SearchResult:
        with idx.request():
            hits = _call(lambda: idx.search(query, k, mode=mode, where=(where or "").strip() or None))
            return SearchResult(query=query, mode=mode or "", hits=[_hit(idx, h) for h in hits])

    @server.tool(
        title="Verify an answer's citations",
        description="Check every claim's supports: each quote is matched in the chunk its chunk_id names "
        "(exact, normalized or fuzzy with every number unchanged), then located in the document "
        "(pages and rectangles for PDF, HTML source range and text fragment). Returns one record per "
        "claim and a summary; policy mark keeps failed claims flagged, drop removes them, refuse "
        "rejects the answer when any claim fails.",
    )
    def verify(
        claims: list[ClaimIn], answer_id: str = "", policy: Literal["mark", "drop", "refuse"] = "mark"
    ) -> VerifyResult:
        from index.citations.verify import verify_answer
        from schemas.answer_json import parse_answer
        from schemas.citations import Policy
        from schemas.record_json import to_json

        answer = _call(lambda: parse_answer({"answer_id": answer_id, "claims": claims}, where="claims"))
        records, summary = _call(lambda: verify_answer(idx, answer, policy=Policy(policy)))
        return VerifyResult(summary=to_json(summary), records=[to_json(r) for r in records])

    @server.tool(
        title="Resolve one quote",
        description="Check one quote against one chunk and return its citation record: status, "
        "document offsets, page, rectangles or HTML source range, and the locator.",
    )
    def resolve(chunk_id: str, quote: str) -> dict[str, Any]:
        from index.citations.verify import resolve as resolve_quote
        from schemas.record_json import to_json

        return to_json(_call(lambda: resolve_quote(idx, chunk_id, quote)))

    return server


def _hit(idx, hit) -> Hit:
    link = hit_link(idx, hit)
    return Hit(
        rank=hit.rank, score=hit.score, chunk_id=hit.chunk_id, doc_id=hit.doc_id, doc_version=hit.doc_version,
        start=hit.start, end=hit.end, page_start=hit.page_start, page_end=hit.page_end,
        title=link.title, headings=list(hit.headings), locator=link.locator, url=link.url, text=hit.text,
    )


def _call(work):
    try:
        return work()
    except SpanindexError as exc:  # a user error the agent can act on, not a crash
        raise ToolError(str(exc)) from None

