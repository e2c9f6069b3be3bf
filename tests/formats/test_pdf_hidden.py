"""Hidden text in PDFs: every trick is flagged with its reason, its visible twin never is.

Each generated page carries the same words twice: a visible control and a copy
hidden by one trick (render mode 3, white on white, black on black, a 0.5 pt
font, opacity 0, an opaque box or image painted over it, a clip-only render
mode). The parser must flag the hidden copy with the right reason and leave the
control alone; text over an image that shows it (an OCR'd scan) is visible.
Glyphs outside the crop box or a clip path are left out of the text and counted.
"""

from __future__ import annotations

import collections
import re

import pymupdf
import pytest

from conftest import SAMPLE_CORPUS, SHARED_CORPUS
from ingest.formats.pdf.parser import parse_pdf
from schemas.records import HiddenReason, ParsedDocument

FONT = "helv"
SAMPLE_PDF = SAMPLE_CORPUS / "handbook" / "two-column.pdf"
CONTROL_X, HIDDEN_X = 50, 320


def _pdf(doc: pymupdf.Document) -> bytes:
    data = doc.tobytes()
    doc.close()
    return data


def _occurrences(parsed: ParsedDocument, words: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(re.escape(words), parsed.text)]


def _reasons_over(parsed: ParsedDocument, start: int, end: int) -> set[HiddenReason]:
    return {r.reason for r in parsed.hidden_runs if r.start < end and start < r.end}


def _covered_by(parsed: ParsedDocument, start: int, end: int, reason: HiddenReason) -> bool:
    """Every non-space character of [start, end) lies in a hidden run of ``reason``."""
    runs = [r for r in parsed.hidden_runs if r.reason is reason]
    return all(
        any(r.start <= i < r.end for r in runs) for i in range(start, end) if not parsed.text[i].isspace()
    )


def _append_content(page: pymupdf.Page, operators: str) -> None:
    """Append raw content-stream operators to a page (its font resources already exist)."""
    doc = page.parent
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, operators.encode("latin-1"))
    contents = page.get_contents() + [xref]
    doc.xref_set_key(page.xref, "Contents", "[" + " ".join(f"{x} 0 R" for x in contents) + "]")


def _white_image(width: int, height: int) -> pymupdf.Pixmap:
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pixmap.set_rect(pixmap.irect, (255, 255, 255))
    return pixmap


def _trick_page(doc: pymupdf.Document, words: str, y: float, trick: str) -> None:
    """On a new line at ``y``: the words visible at the left, hidden by ``trick`` at the right."""
    page = doc[-1]
    page.insert_text((CONTROL_X, y), words, fontname=FONT, fontsize=11)
    box = pymupdf.Rect(HIDDEN_X - 2, y - 11, HIDDEN_X + 200, y + 4)
    at = (HIDDEN_X, y)
    if trick == "render_mode_3":
        page.insert_text(at, words, fontname=FONT, fontsize=11, render_mode=3)
    elif trick == "render_mode_7":
        page.insert_text(at, words, fontname=FONT, fontsize=11, render_mode=7)
    elif trick == "white_on_white":
        page.insert_text(at, words, fontname=FONT, fontsize=11, color=(1, 1, 1))
    elif trick == "black_on_black":
        page.draw_rect(box, color=None, fill=(0, 0, 0))
        page.insert_text(at, words, fontname=FONT, fontsize=11, color=(0, 0, 0))
    elif trick == "blue_on_blue":
        page.draw_rect(box, color=None, fill=(0.2, 0.4, 0.8))
        page.insert_text(at, words, fontname=FONT, fontsize=11, color=(0.2, 0.4, 0.8))
    elif trick == "opacity_0":
        page.insert_text(at, words, fontname=FONT, fontsize=11, fill_opacity=0)
    elif trick == "tiny":
        page.insert_text(at, words, fontname=FONT, fontsize=0.5)
    elif trick == "box_over":
        page.insert_text(at, words, fontname=FONT, fontsize=11)
        page.draw_rect(box, color=None, fill=(1, 1, 1))
    elif trick == "image_over":
        page.insert_text(at, words, fontname=FONT, fontsize=11)
        page.insert_image(box, pixmap=_white_image(40, 6), keep_proportion=False)
    else:
        raise AssertionError(trick)


