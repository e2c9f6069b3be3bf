"""Building an index: bad input carried, the batch resilient, the CLI honest about failures."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import index
from ingest.build import BuildSettings, build_index
from ingest.corpus import discover
from ingest.store.lock import BuildLock
from ingest.embed.model import resolve_model
from ingest.run.pool import process_in_workers
from ingest.run.worker import FileJob, WorkerSettings, process_file
from schemas.errors import IndexLockedError, ModelError, SpanindexError
from schemas.records import ChunkerSettings, DocStatus, MediaType, SkipReason
from schemas.tables import FORMAT_VERSION

from conftest import SAMPLE_CORPUS, WAIT_S, spanindex
from doubles import HashingEmbedder


def crash_on_marked_files(job: FileJob):
    """A worker function that dies like a native crash on files named *crash*."""
    if "crash" in job.doc_id:
        os._exit(139)
    return process_file(job)


def hang_on_marked_files(job: FileJob):
    """A worker function that never returns on files named *hang*, like a parser in a loop."""
    if "hang" in job.doc_id:
        while True:
            time.sleep(1)
    return process_file(job)


def _small_corpus(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\n\nAlpha sentence about invoices and their due dates.\n")
    (root / "sub" / "b.txt").write_bytes(b"Beta text\r\nwith CRLF line endings and a caf\xc3\xa9.\r\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "notes.xyz").write_bytes(b"unknown")
    (root / ".hidden.md").write_text("never indexed")
    shutil.copy(SAMPLE_CORPUS / "bad" / "encrypted.pdf", root / "locked.pdf")
    return root


def test_discover_sorts_skips_hidden_and_counts_unknown_types(tmp_path):
    found = discover(_small_corpus(tmp_path / "c"))
    assert [f.doc_id for f in found.files] == ["a.md", "empty.txt", "locked.pdf", "sub/b.txt"]
    assert [(s.doc_id, s.reason) for s in found.skipped] == [("notes.xyz", SkipReason.UNKNOWN_TYPE)]


@pytest.mark.hostile('a file whose parser crashes its worker process (a native crash)', "error row: 'the parser crashed on this file'; the other files are indexed")
@pytest.mark.spawns
def test_a_worker_that_dies_becomes_an_error_row_and_the_batch_carries_on(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    names = ["a.md", "b-crash.md", "c.md", "d.md", "e.md"]
    for name in names:
        (corpus / name).write_text(f"Document {name} has some text.")
    settings = WorkerSettings(resolve_model(), ChunkerSettings(), tmp_path / "idx", 1 << 20)
    jobs = [FileJob(corpus / n, n, MediaType.MARKDOWN, None) for n in names]
    results = list(process_in_workers(jobs, settings, 2, work=crash_on_marked_files))
    assert [r.doc_id for r in results] == names
    statuses = {r.doc_id: r.record.status for r in results}
    assert statuses.pop("b-crash.md") is DocStatus.ERROR
    assert set(statuses.values()) == {DocStatus.OK}
    assert "crashed" in results[1].record.error
    # Each worker reports its own peak memory, not the one a spawned process inherits from its parent.
    assert all(0 < r.peak_rss_kb < 4 * 1024 * 1024 for r in results if r.doc_id != "b-crash.md")


@pytest.mark.hostile('a file whose parser never returns', "error row: 'parsing did not finish within N s (--doc-timeout)'; the other files are indexed")
@pytest.mark.spawns
def test_a_file_that_parses_forever_times_out_into_an_error_row_and_the_batch_carries_on(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    names = ["a.md", "b-hang.md", "c.md", "d-hang.md", "e.md", "f.md"]
    for name in names:
        (corpus / name).write_text(f"Document {name} has some text.")
    settings = WorkerSettings(resolve_model(), ChunkerSettings(), tmp_path / "idx", 1 << 20)
    jobs = [FileJob(corpus / n, n, MediaType.MARKDOWN, None) for n in names]
    results = []
    # In a thread, so that a regression fails this test instead of hanging the suite.
    runner = threading.Thread(
        target=lambda: results.extend(process_in_workers(jobs, settings, 2, work=hang_on_marked_files, timeout_s=10)),
        daemon=True,
    )
    runner.start()
    runner.join(timeout=WAIT_S)
    assert not runner.is_alive(), "the batch hung on a file that never finishes"
    assert [r.doc_id for r in results] == names
    statuses = {r.doc_id: r.record.status for r in results}
    assert statuses["b-hang.md"] is statuses["d-hang.md"] is DocStatus.ERROR
    assert "did not finish within 10 s" in results[1].record.error
    assert {statuses[n] for n in names if "hang" not in n} == {DocStatus.OK}


def test_an_index_built_with_another_embedder_is_searched_only_with_that_embedder_passed_in(tmp_path):
    build_index(_small_corpus(tmp_path / "c"), tmp_path / "idx", BuildSettings(workers=1), embedder=HashingEmbedder())
    with pytest.raises(ModelError, match="test:hashing-64"):
        index.open(tmp_path / "idx").search("invoices", k=1, mode="dense")  # the library knows no test double by name
    with pytest.raises(ModelError, match="the index was built with test:hashing-64"):
        index.open(tmp_path / "idx", embedder=HashingEmbedder(dim=32))
    [hit] = index.open(tmp_path / "idx", embedder=HashingEmbedder()).search("invoices due dates", k=1)
    assert hit.doc_id == "a.md"


def test_rebuilding_an_unchanged_corpus_parses_nothing_and_gives_identical_rows(tmp_path):
    corpus = _small_corpus(tmp_path / "c")
    idx_dir = tmp_path / "idx"
    first = build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    gen1 = index.open(idx_dir).generation
    second = build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    gen2 = index.open(idx_dir).generation
    assert first.added == 4 and second.unchanged == 4
    assert second.parse_seconds == 0 and second.chunks_embedded == 0 and second.chunks_reused == first.chunks
    for table in ("documents", "chunks", "pdf_chars", "pdf_pages", "html_map"):
        assert gen1.table(table).equals(gen2.table(table)), table
    assert gen2.manifest.segments == gen1.manifest.segments  # nothing written again: the same segment serves
    assert all((a == b).all() for a, b in zip(gen1.vectors(), gen2.vectors()))
    assert gen1.faiss().ntotal == gen2.faiss().ntotal == first.chunks
    assert gen2.manifest.ann == gen1.manifest.ann  # the same template and shard serve


def test_faiss_factories_train_fall_back_or_are_refused_up_front(tmp_path):
    corpus = _small_corpus(tmp_path / "c")
    (corpus / "long.md").write_text("\n\n".join(f"Paragraph {i} about topic {i % 7}." * 30 for i in range(40)))
    ivf = build_index(corpus, tmp_path / "ivf", BuildSettings(workers=1, faiss_factory="IVF4,Flat"), embedder=HashingEmbedder())
    idx = index.open(tmp_path / "ivf", embedder=HashingEmbedder())
    assert idx.manifest.faiss_factory == "IVF4,Flat" and idx.generation.faiss().ntotal == ivf.chunks
    assert idx.search("topic 3", k=3)
    small = build_index(corpus, tmp_path / "pq", BuildSettings(workers=1, faiss_factory="IVF1024,PQ16"), embedder=HashingEmbedder())
    assert index.open(tmp_path / "pq").manifest.faiss_factory == "Flat"
    assert any("too few to train" in w for w in small.warnings)
    with pytest.raises(SpanindexError, match="faiss-factory"):
        build_index(corpus, tmp_path / "bad", BuildSettings(workers=1, faiss_factory="IVF4,PQ48"), embedder=HashingEmbedder())


def test_a_second_build_on_a_locked_index_is_refused_naming_the_holder(tmp_path):
    corpus = _small_corpus(tmp_path / "c")
    idx_dir = tmp_path / "idx"
    idx_dir.mkdir()
    with BuildLock(idx_dir / "LOCK"):
        with pytest.raises(IndexLockedError, match=f"pid {os.getpid()}"):
            build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())  # free again


def test_tables_carry_their_name_version_and_model(sample_index_test_model):
    gen = index.open(sample_index_test_model).generation
    for name in ("documents", "chunks", "pdf_chars", "pdf_pages", "html_map"):
        meta = pq.read_schema(gen.segments[0].dir / f"{name}.parquet").metadata
        assert meta[b"spanindex.table"] == name.encode()
        assert meta[b"spanindex.format_version"] == str(FORMAT_VERSION).encode()
        assert meta[b"spanindex.model_id"] == b"test:hashing-64"
        assert meta[b"spanindex.model_dim"] == b"64"


def test_chunk_rows_are_in_vector_id_order(sample_index_test_model):
    idx = index.open(sample_index_test_model)
    ids = idx.generation.table("chunks", ["vector_id"]).column("vector_id").to_pylist()
    assert ids == list(range(len(ids)))
    assert idx.generation.faiss().ntotal == len(ids) == idx.manifest.n_chunks


@pytest.mark.hostile("a corpus with an empty file, a password-protected PDF and a file of unknown type", "error row: each listed with its reason by `spanindex build`, exit 0 (1 with --strict); the unknown type skipped and named")
@pytest.mark.slow
def test_build_cli_lists_every_failure_exits_zero_and_strict_exits_one(tmp_path):
    corpus = _small_corpus(tmp_path / "c")
    run = spanindex("build", str(corpus), "--index", str(tmp_path / "idx"), "--quiet")
    assert run.returncode == 0, run.stderr
    assert "empty.txt" in run.stdout and "locked.pdf" in run.stdout and "password" in run.stdout
    assert "skipped 1 file(s) of unknown type: notes.xyz" in run.stdout
    strict = spanindex("build", str(corpus), "--index", str(tmp_path / "idx"), "--quiet", "--strict")
    assert strict.returncode == 1
    assert "4 unchanged" in strict.stdout

    stats = spanindex("stats", str(tmp_path / "idx"))
    assert "documents: 4" in stats.stdout and "error: 1" in stats.stdout and "empty: 1" in stats.stdout
    show = spanindex("show", str(tmp_path / "idx"), "a.md#tok:0")
    assert show.returncode == 0 and "Alpha sentence about invoices" in show.stdout
    missing = spanindex("show", str(tmp_path / "idx"), "a.md#tok:999")
    assert missing.returncode == 3 and "no chunk" in missing.stderr
    search = spanindex("search", str(tmp_path / "idx"), "when are invoices due", "-k", "1", "--json")
    assert '"doc_id": "a.md"' in search.stdout
