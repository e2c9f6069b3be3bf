"""Filtered search ranks only the chunks of the documents a filter keeps, in every mode, before
ranking: k hits whenever k chunks match, the same hits as a brute-force ranking restricted to
them, on Flat and inverted-file indexes, across segments with masked (changed) documents."""

from __future__ import annotations

import random

import numpy as np
import pytest

import index
from index.search import filtered
from index.search.modes import HIDDEN_MARGIN
from ingest.build import BuildSettings, build_index
from ingest.text import embed_text
from schemas.errors import FilterError

from doubles import HashingEmbedder

VOCABULARY = [f"w{i:03d}" for i in range(300)]
N_CONTRACTS, N_MEMOS = 40, 40


def _document(rng: random.Random) -> str:
    return "\n\n".join(" ".join(rng.choices(VOCABULARY, k=rng.randint(60, 140))) + "." for _ in range(3)) + "\n"


def _write_corpus(root, seed: int, changed: range = range(0)) -> None:
    rng = random.Random(seed)
    for folder, count in (("contracts", N_CONTRACTS), ("memos", N_MEMOS)):
        (root / folder).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            text = _document(rng)
            if i in changed:
                text += "amended " + " ".join(random.Random(i).choices(VOCABULARY, k=40)) + ".\n"
            (root / folder / f"{folder[0]}{i:02d}.md").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module", params=["Flat", "IVF64,Flat"])
def two_segment_index(request, tmp_path_factory):
    """80 documents built, then 8 of them changed and built again: two segments, masked rows."""
    corpus = tmp_path_factory.mktemp("filter-corpus")
    out = tmp_path_factory.mktemp("filter-index")
    settings = BuildSettings(workers=1, faiss_factory=request.param)
    _write_corpus(corpus, seed=7)
    build_index(corpus, out, settings, embedder=HashingEmbedder())
    _write_corpus(corpus, seed=7, changed=range(0, 40, 5))
    build_index(corpus, out, settings, embedder=HashingEmbedder())
    idx = index.open(out, embedder=HashingEmbedder())
    assert len(idx.generation.segments) == 2 and idx.generation.live.deleted
    assert idx.manifest.faiss_factory.startswith(request.param.split(",")[0])
    return idx


def _chunks_of_documents(idx, where: str) -> dict[int, str]:
    """vector id -> chunk id of every live chunk of the documents ``where`` keeps (from the chunks' own rows)."""
    kept = idx.documents_where(where)
    return {c.vector_id: c.chunk_id for doc_id in kept for c in idx.chunks_of(doc_id)}


def _brute_dense(idx, query: str, allowed: dict[int, str]) -> list[tuple[float, int]]:
    ids = np.array(sorted(allowed), dtype=np.int64)
    vector = HashingEmbedder().embed([embed_text(query)])[0]
    scores = idx.generation.live.vectors_of(ids) @ vector
    return sorted(zip((-scores).tolist(), ids.tolist()))


def _ivf_ranking(idx, query: str, allowed: dict[int, str]) -> list[tuple[float, int]]:
    vector = HashingEmbedder().embed([embed_text(query)])
    scores, ids = idx.generation.faiss().search(vector, idx.n_chunks)
    return [(-float(s), int(i)) for s, i in zip(scores[0], ids[0]) if int(i) in allowed]


def _brute_lexical(idx, query: str, allowed: dict[int, str]) -> list[int]:
    ids, scores = idx.lexical().scores(query)
    kept = [(-float(s), int(i)) for i, s in zip(ids, scores) if int(i) in allowed and s > 0]
    return [i for _, i in sorted(kept)]


QUERY = "w001 w017 w042 w099 w150 w233"
FILTERS = [
    "doc_id = 'contracts/c05.md'",  # one document out of 80 (a changed one: its live rows are in segment 2)
    "doc_id = 'memos/m33.md'",  # one unchanged document (segment 1)
    "doc_id LIKE 'contracts/c1%' OR doc_id IN ('memos/m01.md', 'memos/m02.md')",
    "doc_id LIKE 'memos/%'",
]


