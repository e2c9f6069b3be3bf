"""Hybrid search: dense and lexical rankings fused by reciprocal rank.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) scores a chunk
by ``sum(1 / (RRF_K + rank))`` over the rankings that hold it. It needs no score
calibration between a cosine similarity and a BM25 sum, which have nothing in
common but their order. Each ranking contributes its best ``candidates(k)`` chunks.
"""

from __future__ import annotations

import dataclasses

from schemas.records import SearchHit

RRF_K = 60
MIN_CANDIDATES = 50


def candidates(k: int) -> int:
    """How deep each ranking is read before fusing (a chunk ranked 50th by one and 1st
    by the other must still be seen)."""
    return max(MIN_CANDIDATES, 4 * k)


def fuse(rankings: list[list[SearchHit]], k: int) -> list[SearchHit]:
    """The ``k`` best chunks of several rankings by reciprocal rank fusion; score = the fused score.

    Ties go to the chunk ranked higher, then to the earlier ranking, so the order is reproducible.

    >>> def h(chunk_id, rank):
    ...     return SearchHit(rank, 0.0, chunk_id, "d", "v", 0, 1, None, None, "t")
    >>> [x.chunk_id for x in fuse([[h("a", 1), h("b", 2)], [h("b", 1), h("c", 2)]], 3)]
    ['b', 'a', 'c']
    """
    fused: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    by_id: dict[str, SearchHit] = {}
    for which, ranking in enumerate(rankings):
        for position, hit in enumerate(ranking, start=1):
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + 1.0 / (RRF_K + position)
            first_seen.setdefault(hit.chunk_id, (position, which))
            by_id.setdefault(hit.chunk_id, hit)
    order = sorted(fused, key=lambda c: (-fused[c], first_seen[c]))[: max(k, 0)]
    return [dataclasses.replace(by_id[c], rank=rank, score=fused[c]) for rank, c in enumerate(order, start=1)]
