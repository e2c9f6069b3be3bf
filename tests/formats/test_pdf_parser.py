"""Invariants of ingest.formats.pdf.parser.parse_pdf, over every corpus PDF and over PDFs made here.

Corpus PDFs come from ../shared/corpus/pdf (optional: its tests skip when it is absent)
and sample_corpus/ (files under bad/ must raise). The PDFs made here pin down rotation,
cropboxes, ligatures, separators, labels, encryption and broken input.
"""

from __future__ import annotations

import functools
import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ingest.formats.pdf.parser as pdf_module
from ingest.formats.pdf.parser import PAGE_SEPARATOR, TEXT_FLAGS, parse_pdf
from schemas.errors import CorruptDocumentError, DocumentError, EncryptedDocumentError
from schemas.records import MediaType, ParsedDocument

from conftest import ROOT, SAMPLE_CORPUS, SHARED_CORPUS, examples

CORPUS_PDF = SHARED_CORPUS / "pdf"
DEJAVU_SANS = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")

BOX_TOLERANCE = 0.01  # points
SAMPLE_PER_PAGE = 300  # characters per page for the vectorised round trip
TEXTBOX_CALLS_PER_DOCUMENT = 12  # page.get_textbox costs ~25 µs per character on the page
INK_THRESHOLD = 160  # a grey level darker than this is ink

# Corpus files that must not parse, and what they must raise.
CORPUS_FAILURES = {
    "libreoffice-writer-password.pdf": EncryptedDocumentError,
    "pdfjs__poppler-85140-0.pdf": CorruptDocumentError,
}
FUZZED = "pdfjs__PDFBOX-3148-2-fuzzed.pdf"
SCANNED = "pymupdf__test_4034.pdf"
ROTATED = "pdfplumber__senate-expenditures.pdf"
TWO_COLUMN = "unstructured__dpr-multi-column.pdf"
FAKE_BOLD = "pdfplumber__issue-71-duplicate-chars.pdf"
UNSAFE = re.compile("[\f\ud800-\udfff]")


def corpus_pdfs(*, parsable: bool) -> list:
    """PDFs of the shared corpus and of sample_corpus/ as test parameters.

    ``parsable=True``: those that must parse; ``False``: those that must raise.
    """
    shared = sorted(CORPUS_PDF.glob("*.pdf")) if CORPUS_PDF.is_dir() else []
    sample = sorted(SAMPLE_CORPUS.rglob("*.pdf")) if SAMPLE_CORPUS.is_dir() else []
    paths = [p for p in shared if p.name != FUZZED and (p.name not in CORPUS_FAILURES) == parsable]
    paths += [p for p in sample if ("bad" not in p.relative_to(SAMPLE_CORPUS).parts) == parsable]
    return as_params(paths)


def rotated_corpus_pdfs() -> list:
    """The parsable corpus PDFs with at least one rotated page."""
    rotated = []
    for param in corpus_pdfs(parsable=True):
        path = param.values[0]
        if path is not None:
            with pymupdf.open(path) as doc:
                if any(page.rotation for page in doc):
                    rotated.append(path)
    return as_params(rotated)


def as_params(paths: list[Path]) -> list:
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no such corpus PDFs"))]
    return [pytest.param(p, id=_test_id(p)) for p in paths]


def _test_id(path: Path) -> str:
    for base in (SHARED_CORPUS.parent.parent, ROOT.parent):  # shared/corpus/..., sample_corpus/...
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return path.name


def corpus_file(name: str) -> Path:
    path = CORPUS_PDF / name
    if not path.is_file():
        pytest.skip(f"corpus file {name} is absent")
    return path


@functools.cache
def parse_file(path: Path) -> ParsedDocument | DocumentError:
    try:
        return parse_pdf(path.read_bytes(), path.name)
    except DocumentError as exc:
        return exc


def parsed_corpus_document(path: Path) -> tuple[ParsedDocument, pymupdf.Document]:
    parsed = parse_file(path)
    assert isinstance(parsed, ParsedDocument), f"{path.name}: {parsed!r}"
    assert not [w for w in parsed.warnings if "could not extract text" in w]
    return parsed, pymupdf.open(path)


# --- helpers: the invariants -------------------------------------------------------------


