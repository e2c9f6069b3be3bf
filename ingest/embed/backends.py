"""Which embedder a build or a search gets: backend (torch, onnx, onnx-int8) and device.

The vectors of an index all come from one backend (the manifest records it, and a build with
another one embeds everything again). The device only decides where the same network runs.
"""

from __future__ import annotations

from ingest.embed.model import ModelInfo, resolve_model
from schemas.embedding import Device, EmbedBackend
from schemas.errors import ModelError

# Texts per forward pass: on a CPU a larger batch only pads more; a GPU wants many rows at once.
BATCH_BY_DEVICE = {Device.CPU: 32, Device.CUDA: 256}


def resolve_device(device: Device | str = Device.AUTO) -> Device:
    """``auto`` is CUDA where torch sees a GPU, else the CPU; ``cuda`` without one is an error.

    >>> resolve_device("cpu")
    <Device.CPU: 'cpu'>
    """
    device = Device(device)
    if device is Device.CPU:
        return device
    cuda = _cuda_available()
    if device is Device.CUDA and not cuda:
        raise ModelError(
            "--device cuda: torch sees no CUDA device (the pinned torch is a CPU build; "
            "see the README to install a CUDA torch)"
        )
    return Device.CUDA if cuda else Device.CPU


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def make_embedder(
    model: ModelInfo | None = None,
    backend: EmbedBackend | str = EmbedBackend.TORCH,
    device: Device | str = Device.AUTO,
    batch_size: int | None = None,
    spin: bool = True,
):
    """The embedder for ``backend`` on ``device`` (batch size by device unless given).

    ``spin=False``: ONNX Runtime's threads sleep between operators rather than spin, for an
    embedder that shares the cores with other busy processes (a build's parse workers).

    >>> make_embedder(backend="onnx", device="cpu").backend        # doctest: +SKIP
    <EmbedBackend.ONNX: 'onnx'>
    """
    model = model or resolve_model()
    backend = EmbedBackend(backend)
    if backend is EmbedBackend.TORCH:
        from ingest.embed.embedder import SentenceTransformerEmbedder

        used = resolve_device(device)
        embedder = SentenceTransformerEmbedder(model, device=used.value, batch_size=batch_size or BATCH_BY_DEVICE[used])
    else:
        from ingest.embed.onnx_backend import OnnxEmbedder

        # ONNX Runtime runs on CUDA only with onnxruntime-gpu; OnnxEmbedder says so when asked.
        wanted = Device(device)
        embedder = OnnxEmbedder(model, backend=backend, device=wanted.value, batch_size=batch_size or 32, spin=spin)
    embedder.backend = backend
    return embedder
