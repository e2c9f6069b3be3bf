"""The FAISS index of a generation (ids are chunks.vector_id): which one, built or updated in place.

``auto`` (the default) is exact search (``Flat``) up to ``FLAT_MAX_VECTORS`` and an inverted
file above it, ``IVF{nlist},SQ8`` with ``nlist`` about 4·sqrt(n) and ``nprobe`` chosen so that
recall@10 against exact search stays at or above 0.95 (benchmarks/ann.py measured it at 100k
and 1M vectors; the README gives the table). HNSW answers as fast but cannot remove a vector,
and its shards are searched with the masked ids excluded as Flat and IVF shards are.

Ids in the FAISS index are ``chunks.vector_id``. An inverted file stores them itself
(``add_with_ids``); it is never wrapped in ``IndexIDMap2``, whose ``remove_ids`` compacts its
id table while the inverted lists keep their old positions, so every later hit would come back
with a neighbour's id. Flat and HNSW indexes are wrapped (they cannot store ids).

Vector ids are stable: a segment's chunks keep theirs for as long as the segment lives (a merge
gives the merged rows new ones). Each segment has its own shard of the index
(``ingest.store.ann_shards``), a copy of one trained template.
"""

from __future__ import annotations

import dataclasses
import math
import mmap

import numpy as np

from schemas.ann import AUTO_FACTORY, AnnParams
from schemas.errors import SpanindexError

FLAT_MAX_VECTORS = 50_000  # exact search up to here: ~3 ms a query on 2 cores, no training
AUTO_CODING = "SQ8"  # one byte a dimension: 4x smaller than Flat lists, recall within 1% of them
TRAIN_POINTS_PER_LIST = 40  # k-means sample per inverted list (FAISS warns under 39)
ADD_BLOCK = 2_048  # vectors added at a time: 3 MB of 384-d float32
DEFAULT_EF_SEARCH = 64
RETRAIN_CHURN = 0.5  # retrain once vectors added since training exceed this share of those trained on


def nlist_for(n_vectors: int) -> int:
    """Inverted lists for ``n_vectors``: the power of two nearest 4·sqrt(n), at least 64.

    >>> nlist_for(1_000_000), nlist_for(100_000)
    (4096, 1024)
    """
    return max(64, 2 ** round(math.log2(4 * math.sqrt(max(n_vectors, 1)))))