def mupdf_real_characters(page: pymupdf.Page) -> list[tuple[str, tuple[float, ...]]]:
    """MuPDF's own non-synthetic characters of a page (unrotated space), in its order."""
    raw = page.get_text("rawdict", flags=TEXT_FLAGS)
    return [
        (UNSAFE.sub("\ufffd", char["c"]), char["bbox"])
        for block in raw["blocks"]
        if block["type"] == 0
        for line in block["lines"]
        for span in line["spans"]
        for char in span["chars"]
        if not char["synthetic"]
    ]


def assert_document_invariants(parsed: ParsedDocument, doc: pymupdf.Document) -> None:
    text = parsed.text
    text.encode("utf-8")  # doc_version and Parquet need valid UTF-8
    assert parsed.media_type is MediaType.PDF
    assert parsed.n_pages == doc.page_count
    assert text.count(PAGE_SEPARATOR) == parsed.n_pages - 1

    next_start = 0
    for number, page in enumerate(parsed.pages, start=1):
        assert page.page == number
        assert page.start == next_start <= page.end
        assert PAGE_SEPARATOR not in text[page.start : page.end]
        if number < parsed.n_pages:
            assert text[page.end] == PAGE_SEPARATOR
        next_start = page.end + 1
    assert parsed.pages[-1].end == len(text)

    covered = np.zeros(len(text), dtype=bool)
    previous_end = 0
    real_by_page: dict[int, list[str]] = {}
    for run in parsed.char_runs:
        page = parsed.pages[run.page - 1]
        assert previous_end <= run.start < run.end <= len(text), "runs sorted, disjoint, non-empty"
        assert page.start <= run.start and run.end <= page.end, "a run lies on its page"
        boxes = run.glyph_boxes
        assert boxes.dtype == np.float32 and boxes.shape == (run.end - run.start, 4)
        assert np.isfinite(boxes).all()
        assert (boxes[:, 0] <= boxes[:, 2]).all() and (boxes[:, 1] <= boxes[:, 3]).all()
        assert (boxes[:, :2] >= -BOX_TOLERANCE).all(), "inside the displayed page"
        assert (boxes[:, 2] <= page.width + BOX_TOLERANCE).all()
        assert (boxes[:, 3] <= page.height + BOX_TOLERANCE).all()
        covered[run.start : run.end] = True
        previous_end = run.end
        real_by_page.setdefault(run.page, []).append(text[run.start : run.end])

    boxless = [
        (i, ch) for i, ch in enumerate(text) if not covered[i] and not ch.isspace()
    ]
    assert not boxless[:5], "every non-whitespace character has a box"
    assert not covered[[i for i, ch in enumerate(text) if ch == PAGE_SEPARATOR]].any()

    for page in parsed.pages:
        real = "".join(real_by_page.get(page.page, []))
        assert page.has_text == (real.strip() != "")
        # Runs hold exactly MuPDF's non-synthetic characters, in its order: no synthetic
        # separator inside a run, no real character left out.
        expected = "".join(ch for ch, _ in mupdf_real_characters(doc[page.page - 1]))
        assert real == expected, f"page {page.page}"


def real_characters(parsed: ParsedDocument, page_number: int) -> list[tuple[int, np.ndarray]]:
    """(offset, displayed box) of every real non-whitespace character of a page."""
    return [
        (run.start + i, run.glyph_boxes[i])
        for run in parsed.char_runs
        if run.page == page_number
        for i in range(run.end - run.start)
        if not parsed.text[run.start + i].isspace()
    ]


def unrotated_rect(box: np.ndarray, page: pymupdf.Page) -> pymupdf.Rect:
    """The displayed-space box mapped back into MuPDF's unrotated text space."""
    rect = pymupdf.Rect(*box.tolist()) * page.derotation_matrix
    if rect.width < 0.01 or rect.height < 0.01:  # zero-advance glyphs: combining marks, ...
        rect = pymupdf.Rect(rect.x0 - 0.05, rect.y0 - 0.05, rect.x1 + 0.05, rect.y1 + 0.05)
    return rect


