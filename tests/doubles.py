"""Test doubles, injected where the real thing is not what a test is about.

The library never recognises them by name: an index built with
``HashingEmbedder`` is searched by passing one in
(``index.open(DIR, embedder=HashingEmbedder())``, ``create_app(DIR, embedder=...)``,
``index.cli.main(argv, embedder=...)``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np


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