def nprobe_for(nlist: int) -> int:
    """Lists visited per query: 1/64 of the lists, at least 16 (see the module docstring).

    >>> nprobe_for(4096), nprobe_for(1024)
    (64, 16)
    """
    return max(16, nlist // 64)


def plan_index(n_vectors: int, requested: str = AUTO_FACTORY) -> AnnParams:
    """The index a build of ``n_vectors`` vectors makes, before any training.

    >>> plan_index(5_000).factory, plan_index(4_000_000).factory
    ('Flat', 'IVF8192,SQ8')
    >>> plan_index(4_000_000).nprobe
    128
    >>> plan_index(10, "HNSW32").ef_search
    64
    """
    if requested == AUTO_FACTORY:
        if n_vectors <= FLAT_MAX_VECTORS:
            return AnnParams("Flat", requested=requested)
        nlist = nlist_for(n_vectors)
        return AnnParams(f"IVF{nlist},{AUTO_CODING}", nprobe=nprobe_for(nlist), requested=requested)
    return _default_params(requested, requested)


def _default_params(factory: str, requested: str) -> AnnParams:
    kind = factory.split(",")[0]
    if kind.startswith("IVF"):
        digits = "".join(c for c in kind[3:] if c.isdigit())
        nlist = int(digits) if digits else 1024
        return AnnParams(factory, nprobe=min(nlist, nprobe_for(nlist)), requested=requested)
    if kind.startswith("HNSW"):
        return AnnParams(factory, ef_search=DEFAULT_EF_SEARCH, requested=requested)
    return AnnParams(factory, requested=requested)


def check_factory(factory: str, dim: int) -> None:
    """Refuse a FAISS factory string before any work is done, not after embedding.

    >>> check_factory("auto", 384)
    >>> check_factory("IVF-1,Flat", 384)
    Traceback (most recent call last):
    ...
    schemas.errors.SpanindexError: --faiss-factory 'IVF-1,Flat' does not build a 384-d index: ...
    """
    import faiss

    if factory == AUTO_FACTORY:
        return
    try:
        faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else "rejected"
        raise SpanindexError(f"--faiss-factory {factory!r} does not build a {dim}-d index: {message}") from None


def build_ann(vectors: np.ndarray, params: AnnParams) -> tuple[object, AnnParams, str]:
    """An inner-product index over ``vectors`` (row i has id i), and what was built.

    An index that needs training is trained on a deterministic sample; when there are
    too few vectors to train it, a flat index is built instead and the warning says so.

    >>> index, built, _ = build_ann(np.eye(4, dtype=np.float32), plan_index(4))
    >>> index.ntotal, built.factory
    (4, 'Flat')
    """
    import faiss

    n, dim = vectors.shape
    warning = ""
    inner = faiss.index_factory(dim, params.factory, faiss.METRIC_INNER_PRODUCT)
    trained_on = 0
    if not inner.is_trained:
        needed = _training_points(inner)
        if n < needed:
            warning = f"{n} vectors are too few to train {params.factory!r} (needs {needed}); built 'Flat'"
            params = AnnParams("Flat", requested=params.requested)
            inner = faiss.index_factory(dim, "Flat", faiss.METRIC_INNER_PRODUCT)
        else:
            sample = training_sample(vectors, inner)
            inner.train(sample)
            trained_on = n
    index = inner if _stores_ids(inner) else faiss.IndexIDMap2(inner)
    _reserve(inner, n)
    add_vectors(index, vectors, np.arange(n, dtype=np.int64))
    built = dataclasses.replace(params, trained_on=trained_on, added_since_training=0)
    apply_search_params(index, built)
    return index, built, warning


def training_sample(vectors: np.ndarray, inner) -> np.ndarray:
    """Every k-th vector, ``TRAIN_POINTS_PER_LIST`` per inverted list (deterministic)."""
    import faiss

    ivf = faiss.try_extract_index_ivf(inner)
    wanted = TRAIN_POINTS_PER_LIST * int(ivf.nlist) if ivf is not None else 65_536
    step = max(1, len(vectors) // wanted)
    sample = np.array(vectors[::step][:wanted], dtype=np.float32)  # a copy: the mapped pages can go
    release_mapped_pages(vectors)
    return sample


def add_vectors(index, vectors: np.ndarray, ids: np.ndarray) -> None:
    for first in range(0, len(ids), ADD_BLOCK):
        block = np.ascontiguousarray(vectors[first : first + ADD_BLOCK], dtype=np.float32)
        index.add_with_ids(block, np.ascontiguousarray(ids[first : first + ADD_BLOCK], dtype=np.int64))
        release_mapped_pages(vectors)


def _reserve(inner, n: int) -> None:
    """Room for ``n`` vectors in an empty flat-coded index (Flat, SQ) before they are added, so that
    its code array is allocated once instead of doubling block after block, each doubling holding
    the old array and the new at once."""
    import faiss

    if isinstance(inner, faiss.IndexFlatCodes) and inner.ntotal == 0:
        inner.codes.resize(n * inner.code_size)
        inner.codes.resize(0)  # a std::vector keeps its capacity


def release_mapped_pages(vectors: np.ndarray) -> None:
    """Drop the pages of ``vectors`` from this process's memory when they are a file's memory map
    (``np.memmap``; they stay in the page cache and are read again when touched); nothing for an
    array in memory. Adding mapped vectors otherwise leaves every one of them resident beside the
    index they were copied into: at 10,316 vectors, 15 MB on top of the index's own 15 MB.
    Only a read-only map: a copy-on-write one would lose its changes."""
    if not isinstance(vectors, np.memmap) or vectors.mode != "r":
        return
    base = vectors
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    if base is not None:
        base.madvise(mmap.MADV_DONTNEED)


def _stores_ids(inner) -> bool:
    import faiss

    return faiss.try_extract_index_ivf(inner) is not None


def _training_points(index) -> int:
    import faiss

    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        return int(ivf.nlist)
    return 256  # PQ codebooks and the like


def apply_search_params(index, params: AnnParams) -> None:
    """Set ``nprobe`` / ``efSearch`` as the manifest records them (FAISS's own defaults are 1 and 16)."""
    import faiss

    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None and params.nprobe:
        ivf.nprobe = min(int(ivf.nlist), params.nprobe)
    hnsw = _hnsw_of(index)
    if hnsw is not None and params.ef_search:
        hnsw.hnsw.efSearch = params.ef_search


def _hnsw_of(index):
    import faiss

    inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap2) else index
    return inner if isinstance(inner, faiss.IndexHNSW) else None


def search_params_of(index) -> tuple[int, int]:
    """(nprobe, efSearch) an opened index will search with; 0 where it has none."""
    import faiss

    ivf = faiss.try_extract_index_ivf(index)
    hnsw = _hnsw_of(index)
    return (int(ivf.nprobe) if ivf is not None else 0, int(hnsw.hnsw.efSearch) if hnsw is not None else 0)


def shard_bytes(shard) -> bytes:
    """A shard serialized without an inverted file's coarse quantizer: every shard of a template
    shares the template's (``attach_quantizer``), and a copy per shard cost a one-file reindex
    1.5 MB at 1,024 lists (an empty flat index stands in for it on disk)."""
    import faiss

    ivf = faiss.try_extract_index_ivf(shard)
    if ivf is None:
        return faiss.serialize_index(shard).tobytes()
    quantizer, owned = ivf.quantizer, ivf.own_fields
    placeholder = faiss.IndexFlat(ivf.d, ivf.metric_type)
    ivf.own_fields, ivf.quantizer = False, placeholder
    try:
        return faiss.serialize_index(shard).tobytes()
    finally:
        ivf.quantizer, ivf.own_fields = quantizer, owned


def attach_quantizer(shard, template) -> None:
    """Give a read shard of an inverted file its template's coarse quantizer (``shard_bytes``);
    ``template`` must outlive the shard. Nothing to do for Flat or HNSW, or for a shard written
    with its own copy (before format 7's shards left it out)."""
    import faiss

    ivf = faiss.try_extract_index_ivf(shard)
    if ivf is None or ivf.quantizer.ntotal:
        return
    shared = faiss.extract_index_ivf(template)
    if ivf.nlist != shared.nlist or ivf.d != shared.d:
        raise SpanindexError(f"a shard of {ivf.nlist} lists ({ivf.d}-d) under a template of {shared.nlist} ({shared.d}-d)")
    # The empty placeholder is left to the shard unfreed (a few hundred bytes): freeing it from
    # Python (thisown) corrupted the heap of later FAISS calls.
    ivf.own_fields, ivf.quantizer = False, shared.quantizer