def assert_round_trip_through_mupdf(
    parsed: ParsedDocument, doc: pymupdf.Document, per_page: int, seed: int = 7
) -> None:
    """Each sampled character is among those MuPDF finds inside its box (get_textbox's rule).

    page.get_textbox keeps every character whose bbox overlaps the rectangle; it walks
    the page in Python, so this applies the same rule with numpy to a fresh extraction.
    """
    for page_info in parsed.pages:
        sample = real_characters(parsed, page_info.page)
        if not sample:
            continue
        sample = random.Random(seed * 1000 + page_info.page).sample(
            sample, min(per_page, len(sample))
        )
        page = doc[page_info.page - 1]
        mupdf_chars = mupdf_real_characters(page)
        letters = np.array([ch for ch, _ in mupdf_chars])
        glyphs = np.array([bbox for _, bbox in mupdf_chars], dtype=np.float64).reshape(-1, 4)
        rects = np.array([tuple(unrotated_rect(box, page)) for _, box in sample])
        overlaps = ~(
            (rects[:, None, 0] >= glyphs[None, :, 2])
            | (rects[:, None, 1] >= glyphs[None, :, 3])
            | (rects[:, None, 2] <= glyphs[None, :, 0])
            | (rects[:, None, 3] <= glyphs[None, :, 1])
        )
        wanted = np.array([parsed.text[offset] for offset, _ in sample])
        found = (overlaps & (letters[None, :] == wanted[:, None])).any(axis=1)
        missing = [(sample[i][0], wanted[i]) for i in np.flatnonzero(~found)]
        assert not missing[:5], f"page {page_info.page}: {len(missing)} characters not found"


def assert_textbox_finds_characters(
    parsed: ParsedDocument, doc: pymupdf.Document, limit: int | None, seed: int = 11
) -> None:
    """page.get_textbox(box mapped back to unrotated space) contains the character."""
    sample = [
        (page.page, offset, box)
        for page in parsed.pages
        for offset, box in real_characters(parsed, page.page)
    ]
    if limit is not None:
        sample = random.Random(seed).sample(sample, min(limit, len(sample)))
    pages: dict[int, tuple[pymupdf.Page, pymupdf.TextPage]] = {}  # a TextPage needs its Page alive
    for page_number, offset, box in sample:
        if page_number not in pages:
            page = doc[page_number - 1]
            pages[page_number] = (page, page.get_textpage(flags=TEXT_FLAGS))
        page, textpage = pages[page_number]
        found = UNSAFE.sub("\ufffd", page.get_textbox(unrotated_rect(box, page), textpage=textpage))
        assert parsed.text[offset] in found, (page_number, offset, parsed.text[offset], found)


def rendered_grey(page: pymupdf.Page, zoom: float) -> np.ndarray:
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    # A viewer places boxes by scaling alone: the image is the displayed page, scaled.
    assert abs(pix.width - page.rect.width * zoom) <= 1
    assert abs(pix.height - page.rect.height * zoom) <= 1
    grey = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)
    return grey[:, : pix.width]


def ink_under(grey: np.ndarray, box, zoom: float) -> bool:
    x0, y0, x1, y1 = (float(v) * zoom for v in box)
    region = grey[
        max(int(np.floor(y0)), 0) : int(np.ceil(y1)) + 1,
        max(int(np.floor(x0)), 0) : int(np.ceil(x1)) + 1,
    ]
    return region.size > 0 and int(region.min()) < INK_THRESHOLD


def assert_boxes_on_ink(
    parsed: ParsedDocument, doc: pymupdf.Document, zoom: float = 2.0, pages: list[int] | None = None
) -> None:
    for page_info in parsed.pages:
        if pages is not None and page_info.page not in pages:
            continue
        characters = real_characters(parsed, page_info.page)
        if not characters:
            continue
        grey = rendered_grey(doc[page_info.page - 1], zoom)
        blank = [offset for offset, box in characters if not ink_under(grey, box, zoom)]
        assert not blank[:5], f"page {page_info.page}: {len(blank)} boxes over blank paper"


# --- helpers: making PDFs ----------------------------------------------------------------


def pdf_bytes(doc: pymupdf.Document) -> bytes:
    data = doc.tobytes()
    doc.close()
    return data


def page_with_content(content: bytes, width: float = 400, height: float = 300) -> bytes:
    """One page whose content stream is `content`, with Helvetica as /helv."""
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    page.insert_text((40, 60), "x", fontname="helv")  # registers the font resource
    doc.update_stream(page.get_contents()[0], content)
    return pdf_bytes(doc)


