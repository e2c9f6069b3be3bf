"""Hybrid fusion: each chunk once, best first; a ranking weighed 0 leaves the other's order as it
is; two rankings that agree give that ranking; ties fall the same way every time; and the dense
ranking is trusted less for a query in a script or language the index's model does not know."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from index.search.fusion import (
    DENSE_WEIGHT,
    UNKNOWN_LANGUAGE_FACTOR,
    dense_weight,
    fuse,
    latin_share,
)
from ingest.embed import DEFAULT_MODEL_ID, is_multilingual
from schemas.records import SearchHit

from conftest import examples

CHUNK_IDS = st.lists(st.sampled_from("abcdefghijkl"), unique=True, max_size=12)
SCORES = st.lists(st.floats(-50, 50, allow_nan=False, width=32), min_size=12, max_size=12)
WEIGHTS = st.floats(0.0, 1.0, allow_nan=False)


def _ranking(ids: list[str], scores: list[float]) -> list[SearchHit]:
    """``ids`` best first, with ``scores`` put in the same order (a search never ranks a lower score first)."""
    ordered = sorted(scores[: len(ids)], reverse=True)
    return [SearchHit(rank, s, c, "d", "v", 0, 1, None, None, c) for rank, (c, s) in enumerate(zip(ids, ordered), start=1)]


def _ids(hits: list[SearchHit]) -> list[str]:
    return [h.chunk_id for h in hits]


@settings(max_examples=examples(200))
@given(CHUNK_IDS, SCORES, CHUNK_IDS, SCORES, WEIGHTS, st.integers(0, 14))
def test_fusion_keeps_each_chunk_once_best_first(lexical, lexical_scores, dense, dense_scores, weight, k):
    fused = fuse([(_ranking(lexical, lexical_scores), 1 - weight), (_ranking(dense, dense_scores), weight)], k)
    ids = _ids(fused)
    assert len(ids) == len(set(ids)) == min(k, len(set(dense) | set(lexical)))
    assert [h.rank for h in fused] == list(range(1, len(fused) + 1))
    assert all(a.score >= b.score for a, b in itertools.pairwise(fused))
    if dense and lexical and dense[0] == lexical[0] and k:
        assert ids[0] == dense[0]  # first in both rankings is first


@settings(max_examples=examples(200))
@given(CHUNK_IDS, SCORES, CHUNK_IDS, SCORES)
@example(["a", "b"], [1.0] * 12, ["c"], [0.0] * 12)  # all lexical scores alike: still before a dense-only chunk
def test_a_dense_weight_of_zero_gives_the_lexical_order_and_dense_only_fills_in_below(
        lexical, lexical_scores, dense, dense_scores):
    fused = _ids(fuse([(_ranking(lexical, lexical_scores), 1.0), (_ranking(dense, dense_scores), 0.0)], 24))
    assert fused == lexical + [c for c in dense if c not in lexical]


@settings(max_examples=examples(200))
@given(CHUNK_IDS, SCORES, CHUNK_IDS, SCORES)
def test_a_lexical_weight_of_zero_gives_the_dense_order_and_lexical_only_fills_in_below(
        lexical, lexical_scores, dense, dense_scores):
    """The weights decide, not the order the rankings are given in."""
    fused = _ids(fuse([(_ranking(lexical, lexical_scores), 0.0), (_ranking(dense, dense_scores), 1.0)], 24))
    assert fused == dense + [c for c in lexical if c not in dense]


def _position(ranking: list[str], chunk_id: str) -> float:
    return ranking.index(chunk_id) if chunk_id in ranking else float("inf")


@settings(max_examples=examples(200))
@given(CHUNK_IDS, SCORES, CHUNK_IDS, SCORES, WEIGHTS)
@example(["b", "a"], [1.0] * 12, ["b", "a"], [1.0] * 12, 0.5)  # every score alike: the ranks decide, not the ids
def test_a_chunk_that_no_ranking_puts_below_another_is_fused_above_it(lexical, lexical_scores, dense, dense_scores, weight):
    """Pareto: where every ranking has ``a`` at least as high as ``b`` (a chunk a ranking does
    not hold is below every chunk it does) and one has it higher, no weighing puts ``b`` first."""
    fused = _ids(fuse([(_ranking(lexical, lexical_scores), 1 - weight), (_ranking(dense, dense_scores), weight)], 24))
    for a, b in itertools.permutations(fused, 2):
        places = [(_position(ranking, a), _position(ranking, b)) for ranking in (lexical, dense)]
        if all(pa <= pb for pa, pb in places) and any(pa < pb for pa, pb in places):
            assert fused.index(a) < fused.index(b), (a, b)


@settings(max_examples=examples(200))
@given(CHUNK_IDS, SCORES, CHUNK_IDS, SCORES, WEIGHTS, WEIGHTS)
def test_each_rankings_first_chunk_only_climbs_as_that_ranking_weighs_more(
        lexical, lexical_scores, dense, dense_scores, weight, other_weight):
    """The fused score is linear in the weight and a ranking's first chunk has its highest
    standard score: a chunk fused above it at a greater weight was above it at every smaller one."""
    lighter, heavier = sorted((weight, other_weight))
    rankings = (_ranking(lexical, lexical_scores), _ranking(dense, dense_scores))

    def ahead_of(first: str, dense_weight: float, margin: float) -> set[str]:
        fused = fuse([(rankings[0], 1 - dense_weight), (rankings[1], dense_weight)], 24)
        score = next(h.score for h in fused if h.chunk_id == first)
        return {h.chunk_id for h in fused if h.score > score + margin}

    if dense:  # more dense weight: the dense first climbs
        assert ahead_of(dense[0], heavier, 1e-9) <= ahead_of(dense[0], lighter, -1e-9)
    if lexical:  # less dense weight: the lexical first climbs
        assert ahead_of(lexical[0], lighter, 1e-9) <= ahead_of(lexical[0], heavier, -1e-9)


@settings(max_examples=examples(200))
@given(CHUNK_IDS, SCORES, SCORES, WEIGHTS)
def test_two_rankings_in_the_same_order_fuse_to_that_order(ids, lexical_scores, dense_scores, weight):
    """Whatever each ranking's scores and weight, where both put the same chunks in the same order."""
    fused = fuse([(_ranking(ids, lexical_scores), 1 - weight), (_ranking(ids, dense_scores), weight)], len(ids))
    assert _ids(fused) == ids


