"""Where a search hit opens: the locator and live address of a chunk, and its document's title.

What integrations put beside a hit's text (LangChain and LlamaIndex metadata, Claude's
search results, MCP tool results), so that a reader can open the span and a later
``spanindex verify`` can check an answer built on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from index.citations.fragments import pdf_locator, text_fragment
from schemas.records import MediaType, SearchHit


@dataclass(frozen=True, slots=True)
class HitLink:
    locator: str  # "#page=N" (PDF), a text fragment "#:~:text=..." (HTML), "" otherwise
    url: str  # the page's own address + locator (HTML that names its address), else ""
    title: str  # the document's title (its own, else its first heading), or its doc_id when it has none
    media_type: str


def hit_link(index, hit: SearchHit) -> HitLink:
    """The locator, live address and title of ``hit``'s chunk.

    >>> hit_link(idx, idx.search("status page", k=1)[0]).locator   # doctest: +SKIP
    '#:~:text=The%20Northwind%20status%20page,...'
    """
    doc = index.document(hit.doc_id)
    title = hit.title or (doc.title.strip() if doc else "") or hit.doc_id
    media_type = doc.media_type if doc else None
    locator, url = "", ""
    if media_type is MediaType.PDF:
        locator = pdf_locator(hit.page_start)
    elif media_type is MediaType.HTML:
        locator = text_fragment(index.doc_text(hit.doc_version), hit.start, hit.end)
        url = doc.source_url + locator if doc.source_url else ""
    return HitLink(locator=locator, url=url, title=title, media_type=media_type.value if media_type else "")