TRICKS = {
    # trick: (words, reason)
    "render_mode_3": ("alpha bravo charlie", HiddenReason.INVISIBLE_RENDER_MODE),
    "render_mode_7": ("delta echo foxtrot", HiddenReason.INVISIBLE_RENDER_MODE),
    "white_on_white": ("golf hotel india", HiddenReason.BACKGROUND_COLOR),
    "black_on_black": ("juliet kilo lima", HiddenReason.BACKGROUND_COLOR),
    "blue_on_blue": ("mike november oscar", HiddenReason.BACKGROUND_COLOR),
    "opacity_0": ("papa quebec romeo", HiddenReason.TRANSPARENT),
    "tiny": ("sierra tango uniform", HiddenReason.TINY),
    "box_over": ("victor whiskey xray", HiddenReason.COVERED),
    "image_over": ("yankee zulu ampersand", HiddenReason.COVERED),
}


@pytest.fixture(scope="module")
def tricks() -> ParsedDocument:
    doc = pymupdf.open()
    doc.new_page()
    for i, (trick, (words, _reason)) in enumerate(TRICKS.items()):
        _trick_page(doc, words, 80 + 40 * i, trick)
    return parse_pdf(_pdf(doc), "tricks.pdf")


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_hidden_copy_is_flagged_with_its_reason_and_visible_copy_is_not(tricks, trick):
    words, reason = TRICKS[trick]
    found = _occurrences(tricks, words)
    assert len(found) == 2, (trick, found)
    (control_start, control_end), (hidden_start, hidden_end) = found  # the control is left of the copy
    assert _covered_by(tricks, hidden_start, hidden_end, reason), (trick, _reasons_over(tricks, hidden_start, hidden_end))
    assert _reasons_over(tricks, hidden_start, hidden_end) == {reason}
    assert not _reasons_over(tricks, control_start, control_end), trick


def test_hidden_runs_are_sorted_disjoint_and_inside_the_text(tricks):
    runs = tricks.hidden_runs
    assert list(runs) == sorted(runs, key=lambda r: r.start)
    assert all(0 <= r.start < r.end <= len(tricks.text) for r in runs)
    assert all(a.end <= b.start for a, b in zip(runs, runs[1:]))
    assert all(not tricks.text[r.start].isspace() and not tricks.text[r.end - 1].isspace() for r in runs)


def test_hidden_text_is_summed_up_in_a_warning(tricks):
    (summary,) = [w for w in tricks.warnings if w.startswith("hidden text:")]
    for _words, reason in TRICKS.values():
        assert reason.value in summary