def reopen(data: bytes) -> pymupdf.Document:
    return pymupdf.open(stream=data, filetype="pdf")


# --- the shared corpus ------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_pdfs(parsable=True))
def test_corpus_runs_cover_every_real_character_exactly_once(path: Path) -> None:
    parsed, doc = parsed_corpus_document(path)
    assert_document_invariants(parsed, doc)


@pytest.mark.parametrize("path", corpus_pdfs(parsable=True))
def test_corpus_boxes_round_trip_to_the_same_character_in_mupdf(path: Path) -> None:
    parsed, doc = parsed_corpus_document(path)
    assert_round_trip_through_mupdf(parsed, doc, per_page=SAMPLE_PER_PAGE)
    assert_textbox_finds_characters(parsed, doc, limit=TEXTBOX_CALLS_PER_DOCUMENT)


@pytest.mark.hostile("corpus PDFs that cannot be parsed (encrypted, truncated, broken)", "error row: a DocumentError of the expected kind, naming the document")
@pytest.mark.parametrize("path", corpus_pdfs(parsable=False))
def test_corpus_failures_raise_a_document_error(path: Path) -> None:
    failure = parse_file(path)
    assert isinstance(failure, CORPUS_FAILURES.get(path.name, DocumentError)), failure
    assert failure.doc_id == path.name


@pytest.mark.parametrize("path", rotated_corpus_pdfs())
def test_corpus_rotated_pages_boxes_land_on_rendered_glyphs(path: Path) -> None:
    parsed, doc = parsed_corpus_document(path)
    rotated = [p.page for p in parsed.pages if p.rotation and p.has_text]
    for number in rotated:
        page = parsed.pages[number - 1]
        shown = doc[number - 1].rect
        assert (page.width, page.height) == (shown.width, shown.height)
    assert_boxes_on_ink(parsed, doc, pages=rotated)


def test_rotated_corpus_page_boxes_lie_in_mupdf_words_rotated_onto_the_page() -> None:
    parsed, doc = parsed_corpus_document(corpus_file(ROTATED))
    assert parsed.pages[0].rotation == 90  # the rendered-ink check runs over it as well
    page = doc[0]
    words = np.array(
        [tuple(pymupdf.Rect(w[:4]) * page.rotation_matrix) for w in page.get_text("words")]
    )
    for offset, box in real_characters(parsed, 1):
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        inside = (words[:, 0] <= cx) & (cx <= words[:, 2])
        inside &= (words[:, 1] <= cy) & (cy <= words[:, 3])
        assert inside.any(), (offset, parsed.text[offset])


def test_scanned_corpus_document_has_no_text_layer() -> None:
    corpus_file(SCANNED)
    parsed = parse_file(CORPUS_PDF / SCANNED)
    assert isinstance(parsed, ParsedDocument)
    assert parsed.pages_without_text == parsed.n_pages > 0
    assert parsed.text == PAGE_SEPARATOR * (parsed.n_pages - 1)
    assert parsed.char_runs == ()
    assert f"{parsed.n_pages} of {parsed.n_pages} pages have no text layer: 1, 2" in parsed.warnings


@pytest.mark.hostile('a fuzzed PDF (shared corpus)', "error row: CorruptDocumentError, or no text with MuPDF's warnings as valid text")
def test_fuzzed_corpus_document_fails_cleanly_or_yields_no_text_with_warnings() -> None:
    corpus_file(FUZZED)
    parsed = parse_file(CORPUS_PDF / FUZZED)
    if isinstance(parsed, DocumentError):
        assert isinstance(parsed, CorruptDocumentError)
        return
    assert parsed.pages_without_text == parsed.n_pages
    assert any(w.startswith("mupdf: ") for w in parsed.warnings)
    for warning in parsed.warnings:
        warning.encode("utf-8")  # MuPDF quotes raw bytes; warnings must still be valid text


def test_two_column_paper_keeps_ligatures_and_line_end_hyphens() -> None:
    corpus_file(TWO_COLUMN)
    parsed = parse_file(CORPUS_PDF / TWO_COLUMN)
    assert isinstance(parsed, ParsedDocument)
    assert parsed.text.count("\ufb01") > 10  # ﬁ, one character
    assert re.search(r"[a-z]-\n[a-z]", parsed.text), "hyphen at a line end kept"
    assert "\x13" in parsed.text or "\x17" in parsed.text, "control characters kept as given"


