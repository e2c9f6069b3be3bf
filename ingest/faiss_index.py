"""The FAISS index over a generation's vectors: ids are chunks.vector_id."""

from __future__ import annotations

import numpy as np

from schemas.errors import SpanindexError

TRAIN_SAMPLE = 100_000


def check_factory(factory: str, dim: int) -> None:
    """Refuse a FAISS factory string before any work is done, not after embedding."""
    import faiss

    try:
        faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else "rejected"
        raise SpanindexError(f"--faiss-factory {factory!r} does not build a {dim}-d index: {message}") from None


def build_faiss(vectors: np.ndarray, factory: str) -> tuple[object, str, str]:
    """An ID-mapped inner-product index over ``vectors`` (row i has id i).

    Returns (index, factory actually used, warning). An index that needs training
    (IVF, PQ) is trained on a deterministic sample; when there are too few vectors to
    train it, a flat index is built instead and the warning says so.

    >>> index, used, _ = build_faiss(np.eye(4, dtype=np.float32), "Flat")
    >>> index.ntotal, used
    (4, 'Flat')
    """
    import faiss

    n, dim = vectors.shape
    warning = ""
    index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        needed = _training_points(index)
        if n < needed:
            warning = f"{n} vectors are too few to train {factory!r} (needs {needed}); built 'Flat'"
            factory = "Flat"
            index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
        else:
            step = max(1, n // TRAIN_SAMPLE)
            index.train(np.ascontiguousarray(vectors[::step][:TRAIN_SAMPLE]))
    mapped = faiss.IndexIDMap2(index)
    for first in range(0, n, 65536):
        block = np.ascontiguousarray(vectors[first : first + 65536], dtype=np.float32)
        mapped.add_with_ids(block, np.arange(first, first + len(block), dtype=np.int64))
    return mapped, factory, warning


def _training_points(index) -> int:
    import faiss

    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        return int(ivf.nlist)
    return 256  # PQ codebooks and the like
