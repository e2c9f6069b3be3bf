"""A document's large tables travel from its worker to the build through spill files
(ingest.store.spill); the index they make is the one the same rows make when passed in memory."""

from __future__ import annotations

import shutil
from collections import Counter

import pyarrow.parquet as pq
import pytest

import ingest.store.spill
import ingest.run.worker
from ingest.build import BuildSettings, build_index
from ingest.store.write import ROW_GROUP_ROWS
from schemas.manifest import read_manifest
from schemas.layout import IndexPaths, read_current

from conftest import SAMPLE_CORPUS
from doubles import HashingEmbedder

WORDS = "invoice refund overage webhook plan growth tier limit quota export archive ledger".split()


def _corpus(root):
    """The sample corpus (PDF pages and glyph boxes, HTML with hidden text, Markdown, errors) and two
    generated documents of many rows: an HTML page of runs (tags, entities) and a text of many chunks."""
    corpus = shutil.copytree(SAMPLE_CORPUS, root / "corpus")
    paragraphs = "".join(
        f"<p>Part {i}: {WORDS[i % 12]} <b>{WORDS[(i * 5) % 12]}</b> &amp; {WORDS[(i * 7) % 12]}"
        f"<span style='display:none'>hidden {i}</span> {' '.join(WORDS)}.</p>"
        for i in range(400)
    )
    (corpus / "many-runs.html").write_text(f"<html><body>{paragraphs}</body></html>")
    (corpus / "many-chunks.txt").write_text(" ".join(f"{WORDS[i % 12]} {i}." for i in range(12_000)))
    return corpus


def _tables(index_dir):
    paths = IndexPaths(index_dir)
    [segment] = read_manifest(paths.generation(read_current(paths))).segments
    generation = paths.segment(segment.name)
    tables = {p.name: pq.read_table(p) for p in sorted(generation.glob("*.parquet"))}
    vectors = (generation / "vectors.f32").read_bytes() if (generation / "vectors.f32").exists() else None
    return tables, vectors, sorted(p.name for p in generation.iterdir())


def test_spilled_tables_make_the_index_that_rows_in_memory_make(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path)
    written = []
    write_spill = ingest.store.spill.write_spill

    def counting_write_spill(path, pieces):
        rows = write_spill(path, pieces)
        written.append((path.name.split(".")[1], rows))
        return rows

    monkeypatch.setattr(ingest.run.worker, "write_spill", counting_write_spill)
    settings = BuildSettings(workers=1)  # in this process, where SPILL_ROWS is patched

    monkeypatch.setattr(ingest.run.worker, "SPILL_ROWS", {name: 1 << 40 for name in ROW_GROUP_ROWS})
    build_index(corpus, tmp_path / "in-memory", settings, embedder=HashingEmbedder())
    assert written == []

    # Every table of more than 5 rows spills, in record batches of 5 rows.
    monkeypatch.setattr(ingest.run.worker, "SPILL_ROWS", {name: 5 for name in ROW_GROUP_ROWS})
    build_index(corpus, tmp_path / "spilled", settings, embedder=HashingEmbedder())
    memory_tables, memory_vectors, memory_files = _tables(tmp_path / "in-memory")
    # Each table of a document's rows that some document has more than 5 rows of spilled (documents
    # and the lexical postings are the build's own).
    over = {name.removesuffix(".parquet") for name, table in memory_tables.items()
            if name != "documents.parquet" and "doc_id" in table.column_names
            and max(Counter(table.column("doc_id").to_pylist()).values(), default=0) > 5}
    assert {name for name, _ in written} == over
    assert {"chunks", "html_map", "pdf_chars"} <= over
    assert max(rows for name, rows in written if name == "chunks") > 100
    spilled_tables, spilled_vectors, spilled_files = _tables(tmp_path / "spilled")
    assert spilled_files == memory_files  # the spill folder is gone
    assert memory_tables.keys() == spilled_tables.keys()
    for name, table in memory_tables.items():
        assert spilled_tables[name].num_rows == table.num_rows, name
        assert spilled_tables[name].to_pylist() == table.to_pylist(), name  # row for row
    assert spilled_vectors == memory_vectors


@pytest.mark.parametrize("rows", [1, 4, 5, 6, 23])
def test_a_spill_file_gives_back_its_pieces_in_order_and_is_removed(tmp_path, rows):
    import pyarrow as pa

    table = pa.table({"n": list(range(rows)), "s": [f"row {i}" for i in range(rows)]})
    path = tmp_path / "t.arrow"
    assert ingest.store.spill.write_spill(path, (table.slice(a, 5) for a in range(0, rows, 5))) == rows
    pieces = list(ingest.store.spill.read_spill(path))
    assert [p.num_rows for p in pieces] == [min(5, rows - a) for a in range(0, rows, 5)]
    assert pa.concat_tables(pieces).equals(table)
    assert not path.exists()
