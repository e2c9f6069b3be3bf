"""A reindex writes what changed and masks what it replaced; merges and compaction change no answer.

The live rows of an index built incrementally, in any order of edits, additions and removals,
with merges along the way, are the rows of a full build of the same corpus: the same documents,
chunks, offsets and map rows, the same vectors by chunk, the same BM25 scores and the same dense
hits. Only vector ids (internal, stable while a segment lives) and the order of segments differ.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import index
from conftest import SAMPLE_CORPUS, examples, spanindex
from doubles import HashingEmbedder
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from ingest.compact import compact_index
from ingest.store import deleted_table, segments
from schemas.errors import IndexFormatError
from schemas.layout import HITS_FILE, MANIFEST, IndexPaths, read_current
from schemas.records import MaskedDocument
from schemas.tables import DOCUMENT_MAP_TABLES, FORMAT_VERSION, SCHEMAS

WORDS = "invoice refund overage webhook plan growth tier limit quota export archive ledger zurich".split()
QUERIES = ["refund overage", "webhook quota limit", "zurich archive ledger", "plan growth"]


def _build(corpus, idx_dir, **settings):
    return build_index(corpus, idx_dir, BuildSettings(workers=1, **settings), embedder=HashingEmbedder())


def _text(seed: int) -> str:
    rng = np.random.default_rng(seed)
    paragraphs = [" ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 40)) + "." for _ in range(int(rng.integers(1, 6)))]
    return f"# Note {seed}\n\n" + "\n\n".join(paragraphs) + "\n"


def _live_rows(idx_dir) -> dict[str, list]:
    """Every table's live rows in doc_id order (a document's rows in their own order), vector_id left out."""
    gen = index.open(idx_dir).generation
    rows = {}
    for name in ("documents", "chunks", *DOCUMENT_MAP_TABLES):
        table = gen.table(name)
        if "vector_id" in table.column_names:
            table = table.drop_columns(["vector_id"])
        records = table.to_pylist()
        order = sorted(range(len(records)), key=lambda i: (records[i]["doc_id"], i))
        rows[name] = [records[i] for i in order]
    return rows


def _vectors_by_chunk(idx_dir) -> dict[str, np.ndarray]:
    gen = index.open(idx_dir).generation
    ids, vectors = gen.vectors()
    chunks = gen.table("chunks", ["chunk_id", "vector_id"])
    where = {v: i for i, v in enumerate(ids.tolist())}
    return {c: vectors[where[v]] for c, v in zip(chunks.column("chunk_id").to_pylist(), chunks.column("vector_id").to_pylist())}


def _answers(idx_dir) -> dict[str, tuple]:
    """Each query's top 8 in each mode: the scores, and the chunks scored above the 8th (chunks
    tied with it may differ: ties are broken by vector id, which a merge renumbers)."""
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    answers = {}
    for query in QUERIES:
        for mode in ("lexical", "dense"):
            hits = idx.search(query, k=8, mode=mode)
            scores = [round(h.score, 5) for h in hits]
            above = sorted((s, h.chunk_id) for s, h in zip(scores, hits) if len(hits) < 8 or s > scores[-1])
            answers[f"{mode}:{query}"] = (scores, above)
    return answers


def _scores(idx_dir) -> dict[str, dict[str, float]]:
    """Every chunk's BM25 score for each query, by chunk_id."""
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    lexical = idx.lexical()
    out = {}
    for query in QUERIES:
        ids, scores = lexical.scores(query)
        out[query] = {idx.chunk_at_vector(int(i)).chunk_id: float(s) for i, s in zip(ids, scores)}
    return out


def assert_same_as_a_full_build(idx_dir, corpus, tmp_path) -> None:
    full = tmp_path / "full"
    shutil.rmtree(full, ignore_errors=True)
    _build(corpus, full)
    assert _live_rows(idx_dir) == _live_rows(full)
    mine, theirs = _vectors_by_chunk(idx_dir), _vectors_by_chunk(full)
    assert mine.keys() == theirs.keys() and all((mine[c] == theirs[c]).all() for c in mine)
    mine, theirs = _scores(idx_dir), _scores(full)
    for query in QUERIES:
        assert mine[query].keys() == theirs[query].keys()
        for chunk_id, score in mine[query].items():
            assert abs(score - theirs[query][chunk_id]) <= 1e-6 * max(1.0, abs(score)), (query, chunk_id)
    assert _answers(idx_dir) == _answers(full)
    assert fsck(idx_dir) == []