def test_fake_bold_duplicates_are_collapsed_by_mupdf() -> None:
    path = corpus_file(FAKE_BOLD)
    parsed = parse_file(CORPUS_PDF / FAKE_BOLD)
    assert isinstance(parsed, ParsedDocument)
    drawn = sum(len(span["chars"]) for page in pymupdf.open(path) for span in page.get_texttrace())
    real = sum(run.end - run.start for run in parsed.char_runs)
    assert real < drawn
    assert "本科" in parsed.text and "本本" not in parsed.text


# --- PDFs made here ---------------------------------------------------------------------


def test_synthetic_space_separates_runs_and_has_no_box() -> None:
    data = page_with_content(b"BT /helv 12 Tf 40 240 Td [(Hello) -500 (World)] TJ ET")
    parsed = parse_pdf(data, "s.pdf")
    assert parsed.text == "Hello World"
    assert [(r.start, r.end) for r in parsed.char_runs] == [(0, 5), (6, 11)]
    assert_document_invariants(parsed, reopen(data))


def test_real_space_glyph_stays_inside_its_run() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Hi there")
    data = pdf_bytes(doc)
    parsed = parse_pdf(data, "hi.pdf")
    assert parsed.text == "Hi there"
    assert [(r.start, r.end) for r in parsed.char_runs] == [(0, 8)]
    assert_document_invariants(parsed, reopen(data))


def test_lines_are_joined_by_newline_and_blocks_by_blank_line() -> None:
    content = (
        b"BT /helv 12 Tf 40 250 Td (first line) Tj 0 -14 Td (second line) Tj ET "
        b"BT /helv 12 Tf 40 80 Td (far block) Tj ET"
    )
    data = page_with_content(content)
    parsed = parse_pdf(data, "blocks.pdf")
    assert parsed.text == "first line\nsecond line\n\nfar block"
    assert_document_invariants(parsed, reopen(data))


def test_page_separators_delimit_pages_and_labels_are_read() -> None:
    doc = pymupdf.open()
    for number in range(4):
        page = doc.new_page(width=300, height=400)
        if number != 1:  # page 2 stays blank
            page.insert_text((50, 100), f"Page number {number + 1}")
    doc.set_page_labels(
        [
            {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
            {"startpage": 2, "prefix": "A-", "style": "D", "firstpagenum": 1},
        ]
    )
    data = pdf_bytes(doc)
    parsed = parse_pdf(data, "labels.pdf")
    assert parsed.text == "Page number 1\f\fPage number 3\fPage number 4"
    assert [p.label for p in parsed.pages] == ["i", "ii", "A-1", "A-2"]
    assert [p.has_text for p in parsed.pages] == [True, False, True, True]
    assert parsed.text[parsed.pages[2].start : parsed.pages[2].end] == "Page number 3"
    assert "1 of 4 pages have no text layer: 2" in parsed.warnings
    assert_document_invariants(parsed, reopen(data))


def test_pages_without_labels_have_empty_label() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 100), "no labels here")
    assert parse_pdf(pdf_bytes(doc), "x.pdf").pages[0].label == ""


@pytest.mark.parametrize("rotate", ["90", "180", "270", "-90", "450", "45"])
def test_rotated_page_boxes_land_on_rendered_glyphs(rotate: str) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    page.insert_text((100, 150), "Rotated page, top left", fontsize=24)
    page.insert_text((300, 650), "and lower right", fontsize=24)
    doc.xref_set_key(page.xref, "Rotate", rotate)  # raw /Rotate, odd values included
    data = pdf_bytes(doc)
    parsed = parse_pdf(data, "rotated.pdf")
    shown = reopen(data)
    page_info = parsed.pages[0]
    if rotate != "45":  # PyMuPDF reports 0 for /Rotate 45, MuPDF renders it as 90
        assert page_info.rotation == int(rotate) % 360
    expected_size = (600, 800) if rotate == "180" else (800, 600)
    assert (page_info.width, page_info.height) == expected_size
    assert_document_invariants(parsed, shown)
    assert_boxes_on_ink(parsed, shown)
    assert_textbox_finds_characters(parsed, shown, limit=None)
    if rotate != "45":  # the same boxes left unrotated would miss the glyphs: the test can fail
        grey = rendered_grey(shown[0], 2.0)
        unrotated = [
            tuple(pymupdf.Rect(*box.tolist()) * shown[0].derotation_matrix)
            for _, box in real_characters(parsed, 1)
        ]
        assert not all(ink_under(grey, box, 2.0) for box in unrotated)


