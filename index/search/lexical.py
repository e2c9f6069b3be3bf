"""Search the BM25 postings of a generation's segments: the reader's side of ``ingest.store.lexical``.

A query is analysed as the chunks were (``ingest.store.lexical.lexical_tokens``), in each language whose
stemmer the segments used and in none (``query_tokens``): each of its words matches any of its forms.
Each segment's postings hold counts and chunk lengths; the weights are computed here with the
live generation's statistics: its live chunk count, each token's document frequency counted
over the live postings (masked chunks left out), and the mean live chunk length from the
manifest's counts. A query's score for a chunk is the sum of its tokens' weights there, as
bm25s scores a full rebuild of the live corpus. Reading needs numpy and pyarrow, not bm25s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ingest.store import B, K1, METHOD, TOKENIZER_VERSION, bm25_weights, query_tokens
from schemas.errors import IndexFormatError
from schemas.tables import META_LEXICAL


@dataclass(frozen=True, slots=True, eq=False)
class _Postings:
    """One segment's postings as flat arrays (CSC: one column per token), its masked ids beside."""

    row_of: dict[str, int]
    offsets: np.ndarray
    ids: np.ndarray
    counts: np.ndarray
    lengths: np.ndarray
    dead: np.ndarray  # vector ids of masked chunks, sorted

    @classmethod
    def of(cls, table: pa.Table, dead: np.ndarray) -> _Postings:
        ids = table.column("vector_ids").combine_chunks()
        return cls({token: row for row, token in enumerate(table.column("token").to_pylist())},
                   ids.offsets.to_numpy(), ids.values.to_numpy(),
                   table.column("counts").combine_chunks().values.to_numpy(),
                   table.column("lengths").combine_chunks().values.to_numpy(), dead)

    def live(self, token: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        row = self.row_of.get(token)
        if row is None:
            return None
        first, last = self.offsets[row], self.offsets[row + 1]
        ids, counts, lengths = self.ids[first:last], self.counts[first:last], self.lengths[first:last]
        if len(self.dead):
            keep = ~np.isin(ids, self.dead, assume_unique=True)
            ids, counts, lengths = ids[keep], counts[keep], lengths[keep]
        return ids, counts, lengths


class LexicalIndex:
    """The BM25 index of a generation: its segments' postings and its live statistics.

    >>> from ingest.store.lexical import lexical_table
    >>> lexical = LexicalIndex.of_table(lexical_table(["overage is billed per call", "billed monthly", "a price list"]))
    >>> lexical.top("billed overage", 2)[0].tolist()
    [0, 1]
    """

    def __init__(self, parts: list[tuple[pa.Table, np.ndarray]], n_chunks: int, n_tokens: int, where: str) -> None:
        # The languages a chunk of some segment was stemmed in: a query is analysed in each of them.
        self.languages = sorted({language for table, _ in parts for language in _check_settings(table.schema, where).get("languages", [])})
        self._parts = [_Postings.of(table, dead) for table, dead in parts]
        self.n_chunks = n_chunks
        self._average = float(n_tokens) / n_chunks if n_chunks else 0.0

    @classmethod
    def of_table(cls, table: pa.Table, where: str = "lexical table") -> LexicalIndex:
        """One postings table as a whole corpus (its own chunk and token counts)."""
        settings = _check_settings(table.schema, where)
        return cls([(table, np.zeros(0, dtype=np.int64))], settings["n_chunks"], settings["n_tokens"], where)

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """(vector_ids, BM25 scores) of the chunks any token of ``query`` is in, ids ascending.

        Only the query's postings are touched: the cost follows the query, not the corpus.
        """
        ids, weights = [], []
        for token in (form for forms in query_tokens(query, self.languages) for form in forms):
            found = [p for p in (part.live(token) for part in self._parts) if p is not None]
            doc_freq = sum(len(p[0]) for p in found)
            if not doc_freq:
                continue
            for token_ids, counts, lengths in found:
                ids.append(token_ids)
                weights.append(bm25_weights(counts, lengths, doc_freq, self.n_chunks, self._average))
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        # Summed in float32 in query-token order, as a full rebuild's stored weights were summed, into
        # an array over the vector ids (sorting the postings' union cost 15 ms a query at 100,000 documents).
        size = int(max(int(i.max()) for i in ids if len(i))) + 1
        scores = np.zeros(size, dtype=np.float32)
        touched = np.zeros(size, dtype=bool)
        for token_ids, w in zip(ids, weights):
            scores[token_ids] += w  # a token occurs once per chunk in a segment's postings: plain indexing adds correctly
            touched[token_ids] = True
        matched = np.flatnonzero(touched)
        return matched.astype(np.int64), scores[matched]

    def top(self, query: str, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(vector_ids, scores) of the ``k`` best chunks with a positive score, best first;
        among ``allowed`` (ascending vector ids, a filter's) where given, masked before the top k.

        Ties are broken by vector_id, so the order is reproducible.
        """
        matched, scores = self.scores(query)
        positive = scores > 0
        if allowed is not None and len(matched):
            at = np.minimum(np.searchsorted(allowed, matched), max(len(allowed) - 1, 0))
            positive &= (allowed[at] == matched) if len(allowed) else False
        matched, scores = matched[positive], scores[positive]
        if k <= 0 or matched.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if matched.size > k:  # the k best and every chunk tied with the k-th, then ordered
            kth = np.partition(scores, matched.size - k)[matched.size - k]
            keep = scores >= kth
            matched, scores = matched[keep], scores[keep]
        order = np.lexsort((matched, -scores))[:k]
        return matched[order], scores[order]


def _check_settings(schema: pa.Schema, where: str) -> dict:
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
