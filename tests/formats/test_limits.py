"""The limits a build enforces (schemas.limits): a file over one is an error row with the reason,
the batch carries on, and a file at the limit is indexed. Both sides of each, with the defaults
and with the options that raise or lower them. (The limits on answers: test_hostile_answers.py.)"""

from __future__ import annotations

import pytest

import index
from ingest.formats.parse import parse_document
from schemas.limits import MAX_DOC_CHARS, MAX_PDF_PAGES, MIB, DocumentLimits
from schemas.records import DocStatus, MediaType

from conftest import spanindex
from doubles import HashingEmbedder


def blank_pdf(pages: int) -> bytes:
    """A valid PDF of ``pages`` empty pages, written directly (PyMuPDF takes ~3 ms a page)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Count %d /Kids [%s] >>" % (pages, b" ".join(b"%d 0 R" % (3 + i) for i in range(pages)))]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"] * pages
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def text_pdf(pages: int) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for number in range(pages):
        doc.new_page().insert_text((50, 100), f"Page {number + 1} of the limits test.")
    return doc.tobytes()


def _text_of(n_chars: int) -> bytes:
    return (b"word " * (n_chars // 5 + 1))[:n_chars]


# -- the defaults, both sides ---------------------------------------------------------------------


@pytest.mark.hostile("a PDF of 10,001 pages (the default page limit is 10,000)",
                     "error row: '10,001 pages, over the limit of 10,000 (--max-pages)', refused before any page is read")
def test_a_pdf_over_the_default_page_limit_is_an_error_row_and_one_at_it_is_read():
    over = parse_document(blank_pdf(MAX_PDF_PAGES + 1), "over.pdf", MediaType.PDF)
    assert over.record.status is DocStatus.ERROR and over.parsed is None
    assert over.record.error == "10,001 pages, over the limit of 10,000 (--max-pages)"
    at_limit = parse_document(blank_pdf(MAX_PDF_PAGES), "at.pdf", MediaType.PDF)
    assert at_limit.parsed is not None and at_limit.record.n_pages == MAX_PDF_PAGES
    assert at_limit.record.status is DocStatus.NO_TEXT  # read: blank pages, no text layer


@pytest.mark.hostile("a document of 64,000,001 characters of text (the default limit is 64 million)",
                     "error row: '64,000,001 characters of text, over the limit of 64,000,000 (--max-chars)', before chunking")
def test_a_document_over_the_default_character_limit_is_an_error_row_and_one_at_it_is_read():
    over = parse_document(_text_of(MAX_DOC_CHARS + 1), "over.txt", MediaType.TEXT)
    assert over.record.status is DocStatus.ERROR and over.parsed is None
    assert over.record.error == "64,000,001 characters of text, over the limit of 64,000,000 (--max-chars)"
    at_limit = parse_document(_text_of(MAX_DOC_CHARS), "at.txt", MediaType.TEXT)
    assert at_limit.record.status is DocStatus.OK and at_limit.record.n_chars == MAX_DOC_CHARS


def test_the_limits_of_a_build_are_those_of_the_cli():
    from index.cli import build_parser

    args = build_parser().parse_args(["build", "corpus", "--index", "idx"])
    assert DocumentLimits() == DocumentLimits(args.max_file_mb * MIB, args.max_pages, args.max_chars)


# -- the options, both sides, through `spanindex build` ------------------------------------------------


@pytest.fixture(scope="module")
def limited_build(tmp_path_factory):
    """One build with every limit lowered: for each, a file at the limit and one over it."""
    root = tmp_path_factory.mktemp("limits")
    corpus = root / "corpus"
    corpus.mkdir()
    # 1 MiB exactly, of which little is text: the comment pads it.
    page = b"<html><body><p>A page exactly at the size limit.</p><!-- "
    (corpus / "size-at.html").write_bytes(page + b"x" * (MIB - len(page) - 4) + b" -->")
    (corpus / "size-over.txt").write_bytes(b"y" * (MIB + 1))
    with open(corpus / "size-sparse.txt", "wb") as sparse:  # 4 GiB that take no disk: never read
        sparse.truncate(4 * 1024 * MIB)
    (corpus / "pages-at.pdf").write_bytes(text_pdf(3))
    (corpus / "pages-over.pdf").write_bytes(text_pdf(4))
    (corpus / "chars-at.txt").write_bytes(_text_of(1000))
    (corpus / "chars-over.txt").write_bytes(_text_of(1001))
    run = spanindex("build", corpus, "--index", root / "idx", "--workers", "1", "--quiet",
                    "--max-file-mb", "1", "--max-pages", "3", "--max-chars", "1000", test_embedder=True)
    assert run.returncode == 0, run.stderr
    docs = {d.doc_id: d for d in index.open(root / "idx", embedder=HashingEmbedder()).documents()}
    return run.stdout, docs


def _refused(limited_build, doc_id: str, reason: str) -> None:
    stdout, docs = limited_build
    assert docs[doc_id].status is DocStatus.ERROR and docs[doc_id].error == reason
    assert any(line.split()[:2] == [doc_id, "error"] and line.endswith(reason) for line in stdout.splitlines()), stdout


@pytest.mark.spawns
@pytest.mark.hostile("a file over --max-file-mb (1 MiB + 1 byte; a sparse 4 GiB file)",
                     "error row: 'file too large: N bytes, the limit is 1,048,576 (--max-file-mb)', never read; a file of exactly 1 MiB is indexed")
def test_a_file_over_the_size_limit_is_an_error_row_never_read(limited_build):
    _refused(limited_build, "size-over.txt", "file too large: 1,048,577 bytes, the limit is 1,048,576 (--max-file-mb)")
    _refused(limited_build, "size-sparse.txt", "file too large: 4,294,967,296 bytes, the limit is 1,048,576 (--max-file-mb)")
    assert limited_build[1]["size-at.html"].status is DocStatus.OK


@pytest.mark.spawns
@pytest.mark.hostile("a PDF over --max-pages (4 pages, the limit set to 3)",
                     "error row: '4 pages, over the limit of 3 (--max-pages)'; a PDF of 3 pages is indexed")
def test_a_pdf_over_the_page_limit_is_an_error_row(limited_build):
    _refused(limited_build, "pages-over.pdf", "4 pages, over the limit of 3 (--max-pages)")
    assert limited_build[1]["pages-at.pdf"].status is DocStatus.OK and limited_build[1]["pages-at.pdf"].n_pages == 3


@pytest.mark.spawns
@pytest.mark.hostile("a document over --max-chars (1,001 characters, the limit set to 1,000)",
                     "error row: '1,001 characters of text, over the limit of 1,000 (--max-chars)'; one of 1,000 is indexed")
def test_a_document_over_the_character_limit_is_an_error_row(limited_build):
    _refused(limited_build, "chars-over.txt", "1,001 characters of text, over the limit of 1,000 (--max-chars)")
    assert limited_build[1]["chars-at.txt"].status is DocStatus.OK and limited_build[1]["chars-at.txt"].n_chars == 1000
