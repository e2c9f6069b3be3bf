"""Offset invariants of a built index, over every document of sample_corpus/ and ../shared/corpus/.

What is checked is what was stored: the Parquet tables and texts read back,
compared with the original files by independent means (PyMuPDF's own
get_textbox, html.unescape, the model's tokenizer).
"""

from __future__ import annotations

import hashlib
import html
import random
import unicodedata

import pymupdf
import pytest

import index
from ingest.formats.parse import media_type_of
from ingest.text.chunker import embed_text
from schemas.records import DocStatus, MediaType, RunKind

from conftest import SHARED_CORPUS


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _ok_documents(idx):
    return [d for d in idx.documents() if d.status is DocStatus.OK]


def test_every_chunk_is_an_exact_slice_of_its_stored_document_text(built):
    idx, _ = built
    checked = 0
    for doc in _ok_documents(idx):
        text = idx.doc_text(doc.doc_version)
        chunks = idx.chunks_of(doc.doc_id)
        assert chunks, f"{doc.doc_id} is ok but has no chunks"
        for chunk in chunks:
            assert chunk.text == text[chunk.start : chunk.end], chunk.chunk_id
            assert chunk.text_sha256 == hashlib.sha256(chunk.text.encode()).hexdigest()
            assert chunk.chunk_id == f"{doc.doc_id}#tok:{chunk.token_start}"
            assert chunk.doc_version == doc.doc_version
            checked += 1
    assert checked > 0


def test_doc_version_is_the_sha256_of_the_stored_text(built):
    idx, _ = built
    for doc in _ok_documents(idx):
        text = idx.doc_text(doc.doc_version)
        assert doc.doc_version == "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert doc.n_chars == len(text)


def test_no_chunk_exceeds_the_model_token_limit(built, tokenizer):
    idx, _ = built
    limit = idx.manifest.chunker.max_tokens
    for doc in _ok_documents(idx):
        chunks = idx.chunks_of(doc.doc_id)
        text, hidden = idx.doc_text(doc.doc_version), idx.hidden_text(doc.doc_id)
        # What the model embeds: the chunk without its hidden text.
        encodings = tokenizer.encode_batch([embed_text(hidden.visible(text, c.start, c.end)) for c in chunks])
        for chunk, encoding in zip(chunks, encodings):
            assert len(encoding.ids) == chunk.n_tokens <= limit, chunk.chunk_id


def test_every_real_pdf_character_has_a_box_on_its_page_that_pymupdf_reads_back(built):
    idx, root = built
    rng = random.Random(1)
    pdfs = [d for d in _ok_documents(idx) if d.media_type is MediaType.PDF]
    assert pdfs
    for doc in pdfs:
        text = idx.doc_text(doc.doc_version)
        pages = {p.page: p for p in idx.pdf_pages(doc.doc_id)}
        runs = idx.pdf_char_runs(doc.doc_id)
        with pymupdf.open(root / doc.doc_id) as pdf:
            per_page: dict[int, list[tuple[int, object]]] = {}
            for run in runs:
                page = pages[run.page]
                assert page.start <= run.start < run.end <= page.end, f"{doc.doc_id}: run outside its page"
                for i, box in zip(range(run.start, run.end), run.glyph_boxes):
                    x0, y0, x1, y1 = (float(v) for v in box)
                    tol = 1.0
                    assert -tol <= x0 <= x1 <= page.width + tol and -tol <= y0 <= y1 <= page.height + tol, (
                        f"{doc.doc_id} p{run.page} char {i} {text[i]!r} box {box} outside {page.width}x{page.height}"
                    )
                    if not text[i].isspace() and not page.ocr:  # an OCR page has no text layer to read
                        per_page.setdefault(run.page, []).append((i, box))
            # get_textbox extracts the whole page per call (~25 us per glyph on it): sample
            # characters per document; tests/test_pdf_parser.py checks every page's rule in bulk.
            sampled = rng.sample([(p, i, b) for p, chars in per_page.items() for i, b in chars], min(24, sum(map(len, per_page.values()))))
            loaded = {}  # page objects must outlive their text pages
            for page_number, i, box in sampled:
                if page_number not in loaded:
                    loaded[page_number] = (pdf[page_number - 1],)
                    loaded[page_number] += (loaded[page_number][0].get_textpage(),)
                page, textpage = loaded[page_number]
                rect = pymupdf.Rect(*(float(v) for v in box)) * page.derotation_matrix
                found = page.get_textbox(rect + (-0.5, -0.5, 0.5, 0.5), textpage=textpage)
                # get_textbox expands ligatures and presentation forms; compare NFKC forms.
                assert _nfkc(text[i]) in _nfkc(found), f"{doc.doc_id} p{page_number}: {text[i]!r} not in {found!r}"