@pytest.mark.parametrize("rotation", [0, 90])
def test_boxes_are_relative_to_the_visible_cropbox(rotation: int) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    page.insert_text((300, 400), "VISIBLE", fontsize=20)
    page.insert_text((20, 60), "HIDDEN", fontsize=20)  # outside the cropbox
    page.insert_text((140, 300), "Edge", fontsize=30)  # straddles its left edge
    page.set_cropbox(pymupdf.Rect(150, 150, 550, 700))
    page.set_rotation(rotation)
    data = pdf_bytes(doc)
    parsed = parse_pdf(data, "cropped.pdf")
    shown = reopen(data)
    assert "HIDDEN" not in parsed.text and "VISIBLE" in parsed.text
    page_info = parsed.pages[0]
    assert (page_info.width, page_info.height) == ((400, 550) if rotation == 0 else (550, 400))
    assert_document_invariants(parsed, shown)
    assert_boxes_on_ink(parsed, shown)
    assert_textbox_finds_characters(parsed, shown, limit=None)
    v = parsed.text.index("VISIBLE")
    run = next(r for r in parsed.char_runs if r.start <= v < r.end)
    box = run.glyph_boxes[v - run.start]
    if rotation == 0:  # text origin (300, 400) in the mediabox is (150, 250) in the cropbox
        assert abs(box[0] - 150) < 0.5 and box[1] < 250 < box[3]
    else:  # rotated 90 clockwise: x' = cropbox height - y, y' = x
        assert abs(box[1] - 150) < 0.5 and box[0] < 550 - 250 < box[2]


@pytest.mark.skipif(not DEJAVU_SANS.is_file(), reason="DejaVuSans.ttf is not installed")
def test_ligature_glyph_stays_one_character_with_one_box() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_font(fontname="dejavu", fontfile=str(DEJAVU_SANS))
    page.insert_text((40, 60), "the \ufb01rst \ufb02ow", fontname="dejavu", fontsize=20)
    data = pdf_bytes(doc)
    parsed = parse_pdf(data, "ligature.pdf")
    assert parsed.text == "the \ufb01rst \ufb02ow"
    assert sum(run.end - run.start for run in parsed.char_runs) == len(parsed.text)
    assert_document_invariants(parsed, reopen(data))
    assert_textbox_finds_characters(parsed, reopen(data), limit=None)


@pytest.mark.hostile("a PDF whose ToUnicode map yields lone surrogates and form feeds", "handled: U+FFFD in their place with a warning; every invariant holds")
def test_surrogates_and_form_feeds_from_the_text_layer_become_replacement_characters() -> None:
    # A ToUnicode map that sends glyph 'B' to a lone surrogate and 'E' to U+FFFD.
    data = page_with_content(b"BT /helv 20 Tf 40 200 Td (ABCDE) Tj ET")
    doc = reopen(data)
    font_xref = doc[0].get_fonts()[0][0]
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def\n"
        b"1 begincodespacerange <00> <FF> endcodespacerange\n"
        b"3 beginbfchar <41> <000C> <42> <D800> <45> <FFFD> endbfchar\n"
        b"endcmap CMapName currentdict /CMap defineresource pop end end"
    )
    cmap_xref = doc.get_new_xref()
    doc.update_object(cmap_xref, "<<>>")
    doc.update_stream(cmap_xref, cmap)
    doc.xref_set_key(font_xref, "ToUnicode", f"{cmap_xref} 0 R")
    data = pdf_bytes(doc)
    parsed = parse_pdf(data, "unsafe.pdf")
    parsed.doc_version  # noqa: B018 - must not raise on a lone surrogate
    assert "\ud800" not in parsed.text and PAGE_SEPARATOR not in parsed.text
    assert parsed.text.endswith("\ufffdCD\ufffd")
    assert any("replaced by U+FFFD" in w for w in parsed.warnings)
    assert any("no Unicode mapping" in w for w in parsed.warnings)
    assert_document_invariants(parsed, reopen(data))


