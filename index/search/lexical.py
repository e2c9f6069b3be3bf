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

from ingest.store import B, K1, METHOD, TOKENIZER_VERSION, bm25_idf, bm25_weights, query_tokens
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
    greatest_counts: np.ndarray  # per token: its greatest count in a chunk here (masked or not)
    least_lengths: np.ndarray  # per token: the least length of a chunk here that holds it

    @classmethod
    def of(cls, table: pa.Table, dead: np.ndarray) -> _Postings:
        ids = table.column("vector_ids").combine_chunks()
        offsets = ids.offsets.to_numpy()
        counts = table.column("counts").combine_chunks().values.to_numpy()
        lengths = table.column("lengths").combine_chunks().values.to_numpy()
        return cls({token: row for row, token in enumerate(table.column("token").to_pylist())},
                   offsets, ids.values.to_numpy(), counts, lengths, dead,
                   _per_token(np.maximum, counts, offsets), _per_token(np.minimum, lengths, offsets))

    def live(self, token: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        row = self.row_of.get(token)
        if row is None:
            return None
        first, last = self.offsets[row], self.offsets[row + 1]
        ids, counts, lengths = self.ids[first:last], self.counts[first:last], self.lengths[first:last]
        if len(self.dead):  # both sorted: the masked ids are looked up in the postings (isin sorts them)
            at = np.searchsorted(ids, self.dead)
            inside = at < len(ids)
            masked = at[inside][ids[at[inside]] == self.dead[inside]]
            if len(masked):
                keep = np.ones(len(ids), dtype=bool)
                keep[masked] = False
                ids, counts, lengths = ids[keep], counts[keep], lengths[keep]
        return ids, counts, lengths

    def live_count(self, token: str) -> int:
        """How many live chunks hold ``token``, without reading its postings: the masked ids are
        looked up in them (a masked share is small; a posting list can be most of the segment)."""
        row = self.row_of.get(token)
        if row is None:
            return 0
        first, last = int(self.offsets[row]), int(self.offsets[row + 1])
        if not len(self.dead) or first == last:
            return last - first
        ids = self.ids[first:last]
        at = np.searchsorted(ids, self.dead).clip(max=len(ids) - 1)
        return last - first - int(np.count_nonzero(ids[at] == self.dead))

    def greatest_share(self, token: str, average: float) -> float:
        """At least the term-frequency share (``bm25_weights``: tf / (tf + k1 (1 - b + b len / avg)))
        of ``token`` in any chunk here: from its greatest count and least length (0: none holds it)."""
        row = self.row_of.get(token)
        if row is None or self.offsets[row] == self.offsets[row + 1]:
            return 0.0
        tf, least = float(self.greatest_counts[row]), float(self.least_lengths[row])
        return tf / (tf + K1 * ((1 - B) + B * least / average)) if average else 1.0

    def found_among(self, token: str, vector_ids: np.ndarray, running: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the ids among ``vector_ids`` (ascending, live; ``running`` their mask, over every id
        here) that hold ``token`` here, their counts, their lengths): each id
        looked up in the postings, or the postings read through the mask where they are the shorter
        (a frequent token's postings against thousands of candidates)."""
        row = self.row_of.get(token)
        if row is None:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        first, last = int(self.offsets[row]), int(self.offsets[row + 1])
        if last - first > 8 * len(vector_ids):  # a binary search each: ~log2 of the postings' length
            where, counts, lengths = self.found_at(token, vector_ids)
            return vector_ids[where], counts, lengths
        ids = self.ids[first:last]
        hit = np.flatnonzero(running[ids])  # a masked id is no candidate: no need to look for it in dead
        return ids[hit].astype(np.int64), self.counts[first:last][hit], self.lengths[first:last][hit]

    def found_at(self, token: str, vector_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions in ``vector_ids`` (ascending, live) that hold ``token`` here, their counts, their lengths)."""
        row = self.row_of.get(token)
        empty = np.zeros(0, dtype=np.int64)
        if row is None:
            return empty, empty, empty
        first, last = int(self.offsets[row]), int(self.offsets[row + 1])
        ids = self.ids[first:last]
        if not len(ids):
            return empty, empty, empty
        at = np.searchsorted(ids, vector_ids).clip(max=len(ids) - 1)
        hit = np.flatnonzero(ids[at] == vector_ids)
        return hit, self.counts[first:last][at[hit]], self.lengths[first:last][at[hit]]


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
        self._id_bound = max((int(part.ids.max()) + 1 for part in self._parts if len(part.ids)), default=0)
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

        Ties are broken by vector_id, so the order is reproducible. The result is what one sort
        of every score (``scores``) gives, but the frequent tokens of a query are mostly not read:
        see ``_candidates``.
        """
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        terms = self._terms(query)
        matched, scored = self._candidates(terms, k, allowed)
        scores = self._exact_scores(terms, matched, scored)
        positive = scores > 0
        matched, scores = matched[positive], scores[positive]
        if k <= 0 or matched.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if matched.size > k:  # the k best and every chunk tied with the k-th, then ordered
            kth = np.partition(scores, matched.size - k)[matched.size - k]
            keep = scores >= kth
            matched, scores = matched[keep], scores[keep]
        order = np.lexsort((matched, -scores))[:k]
        return matched[order], scores[order]


    def _terms(self, query: str) -> list[_Term]:
        """The query's tokens (every form of every word, in query order) that some live chunk holds."""
        terms = []
        for token in (form for forms in query_tokens(query, self.languages) for form in forms):
            doc_freq = sum(part.live_count(token) for part in self._parts)
            if doc_freq:
                idf = float(bm25_idf(doc_freq, self.n_chunks))
                share = max(part.greatest_share(token, self._average) for part in self._parts)
                terms.append(_Term(token, doc_freq, idf * share))
        return terms

    def _candidates(self, terms: list[_Term], k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, dict]:
        """Ascending vector ids among which the ``k`` best chunks are, ties with the k-th included,
        and the weights computed on the way: term index -> [(vector ids, weights)].

        MaxScore (Turtle and Flood, 1995). A token's weight in a chunk is below its ``upper``
        (its IDF times the greatest term-frequency share its postings allow). The tokens are
        scored from the highest bound down; once the k-th best partial score exceeds the bounds
        of the tokens left, a chunk none of the scored tokens is in cannot reach the top k, nor
        can one whose partial score plus those bounds falls short of the k-th. The frequent
        tokens, whose postings are most of a query's (a corpus copied 64 times: 64 times as
        long), are then read only where the candidates are. The partial sums run in another
        order than the exact ones (float32), so the bounds keep a margin; the exact scores are
        summed afterwards in query order (``_exact_scores``).
        """
        order = sorted(range(len(terms)), key=lambda i: -terms[i].upper)
        left = np.cumsum([terms[i].upper for i in order][::-1])[::-1].tolist() + [0.0]  # bounds from step i on
        partial: np.ndarray | None = None
        touched: np.ndarray | None = None
        scored: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for step, i in enumerate(order):
            scored[i] = []
            for ids, counts, lengths in filter(None, (part.live(terms[i].token) for part in self._parts)):
                if not len(ids):
                    continue
                if partial is None or int(ids[-1]) >= len(partial):
                    partial, touched = _grown(partial, touched, int(ids[-1]) + 1)
                weights = bm25_weights(counts, lengths, terms[i].doc_freq, self.n_chunks, self._average)
                scored[i].append((ids, weights))
                partial[ids] += weights
                touched[ids] = True
            if partial is None or not left[step + 1]:
                continue
            if left[0] - left[step + 1] <= left[step + 1]:
                continue  # the tokens scored cannot add up to more than those left: the k-th cannot pass them yet
            # The k-th best can pass the bounds left only if k chunks do: those are few (the best
            # chunks and their copies), and the k-th is taken among them rather than among every
            # chunk touched so far (a partition of thousands at every token).
            above = _allowed(np.flatnonzero(partial > left[step + 1]), allowed)
            if len(above) < k:
                continue
            kth = float(np.partition(partial[above], len(above) - k)[len(above) - k])
            margin = 1e-4 * (kth + left[step + 1]) + 1e-6
            if kth - margin > left[step + 1]:  # no chunk outside the scored postings reaches the k-th
                # untouched chunks score 0 and the threshold is above 0: only touched ones pass
                candidates = _allowed(np.flatnonzero(partial >= kth - margin - left[step + 1]), allowed).astype(np.int64)
                return self._narrowed(terms, order, left, step + 1, candidates, partial, k, scored), scored
        if partial is None:
            return np.zeros(0, dtype=np.int64), scored
        return _allowed(np.flatnonzero(touched), allowed).astype(np.int64), scored

    def _narrowed(self, terms: list[_Term], order: list[int], left: list[float], first: int, candidates: np.ndarray,
                  partial: np.ndarray, k: int, scored: dict) -> np.ndarray:
        """``candidates`` less those the tokens left cannot lift to the k-th best: each token from
        step ``first`` on is scored at the candidates still in (its weights kept in ``scored``),
        and a candidate whose partial score plus the bounds of the tokens after it falls short of
        the k-th best partial score is dropped. The copies of a chunk in a corpus copied 64 times
        are 64 candidates each; most fall away after a token or two, and the rest are not
        searched for in every posting list."""
        running = np.zeros(self._id_bound, dtype=bool)  # the candidates, as a mask over vector ids
        running[candidates] = True
        for step in range(first, len(order)):
            i = order[step]
            scored[i] = []
            for part in self._parts:
                ids, counts, lengths = part.found_among(terms[i].token, candidates, running)
                if len(ids):
                    weights = bm25_weights(counts, lengths, terms[i].doc_freq, self.n_chunks, self._average)
                    scored[i].append((ids, weights))
                    partial[ids] += weights
            at_least = partial[candidates]
            kth = float(np.partition(at_least, len(at_least) - k)[len(at_least) - k])
            margin = 1e-4 * (kth + left[step + 1]) + 1e-6
            keep = at_least + left[step + 1] >= kth - margin
            running[candidates[~keep]] = False
            candidates = candidates[keep]
        return candidates

    def _exact_scores(self, terms: list[_Term], vector_ids: np.ndarray, scored: dict) -> np.ndarray:
        """The BM25 scores of ``vector_ids`` (ascending, live), summed in float32 in query-token order
        as ``scores`` sums them, so that both give the same bits: from the weights ``_candidates``
        computed where it did, else from the postings at ``vector_ids``."""
        if not len(vector_ids):
            return np.zeros(0, dtype=np.float32)
        size = max([int(vector_ids[-1]) + 1] + [int(ids[-1]) + 1 for pieces in scored.values() for ids, _ in pieces])
        sums = np.zeros(size, dtype=np.float32)
        for i, term in enumerate(terms):
            if i in scored:
                for ids, weights in scored[i]:
                    sums[ids] += weights
                continue
            for part in self._parts:
                where, counts, lengths = part.found_at(term.token, vector_ids)
                if len(where):
                    sums[vector_ids[where]] += bm25_weights(counts, lengths, term.doc_freq, self.n_chunks, self._average)
        return sums[vector_ids]


@dataclass(frozen=True, slots=True)
class _Term:
    token: str
    doc_freq: int  # live chunks holding it
    upper: float  # at least its weight in any chunk (bm25_weights: the IDF times a term-frequency share)


def _per_token(reduce: np.ufunc, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``reduce`` over each token's postings (offsets: CSC), computed once when the segment is
    read: a query's bounds then cost nothing per posting (a token of a 64-times corpus has 64
    times as many). A token without postings gets 0."""
    out = np.zeros(len(offsets) - 1, dtype=values.dtype if len(values) else np.int64)
    held = np.flatnonzero(offsets[1:] > offsets[:-1])
    if len(held):
        out[held] = reduce.reduceat(values, offsets[:-1][held])
    return out


def _grown(partial: np.ndarray | None, touched: np.ndarray | None, size: int) -> tuple[np.ndarray, np.ndarray]:
    grown_partial, grown_touched = np.zeros(size, dtype=np.float32), np.zeros(size, dtype=bool)
    if partial is not None:
        grown_partial[: len(partial)], grown_touched[: len(touched)] = partial, touched
    return grown_partial, grown_touched


def _allowed(vector_ids: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """``vector_ids`` (ascending) that are in ``allowed`` (ascending; None: all are)."""
    if allowed is None:
        return vector_ids
    if not len(allowed) or not len(vector_ids):
        return vector_ids[:0]
    at = np.searchsorted(allowed, vector_ids).clip(max=len(allowed) - 1)
    return vector_ids[allowed[at] == vector_ids]


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
