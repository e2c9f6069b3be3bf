"""The user's own metadata (NAME.meta.json sidecars, metadata.jsonl): stored with each document,
filtered on as meta['key'], never indexed as documents, and a change to it alone reindexes the
document's row without reading, parsing or embedding the document again."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import index
from index.fsck import fsck
from ingest.build import BuildSettings, build_index

from conftest import SAMPLE_CORPUS
from doubles import HashingEmbedder


class CountingEmbedder(HashingEmbedder):
    """The test embedder, keeping every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


QUERY = "overage price per API call status page"


@pytest.fixture()
def corpus(tmp_path):
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, root, ignore=shutil.ignore_patterns("bad"))
    (root / "pricing" / "rate-card.pdf.meta.json").write_text(json.dumps({"team": "sales", "year": 2024}))
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(line) for line in [
        {"doc_id": "web/faq.html", "fields": {"team": "support", "public": True}},
        {"doc_id": "pricing/rate-card.pdf", "fields": {"team": "finance", "region": "eu"}},
    ]) + "\n")
    return root


def _build(corpus, out, embedder=None):
    return build_index(corpus, out, BuildSettings(workers=1), embedder=embedder or HashingEmbedder())


def _open(out):
    return index.open(out, embedder=HashingEmbedder())


def test_metadata_is_stored_with_its_document_and_filtered_on(corpus, tmp_path):
    out = tmp_path / "index"
    report = _build(corpus, out)
    idx = _open(out)
    doc_ids = {d.doc_id for d in idx.documents()}
    assert not any(d.endswith((".meta.json", ".jsonl")) for d in doc_ids)  # sidecars are not documents
    assert not any(s.doc_id.endswith((".meta.json", ".jsonl")) for s in report.skipped)
    card = idx.document("pricing/rate-card.pdf")
    # the sidecar's fields win over metadata.jsonl's; the others stay
    assert json.loads(card.metadata) == {"team": "sales", "year": 2024, "region": "eu"}
    assert idx.document("docs/getting-started.md").metadata == "{}"
    assert idx.documents_where("meta['team'] = 'sales'") == ["pricing/rate-card.pdf"]
    assert idx.documents_where("meta['year'] >= 2024 AND meta['region'] = 'eu'") == ["pricing/rate-card.pdf"]
    assert idx.documents_where("meta['public']") == ["web/faq.html"]
    assert idx.documents_where("meta['year'] = '2024'") == []  # a number is not the text "2024"
    assert set(idx.documents_where("meta['team'] IS NULL")) == doc_ids - {"pricing/rate-card.pdf", "web/faq.html"}
    hits = idx.search(QUERY, k=5, mode="lexical", where="meta['team'] IN ('sales', 'support')")
    assert hits and {h.doc_id for h in hits} <= {"pricing/rate-card.pdf", "web/faq.html"}


