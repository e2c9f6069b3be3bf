"""spanindex where RAG applications already are: LangChain and LlamaIndex retrievers.

Each retrieved document carries, in its metadata, where its text is: ``chunk_id``,
``doc_id``, ``doc_version``, ``start``/``end`` (code points into the document text),
``page_start``/``page_end``, the ``locator`` that opens the source at the chunk and
``url`` (the page's own address with it, when known), so that an answer built on
it can be checked by ``spanindex verify`` afterwards; and its section: ``title`` (the
document's) and ``headings`` (the headings above the chunk, outermost first, joined by
``HEADINGS_JOINER`` into one string: metadata stays flat, as vector stores want it).
The document's own fields (its ``NAME.meta.json`` or ``metadata.jsonl`` line) come beside
them, under their own names (``team``), where a name is not one of these.

    pip install 'spanindex[langchain]'     # index.integrations.langchain.SpanindexRetriever
    pip install 'spanindex[llamaindex]'    # index.integrations.llamaindex.SpanindexRetriever
"""

from __future__ import annotations

import json
from pathlib import Path

from index.search.hit_links import hit_link
from schemas.records import SearchHit

METADATA_KEYS = (
    "chunk_id", "doc_id", "doc_version", "start", "end", "page_start", "page_end",
    "locator", "url", "title", "headings", "media_type", "rank", "score", "mode",
)
HEADINGS_JOINER = " > "


def open_index(index_or_path):
    """An open Index, from an Index or an index folder."""
    if isinstance(index_or_path, (str, Path)):
        import index

        return index.open(index_or_path)
    return index_or_path


def hit_metadata(idx, hit: SearchHit, mode: str) -> dict:
    """The flat metadata of one hit (str, int, float, bool or None values only); ``mode``: the one used."""
    link = hit_link(idx, hit)
    doc = idx.document(hit.doc_id)
    fields = json.loads(doc.metadata) if doc is not None and doc.metadata else {}
    return {
        **{key: value for key, value in fields.items() if key not in METADATA_KEYS},
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "doc_version": hit.doc_version,
        "start": hit.start,
        "end": hit.end,
        "page_start": hit.page_start,
        "page_end": hit.page_end,
        "locator": link.locator,
        "url": link.url,
        "title": link.title,
        "headings": HEADINGS_JOINER.join(hit.headings),
        "media_type": link.media_type,
        "rank": hit.rank,
        "score": hit.score,
        "mode": mode,
    }


def search(idx, query: str, k: int, mode: str | None, where: str | None = None) -> tuple[list[SearchHit], str]:
    """The hits of ``Index.search`` and the mode it used (``mode``, or the default); ``where``:
    a filter on the documents (``index.search.filters``)."""
    from index.search.modes import search_mode

    used = search_mode(idx, mode)
    return idx.search(query, k, mode=used, where=where), used.value


def missing(extra: str, package: str) -> ImportError:
    return ImportError(f"this integration needs {package}: pip install 'spanindex[{extra}]'")
