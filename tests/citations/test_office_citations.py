"""Citations of office documents carry the zip part and the range in it that the quote came from,
the slide or sheet, a sheet's cells, and where LibreOffice renders the file, the page and the
glyph rectangles, over every office file of ../shared/corpus."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pymupdf
import pytest

import index
from index.citations.verify import resolve
from index.fsck import fsck
from ingest.build import BuildSettings, build_index
from index.viewer.source_views import ViewBuilder, ViewKind
from ingest.formats.office import office_renderer_unavailable
from ingest.formats.office.readback import read_back
from schemas.citations import CitationStatus
from schemas.records import MediaType, Rect, RunKind

from conftest import SHARED_CORPUS, spanindex_command
from doubles import HashingEmbedder

OFFICE = SHARED_CORPUS / "office"
OFFICE_TYPES = {MediaType.DOCX, MediaType.PPTX, MediaType.XLSX, MediaType.EPUB, MediaType.ODT}
RENDERED = {MediaType.DOCX, MediaType.PPTX, MediaType.ODT}
needs_libreoffice = pytest.mark.skipif(office_renderer_unavailable() is not None,
                                       reason=f"{office_renderer_unavailable()}")


@pytest.fixture(scope="module")
def office_build(tmp_path_factory):
    if not OFFICE.is_dir():
        pytest.skip("../shared/corpus is absent")
    index_dir = tmp_path_factory.mktemp("office-index")
    report = build_index(OFFICE, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    assert report.failures == []
    return report, index.open(index_dir, embedder=HashingEmbedder())


@pytest.fixture(scope="module")
def office_index(office_build):
    return office_build[1]


def sentence_citations(idx, media_types):
    """(document, citation) of each sentence-like quote that occurs once in its chunk."""
    for doc in idx.documents():
        if doc.media_type not in media_types:
            continue
        for chunk in idx.chunks_of(doc.doc_id):
            for found in re.finditer(r"[A-Z][^.\n\t]{20,80}\.", chunk.text):
                if chunk.text.count(found.group(0)) == 1:
                    yield doc, resolve(idx, chunk.chunk_id, found.group(0))


def test_office_files_are_indexed_with_their_maps_and_fsck_is_clean(office_index):
    docs = [d for d in office_index.documents() if d.media_type in OFFICE_TYPES]
    assert {d.media_type for d in docs} == OFFICE_TYPES and len(docs) >= 20
    assert all(d.status.value == "ok" and office_index.chunks_of(d.doc_id) for d in docs)
    for doc in docs:
        runs = office_index.office_source_map(doc.doc_id).runs
        assert runs.start[0] == 0 and runs.end[-1] == doc.n_chars and (runs.start[1:] == runs.end[:-1]).all()
        if doc.media_type not in (MediaType.DOCX, MediaType.ODT):  # slides, sheets, chapters
            assert doc.n_pages == len(office_index.office_source_map(doc.doc_id).pages) > 0
        elif office_index.rendered_path(doc.doc_id) is not None:  # pages as LibreOffice renders them
            assert doc.n_pages == pymupdf.open(office_index.rendered_path(doc.doc_id)).page_count > 0
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


@needs_libreoffice
def test_rendered_office_quotes_get_glyph_rectangles_on_the_page_that_shows_them(office_build):
    report, idx = office_build
    assert report.office_layout.startswith("LibreOffice") and report.office.failed == 0
    assert report.office.boxed >= 0.95 * report.office.source_chars  # measured 0.974
    quotes = boxed = shown = 0
    pdfs = {}
    for doc, citation in sentence_citations(idx, RENDERED):
        quotes += 1
        if not citation.rects:
            continue
        boxed += 1
        if doc.doc_id not in pdfs:
            pdfs[doc.doc_id] = pymupdf.open(idx.rendered_path(doc.doc_id))
        pdf = pdfs[doc.doc_id]
        assert citation.page == citation.rects[0].page and all(1 <= r.page <= pdf.page_count for r in citation.rects)
        first = citation.rects[0]
        page = pdf[first.page - 1]
        assert 0 <= first.x0 < first.x1 <= page.rect.width + 1 and 0 <= first.y0 < first.y1 <= page.rect.height + 1
        shown += citation.quote.split()[0] in page.get_textbox(pymupdf.Rect(first.x0, first.y0, first.x1, first.y1))
    assert quotes > 150 and boxed >= 0.95 * quotes and shown >= 0.98 * boxed, (quotes, boxed, shown)


@needs_libreoffice
def test_the_viewer_shows_a_rendered_page_with_boxes_beside_the_marked_text_and_a_sheet_as_a_grid(office_index):
    views = ViewBuilder(office_index)
    doc, citation = next((d, c) for d, c in sentence_citations(office_index, {MediaType.DOCX}) if c.rects)
    view = views.citation(citation)
    assert view.kind is ViewKind.OFFICE and view.pages and view.pages[0].boxes and view.part == citation.part
    assert view.text.marked == citation.quote and view.where == f"p. {citation.page}"
    box = view.pages[0].boxes[0]
    assert 0 <= box.left < 100 and 0 <= box.top < 100 and box.width > 0 and box.height > 0
    sheet_doc = next(d for d in office_index.documents() if d.media_type is MediaType.XLSX)
    office = office_index.office_source_map(sheet_doc.doc_id)
    text = office_index.doc_text(sheet_doc.doc_version)
    cell = next(c for c in office.cells if c.end - c.start >= 3)
    chunk = next(c for c in office_index.chunks_of(sheet_doc.doc_id) if c.start <= cell.start and cell.end <= c.end)
    sheet_view = views.span(sheet_doc.doc_id, sheet_doc.doc_version, cell.start, cell.end, page=office.page_of(cell.start))
    assert chunk and sheet_view.kind is ViewKind.SHEET and sheet_view.where == cell.ref
    marked = [c.text for row in sheet_view.grid.rows for c in row.cells if c.marked]
    assert marked == [text[cell.start:cell.end]]


def test_without_rendering_a_slide_quote_is_framed_by_its_shape_on_its_slide(tmp_path):
    decks = sorted(OFFICE.glob("*.pptx")) if OFFICE.is_dir() else []
    if not decks:
        pytest.skip("../shared/corpus is absent")
    corpus = tmp_path / "decks"
    corpus.mkdir()
    for deck in decks:
        shutil.copyfile(deck, corpus / deck.name)
    build_index(corpus, tmp_path / "idx", BuildSettings(workers=1, office_layout=False), embedder=HashingEmbedder())
    idx = index.open(tmp_path / "idx", embedder=HashingEmbedder())
    assert idx.manifest.office_layout == ""
    framed = 0
    for doc, citation in sentence_citations(idx, {MediaType.PPTX}):
        office = idx.office_source_map(doc.doc_id)
        shapes = [s for s in idx.office_shapes(doc.doc_id) if s.start < citation.doc_end and citation.doc_start < s.end]
        if not shapes:  # speaker notes have no frame
            continue
        assert citation.rects == tuple(Rect(s.page, s.x0, s.y0, s.x1, s.y1) for s in shapes)
        assert citation.page == office.page_of(citation.doc_start) == shapes[0].page
        framed += 1
    assert framed >= 5


def legacy_doc() -> bytes:
    """A Word 97 .doc, saved by LibreOffice from a generated .docx (no binary fixture in the repository)."""
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_heading("Legacy report", 1)
    document.add_paragraph("The legacy binary format is read through its converted copy.")
    buffer = io.BytesIO()
    document.save(buffer)
    folder = Path(tempfile.mkdtemp())
    try:
        (folder / "in.docx").write_bytes(buffer.getvalue())
        subprocess.run(["soffice", "--headless", f"-env:UserInstallation=file://{folder}/profile", "--convert-to",
                        "doc:MS Word 97", "--outdir", str(folder), str(folder / "in.docx")],
                       capture_output=True, timeout=180, check=True)
        return (folder / "in.doc").read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_libreoffice
@pytest.mark.spawns
def test_a_legacy_doc_is_indexed_through_its_converted_copy_and_its_citation_reads_back_from_it(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "old.doc").write_bytes(legacy_doc())
    build_index(corpus, tmp_path / "idx", BuildSettings(workers=1), embedder=HashingEmbedder())
    idx = index.open(tmp_path / "idx", embedder=HashingEmbedder())
    doc = idx.document("old.doc")
    assert doc.status.value == "ok" and doc.media_type is MediaType.DOC and "converted from .doc to .docx" in doc.warning
    quote = "The legacy binary format is read through its converted copy."
    chunk = next(c for c in idx.chunks_of("old.doc") if quote in c.text)
    citation = resolve(idx, chunk.chunk_id, quote)
    assert citation.status is CitationStatus.EXACT and citation.part == "word/document.xml" and citation.rects
    with zipfile.ZipFile(idx.office_package_path("old.doc")) as package:
        assert read_back(package.read(citation.part).decode("utf-8")[citation.src_start:citation.src_end]) == quote
    assert fsck(tmp_path / "idx") == []


@pytest.mark.spawns
@pytest.mark.hostile("a legacy .doc where LibreOffice is not installed", "error row: naming LibreOffice; the build says once that office layout was skipped")
def test_without_libreoffice_the_build_says_so_once_and_a_legacy_file_is_an_error_row(tmp_path):
    docx = pytest.importorskip("docx")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("a.docx", "b.docx"):
        document = docx.Document()
        document.add_paragraph(f"The text of {name} is indexed with its part ranges.")
        document.save(corpus / name)
    (corpus / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    environment = {**os.environ, "PATH": str(empty_path)}
    done = subprocess.run(spanindex_command("build", corpus, "--index", tmp_path / "idx", "--workers", "1",
                                            test_embedder=True), capture_output=True, text=True, env=environment,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert out.count("office layout skipped (no LibreOffice (soffice) on PATH)") == 1, out
    idx = index.open(tmp_path / "idx", embedder=HashingEmbedder())
    assert idx.document("a.docx").status.value == "ok" and idx.manifest.office_layout == ""
    old = idx.document("old.doc")
    assert old.status.value == "error" and "LibreOffice" in old.error


@needs_libreoffice
def test_the_server_serves_a_rendered_office_page_and_no_page_past_the_last(office_index):
    from fastapi.testclient import TestClient

    from index.viewer.server.app import create_app

    doc = next(d for d in office_index.documents() if d.media_type is MediaType.DOCX and d.n_pages >= 1)
    client = TestClient(create_app(office_index.paths.root, embedder=HashingEmbedder()), base_url="http://127.0.0.1")
    image = client.get(f"/documents/{doc.doc_id}/pages/1.png")
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    assert client.get(f"/documents/{doc.doc_id}/pages/{doc.n_pages + 1}.png").status_code == 404
    sheet = next(d for d in office_index.documents() if d.media_type is MediaType.XLSX)
    assert client.get(f"/documents/{sheet.doc_id}/pages/1.png").status_code == 404  # sheets are not rendered