@settings(max_examples=examples(100))
@given(CHUNK_IDS, CHUNK_IDS, WEIGHTS)
def test_ties_go_to_the_heavier_ranking_by_rank_every_time(first, second, weight):
    """Every score alike in both rankings: a chunk both hold ties with every other such chunk."""
    rankings = [(_ranking(first, [1.0] * 12), 1 - weight), (_ranking(second, [1.0] * 12), weight)]
    fused = _ids(fuse(rankings, 24))
    assert fused == _ids(fuse(rankings, 24))
    heavier, lighter = (first, second) if 1 - weight >= weight else (second, first)
    both = [c for c in fused if c in first and c in second]
    assert both == [c for c in heavier if c in lighter]


@settings(max_examples=examples(100))
@given(CHUNK_IDS, SCORES, CHUNK_IDS, SCORES, WEIGHTS, st.floats(0.5, 20), st.floats(-100, 100))
def test_a_ranking_scored_on_another_scale_fuses_alike(lexical, lexical_scores, dense, dense_scores, weight, scale, shift):
    """A cosine and a BM25 sum share nothing but their order: stretching or shifting one's scores
    changes nothing (up to rounding: distinct scores only)."""
    lexical_scores = [float(i) + s / 1000 for i, s in enumerate(lexical_scores)]
    dense_scores = [float(i) + s / 1000 for i, s in enumerate(dense_scores)]
    rescaled = [s * scale + shift for s in dense_scores]
    before = fuse([(_ranking(lexical, lexical_scores), 1 - weight), (_ranking(dense, dense_scores), weight)], 24)
    after = fuse([(_ranking(lexical, lexical_scores), 1 - weight), (_ranking(dense, rescaled), weight)], 24)
    assert [h.score for h in after] == pytest.approx([h.score for h in before], abs=1e-6)