@pytest.mark.parametrize("edit", ["sidecar", "metadata.jsonl", "sidecar removed"])
def test_a_metadata_change_alone_reindexes_the_row_and_embeds_nothing(corpus, tmp_path, edit):
    out = tmp_path / "index"
    _build(corpus, out)
    before = _open(out)
    old_chunks = before.chunks_of("pricing/rate-card.pdf")
    old_vectors = before.generation.live.vectors_of(np.array([c.vector_id for c in old_chunks]))
    old_hits = [(h.chunk_id, round(h.score, 5)) for h in before.search(QUERY, k=8, mode="dense")]
    if edit == "sidecar":
        (corpus / "pricing" / "rate-card.pdf.meta.json").write_text(json.dumps({"team": "legal", "year": 2025}))
    elif edit == "metadata.jsonl":
        (corpus / "metadata.jsonl").write_text(json.dumps({"doc_id": "web/faq.html", "fields": {"team": "legal"}}) + "\n")
    else:
        (corpus / "pricing" / "rate-card.pdf.meta.json").unlink()
    changed = "web/faq.html" if edit == "metadata.jsonl" else "pricing/rate-card.pdf"
    embedder = CountingEmbedder()
    report = _build(corpus, out, embedder)

    assert embedder.texts == [] and report.chunks_embedded == 0  # nothing embedded, for any document
    assert report.changed == 0 and report.added == 0
    assert report.metadata_changed == (2 if edit == "metadata.jsonl" else 1)  # (the .jsonl lost the card's line too)
    assert fsck(out) == []
    after = _open(out)
    expected = {"sidecar": ["pricing/rate-card.pdf"], "metadata.jsonl": ["web/faq.html"], "sidecar removed": []}[edit]
    assert after.documents_where("meta['team'] = 'legal'") == expected
    # the document itself is as it was: its chunks, their text and their vectors; only the ids are new
    new_chunks = after.chunks_of(changed)
    assert [(c.chunk_id, c.text, c.start, c.end) for c in new_chunks] == [
        (c.chunk_id, c.text, c.start, c.end) for c in before.chunks_of(changed)]
    if changed == "pricing/rate-card.pdf":
        assert np.array_equal(after.generation.live.vectors_of(np.array([c.vector_id for c in new_chunks])), old_vectors)
        assert [c.vector_id for c in new_chunks] != [c.vector_id for c in old_chunks]
    assert [(h.chunk_id, round(h.score, 5)) for h in after.search(QUERY, k=8, mode="dense")] == old_hits
    assert after.manifest.n_chunks == before.manifest.n_chunks
    lexical_before = before.search(QUERY, k=8, mode="lexical")
    assert [(h.chunk_id, round(h.score, 4)) for h in after.search(QUERY, k=8, mode="lexical")] == [
        (h.chunk_id, round(h.score, 4)) for h in lexical_before]


def test_a_content_and_metadata_change_together_is_a_change(corpus, tmp_path):
    out = tmp_path / "index"
    _build(corpus, out)
    notes = corpus / "docs" / "release-notes.txt"
    notes.write_text(notes.read_text(encoding="utf-8") + "\nVersion 4.3.0 adds filters.\n", encoding="utf-8")
    (corpus / "docs" / "release-notes.txt.meta.json").write_text('{"team": "eng"}')
    report = _build(corpus, out)
    assert report.changed == 1 and report.metadata_changed == 0
    assert _open(out).documents_where("meta['team'] = 'eng'") == ["docs/release-notes.txt"]


@pytest.mark.hostile("a sidecar that is not JSON, a list value, metadata of a file not in the corpus",
                     "handled: the build warns, names the file, and indexes the rest")
def test_bad_metadata_is_a_warning_and_the_build_goes_on(corpus, tmp_path):
    (corpus / "docs" / "getting-started.md.meta.json").write_text("{not json")
    (corpus / "docs" / "long-policy.md.meta.json").write_text('{"tags": ["a", "b"], "team": "ops"}')
    (corpus / "docs" / "gone.md.meta.json").write_text('{"team": "x"}')
    (corpus / "metadata.jsonl").write_text('{"doc_id": "web/faq.html"}\n[1]\n')
    out = tmp_path / "index"
    report = _build(corpus, out)
    text = "\n".join(report.warnings)
    assert "docs/getting-started.md.meta.json" in text and "'tags'" in text and "'docs/gone.md'" in text
    assert "metadata.jsonl line 1" in text and "metadata.jsonl line 2" in text
    idx = _open(out)
    assert idx.documents_where("meta['team'] = 'ops'") == ["docs/long-policy.md"]
    assert json.loads(idx.document("docs/long-policy.md").metadata) == {"team": "ops"}


def test_the_retrievers_carry_the_documents_own_fields(corpus, tmp_path):
    pytest.importorskip("langchain_core")
    from index.integrations.langchain import SpanindexRetriever

    out = tmp_path / "index"
    _build(corpus, out)
    documents = SpanindexRetriever(index=_open(out), k=3, mode="lexical", where="meta['team'] = 'sales'").invoke(QUERY)
    assert documents and all(d.metadata["team"] == "sales" and d.metadata["year"] == 2024 for d in documents)
    assert all(d.metadata["doc_id"] == "pricing/rate-card.pdf" for d in documents)
