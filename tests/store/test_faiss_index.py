"""The vector index: which one `auto` builds, its search parameters, and in-place updates."""

from __future__ import annotations

import faiss
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from ingest.store.faiss_index import (
    FLAT_MAX_VECTORS,
    apply_search_params,
    build_ann,
    plan_index,
    search_params_of,
    update_ann,
    update_reason,
)
from schemas.ann import AnnParams

DIM = 32


def clustered(n: int, seed: int, centres: int = 40) -> np.ndarray:
    """Unit vectors in clusters, like embeddings of documents about a few topics."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((centres, DIM)).astype(np.float32)
    v = means[rng.integers(0, centres, n)] + 0.4 * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_auto_is_exact_search_up_to_the_threshold_and_an_inverted_file_above():
    assert plan_index(FLAT_MAX_VECTORS).factory == "Flat"
    above = plan_index(FLAT_MAX_VECTORS + 1)
    assert above.factory.startswith("IVF") and above.nprobe > 0 and above.approximate
    million = plan_index(1_000_000)
    assert million.factory == "IVF4096,SQ8"
    assert million.nprobe == 64  # what benchmarks/ann.py measured at recall@10 >= 0.95
    assert plan_index(10, "HNSW32").ef_search > 0
    assert plan_index(10, "IVF256,Flat").nprobe == 16


def test_too_few_vectors_to_train_build_flat_and_say_so():
    index, built, warning = build_ann(clustered(100, 0), AnnParams("IVF256,Flat", nprobe=16))
    assert built.factory == "Flat" and "too few" in warning and index.ntotal == 100


def test_inverted_file_keeps_its_own_ids_not_an_id_map():
    # IndexIDMap2 over an inverted file misreports ids after remove_ids (it compacts its id table,
    # the lists keep their positions): the index that is updated in place must hold the ids itself.
    index, built, _ = build_ann(clustered(4000, 1), AnnParams("IVF64,Flat", nprobe=64))
    assert faiss.try_extract_index_ivf(index) is not None and not isinstance(index, faiss.IndexIDMap2)
    assert built.trained_on == 4000


@pytest.mark.parametrize("params", [AnnParams("IVF64,SQ8", nprobe=7), AnnParams("HNSW16", ef_search=91)])
def test_search_parameters_come_from_the_manifest_not_faiss_defaults(params):
    index, built, _ = build_ann(clustered(3000, 2), params)
    reopened = faiss.deserialize_index(faiss.serialize_index(index))
    ivf = faiss.try_extract_index_ivf(reopened)
    if ivf is not None:
        ivf.nprobe = 1  # FAISS's default
    apply_search_params(reopened, built)
    assert search_params_of(reopened) == (params.nprobe, params.ef_search)


def _next_generation(n_live: int, changed_docs: list[tuple[int, int]], rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Documents [a, b) of ``n_live`` ids changed: (ids gone, new ids from n_live on, their vectors)."""
    gone = np.concatenate([np.arange(a, b) for a, b in changed_docs]) if changed_docs else np.zeros(0, dtype=np.int64)
    fresh = [clustered(int(rng.integers(1, 2 * (b - a) + 2)), seed=int(rng.integers(1 << 30))) for a, b in changed_docs]
    vectors = np.vstack(fresh) if fresh else np.zeros((0, 32), dtype=np.float32)
    return gone.astype(np.int64), np.arange(n_live, n_live + len(vectors), dtype=np.int64), vectors


@settings(max_examples=examples(8))
@given(seed=st.integers(0, 2**31 - 1), n_changed=st.integers(0, 6), flat=st.booleans())
def test_update_in_place_gives_the_hits_of_a_rebuild(seed, n_changed, flat):
    _check_update_matches_rebuild(seed, n_changed, flat)


@pytest.mark.parametrize("flat", [False, True])
def test_update_in_place_gives_the_hits_of_a_rebuild_many_documents_changed(flat):
    _check_update_matches_rebuild(seed=5, n_changed=60, flat=flat)


