"""Search: the chunks that best match a query, with their exact spans.

Three modes (``schemas.records.SearchMode``): dense embeds the query the way chunks
were embedded and asks FAISS; lexical scores the chunks' BM25 postings
(``index.search.lexical``); hybrid fuses both rankings by their standardised scores, each
weighed by how far it can be trusted for the index's model and the query (``index.search.fusion``).

The default is lexical: on the held-out third of the labelled questions over
../shared/corpus (``benchmarks/retrieval.py``, 91 of 322 questions in 10 languages) BM25 put an
answering chunk in the top 5 for 90.1% of questions and scored MRR@10 0.792; hybrid 90.1% and
0.772 (no language below lexical at recall@5, English and Chinese below it at MRR@10), at 219 ms
a query against 0.6 ms on the shared 2-core machine, and the model loaded; dense (all-MiniLM-L6-v2, an English model)
56.0% and 0.427. A generation built before the lexical index searches dense by default.
"""

from __future__ import annotations

import numpy as np

from index.search.filtered import dense_ranked
from index.search.fusion import candidates, dense_weight, fuse
from ingest.embed import DEFAULT_MODEL_ID, Embedder, is_multilingual, resolve_model
from ingest.text import embed_text
from schemas.embedding import Device, EmbedBackend
from schemas.errors import ModelError, SpanindexError
from schemas.json_input import replace_surrogates
from schemas.records import Chunk, Manifest, SearchHit, SearchMode

DEFAULT_MODE = SearchMode.LEXICAL


def load_embedder(manifest: Manifest) -> Embedder:
    """The model that made this index's vectors (never downloaded: local folders only).

    An index built with any other embedder is searched with that embedder passed in
    (``index.open(DIR, embedder=...)``); see ``check_embedder``.
    """
    from ingest.embed import make_embedder

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
    if manifest.embed_backend not in set(EmbedBackend):
        raise ModelError(f"the index was built with the embedding backend {manifest.embed_backend!r}, unknown here")
    # Queries are embedded by the backend that embedded the chunks (int8 vectors are close to
    # fp32 ones, not equal); on a GPU where there is one.
    embedder = make_embedder(info, manifest.embed_backend, Device.AUTO)
    if embedder.dim != manifest.model_dim:
        raise ModelError(f"model dimension {embedder.dim}, index dimension {manifest.model_dim}")
    return embedder


def check_embedder(embedder: Embedder, manifest: Manifest) -> Embedder:
    """``embedder``, if it is the one that made this index's vectors (same id and dimension).

    (An injected embedder of another backend for the same model is accepted: a caller may
    search an onnx-built index with the torch model, whose vectors are the same.)"""
    if embedder.model_id != manifest.model_id or embedder.dim != manifest.model_dim:
        raise ModelError(
            f"the embedder is {embedder.model_id} ({embedder.dim}-d), "
            f"the index was built with {manifest.model_id} ({manifest.model_dim}-d)"
        )
    return embedder


def search(index, query: str, k: int = 5, mode: SearchMode | str | None = None,
           where: str | None = None) -> list[SearchHit]:
    """The ``k`` chunks that best match ``query`` in ``mode``, best first (see the module).

    ``where``: a filter on the documents (``index.search.filters``), applied before ranking:
    only chunks of the documents it keeps are ranked (``index.search.filtered``).

    A lone surrogate in the query (bytes that were not UTF-8 on a command line) is read as
    U+FFFD, as a UTF-8 decoder would: the model's tokenizer takes Unicode text only.
    """
    mode = search_mode(index, mode)
    query = replace_surrogates(query)
    allowed = index.allowed_vector_ids(where) if where is not None else None  # a bad filter fails before k is looked at
    if k <= 0 or index.n_chunks == 0 or (allowed is not None and len(allowed) == 0):
        return []
    if mode is SearchMode.DENSE:
        return dense_search(index, query, k, allowed)
    if mode is SearchMode.LEXICAL:
        return lexical_search(index, query, k, allowed)
    return hybrid_search(index, query, k, allowed)