def test_title_comes_from_metadata_or_is_empty() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 100), "body")
    doc.set_metadata({"title": "  Quarterly report  "})
    assert parse_pdf(pdf_bytes(doc), "t.pdf").title == "Quarterly report"
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 100), "body")
    assert parse_pdf(pdf_bytes(doc), "t.pdf").title == ""


@pytest.mark.hostile('a PDF that needs a user password', "error row: EncryptedDocumentError, 'password'; a PDF with only an owner password is read")
def test_user_password_raises_encrypted_and_owner_password_alone_does_not() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 100), "secret text")
    locked = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    owner_only = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner")
    with pytest.raises(EncryptedDocumentError) as caught:
        parse_pdf(locked, "locked.pdf")
    assert caught.value.doc_id == "locked.pdf"
    assert "password" in caught.value.message
    assert parse_pdf(owner_only, "owner.pdf").text == "secret text"


@pytest.mark.hostile("bytes that are not a PDF named .pdf (empty, garbage, a header only, HTML)", "error row: CorruptDocumentError naming the document")
@pytest.mark.parametrize(
    "source",
    [b"", b"not a pdf at all", b"%PDF-1.7\n", b"<html><body>hello</body></html>"],
    ids=["empty", "garbage", "header-only", "html"],
)
def test_unreadable_bytes_raise_corrupt(source: bytes) -> None:
    with pytest.raises(CorruptDocumentError) as caught:
        parse_pdf(source, "bad.pdf")
    assert caught.value.doc_id == "bad.pdf"


@pytest.mark.hostile("a PDF with zero pages", "error row: CorruptDocumentError")
def test_zero_page_document_raises_corrupt() -> None:
    source = (
        b"%PDF-1.4\n1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n"
        b"2 0 obj <</Type/Pages/Kids[]/Count 0>> endobj\n"
        b"trailer <</Root 1 0 R>>\n%%EOF\n"
    )
    with pytest.raises(CorruptDocumentError):
        parse_pdf(source, "zero.pdf")


@pytest.mark.hostile("a PDF truncated at a third, at half, 40 bytes short", "error row: CorruptDocumentError, or what is left parsed with every invariant")
def test_truncated_pdf_raises_corrupt_or_keeps_invariants() -> None:
    doc = pymupdf.open()
    for number in range(3):
        doc.new_page().insert_text((50, 100), f"page {number + 1} " * 20)
    data = doc.tobytes(garbage=0, deflate=False)
    for cut in (len(data) // 3, len(data) // 2, len(data) - 40):
        try:
            parsed = parse_pdf(data[:cut], "cut.pdf")
        except CorruptDocumentError:
            continue
        assert_document_invariants(parsed, reopen(data[:cut]))


@pytest.mark.hostile("a PDF with one page whose text cannot be extracted", "handled: that page empty with a warning naming it; the other pages read")
def test_failing_page_is_a_warning_when_other_pages_are_fine(monkeypatch) -> None:
    doc = pymupdf.open()
    for number in range(3):
        doc.new_page().insert_text((50, 100), f"page {number + 1}")
    data = pdf_bytes(doc)
    extract = pdf_module._extract_page

    def failing_on_page_two(page):
        if page.number == 1:
            raise RuntimeError("bad content stream")
        return extract(page)

    monkeypatch.setattr(pdf_module, "_extract_page", failing_on_page_two)
    parsed = parse_pdf(data, "pages.pdf")
    assert parsed.text == "page 1\f\fpage 3"
    assert [p.has_text for p in parsed.pages] == [True, False, True]
    assert "page 2: could not extract text: bad content stream" in parsed.warnings


@pytest.mark.hostile("a one-page PDF whose only page cannot be extracted", "error row: CorruptDocumentError naming page 1")
def test_failing_only_page_raises_corrupt_naming_it(monkeypatch) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 100), "only page")
    data = pdf_bytes(doc)

    def failing(page):
        raise RuntimeError("bad content stream")

    monkeypatch.setattr(pdf_module, "_extract_page", failing)
    with pytest.raises(CorruptDocumentError) as caught:
        parse_pdf(data, "one.pdf")
    assert caught.value.page == 1 and "bad content stream" in str(caught.value)


