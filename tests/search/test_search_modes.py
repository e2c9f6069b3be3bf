"""Dense, lexical and hybrid search over one index: the lexical table is built with each
generation from exactly its chunks, read without the model, checked by fsck, and searched
the same way from Python, the command line, the API and the search page."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import index
from index.cli import main
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from ingest.store.lexical import ANALYSED_CHUNK_COLUMNS, chunk_analyses, lexical_metadata, lexical_table, lexical_tokens
from schemas.errors import ModelError, SpanindexError
from schemas.layout import LEXICAL_FILE, SEGMENT_MANIFEST
from schemas.records import SearchMode
from schemas.tables import with_metadata

from conftest import ROOT, SAMPLE_CORPUS
from doubles import HashingEmbedder

# One sentence per document of sample_corpus/ that appears in no other (as in test_search.py).
DISTINCTIVE = {
    "pricing/rate-card.pdf": "Growth plan overage is billed at $0.12 per 1,000 API calls.",
    "handbook/two-column.pdf": "Employees may work from any of the 14 approved countries for up to 45 days per calendar year without prior approval.",
    "web/faq.html": "The Northwind status page posts incident updates every 30 minutes until an incident is resolved.",
    "web/legacy-1252.html": "The reseller margin for Müller und Söhne GmbH is fixed at 18 percent until 31 December 2025.",
    "docs/getting-started.md": "Run nw init --region eu-central to create your first workspace in under two minutes.",
    "docs/release-notes.txt": "Version 4.2.0 was released on 12 March 2024 and raised the webhook retry limit from 5 to 8 attempts.",
}


def _open(index_dir):
    return index.open(index_dir, embedder=HashingEmbedder())


def _cli(*argv) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([str(a) for a in argv], embedder=HashingEmbedder())
    return code, out.getvalue()


@pytest.mark.parametrize("mode", list(SearchMode))
def test_every_mode_returns_exact_spans_best_first(sample_index_test_model, mode):
    idx = _open(sample_index_test_model)
    hits = idx.search("overage price per 1,000 API calls", k=7, mode=mode)
    assert 0 < len(hits) <= 7
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len({h.chunk_id for h in hits}) == len(hits)
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    for hit in hits:
        assert hit.text == idx.doc_text(hit.doc_version)[hit.start : hit.end]
        assert idx.chunk(hit.chunk_id).text == hit.text


@pytest.mark.parametrize("doc_id", sorted(DISTINCTIVE))
def test_a_sentence_finds_the_chunk_that_holds_it_first_lexically(sample_index_test_model, doc_id):
    """What a dense search missed in the issue: the chunk holding the exact sentence comes first."""
    sentence = DISTINCTIVE[doc_id]
    hits = _open(sample_index_test_model).search(sentence, k=5, mode="lexical")
    assert hits[0].doc_id == doc_id
    words = set(lexical_tokens(sentence))
    assert set(lexical_tokens(hits[0].text)) >= words  # every word of the sentence is in the first hit


def test_hybrid_holds_what_either_ranking_puts_first(sample_index_test_model):
    idx = _open(sample_index_test_model)
    for sentence in DISTINCTIVE.values():
        fused = [h.chunk_id for h in idx.search(sentence, k=5, mode="hybrid")]
        assert idx.search(sentence, k=1, mode="lexical")[0].chunk_id in fused
        assert idx.search(sentence, k=1, mode="dense")[0].chunk_id in fused


def test_the_default_is_lexical_and_loads_no_model(sample_index_test_model):
    idx = index.open(sample_index_test_model)  # no embedder: a dense search cannot run
    query = DISTINCTIVE["web/faq.html"]
    assert idx.search(query, k=3) == _open(sample_index_test_model).search(query, k=3, mode="lexical")
    assert idx._embedder is None
    with pytest.raises(ModelError):
        idx.search(query, k=3, mode="dense")
    with pytest.raises(SpanindexError, match="unknown search mode"):
        idx.search(query, k=3, mode="semantic")


def test_a_query_sharing_no_token_with_the_corpus_finds_nothing_lexically(sample_index_test_model):
    assert _open(sample_index_test_model).search("zzyzx qwxyz", k=5, mode="lexical") == []
    assert len(_open(sample_index_test_model).search("zzyzx qwxyz", k=5, mode="hybrid")) == 5  # dense fills in


def test_the_lexical_table_is_the_bm25_table_of_the_generations_chunks(sample_index_test_model):
    idx = _open(sample_index_test_model)
    [segment] = idx.generation.segments
    stored = segment.lexical_table()
    chunks = idx.generation.table("chunks", list(ANALYSED_CHUNK_COLUMNS))
    rebuilt = lexical_table(chunk_analyses(chunks.to_batches(), idx.generation.table("hidden_text")))
    for column in ("token", "vector_ids", "counts", "lengths"):
        assert stored.column(column).to_pylist() == rebuilt.column(column).to_pylist()
    recorded = json.loads((segment.dir / SEGMENT_MANIFEST).read_text())["table_sha256"]
    assert recorded[LEXICAL_FILE] == hashlib.sha256((segment.dir / LEXICAL_FILE).read_bytes()).hexdigest()
    assert fsck(sample_index_test_model) == []


def _copy_index(src, dst):
    shutil.copytree(src, dst)
    return dst


def _rewrite_lexical(index_dir, table) -> None:
    """Replace the live segment's lexical table (and its checksum, so only the content is wrong)."""
    generation = _open(index_dir).generation
    [segment] = generation.segments
    metadata = {**with_metadata("lexical", generation.manifest.model_id, generation.manifest.model_dim).metadata,
                **table.schema.metadata}
    pq.write_table(table.replace_schema_metadata(metadata), segment.dir / LEXICAL_FILE)
    recorded = json.loads((segment.dir / SEGMENT_MANIFEST).read_text())
    recorded["table_sha256"][LEXICAL_FILE] = hashlib.sha256((segment.dir / LEXICAL_FILE).read_bytes()).hexdigest()
    (segment.dir / SEGMENT_MANIFEST).write_text(json.dumps(recorded))


