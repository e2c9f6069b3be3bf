"""A LangChain retriever over a spanindex index (``pip install 'spanindex[langchain]'``).

>>> from index.integrations.langchain import SpanindexRetriever          # doctest: +SKIP
>>> retriever = SpanindexRetriever.from_path("build/sample-index", k=3)    # doctest: +SKIP
>>> doc = retriever.invoke("overage price per 1,000 API calls")[0]         # doctest: +SKIP
>>> doc.metadata["chunk_id"], doc.metadata["page_start"], doc.metadata["locator"]   # doctest: +SKIP
('pricing/rate-card.pdf#tok:0', 1, '#page=1')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from index.integrations import hit_metadata, missing, open_index, search

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the extra
    raise missing("langchain", "langchain-core") from exc


class SpanindexRetriever(BaseRetriever):
    """The chunks ``Index.search`` returns, in its order, as LangChain Documents.

    ``page_content`` is the chunk's exact text; ``id`` is its chunk id; ``metadata``
    holds its span (see ``index.integrations``).
    """

    index: Any
    k: int = 5
    mode: str | None = None  # dense, lexical or hybrid; None: the default (lexical)
    where: str | None = None  # a filter on the documents, applied before ranking (README: Filtering search)

    @classmethod
    def from_path(cls, path: str | Path, **kwargs) -> SpanindexRetriever:
        return cls(index=open_index(path), **kwargs)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits, mode = search(self.index, query, self.k, self.mode, self.where)
        return [
            Document(page_content=hit.text, id=hit.chunk_id, metadata=hit_metadata(self.index, hit, mode))
            for hit in hits
        ]
