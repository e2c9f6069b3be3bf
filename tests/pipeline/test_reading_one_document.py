"""A reader reads one document's rows from the row groups that hold them, never a whole table:
what a citation costs follows the cited document, not the corpus."""

from __future__ import annotations

import pytest

import index
from index.citations.verify import resolve
from index.store import open_generation
from ingest.build import BuildSettings, build_index
from ingest.store import write
from schemas.records import ChunkerSettings
from schemas.tables import chunk_records, document_records

from doubles import HashingEmbedder

SMALL_GROUPS = {"chunks": 8, "hidden_text": 4}
N_DOCS = 40


@pytest.fixture(scope="module")
def many_groups(tmp_path_factory):
    """An index of 40 Markdown files whose tables are written in row groups of a few rows."""
    corpus = tmp_path_factory.mktemp("corpus")
    for n in range(N_DOCS):
        words = " ".join(f"word{n}x{i}" for i in range(120))
        (corpus / f"doc{n:02d}.md").write_text(f"# Document {n}\n\nThe quoted sentence of document {n}. {words}\n")
    root = tmp_path_factory.mktemp("idx")
    with pytest.MonkeyPatch.context() as patch:
        for table, rows in SMALL_GROUPS.items():
            patch.setitem(write.ROW_GROUP_ROWS, table, rows)
        patch.setattr(write, "DOCUMENT_ROWS", 4)
        build_index(corpus, root, BuildSettings(workers=1, chunker=ChunkerSettings(max_tokens=64, overlap=0)),
                    embedder=HashingEmbedder())
    return root


def test_every_document_chunk_and_row_reads_the_same_from_its_row_groups_as_from_the_whole_table(many_groups):
    idx = index.open(many_groups, embedder=HashingEmbedder())
    whole = open_generation(idx.paths)
    documents = document_records(whole.table("documents"))
    chunks = chunk_records(whole.table("chunks"))
    assert len(whole.segments[0].row_groups("chunks").indices) >= 20 and len(whole.segments[0].row_groups("documents").indices) == N_DOCS // 4
    assert [idx.document(d.doc_id) for d in documents] == documents
    for doc in documents:
        assert idx.chunks_of(doc.doc_id) == [c for c in chunks if c.doc_id == doc.doc_id]
    assert [idx.chunk(c.chunk_id) for c in chunks] == chunks
    assert [idx.chunk_at_vector(c.vector_id) for c in chunks] == chunks
    assert idx.document("absent.md") is None and idx.chunk("absent.md#tok:0") is None and idx.chunk("no-token") is None
    assert idx.generation.whole_tables == ()


def test_a_citation_reads_a_few_row_groups_of_its_own_document_and_no_whole_table(many_groups):
    idx = index.open(many_groups, embedder=HashingEmbedder())
    quote = "The quoted sentence of document 23."
    chunk_id = "doc23.md#tok:0"
    citation = resolve(idx, chunk_id, quote)
    assert citation.status.verified and citation.doc_id == "doc23.md"
    groups = idx.generation.segments[0].row_groups("chunks")
    assert idx.generation.whole_tables == ()
    # the document's row (1 group), its chunks (1 or 2 groups), its hidden text (none: 0)
    assert idx.generation.row_groups_read <= 4 < len(groups.indices)
