"""The vector index: which one `auto` builds, its search parameters, and searching it as shards."""

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


def _shards_of(template, parts: list[tuple[np.ndarray, np.ndarray]], written: bool = False):
    """A shard per (vectors, ids) part, each a copy of ``template`` (as ingest.store.ann_shards makes
    them); ``written``: as a reader reads them, serialized without the inverted file's quantizer."""
    from ingest.store.faiss_index import shard_bytes

    shards = []
    for vectors, ids in parts:
        inner = faiss.clone_index(template)
        shard = inner if faiss.try_extract_index_ivf(inner) is not None else faiss.IndexIDMap2(inner)
        shard.add_with_ids(vectors, ids)
        shards.append(faiss.deserialize_index(np.frombuffer(shard_bytes(shard), dtype=np.uint8)) if written else shard)
    return shards


@settings(max_examples=examples(10), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_parts=st.integers(1, 5), dead_share=st.sampled_from([0.0, 0.1, 0.6]),
       factory=st.sampled_from(["Flat", "IVF32,Flat", "HNSW16"]))
def test_shards_with_masked_ids_give_the_hits_of_one_index_of_the_live_vectors(seed, n_parts, dead_share, factory):
    """The reader's VectorShards over segment shards, masked ids excluded by a selector, returns what
    one index of the same template over only the live vectors returns (exact for Flat; for an
    inverted file the same lists are probed, so the same hits)."""
    from index.store import VectorShards

    rng = np.random.default_rng(seed)
    vectors = clustered(2400, seed)
    params = plan_index(len(vectors), factory)
    template = faiss.index_factory(DIM, factory, faiss.METRIC_INNER_PRODUCT)
    if not template.is_trained:
        template.train(vectors[::2])
        params = AnnParams(factory, nprobe=4, requested=factory)
    bounds = np.sort(rng.choice(np.arange(1, len(vectors)), n_parts - 1, replace=False)) if n_parts > 1 else []
    parts = [(vectors[a:b], np.arange(a, b, dtype=np.int64)) for a, b in zip([0, *bounds], [*bounds, len(vectors)])]
    dead = np.flatnonzero(rng.random(len(vectors)) < dead_share).astype(np.int64)
    written = _shards_of(template, parts, written=True)
    shards = VectorShards([(s, dead[np.isin(dead, ids)]) for s, (_, ids) in zip(written, parts)], params, template)
    live = np.setdiff1d(np.arange(len(vectors)), dead)
    [one] = _shards_of(template, [(vectors[live], live)])
    apply_search_params(one, params)
    queries = np.vstack([vectors[live[:20]], clustered(20, seed + 1)])
    got_scores, got_ids = shards.search(queries, 10)
    want_scores, want_ids = one.search(queries, 10)
    assert shards.ntotal == len(live) and not np.isin(got_ids, dead).any()
    if factory == "HNSW16":  # graphs differ shard by shard: approximate, compared by recall
        assert np.mean([len(set(g) & set(w)) / 10 for g, w in zip(got_ids, want_ids)]) > 0.9
        return
    np.testing.assert_allclose(got_scores, want_scores, rtol=0, atol=1e-5)
    for got, want, scores in zip(got_ids, want_ids, want_scores):
        assert _by_score(got, scores) == _by_score(want, scores)  # equal up to the order of exact ties


def _by_score(ids, scores):
    groups: dict[float, set] = {}
    for i, s in zip(ids.tolist(), np.round(scores, 5).tolist()):
        groups.setdefault(s, set()).add(i)
    return groups
