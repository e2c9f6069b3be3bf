"""Embedding with ONNX Runtime: the packaged model exported to ONNX once, offline, and cached.

The export is the transformer with sentence-transformers' mean pooling and L2 normalisation
inside the graph, so one session call gives the unit vectors the torch backend gives (fp32:
equal to ~1e-6). ``onnx-int8`` is the same graph with its weights quantised to int8 by
ONNX Runtime's dynamic quantisation. Both files live in the user's cache folder, keyed by a
fingerprint of the model's files and the export recipe: a fresh machine remakes them from the
installed model (torch is needed for that once; nothing is downloaded), and a changed model
or recipe is a new folder.

Batches are sorted by token count and padded to their longest row: attention cost grows
with the padded length, so padding short chunks to a long one wastes most of a batch.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ingest.embed.model import ModelInfo, offline, resolve_model
from schemas.embedding import EmbedBackend
from schemas.errors import ModelError

EXPORT_VERSION = 3  # bump when the exported, fused or quantised graph would differ for the same model
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"


def cache_root() -> Path:
    """``$SPANINDEX_CACHE``, else ``$XDG_CACHE_HOME/spanindex``, else ``~/.cache/spanindex``."""
    if os.environ.get("SPANINDEX_CACHE"):
        return Path(os.environ["SPANINDEX_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "spanindex"


def model_fingerprint(info: ModelInfo) -> str:
    """A hash of every file of the model folder (names and bytes): which model was exported."""
    digest = hashlib.sha256()
    for path in sorted(p for p in info.path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(info.path).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def onnx_file(info: ModelInfo, backend: EmbedBackend) -> Path:
    """The ONNX file for ``backend``, exported (and quantised) on first use.

    >>> from ingest.embed.model import resolve_model
    >>> onnx_file(resolve_model(), EmbedBackend.ONNX).name   # doctest: +SKIP
    'model.onnx'
    """
    if backend is EmbedBackend.TORCH:
        raise ValueError("the torch backend has no ONNX file")
    folder = cache_root() / "onnx" / f"{model_fingerprint(info)}-export{EXPORT_VERSION}"
    plain = folder / "model-plain.onnx"  # the export as torch made it
    if not plain.is_file():
        _atomic(plain, lambda tmp: export_onnx(info, tmp))
    if backend is EmbedBackend.ONNX:
        fused = folder / "model.onnx"
        if not fused.is_file():
            _atomic(fused, lambda tmp: fuse_transformer(info, plain, tmp))
        return fused
    # int8 from the plain graph: the quantiser cannot type the fused graph's contrib ops
    int8 = folder / "model-int8.onnx"
    if not int8.is_file():
        _atomic(int8, lambda tmp: quantize_int8(plain, tmp))
    return int8


def _atomic(target: Path, make) -> None:
    """Make ``target`` under a temporary name and rename it: a reader never sees half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        make(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a cache is readable like any file
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def export_onnx(info: ModelInfo, out: Path) -> None:
    """Export the model with mean pooling and normalisation as one graph (opset 17).

    Batch and sequence axes are dynamic. The example input is padded (one row shorter
    than the other) so that the trace keeps the attention mask: an all-ones mask lets
    the attention code skip masking, and the exported graph would then ignore padding.
    """
    offline()
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ModelError(f"exporting the model to ONNX needs torch and transformers: {exc}") from exc
    try:
        import onnx  # noqa: F401 - the exporter needs it; say so here rather than deep inside torch
    except ImportError as exc:
        raise ModelError("the onnx backends need the `onnx` package: pip install 'spanindex[onnx]'") from exc

    transformer = AutoModel.from_pretrained(str(info.path), local_files_only=True, attn_implementation="eager")
    transformer.eval()

    class PooledModel(torch.nn.Module):
        """The transformer, then mean pooling over real tokens and L2 normalisation, as
        sentence-transformers' Pooling(mean) and Normalize modules compute them."""

        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            counts = torch.clamp(mask.sum(dim=1), min=1e-9)
            return torch.nn.functional.normalize((tokens * mask).sum(dim=1) / counts, p=2, dim=1)

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about Python booleans in the HF code
        torch.onnx.export(
            PooledModel(),
            (ids, mask, torch.zeros_like(ids)),
            str(out),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in INPUTS}, OUTPUT: {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


def fuse_transformer(info: ModelInfo, plain: Path, out: Path) -> None:
    """Fuse the BERT graph: attention into one Attention op, residual + LayerNorm into
    SkipLayerNormalization, bias + GELU into BiasGelu, the embeddings into one op.

    ONNX Runtime's own graph optimisations (applied when a session loads) leave attention
    as a dozen small ops; fused, the same fp32 network ran 1.5x as fast on 2 cores
    (benchmarks/embedding.py --why), with the same vectors.
    """
    import json
    import logging

    from onnxruntime.transformers.optimizer import optimize_model

    config = json.loads((info.path / "config.json").read_text())
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the optimiser reports what it fused through the root logger
    try:
        fused = optimize_model(
            str(plain), model_type="bert", num_heads=int(config["num_attention_heads"]),
            hidden_size=int(config["hidden_size"]),
        )
        fused.save_model_to_file(str(out))
    finally:
        root.setLevel(level)


def quantize_int8(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantisation of the MatMul weights (activations are quantised per batch)."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ModelError(f"int8 quantisation needs onnxruntime and onnx: {exc}") from exc
    import logging

    # Per-channel scales: one scale per output column kept cosine to fp32 at 0.988 mean / 0.958
    # worst on the shared corpus; one scale per matrix gave 0.89 / 0.70. Only the MatMul
    # weights are quantised (the embedding table and the attention products stay float).
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser logs advice through the root logger
    try:
        quantize_dynamic(
            str(fp32),
            str(out),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=_activation_matmuls(fp32),
        )
    finally:
        root.setLevel(level)


def _activation_matmuls(path: Path) -> list[str]:
    """MatMul nodes with no constant input (attention scores and their use): left in float."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    constant = {i.name for i in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    return [n.name for n in graph.node if n.op_type == "MatMul" and not any(i in constant for i in n.input)]


class OnnxEmbedder:
    """The model under ONNX Runtime; the same interface as ``SentenceTransformerEmbedder``.

    >>> e = OnnxEmbedder()                                 # doctest: +SKIP
    >>> e.embed(["overage is billed per call"]).shape      # doctest: +SKIP
    (1, 384)
    """

    def __init__(
        self,
        model: ModelInfo | None = None,
        *,
        backend: EmbedBackend = EmbedBackend.ONNX,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = None,
        spin: bool = True,
    ) -> None:
        offline()
        if backend is EmbedBackend.TORCH:
            raise ValueError("OnnxEmbedder runs the onnx backends; use SentenceTransformerEmbedder for torch")
        self.info = model or resolve_model()
        self.model_id = self.info.model_id
        self.backend = backend
        self.batch_size = batch_size
        self.max_tokens = self.info.max_seq_length
        self.onnx_path = onnx_file(self.info, backend)
        self._session, self.device = _session(self.onnx_path, device, threads, spin)
        self._tokenizer = _tokenizer(self.info)
        self.dim = int(self._session.get_outputs()[0].shape[-1] or self.embed(["dimension"]).shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit rows, in the order of ``texts``."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # sentence-transformers strips surrounding whitespace before tokenizing; so do we
        encodings = self._tokenizer.encode_batch([t.strip() for t in texts])
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for first in range(0, len(order), self.batch_size):
            rows = order[first : first + self.batch_size]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                ids[r, : lengths[i]] = encodings[i].ids
                mask[r, : lengths[i]] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[rows] = self._session.run([OUTPUT], feed)[0]
        return out


def _tokenizer(info: ModelInfo):
    """The model's fast tokenizer, truncating as sentence-transformers does (max_seq_length)."""
    from ingest.embed.model import load_tokenizer

    tokenizer = load_tokenizer(info)
    tokenizer.enable_truncation(max_length=info.max_seq_length)
    return tokenizer


def _session(path: Path, device: str, threads: int | None, spin: bool = True):
    """An inference session on ``device``; (session, device actually used)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = threads or _cpu_count()
    options.inter_op_num_threads = 1
    # Spinning pool threads answer at once (+30% on an idle machine) but take the cores that
    # other processes need: on a busy machine the same session ran 25% slower spinning. A
    # build whose parse workers share the cores does not spin (ingest.run.executors).
    spinning = "1" if spin else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spinning)
    options.add_session_config_entry("session.inter_op.allow_spinning", spinning)
    options.log_severity_level = 3  # errors only: the library is quiet
    available = ort.get_available_providers()
    if device in ("cuda", "auto") and "CUDAExecutionProvider" in available:
        providers, used = ["CUDAExecutionProvider", "CPUExecutionProvider"], "cuda"
    elif device == "cuda":
        raise ModelError(
            "--device cuda with an onnx backend needs onnxruntime-gpu (this onnxruntime offers "
            f"{', '.join(available)}); use --embed-backend torch with a CUDA torch"
        )
    else:
        providers, used = ["CPUExecutionProvider"], "cpu"
    try:
        return ort.InferenceSession(str(path), options, providers=providers), used
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own untyped errors
        raise ModelError(f"cannot load {path}: {exc}") from exc


def _cpu_count() -> int:
    """The cores this process may run on (the affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1
