"""Search: embed the query the way chunks were embedded, ask FAISS, return exact spans."""

from __future__ import annotations

import numpy as np

from ingest.chunker import embed_text
from ingest.embed import Embedder
from ingest.model import DEFAULT_MODEL_ID, resolve_model
from schemas.errors import ModelError
from schemas.records import Manifest, SearchHit

DEFAULT_NPROBE = 16


def load_embedder(manifest: Manifest) -> Embedder:
    """The model that made this index's vectors (never downloaded: local folders only).

    An index built with any other embedder is searched with that embedder passed in
    (``index.open(DIR, embedder=...)``); see ``check_embedder``.
    """
    from ingest.embed import SentenceTransformerEmbedder

    if manifest.model_id == DEFAULT_MODEL_ID:
        info = resolve_model()
    elif manifest.model_path:
        info = resolve_model(manifest.model_path)
        if info.model_id != manifest.model_id:
            raise ModelError(
                f"the model at {manifest.model_path} is now {info.model_id}, the index was built with {manifest.model_id}"
            )
    else:
        raise ModelError(
            f"cannot find the model {manifest.model_id} the index was built with"
            " (an index built with another embedder is opened with that embedder passed in)"
        )
    embedder = SentenceTransformerEmbedder(info)
    if embedder.dim != manifest.model_dim:
        raise ModelError(f"model dimension {embedder.dim}, index dimension {manifest.model_dim}")
    return embedder


def check_embedder(embedder: Embedder, manifest: Manifest) -> Embedder:
    """``embedder``, if it is the one that made this index's vectors (same id and dimension)."""
    if embedder.model_id != manifest.model_id or embedder.dim != manifest.model_dim:
        raise ModelError(
            f"the embedder is {embedder.model_id} ({embedder.dim}-d), "
            f"the index was built with {manifest.model_id} ({manifest.model_dim}-d)"
        )
    return embedder


def search(index, query: str, k: int = 5) -> list[SearchHit]:
    """The k chunks nearest to ``query`` by cosine similarity, best first."""
    if k <= 0 or index.n_chunks == 0:
        return []
    vector = index.embedder().embed([embed_text(query)])
    faiss_index = index.generation.faiss()
    _tune(faiss_index)
    scores, ids = faiss_index.search(np.ascontiguousarray(vector, dtype=np.float32), min(k, index.n_chunks))
    hits = []
    for score, vector_id in zip(scores[0], ids[0]):
        if vector_id < 0:
            continue
        chunk = index.chunk_at_vector(int(vector_id))
        hits.append(
            SearchHit(
                rank=len(hits) + 1,
                score=float(score),
                chunk_id=chunk.chunk_id,
                doc_id=chunk.doc_id,
                doc_version=chunk.doc_version,
                start=chunk.start,
                end=chunk.end,
                page_start=chunk.page_start,
                page_end=chunk.page_end,
                text=chunk.text,
            )
        )
    return hits


def _tune(faiss_index) -> None:
    import faiss

    ivf = faiss.try_extract_index_ivf(faiss_index)
    if ivf is not None and ivf.nprobe < DEFAULT_NPROBE:
        ivf.nprobe = min(ivf.nlist, DEFAULT_NPROBE)