def test_pdf_page_separators_and_slices_agree(built):
    idx, _ = built
    for doc in _ok_documents(idx):
        if doc.media_type is not MediaType.PDF:
            continue
        text = idx.doc_text(doc.doc_version)
        pages = idx.pdf_pages(doc.doc_id)
        assert len(pages) == doc.n_pages == text.count("\f") + 1
        for before, after in zip(pages, pages[1:]):
            assert text[before.end : after.start] == "\f"


def test_html_text_runs_are_verbatim_source_and_entities_unescape(built):
    idx, _ = built
    htmls = [d for d in _ok_documents(idx) if d.media_type is MediaType.HTML]
    assert htmls
    for doc in htmls:
        text = idx.doc_text(doc.doc_version)
        source = idx.decoded_source(doc.doc_id)
        runs = idx.html_runs(doc.doc_id)
        assert runs[0].start == 0 and runs[-1].end == len(text)
        for before, after in zip(runs, runs[1:]):
            assert before.end == after.start, f"{doc.doc_id}: gap in the source map at {before.end}"
        for run in runs:
            piece, src = text[run.start : run.end], source[run.src_start : run.src_end]
            if run.kind is RunKind.TEXT:
                assert src == piece, f"{doc.doc_id} [{run.start}:{run.end}]"
            elif run.kind is RunKind.ENTITY:
                assert html.unescape(src) == piece, f"{doc.doc_id}: {src!r} -> {piece!r}"
            elif run.kind is RunKind.WHITESPACE:
                assert src and not src.strip() and not piece.strip()
            else:
                assert run.src_start == run.src_end


@pytest.mark.hostile('sample_corpus/bad/: a truncated PDF, an encrypted PDF, an empty file, binary junk named .html', "error row: each with its reason ('password' for the encrypted PDF); the batch carries on")
def test_bad_input_is_recorded_and_the_batch_carries_on(sample_index_test_model):
    idx = index.open(sample_index_test_model)
    docs = {d.doc_id: d for d in idx.documents()}
    expected = {
        "bad/truncated.pdf": DocStatus.ERROR,
        "bad/encrypted.pdf": DocStatus.ERROR,
        "bad/empty.txt": DocStatus.EMPTY,
        "bad/junk.html": DocStatus.ERROR,
    }
    for doc_id, status in expected.items():
        assert docs[doc_id].status is status, (doc_id, docs[doc_id])
        assert docs[doc_id].error, f"{doc_id} has no reason"
    assert "password" in docs["bad/encrypted.pdf"].error
    assert "bad/unsupported.xyz" not in docs
    assert sum(d.status is DocStatus.OK for d in docs.values()) >= 10


@pytest.mark.hostile("every file of the shared real-world corpus: broken, fuzzed, scanned and password-protected PDFs, mis-encoded HTML", "error row: each document indexed, or an error or no_text row with its reason")
@pytest.mark.spawns
def test_shared_corpus_documents_are_indexed_or_say_why(shared_index):
    idx = index.open(shared_index)
    files = sorted(p.relative_to(SHARED_CORPUS).as_posix() for p in SHARED_CORPUS.rglob("*") if media_type_of(p.name))
    docs = {d.doc_id: d for d in idx.documents()}
    assert sorted(docs) == files
    for doc in docs.values():
        assert doc.status is DocStatus.OK or doc.error, doc
    scan = docs["pdf/pymupdf__test_4034.pdf"]  # a scan without a text layer
    if idx.generation.manifest.ocr == "off":  # no Tesseract where the index was built
        assert scan.status is DocStatus.NO_TEXT
    else:
        assert scan.status is DocStatus.OK and scan.n_chunks > 0 and scan.pages_without_text == 0
        assert all(page.ocr for page in idx.pdf_pages(scan.doc_id))
    assert docs["pdf/libreoffice-writer-password.pdf"].status is DocStatus.ERROR