@pytest.mark.parametrize("exact_max", [filtered.EXACT_MAX_VECTORS, 0], ids=["exact-when-few", "selector-first"])
@pytest.mark.parametrize("where", FILTERS)
def test_filtered_dense_search_is_the_brute_force_ranking_of_the_matching_chunks(two_segment_index, where, exact_max,
                                                                                 monkeypatch):
    monkeypatch.setattr(filtered, "EXACT_MAX_VECTORS", exact_max)
    idx = two_segment_index
    idx._filters.clear()
    allowed = _chunks_of_documents(idx, where)
    assert allowed
    assert idx.allowed_vector_ids(where).tolist() == sorted(allowed)
    k = 10
    hits = idx.search(QUERY, k=k, mode="dense", where=where)
    expected = _brute_dense(idx, QUERY, allowed)[:k]
    if exact_max == 0 and idx.manifest.faiss_factory.startswith("IVF"):
        # the inverted file asked with the selector: its own ranking of the lists it probes, as the
        # unfiltered search read to the last vector ranks them, restricted to the matching chunks
        # (dense search reads HIDDEN_MARGIN more than k; fewer than that found: the exact search answers)
        probed = _ivf_ranking(idx, QUERY, allowed)
        if len(probed) >= min(k + HIDDEN_MARGIN, len(allowed)):
            expected = probed[:k]
    assert len(hits) == min(k, len(allowed))  # k whenever k chunks match, however selective the filter
    assert all(h.chunk_id in allowed.values() for h in hits)
    # the same scores in the same order (an equal score may go either way at the k-th place)
    assert [round(h.score, 5) for h in hits] == [round(-s, 5) for s, _ in expected]
    by_id = {cid: vid for vid, cid in allowed.items()}
    brute = {vid: -s for s, vid in _brute_dense(idx, QUERY, allowed)}
    assert all(abs(brute[by_id[h.chunk_id]] - h.score) < 1e-5 for h in hits)


@pytest.mark.parametrize("where", FILTERS)
def test_filtered_lexical_search_is_the_bm25_ranking_restricted_to_the_matching_chunks(two_segment_index, where):
    idx = two_segment_index
    allowed = _chunks_of_documents(idx, where)
    hits = idx.search(QUERY, k=10, mode="lexical", where=where)
    assert [h.chunk_id for h in hits] == [allowed[i] for i in _brute_lexical(idx, QUERY, allowed)[:10]]


def test_a_filter_matching_fewer_than_k_chunks_returns_exactly_them(two_segment_index):
    idx = two_segment_index
    where = "doc_id = 'contracts/c05.md'"
    chunks = {c.chunk_id for c in idx.chunks_of("contracts/c05.md")}
    assert 1 < len(chunks) < 50
    assert {h.chunk_id for h in idx.search(QUERY, k=50, mode="dense", where=where)} == chunks
    hybrid = idx.search(QUERY, k=50, mode="hybrid", where=where)
    assert {h.chunk_id for h in hybrid} == chunks  # the dense ranking holds them all; fused with the lexical one


def test_hybrid_fuses_the_two_filtered_rankings(two_segment_index):
    from index.search.fusion import candidates, dense_weight, fuse

    idx = two_segment_index
    where = "doc_id LIKE 'memos/%'"
    depth, weight = candidates(5), dense_weight(QUERY, multilingual=False)
    assert 0 < weight < 1
    expected = fuse([(idx.search(QUERY, k=depth, mode="lexical", where=where), 1 - weight),
                     (idx.search(QUERY, k=depth, mode="dense", where=where), weight)], 5)
    hits = idx.search(QUERY, k=5, mode="hybrid", where=where)
    assert [h.chunk_id for h in hits] == [h.chunk_id for h in expected]
    assert all(h.doc_id.startswith("memos/") for h in hits)


def test_a_filter_that_keeps_no_document_finds_nothing_and_a_bad_one_says_why(two_segment_index):
    idx = two_segment_index
    for mode in ("dense", "lexical", "hybrid"):
        assert idx.search(QUERY, k=5, mode=mode, where="doc_id = 'nowhere.md'") == []
    with pytest.raises(FilterError, match="unknown column 'author'"):
        idx.search(QUERY, k=5, where="author = 'x'")


def test_masked_rows_of_a_changed_document_are_not_matched(two_segment_index):
    idx = two_segment_index
    where = "doc_id = 'contracts/c05.md'"
    live = {c.vector_id for c in idx.chunks_of("contracts/c05.md")}
    assert set(idx.allowed_vector_ids(where).tolist()) == live
    masked = idx.generation.live.deleted[idx.generation.segments[0].name]["contracts/c05.md"]
    assert masked.first_vector_id not in live


def test_filtered_dense_search_equals_an_unfiltered_search_of_an_index_of_the_matching_documents(tmp_path):
    corpus = tmp_path / "corpus"
    _write_corpus(corpus, seed=11)
    whole, part = tmp_path / "whole", tmp_path / "part"
    build_index(corpus, whole, BuildSettings(workers=1, faiss_factory="Flat"), embedder=HashingEmbedder())
    for path in (corpus / "memos").iterdir():
        path.unlink()
    build_index(corpus, part, BuildSettings(workers=1, faiss_factory="Flat"), embedder=HashingEmbedder())
    filtered_hits = index.open(whole, embedder=HashingEmbedder()).search(QUERY, k=8, mode="dense",
                                                                         where="doc_id LIKE 'contracts/%'")
    alone = index.open(part, embedder=HashingEmbedder()).search(QUERY, k=8, mode="dense")
    assert [(h.chunk_id, round(h.score, 5)) for h in filtered_hits] == [(h.chunk_id, round(h.score, 5)) for h in alone]
