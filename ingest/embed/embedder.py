"""Embedding: normalised chunk text in, unit-length float32 vectors out.

Vectors are L2-normalised so that FAISS inner product is cosine similarity.
The sentence-transformers model is loaded from a local folder only, with the
hub switched off; torch is imported here and nowhere on the verify path.
A build feeds the embedder through a ``VectorQueue``: batches, each distinct
text embedded once, and the live generation's vectors reused.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from ingest.embed.model import ModelInfo, offline, resolve_model
from schemas.embedding import EmbedBackend
from schemas.errors import IndexFormatError, ModelError


class Embedder(Protocol):
    """Texts in, unit vectors out.

    An embedder that works elsewhere (Ray's actors) may also offer
    ``embed_later(texts) -> PendingVectors`` and say how many batches it keeps busy
    at once (``batches_ahead``): the queue then goes on while they are embedded.
    """

    model_id: str
    dim: int
    backend: str  # what runs the model (an EmbedBackend value, or a test double's own name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows of unit length."""
        ...


class PendingVectors(Protocol):
    def result(self) -> np.ndarray:
        """What ``embed`` would have returned, once it is there."""
        ...


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; CUDA when present, else CPU.

    >>> e = SentenceTransformerEmbedder()
    >>> e.embed(["overage is billed per call"]).shape
    (1, 384)
    """

    def __init__(
        self,
        model: ModelInfo | None = None,
        *,
        device: str | None = None,
        batch_size: int = 64,
    ) -> None:
        offline()
        self.info = model or resolve_model()
        self.model_id = self.info.model_id
        self.backend = EmbedBackend.TORCH
        self.batch_size = batch_size
        try:
            import transformers
            from sentence_transformers import SentenceTransformer

            transformers.logging.disable_progress_bar()  # the library is quiet; the CLI shows progress

            self._model = SentenceTransformer(
                str(self.info.path), device=device, local_files_only=True
            )
        except OSError as exc:  # missing weights, unreadable folder
            raise ModelError(f"cannot load the embedding model from {self.info.path}: {exc}") from exc
        dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self.device = str(self._model.device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


class VectorQueue:
    """Gives chunks their vector ids and writes their vectors in id order.

    A chunk whose normalised text is ``known`` (embed_sha256 -> row of
    ``known_vectors``: the live generation's) reuses that vector, one whose text
    is already queued shares its vector, and the rest are embedded in batches of
    ``batch``. ``write`` receives the vectors in vector_id order. An embedder that
    works elsewhere keeps ``batches_ahead`` batches in flight while chunks go on
    being queued; their vectors are written, in order, as they come back.
    """

    def __init__(
        self,
        embedder: Embedder,
        write: Callable[[np.ndarray], None],
        batch: int,
        known: dict[str, int] | None = None,
        known_vectors: np.ndarray | None = None,
        first_id: int = 0,
    ) -> None:
        self.embedder = embedder
        self.write = write
        self.batch = batch
        self.known = known if known is not None else {}  # the same dict: a build adds to it as documents come
        self.known_vectors = known_vectors
        self.next_id = first_id  # vector ids continue the index's sequence: they are never reused
        self.embedded = 0
        self.reused = 0
        self.seconds = 0.0
        self._slots: list[tuple[bool, int]] = []  # (known, known vector id | pending text index)
        self._texts: list[str] = []
        self._pending_keys: dict[str, int] = {}
        # Batches handed to the embedder, written in order: (from known, where, fresh vectors or pending).
        self._batches: collections.deque[tuple[np.ndarray, np.ndarray, object]] = collections.deque()
        self._ahead = int(getattr(embedder, "batches_ahead", 0))

    def assign(self, chunks: pa.Table, embed_texts: list[str] | None) -> pa.Table:
        """``chunks`` with vector ids from this generation's sequence, their vectors queued."""
        keys = chunks.column("embed_sha256").to_pylist()
        for i, key in enumerate(keys):
            if key in self.known:
                self._slots.append((True, self.known[key]))
                self.reused += 1
            elif key in self._pending_keys:
                self._slots.append((False, self._pending_keys[key]))
                self.reused += 1
            else:
                if embed_texts is None:
                    raise IndexFormatError(f"chunk {chunks.column('chunk_id')[i]} has no stored vector")
                self._pending_keys[key] = len(self._texts)
                self._slots.append((False, len(self._texts)))
                self._texts.append(embed_texts[i])
                self.embedded += 1
            # Within a document too: a document of 60,000 chunks is not embedded in one call.
            if len(self._texts) >= self.batch or len(self._slots) >= 16 * self.batch:
                self._hand_over()
                self._write_batches(keep=self._ahead)
        ids = pa.array(np.arange(self.next_id, self.next_id + len(keys), dtype=np.int64))
        self.next_id += len(keys)
        return chunks.set_column(chunks.schema.get_field_index("vector_id"), "vector_id", ids)

    def flush(self) -> None:
        """Embed what is queued and write every vector assigned so far."""
        self._hand_over()
        self._write_batches(keep=0)

    def _hand_over(self) -> None:
        if not self._slots:
            return
        started = time.perf_counter()
        later = getattr(self.embedder, "embed_later", None) if self._ahead else None
        if not self._texts:
            fresh = None
        else:
            fresh = later(self._texts) if later else self.embedder.embed(self._texts)
        self.seconds += time.perf_counter() - started
        from_known = np.fromiter((known for known, _ in self._slots), dtype=bool, count=len(self._slots))
        where = np.fromiter((i for _, i in self._slots), dtype=np.int64, count=len(self._slots))
        self._batches.append((from_known, where, fresh))
        self._slots, self._texts, self._pending_keys = [], [], {}

    def _write_batches(self, keep: int) -> None:
        while len(self._batches) > keep:
            from_known, where, fresh = self._batches.popleft()
            if fresh is not None and not isinstance(fresh, np.ndarray):
                started = time.perf_counter()
                fresh = fresh.result()
                self.seconds += time.perf_counter() - started
            out = np.empty((len(where), self.embedder.dim), dtype=np.float32)
            if from_known.any():
                out[from_known] = self.known_vectors[where[from_known]]
            if (~from_known).any():
                out[~from_known] = fresh[where[~from_known]]
            self.write(out)
