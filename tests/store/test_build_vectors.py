"""What a build records about its vectors and how a reindex treats them: the embedding backend
(recorded, enforced: never two backends in one index), the vector index `auto` chooses, its
search parameters as a reader opens it, and an inverted file updated in place on reindex."""

from __future__ import annotations

import dataclasses
import json
import shutil

import faiss
import numpy as np
import pytest

import index
from index.fsck import fsck
from ingest.store import faiss_index
from ingest.build import BuildSettings, build_index
from schemas.layout import MANIFEST, IndexPaths, read_current
from schemas.manifest import read_manifest

from conftest import SAMPLE_CORPUS
from doubles import HashingEmbedder


class OtherBackend(HashingEmbedder):
    """The same model (id, dimension, vectors) run by another backend."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.backend = "test-other"


def _build(corpus, idx_dir, embedder=None, **settings):
    return build_index(corpus, idx_dir, BuildSettings(workers=1, **settings), embedder=embedder or HashingEmbedder())


def _manifest(idx_dir):
    paths = IndexPaths(idx_dir)
    return read_manifest(paths.generation(read_current(paths)))


def test_the_backend_is_recorded_and_a_change_of_backend_embeds_everything_again(tmp_path):
    idx_dir = tmp_path / "idx"
    first = _build(SAMPLE_CORPUS, idx_dir)
    assert _manifest(idx_dir).embed_backend == "test"
    same = _build(SAMPLE_CORPUS, idx_dir)
    assert same.chunks_embedded == 0 and same.unchanged == first.n_files
    other = _build(SAMPLE_CORPUS, idx_dir, OtherBackend())
    assert "embedding backend" in other.full_reason
    assert other.unchanged == 0 and other.chunks_reused == 0 and other.chunks_embedded > 0
    assert other.chunks_embedded + other.chunks_reused == other.chunks  # reused: only texts repeated in this build
    assert _manifest(idx_dir).embed_backend == "test-other"


def test_an_index_older_than_the_backend_field_reads_as_torch(tmp_path):
    idx_dir = tmp_path / "idx"
    _build(SAMPLE_CORPUS, idx_dir)
    paths = IndexPaths(idx_dir)
    manifest_path = paths.generation(read_current(paths)) / MANIFEST
    raw = json.loads(manifest_path.read_text())
    for field in ("embed_backend", "embed_device", "ann"):
        del raw[field]
    manifest_path.write_text(json.dumps(raw))
    old = _manifest(idx_dir)
    assert old.embed_backend == "torch" and old.ann is None


def test_auto_is_flat_for_a_small_corpus_and_an_inverted_file_above_the_threshold(tmp_path, monkeypatch):
    small = _build(SAMPLE_CORPUS, tmp_path / "small")
    assert small.ann_factory == "Flat" and _manifest(tmp_path / "small").ann.factory == "Flat"
    monkeypatch.setattr(faiss_index, "FLAT_MAX_VECTORS", 50)
    large = _build(SAMPLE_CORPUS, tmp_path / "large")
    ann = _manifest(tmp_path / "large").ann
    assert large.chunks > 64
    assert ann.factory == "IVF64,SQ8" and ann.nprobe == 16 and ann.trained_on == large.chunks
    assert ann.requested == "auto"
    assert fsck(tmp_path / "large") == []


def test_search_parameters_are_the_manifests_when_an_index_is_opened(tmp_path, monkeypatch):
    idx_dir = tmp_path / "idx"
    monkeypatch.setattr(faiss_index, "FLAT_MAX_VECTORS", 50)
    _build(SAMPLE_CORPUS, idx_dir)
    paths = IndexPaths(idx_dir)
    manifest_path = paths.generation(read_current(paths)) / MANIFEST
    raw = json.loads(manifest_path.read_text())
    raw["ann"]["nprobe"] = 3  # FAISS wrote 16 into its own file: the manifest must win
    manifest_path.write_text(json.dumps(raw))
    opened = index.open(idx_dir, embedder=HashingEmbedder())
    assert {faiss_index.search_params_of(shard) for shard, _, _ in opened.generation.faiss().shards} == {(3, 0)}
    assert opened.search("overage price per 1,000 API calls", k=3)

    hnsw_dir = tmp_path / "hnsw"
    _build(SAMPLE_CORPUS, hnsw_dir, faiss_factory="HNSW16")
    assert _manifest(hnsw_dir).ann.ef_search == faiss_index.DEFAULT_EF_SEARCH
    reopened = index.open(hnsw_dir, embedder=HashingEmbedder())
    assert {faiss_index.search_params_of(shard) for shard, _, _ in reopened.generation.faiss().shards} == {
        (0, faiss_index.DEFAULT_EF_SEARCH)}


def test_a_reindex_writes_the_new_segments_shard_only_with_the_hits_of_a_rebuild(tmp_path, monkeypatch):
    monkeypatch.setattr(faiss_index, "FLAT_MAX_VECTORS", 50)
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    first = _build(corpus, idx_dir)
    before = _manifest(idx_dir).ann
    paths = IndexPaths(idx_dir)
    [old_shard] = [p for p in (paths.ann / before.template).glob("*.faiss") if p.name != "template.faiss"]
    stamp = old_shard.stat().st_mtime_ns
    policy = corpus / "docs" / "long-policy.md"
    policy.write_text(policy.read_text().replace("Security Council", "Security Board") + "\n\nA closing paragraph.\n")
    (corpus / "web" / "no-charset.html").unlink()
    second = _build(corpus, idx_dir)
    assert second.changed == 1 and second.removed == 1 and second.chunks_embedded > 0
    assert second.ann_updated, second.ann_reason
    after = _manifest(idx_dir).ann
    assert after.factory == before.factory and after.trained_on == first.chunks and after.template == before.template
    assert after.added_since_training == second.chunks_embedded
    assert old_shard.stat().st_mtime_ns == stamp  # the old segment's shard is never written again
    template = faiss.read_index(str(paths.ann_template(after.template)))
    quantizer = faiss.extract_index_ivf(template).quantizer
    [new_shard] = [p for p in (paths.ann / after.template).glob("*.faiss") if p not in (old_shard, paths.ann_template(after.template))]
    assert new_shard.stat().st_size < quantizer.ntotal * quantizer.d * 4  # its lists, not a copy of the quantizer
    assert fsck(idx_dir) == []

    opened = index.open(idx_dir, embedder=HashingEmbedder())
    shards = opened.generation.faiss()
    assert len(shards.shards) == 2 and shards.ntotal == opened.n_chunks
    ids, vectors = opened.generation.vectors()
    rebuilt = faiss.read_index(str(paths.ann_template(after.template)))  # the same trained quantizer
    rebuilt.add_with_ids(np.ascontiguousarray(vectors), ids)  # only the live vectors
    row_of = {v: i for i, v in enumerate(ids.tolist())}
    changed = [row_of[c.vector_id] for c in opened.chunks_of("docs/long-policy.md")]
    for nprobe in (after.nprobe, 64):
        shards.tune(dataclasses.replace(after, nprobe=nprobe))
        faiss.extract_index_ivf(rebuilt).nprobe = nprobe
        got_scores, got = shards.search(vectors[changed], 5)
        want_scores, want = rebuilt.search(vectors[changed], 5)
        np.testing.assert_allclose(got_scores, want_scores, atol=1e-5)
        assert [set(g) for g in got] == [set(w) for w in want]
    # and each changed chunk is found under its own id
    _, top = shards.search(vectors[changed], 1)
    assert np.mean(top[:, 0] == ids[changed]) > 0.9


def test_a_full_build_or_another_factory_builds_the_vector_index_anew(tmp_path, monkeypatch):
    monkeypatch.setattr(faiss_index, "FLAT_MAX_VECTORS", 50)
    idx_dir = tmp_path / "idx"
    _build(SAMPLE_CORPUS, idx_dir)
    again = _build(SAMPLE_CORPUS, idx_dir, full=True)
    assert not again.ann_updated
    other = _build(SAMPLE_CORPUS, idx_dir, faiss_factory="IVF64,Flat")
    assert not other.ann_updated and "changes" in other.ann_reason
    ann = _manifest(idx_dir).ann
    assert (ann.factory, ann.requested, ann.nprobe) == ("IVF64,Flat", "IVF64,Flat", 16)


@pytest.mark.slow
def test_an_onnx_index_is_searched_with_the_onnx_backend(tmp_path):
    from ingest.embed.onnx_backend import OnnxEmbedder
    from schemas.embedding import EmbedBackend

    idx_dir = tmp_path / "idx"
    build_index(SAMPLE_CORPUS, idx_dir, BuildSettings(workers=1, embed_backend=EmbedBackend.ONNX))
    manifest = _manifest(idx_dir)
    assert manifest.embed_backend == "onnx" and manifest.embed_device == "cpu"
    opened = index.open(idx_dir)
    hits = opened.search("How much is Growth plan overage per 1,000 API calls?", k=3)
    assert isinstance(opened.embedder(), OnnxEmbedder) and opened.embedder().backend is EmbedBackend.ONNX
    assert hits[0].doc_id == "pricing/rate-card.pdf"