def test_visible_look_alikes_are_not_flagged() -> None:
    """Light grey on white, white on black, dark text over a light image, text under a rule: all seen."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 80), "light grey words", fontname=FONT, fontsize=11, color=(0.6, 0.6, 0.6))
    page.draw_rect(pymupdf.Rect(48, 108, 260, 124), color=None, fill=(0, 0, 0))
    page.insert_text((50, 120), "white on black words", fontname=FONT, fontsize=11, color=(1, 1, 1))
    image = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 6), False)
    image.set_rect(image.irect, (230, 230, 200))
    page.insert_image(pymupdf.Rect(48, 148, 260, 164), pixmap=image, keep_proportion=False)
    page.insert_text((50, 160), "dark over a light image", fontname=FONT, fontsize=11)
    page.insert_text((50, 200), "struck through by a rule", fontname=FONT, fontsize=11)
    page.draw_line((48, 196), (260, 196), color=(0, 0, 0), width=1)
    page.insert_text((50, 240), "half transparent words", fontname=FONT, fontsize=11, fill_opacity=0.5)
    page.insert_text((50, 280), "stroked outline words", fontname=FONT, fontsize=11, render_mode=1)
    page.insert_text((50, 320), "small print words", fontname=FONT, fontsize=3)
    parsed = parse_pdf(_pdf(doc), "lookalikes.pdf")
    assert "small print words" in parsed.text and "stroked outline words" in parsed.text
    assert parsed.hidden_runs == ()


def test_rotated_page_flags_the_hidden_copy_only() -> None:
    doc = pymupdf.open()
    doc.new_page()
    _trick_page(doc, "rotated white words", 100, "white_on_white")
    _trick_page(doc, "rotated covered words", 140, "box_over")
    doc[0].set_rotation(90)
    parsed = parse_pdf(_pdf(doc), "rotated.pdf")
    for words, reason in (("rotated white words", HiddenReason.BACKGROUND_COLOR),
                          ("rotated covered words", HiddenReason.COVERED)):
        (control, hidden) = _occurrences(parsed, words)
        assert _covered_by(parsed, *hidden, reason)
        assert not _reasons_over(parsed, *control)


def test_glyphs_outside_the_crop_box_or_a_clip_path_are_left_out_and_counted() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    page.insert_text((50, 100), "inside the page", fontname=FONT, fontsize=11)
    page.insert_text((50, 780), "below the crop box", fontname=FONT, fontsize=11)
    # Wholly outside a 10 x 10 clip at the top left: the clip hides all of it.
    _append_content(page, "q 0 0 10 10 re W n BT /helv 11 Tf 1 0 0 1 50 400 Tm (clipped away) Tj ET Q")
    page.set_cropbox(pymupdf.Rect(0, 0, 600, 700))
    parsed = parse_pdf(_pdf(doc), "outside.pdf")
    assert "inside the page" in parsed.text
    assert "below the crop box" not in parsed.text and "clipped away" not in parsed.text
    (dropped,) = [w for w in parsed.warnings if "glyphs outside the crop box or a clip path" in w]
    count = int(dropped.split()[0])
    assert count == len("belowthecropbox") + len("clippedaway")


def _ocr_scan_with_invisible_layer(source: pymupdf.Document) -> bytes:
    """An OCR'd scan made by hand: each page's image, and its words in render mode 3 where the image shows them."""
    out = pymupdf.open()
    for page in source:
        image = page.get_pixmap(dpi=150)
        target = out.new_page(width=page.rect.width, height=page.rect.height)
        target.insert_image(target.rect, pixmap=image)
        for x0, y0, x1, y1, word, *_ in page.get_text("words"):
            size = max(y1 - y0, 1) * 0.8
            target.insert_text((x0, y1 - (y1 - y0) * 0.2), word + " ", fontname=FONT, fontsize=size, render_mode=3)
    return _pdf(out)


def test_invisible_text_over_an_image_that_shows_it_is_visible() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "The scanned letter says what the layer says.", fontname=FONT, fontsize=12)
    page.insert_text((72, 130), "A second line of the same scanned letter.", fontname=FONT, fontsize=12)
    scan = _ocr_scan_with_invisible_layer(doc)
    parsed = parse_pdf(scan, "ocrd-scan.pdf")
    assert "scanned letter says" in parsed.text
    assert parsed.hidden_runs == ()
    # The same invisible layer over a blank image is hidden: the image shows nothing there.
    blank = pymupdf.open(stream=scan)
    for xref, *_ in blank[0].get_images(full=True):
        blank[0].replace_image(xref, pixmap=_white_image(8, 8))
    reparsed = parse_pdf(_pdf(blank), "blank-scan.pdf")
    assert _covered_by(reparsed, 0, len(reparsed.text.rstrip()), HiddenReason.INVISIBLE_RENDER_MODE)


def test_shared_corpus_ocr_layer_scan_has_no_hidden_text() -> None:
    path = SHARED_CORPUS / "pdf" / "unstructured__pdf-with-ocr-text.pdf"
    if not path.is_file():
        pytest.skip("../shared/corpus is absent")
    parsed = parse_pdf(path.read_bytes(), path.name)
    assert len(parsed.text) > 1000
    assert parsed.hidden_runs == ()


# Hidden characters per shared-corpus PDF (the look at each is in the notes of ingest/formats/pdf/visibility.py):
# the Russian form's OCR layer puts a bullet over a black square of its scan (background_color).
KNOWN_HIDDEN = {"pdfjs__issue12963.pdf": {HiddenReason.BACKGROUND_COLOR: 1}}


_CORPUS_PDFS = sorted((SHARED_CORPUS / "pdf").glob("*.pdf")) if (SHARED_CORPUS / "pdf").is_dir() else []


@pytest.mark.parametrize("path", _CORPUS_PDFS, ids=lambda p: p.name)
def test_shared_corpus_hidden_text_is_only_the_known(path):
    from schemas.errors import DocumentError

    try:
        parsed = parse_pdf(path.read_bytes(), path.name)
    except DocumentError:
        pytest.skip("not readable")
    counts = collections.Counter()
    for run in parsed.hidden_runs:
        counts[run.reason] += sum(1 for c in parsed.text[run.start : run.end] if not c.isspace())
    assert dict(counts) == KNOWN_HIDDEN.get(path.name, {})


def test_pdf_made_by_ocr_has_no_hidden_text() -> None:
    """A page image with Tesseract's invisible text over it (MuPDF's OCR PDF writer): all of it is seen."""
    source = pymupdf.open(SAMPLE_PDF)
    try:
        scan = source[0].get_pixmap(dpi=150).pdfocr_tobytes(language="eng")
    except (RuntimeError, ValueError) as exc:  # no Tesseract language data for MuPDF
        pytest.skip(f"MuPDF cannot OCR here: {exc}")
    parsed = parse_pdf(scan, "ocr.pdf")
    assert len(parsed.text) > 1000
    assert parsed.hidden_runs == ()