def _check_update_matches_rebuild(seed: int, n_changed: int, flat: bool = False) -> None:
    rng = np.random.default_rng(seed)
    live_vectors = clustered(3000, seed)
    index, params, _ = build_ann(live_vectors, AnnParams("Flat") if flat else AnnParams("IVF32,Flat", nprobe=4))
    bounds = np.sort(rng.choice(np.arange(1, 3000), 2 * n_changed, replace=False)).reshape(-1, 2)
    gone, added, fresh = _next_generation(len(live_vectors), [tuple(b) for b in bounds], rng)
    kept = np.setdiff1d(np.arange(len(live_vectors)), gone)
    all_ids = np.concatenate([kept, added])
    all_vectors = np.vstack([live_vectors[kept], fresh])

    if flat:
        rebuilt, _, _ = build_ann(all_vectors, params, all_ids)
    else:
        rebuilt = faiss.clone_index(index)  # the same trained quantizer, emptied and filled anew
        rebuilt.reset()
        rebuilt.add_with_ids(all_vectors, all_ids)
    updated, updated_params = update_ann(index, params, gone, added, fresh, len(all_ids))

    assert updated.ntotal == rebuilt.ntotal == len(all_ids)
    assert updated_params.added_since_training == (0 if flat else len(added))
    queries = np.vstack([fresh[:50], clustered(50, seed + 1)])
    for nprobe in ((4, 32) if not flat else (0,)):  # some lists, then every list (exact)
        for idx in (updated, rebuilt):
            if nprobe:
                faiss.extract_index_ivf(idx).nprobe = nprobe
        got_scores, got_ids = updated.search(queries, 10)
        want_scores, want_ids = rebuilt.search(queries, 10)
        np.testing.assert_allclose(got_scores, want_scores, rtol=0, atol=1e-5)
        assert not np.isin(got_ids, gone).any()
        for got, want, scores in zip(got_ids, want_ids, want_scores):
            # equal up to the order of exact ties
            assert _by_score(got, scores) == _by_score(want, scores)


def _by_score(ids, scores):
    groups: dict[float, set] = {}
    for i, s in zip(ids.tolist(), np.round(scores, 5).tolist()):
        groups.setdefault(s, set()).add(i)
    return groups


def test_every_new_vector_is_found_under_its_id_after_an_update():
    live_vectors = clustered(5000, 11)
    index, params, _ = build_ann(live_vectors, AnnParams("IVF64,Flat", nprobe=64))
    gone, added, fresh = _next_generation(5000, [(10, 50), (2000, 2100), (4990, 5000)], np.random.default_rng(1))
    updated, _ = update_ann(index, params, gone, added, fresh, 5000 - len(gone) + len(added))
    _, ids = updated.search(fresh, 1)
    assert (ids[:, 0] == added).mean() > 0.999  # exact duplicates may swap


def test_an_index_is_retrained_when_churn_outgrows_its_centroids():
    params = AnnParams("IVF64,Flat", nprobe=8, trained_on=1000, added_since_training=400)
    assert update_reason(params, params, 50) == ""
    assert "retrained" in update_reason(params, params, 200)
    assert "rebuilt" in update_reason(AnnParams("HNSW32", ef_search=64), AnnParams("HNSW32", ef_search=64), 50)
    assert "changes" in update_reason(params, AnnParams("IVF128,Flat", nprobe=8), 50)
    assert update_reason(AnnParams("Flat"), AnnParams("Flat"), 50) == ""


def _resident_kb(path) -> int:
    """Resident memory of this process's mappings of ``path`` (from /proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and ":" not in fields[0]:  # a mapping's first line
                inside = fields[-1] == str(path)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


@pytest.mark.parametrize("factory", ["Flat", "IVF64,SQ8"])
def test_vectors_mapped_from_disk_are_not_left_resident_and_give_the_same_index(tmp_path, factory):
    vectors = clustered(20_000, seed=5)  # 2.5 MB of 32-d vectors
    path = tmp_path / "vectors.f32"
    vectors.tofile(path)
    mapped = np.memmap(path, dtype=np.float32, mode="r", shape=vectors.shape)
    plan = plan_index(len(vectors), factory)
    from_disk, _, _ = build_ann(mapped, plan)
    assert _resident_kb(path) < 64, "the mapped vectors stayed in the build's memory"
    in_memory, _, _ = build_ann(vectors, plan)
    queries = clustered(50, seed=6)
    assert (from_disk.search(queries, 10)[1] == in_memory.search(queries, 10)[1]).all()
    assert from_disk.ntotal == len(vectors)
