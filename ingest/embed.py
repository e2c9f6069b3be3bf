"""Embedding: normalised chunk text in, unit-length float32 vectors out.

Vectors are L2-normalised so that FAISS inner product is cosine similarity.
The sentence-transformers model is loaded from a local folder only, with the
hub switched off; torch is imported here and nowhere on the verify path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ingest.model import ModelInfo, offline, resolve_model
from schemas.errors import ModelError


class Embedder(Protocol):
    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows of unit length."""
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


class HashingEmbedder:
    """A tiny deterministic bag-of-words embedder for tests that are about something else.

    >>> HashingEmbedder(dim=8).embed(["a b", "a b"]).tolist()[0] == HashingEmbedder(dim=8).embed(["a b"]).tolist()[0]
    True
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.model_id = f"test:hashing-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