@pytest.mark.hostile('broken PDFs that make MuPDF complain', "handled: nothing printed, MuPDF's settings restored")
def test_parsing_prints_nothing_and_restores_mupdf_settings(capfd) -> None:
    before = (pymupdf.TOOLS.mupdf_display_errors(), pymupdf.TOOLS.mupdf_display_warnings())
    broken = [b"not a pdf", b"%PDF-1.4\n1 0 obj <</Type/Catalog>> endobj\ntrailer <</Root 1 0 R>>"]
    for name in (FUZZED, "pdfjs__poppler-85140-0.pdf"):
        if (CORPUS_PDF / name).is_file():
            broken.append((CORPUS_PDF / name).read_bytes())
    for source in broken:
        try:
            parse_pdf(source, "noisy.pdf")
        except CorruptDocumentError:
            pass
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert (pymupdf.TOOLS.mupdf_display_errors(), pymupdf.TOOLS.mupdf_display_warnings()) == before


@pytest.mark.hostile("empty, garbage, truncated and fuzzed PDFs parsed in a fresh process", "error row: CorruptDocumentError; the process neither crashes nor hangs")
@pytest.mark.spawns
def test_broken_inputs_never_crash_or_hang_the_process(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 100), "truncate me " * 30)
    whole = doc.tobytes(deflate=False)
    inputs = {"empty": b"", "garbage": bytes(range(256)) * 8, "truncated": whole[: len(whole) // 2]}
    for name in (FUZZED, "pdfjs__poppler-85140-0.pdf"):
        if (CORPUS_PDF / name).is_file():
            inputs[name] = (CORPUS_PDF / name).read_bytes()
    for name, data in inputs.items():
        (tmp_path / name).write_bytes(data)
    script = textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        from ingest.formats.pdf.parser import parse_pdf
        from schemas.errors import DocumentError
        outcome = {}
        for path in sorted(Path(sys.argv[1]).iterdir()):
            try:
                outcome[path.name] = "pages=%d" % parse_pdf(path.read_bytes(), path.name).n_pages
            except DocumentError as exc:
                outcome[path.name] = type(exc).__name__
        print(json.dumps(outcome))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["empty"] == "CorruptDocumentError"
    assert outcome["garbage"] == "CorruptDocumentError"
    if "pdfjs__poppler-85140-0.pdf" in outcome:
        assert outcome["pdfjs__poppler-85140-0.pdf"] == "CorruptDocumentError"


@pytest.mark.spawns
def test_parsing_document_after_document_does_not_grow_the_process() -> None:
    """MuPDF's store keeps what it decoded past a document's close (up to 256 MB); a worker that
    parses document after document must not grow with them: the same form, parsed six times in a
    fresh process, ends where its second parse left it (it grew ~6 MB a parse before)."""
    path = CORPUS_PDF / "pdfjs__issue12963.pdf"  # a form whose fonts and widgets MuPDF decodes
    if not path.is_file():
        pytest.skip("../shared/corpus is absent")
    script = textwrap.dedent(
        """
        import json, re, sys
        from pathlib import Path
        from ingest.formats.pdf.parser import parse_pdf
        from schemas.records import OcrMode, OcrSettings
        source, rss = Path(sys.argv[1]).read_bytes(), []
        for _ in range(6):
            parse_pdf(source, "form.pdf", OcrSettings(mode=OcrMode.OFF))
            rss.append(int(re.search(r"VmRSS:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)))
        print(json.dumps(rss))
        """
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    rss_kb = json.loads(done.stdout)
    assert rss_kb[-1] - rss_kb[1] < 4 * 1024, rss_kb


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=30),
        min_size=1,
        max_size=8,
    ),
    rotation=st.sampled_from([0, 90, 180, 270]),
)
def test_inserted_text_comes_back_with_a_box_for_every_character(lines, rotation) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=500, height=400)
    for number, line in enumerate(lines):
        page.insert_text((30, 40 + 40 * number), line, fontsize=14)
    page.set_rotation(rotation)
    data = pdf_bytes(doc)
    parsed = parse_pdf(data, "random.pdf")
    assert "".join(parsed.text.split()) == "".join(lines)
    assert_document_invariants(parsed, reopen(data))
    assert_round_trip_through_mupdf(parsed, reopen(data), per_page=SAMPLE_PER_PAGE)
