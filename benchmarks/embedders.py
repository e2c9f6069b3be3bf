"""A model-free embedder for benchmarks about something else than the model (memory, layout)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np


class HashingEmbedder:
    """Deterministic bag-of-words vectors: the same shape and cost profile as nothing at all."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.backend = "bench"  # a double of its own: an index it built is rebuilt by a real backend
        self.model_id = f"bench:hashing-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
