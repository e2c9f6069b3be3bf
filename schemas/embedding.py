"""How vectors were made: the closed vocabularies a manifest records about its embedder."""

from __future__ import annotations

from enum import StrEnum


class EmbedBackend(StrEnum):
    """What runs the model. Vectors of two backends are never mixed in one index.

    ``onnx`` is the same network exported to ONNX and run by ONNX Runtime (fp32: the same
    vectors to ~1e-6); ``onnx-int8`` its weights quantised to int8 (close, not equal).
    """

    TORCH = "torch"
    ONNX = "onnx"
    ONNX_INT8 = "onnx-int8"


class Device(StrEnum):
    """Where the model runs; ``auto`` is CUDA when torch sees a GPU, else the CPU."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"
