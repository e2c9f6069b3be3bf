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
from index.search.filters import Kind, column_or_meta, filter_columns, like_containing, sql_literal
from schemas.errors import FilterError

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters
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

    def __init__(self, index, k: int = 5, mode: str | None = None, *, where: str | None = None,
                 filters: MetadataFilters | None = None, **kwargs) -> None:
        """``index``: an open Index; ``mode``: dense, lexical or hybrid (None: the default, lexical);
        ``where`` (a SQL condition) and ``filters`` (LlamaIndex ``MetadataFilters``, see
        ``where_of_filters``): the documents searched, both applied before ranking."""
        super().__init__(**kwargs)
        self.index = index
        self.k = k
        self.mode = mode
        conditions = [c for c in (where, where_of_filters(filters) if filters is not None else None) if c]
        self.where = " AND ".join(f"({c})" for c in conditions) or None

    @classmethod
    def from_path(cls, path: str | Path, **kwargs) -> SpanindexRetriever:
        return cls(open_index(path), **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes = []
        hits, mode = search(self.index, query_bundle.query_str, self.k, self.mode, self.where)
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


_COMPARISONS = {FilterOperator.EQ: "=", FilterOperator.NE: "<>", FilterOperator.GT: ">", FilterOperator.GTE: ">=",
                FilterOperator.LT: "<", FilterOperator.LTE: "<="}


def where_of_filters(filters: MetadataFilters) -> str:
    """LlamaIndex ``MetadataFilters`` as a spanindex filter: a key that names a documents column
    (``doc_id``, ``media_type``, ``title``, ``pages``, ``modified``, ...) is that column, any other
    key the user's own ``meta['key']``; EQ NE GT GTE LT LTE IN NIN, TEXT_MATCH and CONTAINS (the
    value within the text), TEXT_MATCH_INSENSITIVE, IS_EMPTY; AND, OR and NOT (none of them), nested.

    >>> where_of_filters(MetadataFilters(filters=[
    ...     MetadataFilter(key="media_type", value="application/pdf"),
    ...     MetadataFilter(key="team", value=["legal", "tax"], operator="in")], condition="or"))
    "(media_type = 'application/pdf') OR (meta['team'] IN ('legal', 'tax'))"
    """
    parts = [where_of_filters(f) if isinstance(f, MetadataFilters) else _condition(f) for f in filters.filters]
    if not parts:
        raise FilterError("empty MetadataFilters: give at least one filter")
    condition = FilterCondition(filters.condition or FilterCondition.AND)
    if condition is FilterCondition.NOT:
        return "NOT (" + " OR ".join(f"({p})" for p in parts) + ")"
    return f" {condition.value.upper()} ".join(f"({p})" for p in parts)


def _condition(f: MetadataFilter) -> str:
    operand = column_or_meta(f.key)
    operator = FilterOperator(f.operator)
    if operator in _COMPARISONS:
        return f"{operand} {_COMPARISONS[operator]} {sql_literal(f.value)}"
    if operator in (FilterOperator.IN, FilterOperator.NIN):
        values = f.value if isinstance(f.value, list) else [f.value]
        if not values:
            return "FALSE" if operator is FilterOperator.IN else "TRUE"
        negation = "NOT " if operator is FilterOperator.NIN else ""
        return f"{operand} {negation}IN ({', '.join(sql_literal(v) for v in values)})"
    if operator in (FilterOperator.TEXT_MATCH, FilterOperator.CONTAINS, FilterOperator.TEXT_MATCH_INSENSITIVE):
        if not isinstance(f.value, str):
            raise FilterError(f"{f.key} {operator.value} {f.value!r}: the value must be text")
        like = "ILIKE" if operator is FilterOperator.TEXT_MATCH_INSENSITIVE else "LIKE"
        return f"{operand} {like} {sql_literal(like_containing(f.value))}"
    if operator is FilterOperator.IS_EMPTY:  # missing, or (text) empty, as LlamaIndex's own stores read it
        text = operand.startswith("meta[") or filter_columns()[f.key][1] is Kind.TEXT
        return f"({operand} IS NULL OR {operand} = '')" if text else f"{operand} IS NULL"
    raise FilterError(f"{f.key} {operator.value}: not a filter spanindex can apply (its documents' columns hold "
                      "single values; use IN)")
