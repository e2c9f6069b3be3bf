"""A LlamaIndex retriever over a spanindex index (``pip install 'spanindex[llamaindex]'``).

>>> from index.integrations.llamaindex import SpanindexRetriever         # doctest: +SKIP
>>> retriever = SpanindexRetriever.from_path("build/sample-index", k=3)    # doctest: +SKIP
>>> node = retriever.retrieve("overage price per 1,000 API calls")[0].node   # doctest: +SKIP
>>> node.node_id, node.start_char_idx, node.metadata["locator"]           # doctest: +SKIP
('pricing/rate-card.pdf#tok:0', 0, '#page=1')
"""

from __future__ import annotations

from pathlib import Path

from index.integrations import hit_metadata, missing, open_index, search

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the extra
    raise missing("llamaindex", "llama-index-core") from exc

# Offsets and hashes help a verifier, not a language model: kept out of the text
# LlamaIndex shows the LLM and the embedder.
HIDDEN_FROM_MODELS = ["doc_version", "start", "end", "rank", "score", "mode", "media_type", "url", "locator"]


class SpanindexRetriever(BaseRetriever):
    """The chunks ``Index.search`` returns, in its order, as LlamaIndex nodes.

    Each node's id is the chunk id, its text the chunk's exact text,
    ``start_char_idx``/``end_char_idx`` its span in the document text, its source
    relationship the document (``doc_id``), and its metadata the rest of its place.
    """

    def __init__(self, index, k: int = 5, mode: str | None = None, **kwargs) -> None:
        """``index``: an open Index; ``mode``: dense, lexical or hybrid (None: the default, lexical)."""
        super().__init__(**kwargs)
        self.index = index
        self.k = k
        self.mode = mode

    @classmethod
    def from_path(cls, path: str | Path, **kwargs) -> SpanindexRetriever:
        return cls(open_index(path), **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes = []
        hits, mode = search(self.index, query_bundle.query_str, self.k, self.mode)
        for hit in hits:
            node = TextNode(
                id_=hit.chunk_id,
                text=hit.text,
                start_char_idx=hit.start,
                end_char_idx=hit.end,
                metadata=hit_metadata(self.index, hit, mode),
                excluded_llm_metadata_keys=HIDDEN_FROM_MODELS,
                excluded_embed_metadata_keys=HIDDEN_FROM_MODELS,
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.doc_id)},
            )
            nodes.append(NodeWithScore(node=node, score=hit.score))
        return nodes