def test_fsck_finds_a_lexical_table_that_is_not_of_these_chunks(sample_index_test_model, tmp_path):
    index_dir = _copy_index(sample_index_test_model, tmp_path / "idx")
    texts = _open(index_dir).generation.table("chunks", ["text"]).column("text").to_pylist()
    texts[0] = texts[0] + " smuggled words"
    _rewrite_lexical(index_dir, lexical_table(texts))
    faults = [str(f) for f in fsck(index_dir)]
    assert any("lexical.parquet" in f and "differ" in f for f in faults), faults


def test_reindex_rebuilds_the_lexical_index_with_the_corpus(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    index_dir = tmp_path / "idx"
    settings = BuildSettings(workers=1)
    build_index(corpus, index_dir, settings, embedder=HashingEmbedder())
    first = _open(index_dir)
    first_lexical = (first.generation.segments[0].dir / LEXICAL_FILE).read_bytes()

    build_index(corpus, index_dir, settings, embedder=HashingEmbedder())  # nothing changed: the same segment serves
    same = _open(index_dir)
    assert same.generation.name != first.generation.name
    assert (same.generation.segments[0].dir / LEXICAL_FILE).read_bytes() == first_lexical
    rebuilt = tmp_path / "again"
    build_index(corpus, rebuilt, settings, embedder=HashingEmbedder())
    assert (_open(rebuilt).generation.segments[0].dir / LEXICAL_FILE).read_bytes() == first_lexical  # deterministic

    (corpus / "docs" / "zorblax.md").write_text("The zorblax valve is rated for 17 bar.\n", encoding="utf-8")
    build_index(corpus, index_dir, settings, embedder=HashingEmbedder())
    hits = _open(index_dir).search("zorblax valve rating", k=3, mode="lexical")
    assert hits and hits[0].doc_id == "docs/zorblax.md"

    (corpus / "docs" / "zorblax.md").unlink()
    build_index(corpus, index_dir, settings, embedder=HashingEmbedder())
    assert _open(index_dir).search("zorblax", k=3, mode="lexical") == []
    assert fsck(index_dir) == []


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_the_command_line_searches_in_each_mode(sample_index_test_model, mode):
    query = DISTINCTIVE["docs/release-notes.txt"]
    code, out = _cli("search", sample_index_test_model, query, "-k", 4, "--mode", mode, "--json")
    assert code == 0
    expected = _open(sample_index_test_model).search(query, k=4, mode=mode)
    assert json.loads(out) == json.loads(json.dumps([dataclasses.asdict(h) for h in expected]))  # headings: a list


def test_the_command_line_shows_the_section_each_hit_lies_in(sample_index_test_model):
    code, out = _cli("search", sample_index_test_model, "Plans at a glance overage", "-k", 3, "--mode", "lexical")
    hits = _open(sample_index_test_model).search("Plans at a glance overage", k=3, mode="lexical")
    assert code == 0 and any(h.headings for h in hits)
    for hit in hits:
        section = " > ".join(" ".join(line.split()) for line in (hit.title, *hit.headings) if line.strip())
        assert (f"   in: {section[:200]}\n" in out) == bool(section)


def test_the_command_line_refuses_an_unknown_mode(sample_index_test_model, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["search", str(sample_index_test_model), "q", "--mode", "semantic"])
    assert exit_info.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_the_api_and_the_search_page_take_a_mode(sample_index_test_model):
    from fastapi.testclient import TestClient

    from index.viewer.server.app import create_app

    client = TestClient(create_app(sample_index_test_model, embedder=HashingEmbedder()), base_url="http://127.0.0.1")
    query = DISTINCTIVE["pricing/rate-card.pdf"]
    for mode in ("dense", "lexical", "hybrid"):
        body = client.get("/api/search", params={"q": query, "k": 3, "mode": mode}).json()
        assert body["mode"] == mode
        expected = _open(sample_index_test_model).search(query, k=3, mode=mode)
        assert [h["chunk_id"] for h in body["hits"]] == [h.chunk_id for h in expected]
    assert client.get("/api/search", params={"q": query}).json()["mode"] == "lexical"
    assert client.get("/api/search", params={"q": query, "mode": "semantic"}).status_code == 422
    schema = client.get("/openapi.json").json()
    parameters = {p["name"] for p in schema["paths"]["/api/search"]["get"]["parameters"]}
    assert "mode" in parameters
    page = client.get("/", params={"q": query, "mode": "hybrid"}).text
    assert '<option value="hybrid" selected>' in page and "(hybrid)" in page


def test_lexical_metadata_counts_the_chunks():
    table = lexical_table(["a b", "b c", ""])
    assert json.loads(table.schema.metadata[b"spanindex.lexical"])["n_chunks"] == 3
    assert json.loads(table.schema.metadata[b"spanindex.lexical"])["n_tokens"] == 4
    assert json.loads(lexical_metadata(3, 4)[b"spanindex.lexical"]) == json.loads(table.schema.metadata[b"spanindex.lexical"])


@pytest.mark.spawns
def test_a_lexical_search_loads_neither_torch_nor_the_model(sample_index_test_model):
    code = (
        "import sys, index; hits = index.open(sys.argv[1]).search('status page incident updates', k=3); "
        "assert hits; print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(sample_index_test_model)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_hybrid_answers_a_query_the_model_cannot_read_by_lexical_alone_without_the_model(tmp_path):
    """The index's model (here a test double, taken for English) reads no Cyrillic: hybrid search
    weighs its ranking 0 for a Russian query, so where BM25 finds k chunks the model is not loaded."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "ru.md").write_text(
        "# Аэропорт\n\nВ прошлом году аэропорт перевёз двенадцать миллионов пассажиров.\n\n"
        "# Вокзал\n\nНа вокзале работают четыре кассы и буфет.\n", encoding="utf-8")
    (corpus / "en.md").write_text("# Airport\n\nThe airport carried twelve million passengers last year.\n",
                                  encoding="utf-8")
    build_index(corpus, tmp_path / "idx", BuildSettings(workers=1), embedder=HashingEmbedder())
    idx = index.open(tmp_path / "idx")  # no embedder: a dense search would raise ModelError
    query = "Сколько пассажиров перевёз аэропорт?"
    [hit] = idx.search(query, k=1, mode="hybrid")
    assert hit.doc_id == "ru.md" and hit.chunk_id == idx.search(query, k=1, mode="lexical")[0].chunk_id
    assert idx._embedder is None
    with pytest.raises(ModelError):
        idx.search("How many passengers did the airport carry?", k=1, mode="hybrid")  # dense weighed: the model is needed


def test_hybrid_trusts_a_multilingual_models_ranking_for_a_query_in_any_script(tmp_path):
    """The manifest's model id names a multilingual model: the Russian query's dense ranking
    counts as much as for an English one (the same index under an English id counts it 0)."""
    from index.search.fusion import DENSE_WEIGHT, candidates, fuse

    class MultilingualDouble(HashingEmbedder):
        model_id = "local:paraphrase-multilingual-double@000000000000"

        def __init__(self) -> None:
            super().__init__()
            self.model_id = MultilingualDouble.model_id

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    texts = ["Аэропорт перевёз двенадцать миллионов пассажиров.", "Сколько стоит билет? Вокзал открыт.",
             "Аэропорт закрыт на ремонт.", "Сколько пассажиров? Погода хорошая, аэропорт открыт, вокзал закрыт."]
    for n, text in enumerate(texts):
        (corpus / f"ru{n}.md").write_text(text + "\n", encoding="utf-8")
    build_index(corpus, tmp_path / "idx", BuildSettings(workers=1), embedder=MultilingualDouble())
    idx = index.open(tmp_path / "idx", embedder=MultilingualDouble())
    query = "Сколько пассажиров перевёз аэропорт?"
    depth = candidates(3)
    lexical, dense = idx.search(query, k=depth, mode="lexical"), idx.search(query, k=depth, mode="dense")
    expected = fuse([(lexical, 1 - DENSE_WEIGHT), (dense, DENSE_WEIGHT)], 3)
    assert [h.chunk_id for h in idx.search(query, k=3, mode="hybrid")] == [h.chunk_id for h in expected]
    assert [h.score for h in idx.search(query, k=3, mode="hybrid")] == [h.score for h in expected]
    assert [h.score for h in expected] != [h.score for h in fuse([(lexical, 1.0), (dense, 0.0)], 3)]
