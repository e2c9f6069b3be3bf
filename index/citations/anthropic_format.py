"""Claude's citations, both ways: search hits as Messages API ``search_result`` blocks, and a
response's ``search_result_location`` citations as spanindex citation records.

Out. Each hit becomes one block (the shape of the ``anthropic`` package's
``SearchResultBlockParam``)::

    {"type": "search_result", "source": SOURCE, "title": TITLE,
     "content": [{"type": "text", "text": PIECE}, ...], "citations": {"enabled": true}}

``source`` is the page's own address with a text fragment that opens it at the
chunk, when the document names its address (HTML with a canonical link or
og:url), else the chunk id. The chunk's text is cut into pieces at sentence ends
and blank lines (``citable_pieces``); their concatenation is the chunk text,
character for character. Claude cites whole text blocks, so the pieces are what
makes a citation point at a sentence rather than at the whole chunk.

In. A response's text blocks carry citations::

    {"type": "search_result_location", "source": SOURCE, "title": TITLE,
     "cited_text": "...", "search_result_index": 0, "start_block_index": 1, "end_block_index": 3}

Each text block with citations becomes a claim, each citation a support: the
chunk found from ``source``, the quote ``cited_text``. ``verify`` then checks and
locates it like any model quote (pages, rectangles, HTML source range). The API
guarantees that ``cited_text`` is the text of blocks ``[start_block_index,
end_block_index)``; a citation whose ``cited_text`` is not that text, whitespace
aside (edited after the fact, or cut from another version of the chunk), keeps
the status its quote earns but carries an ``error`` saying so.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from urllib.parse import urldefrag

from index.citations.fragments import text_fragment
from index.citations.match import DEFAULT_MIN_QUOTE_CHARS
from index.search.hit_links import hit_link
from schemas.answer_json import parse_answer, read_answer_bytes
from schemas.citations import Answer, ClaimRecord, Policy, VerifySummary
from schemas.errors import AnswerFormatError
from schemas.json_input import loads
from schemas.limits import AnswerLimits
from schemas.records import SearchHit

# A piece ends after a sentence end and the whitespace that follows it, or at a blank line;
# a piece with fewer than _MIN_PIECE visible characters ("1. ", "Table 2") joins the next one.
_PIECE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n\s*|(?<=[。！？])")
_MIN_PIECE = 12
_MAX_PIECE = 600  # longer pieces (tables, lists without full stops) are also cut at line breaks
_LINE_END = re.compile(r"\n\s*")


def citable_pieces(text: str) -> list[tuple[int, int]]:
    """``text`` cut into ``[start, end)`` pieces that cover it exactly, each with visible text.

    >>> text = "1. Overage is $0.12. It is billed monthly.\\n\\nTable 2\\n"
    >>> [text[a:b] for a, b in citable_pieces(text)]
    ['1. Overage is $0.12. ', 'It is billed monthly.\\n\\nTable 2\\n']
    """
    cuts = [m.end() for m in _PIECE_END.finditer(text)]
    pieces = _pieces(text, cuts)
    split: list[tuple[int, int]] = []
    for start, end in pieces:
        if end - start > _MAX_PIECE:
            inner = [start + m.end() for m in _LINE_END.finditer(text[start:end])]
            split.extend(_pieces(text, inner, start, end))
        else:
            split.append((start, end))
    return split


def _pieces(text: str, cuts: list[int], start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    end = len(text) if end is None else end
    pieces: list[tuple[int, int]] = []
    for cut in [*cuts, end]:
        if cut <= start or cut > end:
            continue
        if len("".join(text[start:cut].split())) >= _MIN_PIECE or cut == end:
            pieces.append((start, cut))
            start = cut
    if len(pieces) > 1 and len("".join(text[slice(*pieces[-1])].split())) < _MIN_PIECE:
        last = pieces.pop()  # a short tail joins the piece before it
        pieces[-1] = (pieces[-1][0], last[1])
    return pieces


def search_result_block(index, hit: SearchHit) -> dict:
    """One hit as a Messages API ``search_result`` content block, citations enabled."""
    link = hit_link(index, hit)
    title = link.title
    if hit.page_start is not None:
        pages = f"{hit.page_start}" if hit.page_end == hit.page_start else f"{hit.page_start}-{hit.page_end}"
        title = f"{title} (p. {pages})"
    return {
        "type": "search_result",
        "source": link.url or hit.chunk_id,
        "title": title,
        "content": [{"type": "text", "text": hit.text[a:b]} for a, b in citable_pieces(hit.text)],
        "citations": {"enabled": True},
    }


def search_result_blocks(index, hits: list[SearchHit]) -> list[dict]:
    """``spanindex search --format anthropic``: the hits, in order, as ``search_result`` blocks.

    >>> blocks = search_result_blocks(idx, idx.search("overage price", k=3))   # doctest: +SKIP
    >>> blocks[0]["type"], blocks[0]["citations"]                            # doctest: +SKIP
    ('search_result', {'enabled': True})
    """
    return [search_result_block(index, hit) for hit in hits]


def load_message(path: str | Path, limits: AnswerLimits = AnswerLimits()) -> object:
    """A Messages API response from a file, read as strictly as an answer (size, JSON, nesting)."""
    return loads(read_answer_bytes(path, limits), str(path))


@dataclasses.dataclass(frozen=True, slots=True)
class CitedBlocks:
    """What one ``search_result_location`` citation says it cites."""

    source: str
    search_result_index: int
    start_block_index: int
    end_block_index: int
    cited_text: str


def answer_from_message(
    index, raw: object, where: str = "response", limits: AnswerLimits = AnswerLimits()
) -> tuple[Answer, dict[tuple[str, int], CitedBlocks]]:
    """The claims of a Messages API response (a ``Message`` object, or its ``content`` list).

    Each text block with citations is a claim (``block-N``, N its position in ``content``),
    each citation a support. The claims are read as any answer is (``parse_answer``: its
    limits, and text that is not Unicode refused), so a response is no easier a way in.
    Returns the Answer and, per (claim_id, support position), the citation as given.
    """
    content = raw.get("content") if isinstance(raw, dict) else raw
    if not isinstance(content, list):
        raise AnswerFormatError(f"{where}: a Messages API response is an object with a 'content' list")
    answer_id = raw.get("id", "") if isinstance(raw, dict) else ""
    claims: list[dict] = []
    cited: dict[tuple[str, int], CitedBlocks] = {}
    refused: dict[tuple[str, int], str] = {}  # why a citation cannot be checked, beyond parse_answer's reasons
    texts: list[str] = []
    resolver = _SourceResolver(index)
    for position, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text":
            continue
        claim_id, text = f"block-{position}", block.get("text")
        if not isinstance(text, str):
            claims.append({"claim_id": claim_id, "text": None})  # parse_answer says what is wrong
            continue
        texts.append(text)
        citations = block.get("citations") or []
        if not citations:
            continue
        if not isinstance(citations, list):
            claims.append({"claim_id": claim_id, "text": text, "support": citations})
            continue
        supports = []
        for number, citation in enumerate(citations):
            support, blocks, error = _support(resolver, citation)
            supports.append(support)
            if blocks is not None:
                cited[(claim_id, number)] = blocks
            if error:
                refused[(claim_id, number)] = error
        claims.append({"claim_id": claim_id, "text": text, "support": supports})
    answer = parse_answer({"answer_id": answer_id, "claims": claims, "text": "".join(texts)}, where, limits)
    if refused:
        answer = dataclasses.replace(answer, claims=tuple(
            dataclasses.replace(claim, support=tuple(
                dataclasses.replace(support, error=refused[(claim.claim_id, n)]) if (claim.claim_id, n) in refused else support
                for n, support in enumerate(claim.support)
            ))
            for claim in answer.claims
        ))
    return answer, cited


def _support(resolver: "_SourceResolver", citation: object) -> tuple[dict, CitedBlocks | None, str]:
    """(the support as an answer gives it, what the citation cites, why it cannot be checked)."""
    if not isinstance(citation, dict):
        return {"chunk_id": "", "quote": ""}, None, "a citation must be an object"
    kind, source, cited_text = citation.get("type"), citation.get("source"), citation.get("cited_text")
    quote = cited_text if isinstance(cited_text, str) else ""
    if kind != "search_result_location":
        return {"chunk_id": "", "quote": quote}, None, f"citation type {kind!r}: spanindex reads search_result_location citations"
    if not isinstance(source, str) or not source:
        return {"chunk_id": "", "quote": quote}, None, "citation without a 'source' string"
    if not isinstance(cited_text, str):
        return {"chunk_id": source, "quote": ""}, None, "citation without a 'cited_text' string"
    numbers = [citation.get(name) for name in ("search_result_index", "start_block_index", "end_block_index")]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers) or numbers[2] <= numbers[1]:
        return {"chunk_id": source, "quote": cited_text}, None, "citation block indices must be integers with start < end"
    chunk_id = resolver.chunk_id(source, cited_text)
    return {"chunk_id": chunk_id, "quote": cited_text}, CitedBlocks(source, *numbers, cited_text), ""


class _SourceResolver:
    """A citation's ``source`` back to a chunk id: the chunk id itself, or the page's address
    with the chunk's text fragment (as ``search_result_block`` wrote it)."""

    def __init__(self, index) -> None:
        self.index = index
        self._by_url: dict[str, list[str]] | None = None

    def chunk_id(self, source: str, cited_text: str) -> str:
        if self.index.chunk(source) is not None:
            return source
        page, fragment = urldefrag(source)
        doc_ids = self._docs_at(page)
        if not doc_ids:
            return source  # an unknown chunk: verify reports it
        chunks = [c for doc_id in doc_ids for c in self.index.chunks_of(doc_id)]
        wanted = "#" + fragment if fragment else ""
        same = [c for c in chunks if text_fragment(self.index.doc_text(c.doc_version), c.start, c.end) == wanted]
        pool = same or chunks
        holding = [c for c in pool if cited_text and cited_text in c.text]
        return (holding or pool)[0].chunk_id

    def _docs_at(self, page: str) -> list[str]:
        if self._by_url is None:
            self._by_url = {}
            for doc in self.index.documents():
                if doc.source_url:
                    self._by_url.setdefault(doc.source_url, []).append(doc.doc_id)
        return self._by_url.get(page, [])


