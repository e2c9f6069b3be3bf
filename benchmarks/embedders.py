"""The model-free embedder of benchmarks about something else than the model (memory, layout):
the tests' ``HashingEmbedder`` (tests/doubles.py), importable from a benchmark's subprocess too."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from doubles import HashingEmbedder  # noqa: E402

__all__ = ["HashingEmbedder"]
