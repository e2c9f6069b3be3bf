"""The ONNX backends: the same model, exported offline once, giving the torch backend's vectors."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SAMPLE_CORPUS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chunk_texts(tokenizer):
    from ingest.text.chunker import chunk_spans
    from schemas.records import ChunkerSettings

    texts = []
    for path in sorted(SAMPLE_CORPUS.rglob("*.md")) + sorted(SAMPLE_CORPUS.rglob("*.txt")):
        text = path.read_text(encoding="utf-8")
        texts += [s.embed_text for s in chunk_spans(text, tokenizer, ChunkerSettings())]
    assert len(texts) > 10
    # a short one, a query-like one and an empty-ish one beside the full chunks: padding is exercised
    return texts + ["overage", "How much is Growth plan overage per 1,000 API calls?", "  x  "]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    """A fresh cache folder: the export happens here, from the installed model, offline."""
    folder = tmp_path_factory.mktemp("spanindex-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("SPANINDEX_CACHE", str(folder))
    yield folder
    patch.undo()


def test_onnx_fp32_gives_the_torch_vectors(real_embedder, chunk_texts, onnx_cache):
    from ingest.embed.onnx_backend import OnnxEmbedder

    onnx = OnnxEmbedder(batch_size=4)  # several batches of different widths
    assert onnx.model_id == real_embedder.model_id and onnx.dim == real_embedder.dim
    torch_vectors = real_embedder.embed(chunk_texts)
    onnx_vectors = onnx.embed(chunk_texts)
    assert onnx_vectors.dtype == np.float32 and onnx_vectors.shape == torch_vectors.shape
    np.testing.assert_allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, atol=1e-5)
    assert float((onnx_vectors * torch_vectors).sum(axis=1).min()) > 0.99999
    # the order of the input is the order of the output, whatever the batches were
    np.testing.assert_allclose(onnx.embed(chunk_texts[::-1])[::-1], onnx_vectors, atol=1e-5)


def test_the_export_is_made_once_and_kept_in_the_cache(onnx_cache):
    from ingest.embed.model import resolve_model
    from ingest.embed.onnx_backend import onnx_file
    from schemas.embedding import EmbedBackend

    path = onnx_file(resolve_model(), EmbedBackend.ONNX)
    assert onnx_cache in path.parents
    made = path.stat().st_mtime_ns
    assert onnx_file(resolve_model(), EmbedBackend.ONNX) == path and path.stat().st_mtime_ns == made
    assert not list(path.parent.glob(".*.tmp"))  # nothing half-written left behind


def test_int8_vectors_stay_close_to_torch(real_embedder, chunk_texts, onnx_cache):
    from ingest.embed.onnx_backend import OnnxEmbedder
    from schemas.embedding import EmbedBackend

    int8 = OnnxEmbedder(backend=EmbedBackend.ONNX_INT8)
    assert int8.onnx_path.name == "model-int8.onnx"
    cosine = (int8.embed(chunk_texts) * real_embedder.embed(chunk_texts)).sum(axis=1)
    assert cosine.mean() > 0.97 and cosine.min() > 0.9


def test_a_local_build_with_parse_workers_runs_onnx_without_spinning(onnx_cache):
    """Beside parse workers the model's threads sleep between operators instead of spinning on
    the cores the workers need; a build that parses in its own process lets them spin."""
    from ingest.embed.model import resolve_model
    from ingest.run.executors import LocalExecutor
    from schemas.embedding import EmbedBackend

    def spinning(workers: int) -> str:
        with LocalExecutor(workers).embedding(resolve_model(), None, EmbedBackend.ONNX) as embedder:
            options = embedder._session.get_session_options()
            return options.get_session_config_entry("session.intra_op.allow_spinning")

    assert spinning(2) == "0"
    assert spinning(1) == "1"