def hybrid_search(index, query: str, k: int, allowed: np.ndarray | None = None) -> list[SearchHit]:
    """Both rankings fused, each weighed by how far it is trusted for this model and query
    (``index.search.fusion``)."""
    depth = candidates(k)
    weight = dense_weight(query, is_multilingual(index.manifest.model_id))
    lexical = lexical_search(index, query, depth, allowed)
    if weight == 0.0 and len(lexical) >= k:  # the dense ranking could only fill in below the k lexical hits
        return fuse([(lexical, 1.0)], k)
    return fuse([(lexical, 1.0 - weight), (dense_search(index, query, depth, allowed), weight)], k)


def search_mode(index, mode: SearchMode | str | None) -> SearchMode:
    """``mode`` as a SearchMode; None: the default, or dense where the generation has no lexical table."""
    if mode is None or mode == "":
        return DEFAULT_MODE if index.generation.has_lexical else SearchMode.DENSE
    try:
        return SearchMode(mode)
    except ValueError:
        raise SpanindexError(f"unknown search mode {mode!r}: dense, lexical or hybrid") from None


def dense_search(index, query: str, k: int, allowed: np.ndarray | None = None) -> list[SearchHit]:
    """The k chunks nearest to ``query`` by cosine similarity, best first (among ``allowed``
    vector ids where given)."""
    if k <= 0 or index.n_chunks == 0:
        return []
    vector = index.embedder().embed([embed_text(replace_surrogates(query))])
    depth = min(k + HIDDEN_MARGIN, index.n_chunks)
    # each segment's shard, searched as the manifest says (nprobe, efSearch), or the allowed vectors exactly
    scores, ids = dense_ranked(index.generation, np.ascontiguousarray(vector, dtype=np.float32), depth, allowed)
    ranked = [(float(score), int(vector_id)) for score, vector_id in zip(scores, ids) if vector_id >= 0]
    found, read = [], 0
    while len(found) < k and read < len(ranked):  # best first, as many as are still wanted at a time
        batch = ranked[read : read + k - len(found)]
        read += len(batch)
        for (score, _), chunk in zip(batch, index.chunks_at_vectors([vector_id for _, vector_id in batch])):
            if not _all_hidden(index, chunk):
                found.append((chunk, score))
    return [hit_of(chunk, rank, s) for rank, (chunk, s) in enumerate(found, start=1)]


# Chunks whose every character is hidden embed as the empty text, all to one vector: such a
# chunk matches nothing a reader could see, so dense search skips it (fetching a few more).
HIDDEN_MARGIN = 16


def _all_hidden(index, chunk: Chunk) -> bool:
    if not chunk.n_hidden:
        return False
    return not index.hidden_text(chunk.doc_id).visible_in(chunk.text, chunk.start).strip()


def lexical_search(index, query: str, k: int, allowed: np.ndarray | None = None) -> list[SearchHit]:
    """The k chunks with the highest BM25 score for ``query`` (chunks sharing no token are left
    out), among ``allowed`` vector ids where given."""
    if k <= 0 or index.n_chunks == 0:
        return []
    ids, scores = index.lexical().top(query, k, allowed)
    chunks = index.chunks_at_vectors(ids)
    return [hit_of(chunk, rank, s) for rank, (chunk, s) in enumerate(zip(chunks, scores), start=1)]


def hit_of(chunk: Chunk, rank: int, score: float) -> SearchHit:
    return SearchHit(
        rank=rank,
        score=float(score),
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        doc_version=chunk.doc_version,
        start=chunk.start,
        end=chunk.end,
        page_start=chunk.page_start,
        page_end=chunk.page_end,
        text=chunk.text,
        title=chunk.title,
        headings=chunk.headings,
    )

