"""Citations of office documents carry the zip part and the range in it that the quote came from,
the slide or sheet, and a sheet's cells, over every office file of ../shared/corpus."""

from __future__ import annotations

import zipfile

import pytest

import index
from index.citations.verify import resolve
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from ingest.formats.office.readback import read_back
from schemas.citations import CitationStatus
from schemas.records import MediaType, RunKind

from conftest import SHARED_CORPUS
from doubles import HashingEmbedder

OFFICE = SHARED_CORPUS / "office"
OFFICE_TYPES = {MediaType.DOCX, MediaType.PPTX, MediaType.XLSX}


@pytest.fixture(scope="module")
def office_index(tmp_path_factory):
    if not OFFICE.is_dir():
        pytest.skip("../shared/corpus is absent")
    index_dir = tmp_path_factory.mktemp("office-index")
    report = build_index(OFFICE, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    assert report.failures == []
    return index.open(index_dir, embedder=HashingEmbedder())


def test_office_files_are_indexed_with_their_maps_and_fsck_is_clean(office_index):
    docs = [d for d in office_index.documents() if d.media_type in OFFICE_TYPES]
    assert {d.media_type for d in docs} == OFFICE_TYPES and len(docs) >= 20
    assert all(d.status.value == "ok" and office_index.chunks_of(d.doc_id) for d in docs)
    for doc in docs:
        runs = office_index.office_source_map(doc.doc_id).runs
        assert runs.start[0] == 0 and runs.end[-1] == doc.n_chars and (runs.start[1:] == runs.end[:-1]).all()
        if doc.media_type is not MediaType.DOCX:
            assert doc.n_pages == len(office_index.office_source_map(doc.doc_id).pages) > 0
    assert fsck(office_index.paths.root) == []


def test_a_quote_from_one_run_resolves_to_the_part_range_it_reads_back_from(office_index):
    checked = 0
    for doc in office_index.documents():
        if doc.media_type not in OFFICE_TYPES:
            continue
        text = office_index.doc_text(doc.doc_version)
        office = office_index.office_source_map(doc.doc_id)
        with zipfile.ZipFile(office_index.source_path(doc.doc_id)) as package:
            for run in office.runs:
                quote = text[run.start:run.end].strip()
                if run.kind is not RunKind.TEXT or len(quote) < 12:
                    continue
                start = text.index(quote, run.start)
                chunk = next((c for c in office_index.chunks_of(doc.doc_id)
                              if c.start <= start and start + len(quote) <= c.end), None)
                if chunk is None or chunk.text.count(quote) != 1:  # a run longer than a chunk; a repeat
                    continue
                citation = resolve(office_index, chunk.chunk_id, quote)
                assert citation.status is CitationStatus.EXACT and citation.part == run.part, (doc.doc_id, quote)
                source = package.read(citation.part).decode("utf-8")
                assert read_back(source[citation.src_start:citation.src_end]) == quote, (doc.doc_id, quote)
                if doc.media_type is MediaType.PPTX:
                    assert citation.page == office.page_of(start) is not None
                checked += 1
    assert checked > 100


def test_a_cell_quote_names_its_sheet_and_cell(office_index):
    found = 0
    for doc in office_index.documents():
        if doc.media_type is not MediaType.XLSX:
            continue
        text = office_index.doc_text(doc.doc_version)
        office = office_index.office_source_map(doc.doc_id)
        for cell in office.cells:
            quote = text[cell.start:cell.end]
            chunk = next((c for c in office_index.chunks_of(doc.doc_id) if c.start <= cell.start and cell.end <= c.end), None)
            if len(quote) < 12 or chunk is None or chunk.text.count(quote) != 1:
                continue
            citation = resolve(office_index, chunk.chunk_id, quote)
            assert citation.cells == (cell.ref,), (doc.doc_id, quote)
            assert citation.page == office.page_of(cell.start) >= 1
            found += 1
    assert found > 10


def test_fsck_names_an_office_map_that_no_longer_reads_back_from_its_stored_file(office_index, tmp_path):
    import shutil

    copy = shutil.copytree(office_index.paths.root, tmp_path / "idx")
    docs = sorted((d for d in office_index.documents() if d.media_type is MediaType.DOCX), key=lambda d: d.doc_id)
    first, second = docs[0], docs[1]
    stored = lambda doc: copy / "sources" / f"{doc.source_sha256}.docx"  # noqa: E731
    shutil.copyfile(stored(second), stored(first))  # another file where the first one's map points
    faults = fsck(copy)
    assert faults and all(f.where == "office_map.parquet" or "checksum" in f.message or "sha256" in f.message
                          for f in faults), faults
    assert any(first.doc_id in f.message for f in faults if f.where == "office_map.parquet")
