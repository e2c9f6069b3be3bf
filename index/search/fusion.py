"""Hybrid search: the dense and lexical rankings fused by their standardised scores, each
weighed by how far it can be trusted for this index's model and this query.

Each ranking's scores (a cosine similarity, a BM25 sum: nothing in common but their order)
are put in standard units of that ranking (z-scores over its best ``candidates(k)``); a
chunk a ranking does not hold counts as that ranking's lowest. The fused score is
``w * z_dense + (1 - w) * z_lexical``, and ``w``, the dense weight, is ``dense_weight``:

    w = DENSE_WEIGHT * (share of the query's letters in scripts the model knows)
                     * (UNKNOWN_LANGUAGE_FACTOR where the query is, with confidence, in a
                        language the model was not trained on; else 1)

A multilingual model (``ingest.embed.model.is_multilingual``: the manifest's model id) knows
every script and language: its weight is ``DENSE_WEIGHT`` for every query. Any other model is
taken for an English one (all-MiniLM-L6-v2, the packaged model, is): it knows Latin letters
and English. The language is ``ingest.text.identify_language``'s, which gives none for a query
of fewer than 24 letters: such a query is weighed by its script alone.

Chosen on the "tune" questions of ``benchmarks/retrieval.py`` only (231 questions, 10
languages; ``python -m benchmarks.fusion --index DIR`` replays them and cross-validates every
choice below), recall@5/MRR@10, "CV" the mean ± sd over 20 shuffles of 5-fold cross-validation
(the setting chosen on four fifths of the questions, scored on the fifth):

    all questions            dense 0.597/0.409  lexical 0.883/0.749  equal-weight RRF 0.771/0.616
    this fusion, in-sample   0.896/0.766; English 0.935/0.778 (lexical 0.891/0.772, dense
                             0.891/0.636), German 0.807/0.700 (lexical 0.807/0.644)
    this fusion, CV          0.889/0.759 ±0.007/0.004; English 0.916/0.776 ±0.022/0.006, German
                             0.793/0.676 ±0.014/0.017; the other languages as lexical

The folds chose these two weights 66 times in 100. Out of fold the fusion is a little above
lexical overall (+0.006/+0.010), but its English gain (+0.025 ±0.022 / +0.004 ±0.006) is within
the noise of choosing, and it gives German MRR@10 +0.032 for recall@5 -0.014 ±0.014. Trust
signals that are free at query time were tried as factors on ``w`` and did no better out of
fold (CV, the same benchmark):

    w = 0 where the lexical top-1 stands out (z >= 4.5)     0.888/0.763, English 0.925/0.777
    w x min(1, the dense top-1's z / D)                     0.889/0.763, English 0.908/0.773
    w x how far the dense top-1 stands out more than the    0.886/0.761, English 0.911/0.774
      lexical one does (their z difference)
    the lexical order, the dense ranking reordering only    0.880/0.750, English 0.889/0.767
      runs of lexical scores within eps sd of each other
    reciprocal rank fusion, the dense ranking weighed       0.895/0.747, English 0.913/0.764

and, with a one-off script on the same folds: min-max scaling instead of z-scores 0.879/0.755
(English 0.868/0.750), and each candidate's two real scores (the exact cosine of a chunk only
lexical found, the BM25 of one only dense found) instead of the ranking's lowest 0.885/0.757
(English 0.893/0.766). Each is within about one sd of this fusion or below it, so the simplest
stays. Where BM25 is confident the z-scores already defer to it: of the 48 tune questions with a
dense weight above 0 whose lexical top-1 stands out by 4.5 sd or more, this fusion kept it
first in all 48.

On the held-out questions (91, never used to choose; ``benchmarks/retrieval.py``, run once
after the choice above, the same as before it) this fusion gives 0.901/0.772 against
equal-weight RRF's 0.824/0.638 and lexical's 0.901/0.792: at recall@5 it is lexical's equal in
every language (Russian 0.500 -> 0.833, Korean 0.600 -> 1.000, as BM25), but not at MRR@10:
English 0.957/0.775 against lexical 0.957/0.855 (dense 0.826/0.703), Chinese 0.850 against
0.900 (a Chinese question with Latin letters gets a dense weight for its share of them). The
issue's target (at least lexical in every language, above both in English) is not met: with
the packaged English model the dense ranking adds to BM25 on these questions by no more than
choosing it on 46 English questions can tell apart from chance.

- Why scores, not ranks: weighted reciprocal rank fusion with the same trust came to
  0.900/0.755 at its best in-sample (0.895/0.747 in CV): as good at the top 5, worse at
  ranking the answer first. A standardised score says how far a chunk stands out of its
  ranking, a rank does not.
- Why two parameters: ``DENSE_WEIGHT`` 0.5 (equal say) was best of 0.35-0.6; at 0.6 English
  MRR@10 fell below lexical's (0.756). ``UNKNOWN_LANGUAGE_FACTOR`` 0.4 lies in a flat range
  (0.2-0.6 move all-question MRR@10 by 0.011); without it (1.0) German MRR@10 is 0.664, with it
  0.700 (in CV, one-off script: without it 0.885/0.754, German 0.786/0.658). The script share carries the non-Latin questions: ``identify_language`` names no
  language for 33 of 33 Chinese, 12 of 17 Japanese and 12 of 15 Korean ones (too few letters).
- Agreement between the two top-10 lists was measured and is not used: the top-10 overlap did
  not tell which ranking held the answer (English questions overlapping 0.1-0.3 and 0.4 or
  more alike had lexical ahead: MRR@10 0.88 and 0.74, dense 0.75 and 0.58), and as a factor on the dense weight it cost 0.004 MRR@10.

Ties go to the ranking with the greater weight (the lexical one on equal weights, the order
the rankings are given in), by rank: with a dense weight of 0 the fused order is the lexical
order, and the dense ranking only fills in below it where lexical found fewer than ``k``.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Sequence

import numpy as np

from ingest.text import identify_language
from schemas.records import SearchHit

MIN_CANDIDATES = 50
DENSE_WEIGHT = 0.5  # the dense ranking's weight for a query in the model's scripts and language
UNKNOWN_LANGUAGE_FACTOR = 0.4  # its share of that for a query in a language the model was not trained on
ENGLISH_MODEL_LANGUAGE = "en"


def candidates(k: int) -> int:
    """How deep each ranking is read before fusing (a chunk ranked 50th by one and 1st
    by the other must still be seen)."""
    return max(MIN_CANDIDATES, 4 * k)


def dense_weight(query: str, multilingual: bool, *, base: float = DENSE_WEIGHT,
                 unknown_language: float = UNKNOWN_LANGUAGE_FACTOR) -> float:
    """How far the dense ranking is trusted for ``query`` (0 to ``base``; see the module).

    >>> dense_weight("What did the DPR paper split Wikipedia into?", multilingual=False)
    0.5
    >>> dense_weight("Сколько стоит билет?", multilingual=False), dense_weight("Сколько стоит билет?", multilingual=True)
    (0.0, 0.5)
    >>> dense_weight("Wie viele Passagen wurden aus der Wikipedia erstellt?", multilingual=False)
    0.2
    """
    if multilingual:
        return base
    language = identify_language(query)
    known_language = 1.0 if language in ("", ENGLISH_MODEL_LANGUAGE) else unknown_language
    return base * latin_share(query) * known_language


def latin_share(text: str) -> float:
    """The share of the letters of ``text`` that are Latin (1 where it has none: digits and
    signs are read by every model).

    >>> latin_share("Müller GmbH"), latin_share("北京 Beijing"), latin_share("2024")
    (1.0, 0.7777777777777778, 1.0)
    """
    letters = [char for char in text if char.isalpha()]
    if not letters:
        return 1.0
    return sum(1 for char in letters if unicodedata.name(char, "").startswith("LATIN ")) / len(letters)


def fuse(rankings: Sequence[tuple[list[SearchHit], float]], k: int) -> list[SearchHit]:
    """The ``k`` best chunks of several (ranking, weight) pairs by weighted standardised score;
    score = the fused score. Ties go to the chunk ranked higher by the heavier ranking (the
    earlier one on equal weights), then by the next, so the order is reproducible.

    >>> def h(chunk_id, rank, score):
    ...     return SearchHit(rank, score, chunk_id, "d", "v", 0, 1, None, None, "t")
    >>> lexical = [h("a", 1, 9.0), h("b", 2, 8.0), h("c", 3, 1.0)]
    >>> dense = [h("c", 1, 0.9), h("b", 2, 0.85), h("d", 3, 0.1)]
    >>> [x.chunk_id for x in fuse([(lexical, 1.0), (dense, 0.0)], 4)]
    ['a', 'b', 'c', 'd']
    >>> [x.chunk_id for x in fuse([(lexical, 0.5), (dense, 0.5)], 4)]
    ['b', 'a', 'c', 'd']
    """
    by_weight = sorted(range(len(rankings)), key=lambda which: -rankings[which][1])  # stable: earlier first
    standard = [standard_scores(ranking) for ranking, _ in rankings]
    by_id: dict[str, SearchHit] = {}
    ranks: dict[str, list[int]] = {}
    unranked = max((len(ranking) for ranking, _ in rankings), default=0) + 1
    for place, which in enumerate(by_weight):
        for position, hit in enumerate(rankings[which][0], start=1):
            by_id.setdefault(hit.chunk_id, hit)
            ranks.setdefault(hit.chunk_id, [unranked] * len(rankings))[place] = position
    fused = {
        chunk_id: sum(weight * scores.get(chunk_id, absent) for (_, weight), (scores, absent) in zip(rankings, standard))
        for chunk_id in by_id
    }
    order = sorted(fused, key=lambda c: (-fused[c], ranks[c]))[: max(k, 0)]
    return [dataclasses.replace(by_id[c], rank=rank, score=fused[c]) for rank, c in enumerate(order, start=1)]


def standard_scores(ranking: list[SearchHit]) -> tuple[dict[str, float], float]:
    """Each chunk's score in standard units of ``ranking`` (z-scores), and the score of a chunk
    it does not hold: its lowest (one below its chunks where all score alike).

    >>> def h(chunk_id, score):
    ...     return SearchHit(1, score, chunk_id, "d", "v", 0, 1, None, None, "t")
    >>> standard_scores([h("a", 3.0), h("b", 1.0)])
    ({'a': 1.0, 'b': -1.0}, -1.0)
    >>> standard_scores([h("a", 3.0)]), standard_scores([])
    (({'a': 0.0}, -1.0), ({}, 0.0))
    """
    if not ranking:
        return {}, 0.0
    scores = np.array([hit.score for hit in ranking], dtype=np.float64)
    spread = float(scores.std())
    if spread == 0.0:
        return {hit.chunk_id: 0.0 for hit in ranking}, -1.0
    standard = (scores - scores.mean()) / spread
    return {hit.chunk_id: float(z) for hit, z in zip(ranking, standard)}, float(standard.min())