def test_a_one_file_reindex_writes_one_segment_of_that_file_and_masks_its_old_rows(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    first = _build(corpus, idx_dir)
    paths = IndexPaths(idx_dir)
    [old] = index.open(idx_dir).generation.manifest.segments
    stamps = {p.name: os.stat(p).st_mtime_ns for p in paths.segment(old.name).iterdir()}
    before_chunks = len(index.open(idx_dir).chunks_of("docs/release-notes.txt"))
    edited = corpus / "docs" / "release-notes.txt"
    edited.write_bytes(edited.read_bytes() + b"\r\nVersion 9 adds audit exports.\r\n")

    second = _build(corpus, idx_dir)
    gen = index.open(idx_dir).generation
    assert (second.changed, second.unchanged) == (1, first.n_files - 1)
    assert [s.name for s in gen.manifest.segments] == [old.name, second.generation]
    new = gen.segments[1]
    assert new.table("documents").column("doc_id").to_pylist() == ["docs/release-notes.txt"]
    for name in ("chunks", *DOCUMENT_MAP_TABLES):  # nothing of another document is written again
        assert set(new.table(name).column("doc_id").to_pylist()) <= {"docs/release-notes.txt"}, name
    assert {name: set(docs) for name, docs in gen.live.deleted.items()} == {old.name: {"docs/release-notes.txt"}}
    masked = gen.live.deleted[old.name]["docs/release-notes.txt"]
    assert masked.n_vectors == before_chunks and masked.n_tokens > 0
    assert gen.manifest.segments[0].n_deleted == 1
    assert {p.name: os.stat(p).st_mtime_ns for p in paths.segment(old.name).iterdir()} == stamps  # never rewritten
    assert new.ref.vector_base == old.n_vectors  # vector ids go on; none is reused
    assert index.open(idx_dir).chunks_of("docs/release-notes.txt")[-1].text.strip().endswith("audit exports.")
    assert fsck(idx_dir) == []
    assert_same_as_a_full_build(idx_dir, corpus, tmp_path)
    # DuckDB and Polars read the live rows through the helpers: the old version's rows are masked
    for table in ("chunks", "documents"):
        live = duckdb.sql(f"SELECT doc_id, count(*) AS n FROM ({index.live_sql(idx_dir, table)}) GROUP BY doc_id").fetchall()
        assert dict(live) == dict(collections.Counter(gen.table(table).column("doc_id").to_pylist()))
        assert index.live_frame(idx_dir, table).collect().to_arrow().select(gen.table(table).column_names).to_pylist() \
            == gen.table(table).to_pylist()

    third = _build(corpus, idx_dir)  # nothing changed: no segment, the same segments and deletions
    assert third.unchanged == first.n_files and index.open(idx_dir).generation.manifest.segments == gen.manifest.segments


# One step of a corpus's life: edit, add or remove a note (by number).
STEPS = st.lists(st.tuples(st.sampled_from(["edit", "add", "remove"]), st.integers(0, 7)), min_size=1, max_size=7)


@settings(max_examples=examples(6), deadline=None)
@given(steps=STEPS, per_tier=st.sampled_from([2, 3, 8]))
@example(steps=[("remove", 0), ("add", 0), ("edit", 1), ("remove", 1), ("add", 9)], per_tier=2)
@example(steps=[("edit", 0), ("edit", 0), ("edit", 0)], per_tier=2)
@example(steps=[("edit", 0), ("edit", 1), ("edit", 1), ("edit", 6), ("edit", 5)], per_tier=3)  # a tie at the 8th hit
def test_incremental_builds_with_merges_serve_what_a_full_build_serves(steps, per_tier, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(segments, "SEGMENTS_PER_TIER", per_tier)
        _check_a_life(steps, per_tier, tmp_path_factory.mktemp("life"))


def _check_a_life(steps, per_tier: int, tmp_path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(4):
        (corpus / f"note{n}.md").write_text(_text(n))
    _build(corpus, tmp_path / "idx")
    for i, (what, n) in enumerate(steps):
        path = corpus / f"note{n}.md"
        if what == "remove":
            path.unlink(missing_ok=True)
        else:
            path.write_text(_text(100 * (i + 1) + n))
        _build(corpus, tmp_path / "idx")
        assert fsck(tmp_path / "idx") == []
        assert len(index.open(tmp_path / "idx").generation.manifest.segments) <= 2 * per_tier + 1
    assert_same_as_a_full_build(tmp_path / "idx", corpus, tmp_path)
    compact_index(tmp_path / "idx")
    gen = index.open(tmp_path / "idx").generation
    assert len(gen.manifest.segments) <= 1 and not gen.live.deleted
    assert_same_as_a_full_build(tmp_path / "idx", corpus, tmp_path)


@pytest.mark.spawns
def test_a_segment_whose_every_document_is_masked_is_dropped_not_merged(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    note = corpus / "note.md"
    for seed in (1, 2, 3):  # each edit masks the one document of the segment the edit before wrote
        note.write_text(_text(seed))
        report = _build(corpus, idx_dir)
        refs = index.open(idx_dir).generation.manifest.segments
        assert all(ref.n_documents > ref.n_deleted for ref in refs), refs
        assert report.merged == 0 and len(refs) == 2
    assert fsck(idx_dir) == []
    assert_same_as_a_full_build(idx_dir, corpus, tmp_path)


def test_compact_merges_every_segment_into_one_with_the_same_answers(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    for i in range(3):
        (corpus / "docs" / f"note{i}.md").write_text(_text(i))
        _build(corpus, idx_dir)
    policy = corpus / "docs" / "long-policy.md"
    policy.write_text(policy.read_text() + "\n\nA closing paragraph.\n")
    _build(corpus, idx_dir)
    before = _answers(idx_dir)
    assert len(index.open(idx_dir).generation.manifest.segments) == 5
    run = spanindex("compact", idx_dir)
    assert run.returncode == 0 and "5 segments merged into 1, rows of 1 masked documents dropped" in run.stdout, run.stderr
    gen = index.open(idx_dir).generation
    assert len(gen.manifest.segments) == 1 and not gen.live.deleted
    assert _answers(idx_dir) == before and fsck(idx_dir) == []
    run = spanindex("compact", idx_dir)
    assert run.returncode == 0 and "nothing to merge" in run.stdout
    # the segments only retired generations read are gone with them
    _build(corpus, idx_dir, keep_generations=1)
    live = {s.name for s in index.open(idx_dir).generation.manifest.segments}
    assert {p.name for p in IndexPaths(idx_dir).segments.iterdir()} == live


def test_a_reader_opens_an_index_by_its_manifests_and_footers_and_reads_no_table(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    (corpus / "docs" / "note.md").write_text(_text(1))
    _build(corpus, idx_dir)
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    doc = idx.document("docs/note.md")
    assert doc is not None and idx.chunks_of("docs/note.md")
    assert idx.generation.whole_tables == () and idx.generation.row_groups_read <= 4


def test_a_search_reads_its_hits_from_the_mapped_arrow_file_and_decodes_no_row_group(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    (corpus / "docs" / "note.md").write_text(_text(1))
    _build(corpus, idx_dir)  # two segments: hits come from both
    whole = {c["chunk_id"]: c for c in index.open(idx_dir).generation.table("chunks").to_pylist()}
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    hits = [hit for mode in ("dense", "lexical", "hybrid") for query in ("invoices", "note", "refund policy")
            for hit in idx.search(query, k=5, mode=mode)]
    assert len({h.doc_id for h in hits}) > 2
    for hit in hits:
        row = whole[hit.chunk_id]
        assert (hit.doc_id, hit.start, hit.end, hit.text, hit.title) == (row["doc_id"], row["start"], row["end"], row["text"], row["title"])
    assert idx.generation.row_groups_read == 0 and idx.generation.whole_tables == ()
    note = [c for c in whole.values() if c["doc_id"] == "docs/note.md"]
    assert [c.chunk_id for c in idx.chunks_of("docs/note.md")] == [c["chunk_id"] for c in note] != []


def test_fsck_names_a_hits_file_whose_rows_differ_from_the_chunks_table(tmp_path):
    import pyarrow.compute as pc
    import pyarrow.ipc as ipc

    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    segment = index.open(idx_dir).generation.segments[0]
    path = segment.dir / HITS_FILE
    hits = ipc.open_file(pa.BufferReader(path.read_bytes())).read_all()  # not mapped: the file is replaced
    changed = hits.set_column(hits.schema.get_field_index("text"), hits.schema.field("text"),
                              pc.utf8_upper(hits.column("text")))  # the same length: only the rows differ
    with ipc.new_file(tmp_path / "changed.arrow", hits.schema) as out:
        out.write_table(changed)
    os.replace(tmp_path / "changed.arrow", path)
    _checksum_again(segment.dir, HITS_FILE)  # as a writer that wrote the wrong rows would have
    faults = fsck(idx_dir)
    assert any(f.where == f"segments/{segment.name}/{HITS_FILE}" and "differ from chunks.parquet" in f.message for f in faults), faults
    (tmp_path / "junk").write_bytes(b"not arrow")
    os.replace(tmp_path / "junk", path)
    _checksum_again(segment.dir, HITS_FILE)
    assert any(f.where == f"segments/{segment.name}/{HITS_FILE}" and "not an Arrow file" in f.message for f in fsck(idx_dir))


def _checksum_again(segment_dir: Path, file_name: str) -> None:
    from ingest.store import file_sha256

    raw = json.loads((segment_dir / "segment.json").read_text())
    raw["table_sha256"][file_name] = file_sha256(segment_dir / file_name)
    (segment_dir / "segment.json").write_text(json.dumps(raw))


@pytest.mark.hostile("an index written by an older spanindex (the previous format: 8 had no chunks.arrow, the Arrow copy of each segment's chunks that searches read)",
                     "CLI error: one line naming both formats and the command that rebuilds it; a build rebuilds it in full")
def test_an_index_of_the_previous_format_is_refused_in_one_line_and_rebuilt_by_a_build(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    paths = IndexPaths(idx_dir)
    manifest_path = paths.generation(read_current(paths)) / MANIFEST
    raw = json.loads(manifest_path.read_text())
    raw["format_version"] = FORMAT_VERSION - 1
    manifest_path.write_text(json.dumps(raw))
    with pytest.raises(IndexFormatError, match=rf"format version {FORMAT_VERSION - 1}, this spanindex reads {FORMAT_VERSION}; run `spanindex build`"):
        index.open(idx_dir)
    report = _build(corpus, idx_dir)
    assert "rebuilding from scratch" in report.full_reason and report.added == report.n_files
    assert fsck(idx_dir) == []


def test_deleted_rows_name_segments_documents_and_what_they_take_out_in_order():
    rows = [MaskedDocument("b", "y", 10, 2, 30), MaskedDocument("b", "x", 5, 3, 40), MaskedDocument("a", "z", 0, 0, 0)]
    table = deleted_table(rows)
    assert [(r["segment"], r["doc_id"]) for r in table.to_pylist()] == [("a", "z"), ("b", "x"), ("b", "y")]
    assert table.to_pylist()[1] == {"segment": "b", "doc_id": "x", "first_vector_id": 5, "n_vectors": 3, "n_tokens": 40}
    assert table.schema == SCHEMAS["deleted"]


def test_a_documents_row_does_not_depend_on_how_long_ago_its_file_was_written(tmp_path, monkeypatch):
    import ingest.run.worker as worker

    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    _build(corpus, tmp_path / "settled")
    monkeypatch.setattr(worker, "RACY_SECONDS", 10**9)  # every file read as if written a moment ago
    _build(corpus, tmp_path / "racy")
    settled, racy = (index.open(tmp_path / name).generation for name in ["settled", "racy"])
    assert racy.table("documents").to_pylist() == settled.table("documents").to_pylist()
    mtimes = [m for m in settled.table("documents").column("source_mtime_ns").to_pylist() if m]
    assert racy.manifest.segments[0].mtimes_trusted_before_ns <= min(mtimes)  # not one vouched for
    assert settled.manifest.segments[0].mtimes_trusted_before_ns > max(mtimes)  # copies keep their old mtimes
    assert _build(corpus, tmp_path / "racy").unchanged == len(racy.table("documents"))  # read again, found unchanged


def test_an_unchanged_file_is_known_by_its_size_and_mtime_and_not_read(tmp_path, monkeypatch):
    import ingest.run.worker as worker

    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")  # copies keep their (old) mtimes
    fresh = corpus / "docs" / "fresh.md"
    fresh.write_text("# Fresh\n\nWritten a moment ago.\n")
    first = _build(corpus, tmp_path / "idx")
    docs = {d.doc_id: d for d in index.open(tmp_path / "idx").documents()}
    assert docs["docs/getting-started.md"].source_mtime_ns == os.stat(corpus / "docs" / "getting-started.md").st_mtime_ns
    # Each row holds its file's mtime, whenever it was read; the segment says which ones it vouches for.
    assert docs["docs/fresh.md"].source_mtime_ns == os.stat(fresh).st_mtime_ns
    (segment,) = index.open(tmp_path / "idx").generation.manifest.segments
    assert segment.mtimes_trusted_before_ns <= docs["docs/fresh.md"].source_mtime_ns  # written within RACY_SECONDS
    assert segment.mtimes_trusted_before_ns > docs["docs/getting-started.md"].source_mtime_ns
    reads = []
    real = worker.read_source_bytes
    monkeypatch.setattr(worker, "read_source_bytes", lambda path, *a: reads.append(path.name) or real(path, *a))
    edited = corpus / "docs" / "getting-started.md"
    text = edited.read_text()
    edited.write_text(text.replace("a", "e", 1))  # the same size, a new mtime
    second = _build(corpus, tmp_path / "idx")
    assert second.changed == 1 and second.unchanged == first.n_files - 1
    ok = {d for d, doc in docs.items() if doc.status.value == "ok" and 0 < doc.source_mtime_ns < segment.mtimes_trusted_before_ns}
    assert "getting-started.md" in reads and "fresh.md" in reads  # the edited file, and the one not vouched for
    assert not {Path(d).name for d in ok - {"docs/getting-started.md"}} & set(reads)  # the rest: not read at all
    assert fsck(tmp_path / "idx") == []