def test_equal_weights_break_ties_by_the_earlier_ranking():
    a_first, b_first = _ranking(["a", "b"], [2.0, 1.0]), _ranking(["b", "a"], [2.0, 1.0])
    assert _ids(fuse([(a_first, 0.5), (b_first, 0.5)], 2)) == ["a", "b"]
    assert _ids(fuse([(b_first, 0.5), (a_first, 0.5)], 2)) == ["b", "a"]


@pytest.mark.parametrize(
    ("query", "known_share"),
    [
        ("Сколько пассажиров перевёз аэропорт в прошлом году?", 0.0),
        ("كم عدد الركاب الذين نقلهم المطار في العام الماضي؟", 0.0),
        ("机场去年运送了多少名乘客？", 0.0),
        ("공항은 작년에 몇 명의 승객을 수송했나요?", 0.0),
        ("Wie viele Passagiere beförderte der Flughafen im letzten Jahr?", 1.0),
        ("Ile pieniędzy wydało NATO na pomoc dla Ukrainy w zeszłym roku?", 1.0),
        ("BMW 在中国卖了多少辆车", 0.3),
    ],
)
def test_a_query_the_english_model_cannot_read_weighs_dense_down(query, known_share):
    english = dense_weight("How many passengers did the airport carry last year?", multilingual=False)
    assert english == DENSE_WEIGHT
    assert latin_share(query) == pytest.approx(known_share, abs=0.05)
    assert dense_weight(query, multilingual=False) < english
    assert dense_weight(query, multilingual=False) <= DENSE_WEIGHT * known_share + 1e-12
    assert dense_weight(query, multilingual=True) == DENSE_WEIGHT  # a multilingual model reads them all


@settings(max_examples=examples(200))
@given(st.text(max_size=80), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_the_dense_weight_is_the_base_times_the_known_share_of_the_query(query, base, unknown_language):
    """Between 0 and the base; the base itself for a multilingual model; for an English one, the
    base times the query's share of Latin letters, times the factor or 1."""
    weight = dense_weight(query, multilingual=False, base=base, unknown_language=unknown_language)
    assert dense_weight(query, multilingual=True, base=base, unknown_language=unknown_language) == base
    assert 0.0 <= weight <= base
    assert weight in (pytest.approx(base * latin_share(query)), pytest.approx(base * latin_share(query) * unknown_language))
    assert dense_weight(query, multilingual=False, base=0.0) == 0.0


def test_a_latin_query_in_another_language_weighs_dense_down_and_a_short_one_by_its_script_alone():
    assert dense_weight("Wie viele Passagiere beförderte der Flughafen im letzten Jahr?", multilingual=False) \
        == DENSE_WEIGHT * UNKNOWN_LANGUAGE_FACTOR
    assert dense_weight("Flughafen Passagiere", multilingual=False) == DENSE_WEIGHT  # too short to tell its language
    assert dense_weight("2024 Q3 12,5 %", multilingual=False) == DENSE_WEIGHT  # no letters: nothing it cannot read


def test_the_packaged_model_is_english_and_a_multilingual_folder_is_known_by_its_name():
    assert not is_multilingual(DEFAULT_MODEL_ID)
    assert is_multilingual("local:paraphrase-multilingual-MiniLM-L12-v2@0123456789ab")
    assert is_multilingual("local:multilingual-e5-small@0123456789ab")
    assert is_multilingual("local:bge-m3@0123456789ab")
    assert not is_multilingual("local:all-mpnet-base-v2@0123456789ab")