def verify_message(
    index,
    raw: object,
    *,
    policy: Policy = Policy.MARK,
    min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS,
    where: str = "response",
    limits: AnswerLimits = AnswerLimits(),
) -> tuple[list[ClaimRecord], VerifySummary]:
    """``spanindex verify --from anthropic``: every citation of a response, checked and located.

    >>> records, summary = verify_message(idx, json.load(open("response.json")))   # doctest: +SKIP
    """
    from index.citations.verify import verify_answer

    answer, cited = answer_from_message(index, raw, where, limits)
    records, summary = verify_answer(index, answer, policy=policy, min_quote_chars=min_quote_chars)
    checked = []
    for record in records:
        citations = tuple(
            _check_blocks(index, citation, cited.get((record.claim_id, number)))
            for number, citation in enumerate(record.citations)
        )
        checked.append(dataclasses.replace(record, citations=citations))
    return checked, summary


def _check_blocks(index, citation, blocks: CitedBlocks | None):
    """Note a ``cited_text`` that is not the text of the blocks it names."""
    if blocks is None or citation.error:
        return citation
    chunk = index.chunk(citation.chunk_id)
    if chunk is None:
        return citation
    pieces = citable_pieces(chunk.text)
    if blocks.end_block_index > len(pieces):
        return dataclasses.replace(
            citation,
            error=f"blocks [{blocks.start_block_index}, {blocks.end_block_index}) of search result "
            f"{blocks.search_result_index}: the chunk has {len(pieces)} blocks",
        )
    start, end = pieces[blocks.start_block_index][0], pieces[blocks.end_block_index - 1][1]
    if chunk.text[start:end].split() != blocks.cited_text.split():  # whitespace may be trimmed
        return dataclasses.replace(
            citation,
            error=f"cited_text is not the text of blocks [{blocks.start_block_index}, {blocks.end_block_index}) "
            f"of search result {blocks.search_result_index}",
        )
    return citation
