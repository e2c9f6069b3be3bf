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
        self.backend = "test"  # a double of its own: an index it built is rebuilt by a real backend
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


def process_source_failing_on_marked_files(job, source: bytes):
    """``ingest.run.worker.process_source``, except on files named for a failure (for Ray's tasks).

    *crash*: the process dies, as a native crash inside a parser takes it down;
    *hang*: it never returns, as a parser stuck in a loop; *othernode*: the task
    refuses to work, as one on a node with another spanindex does.
    """
    import os
    import time

    from ingest.run.worker import process_source
    from schemas.errors import ClusterError

    if "crash" in job.doc_id:
        os._exit(139)
    if "hang" in job.doc_id:
        while True:
            time.sleep(1)
    if "othernode" in job.doc_id:
        raise ClusterError("node test-node runs another spanindex than the driver")
    return process_source(job, source)
