"""How a query is matched against chunks: the modes of ``Index.search``, the CLI, the API and MCP."""

from __future__ import annotations

from enum import StrEnum


class SearchMode(StrEnum):
    DENSE = "dense"  # nearest vectors (cosine similarity of the embeddings)
    LEXICAL = "lexical"  # BM25 over the chunks' tokens
    HYBRID = "hybrid"  # both rankings fused by reciprocal rank
