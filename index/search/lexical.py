"""Search the lexical (BM25) table of a generation: the reader's side of ``ingest.store.lexical``.

A query is tokenised exactly as the chunks were (``ingest.store.lexical.lexical_tokens``);
its score for a chunk is the sum of its tokens' stored BM25 weights there, as
bm25s scores. Reading needs numpy and pyarrow, not bm25s.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ingest.store import B, K1, METHOD, TOKENIZER_VERSION, lexical_tokens
from schemas.errors import IndexFormatError
from schemas.tables import META_LEXICAL


class LexicalIndex:
    """The BM25 postings of one generation, held as flat arrays (CSC: one column per token).

    >>> from ingest.store.lexical import lexical_table
    >>> lexical = LexicalIndex(lexical_table(["overage is billed per call", "billed monthly", "a price list"]), "example")
    >>> [int(i) for i in lexical.top("billed per call", 5)[0]]
    [0, 1]
    """

    def __init__(self, table: pa.Table, where: str) -> None:
        settings = _settings(table.schema, where)
        self.n_chunks: int = settings["n_chunks"]
        tokens = table.column("token").to_pylist()
        self._row_of = {token: row for row, token in enumerate(tokens)}
        ids = table.column("vector_ids").combine_chunks()
        weights = table.column("weights").combine_chunks()
        self._offsets = ids.offsets.to_numpy()
        self._ids = ids.values.to_numpy()
        self._weights = weights.values.to_numpy()

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(vector_ids, BM25 scores) of the chunks any token of ``query`` is in, ids ascending.

        Only the query's postings are touched: the cost follows the query, not the corpus.
        """
        ids, weights = [], []
        for token in lexical_tokens(query):
            row = self._row_of.get(token)
            if row is None:
                continue
            first, last = self._offsets[row], self._offsets[row + 1]
            ids.append(self._ids[first:last])
            weights.append(self._weights[first:last])
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        matched, where = np.unique(np.concatenate(ids), return_inverse=True)
        # summed in float32 in query-token order, as adding each token's weights into a dense array did
        scores = np.zeros(len(matched), dtype=np.float32)
        for part, w in zip(np.split(where, np.cumsum([len(i) for i in ids])[:-1]), weights):
            scores[part] += w  # a token occurs once per chunk in its postings: plain indexing adds correctly
        return matched.astype(np.int64), scores

    def top(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(vector_ids, scores) of the ``k`` best chunks with a positive score, best first.

        Ties are broken by vector_id, so the order is reproducible.
        """
        matched, scores = self.scores(query)
        positive = scores > 0
        matched, scores = matched[positive], scores[positive]
        if k <= 0 or matched.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        order = np.lexsort((matched, -scores))[:k]
        return matched[order], scores[order]


def _settings(schema: pa.Schema, where: str) -> dict:
    raw = (schema.metadata or {}).get(META_LEXICAL)
    if raw is None:
        raise IndexFormatError(f"{where}: not a spanindex lexical table (no {META_LEXICAL.decode()} metadata)")
    settings = json.loads(raw)
    expected = {"tokenizer_version": TOKENIZER_VERSION, "k1": K1, "b": B, "method": METHOD}
    found = {key: settings.get(key) for key in expected}
    if found != expected:
        raise IndexFormatError(
            f"{where}: lexical index built with {found}, this version reads {expected}; run `spanindex build` again"
        )
    return settings
