"""OCR: scanned pages get text, every character a box on the page image, through the same map.

The tests that run Tesseract skip with a warning where it (or a language pack)
is not installed; Debian: ``apt-get install tesseract-ocr tesseract-ocr-eng``.
Ground truth comes from born-digital pages rendered to image-only PDFs.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.ocr_truth import char_boxes, image_only_pdf, page_words, score_page
from conftest import ROOT, SAMPLE_CORPUS, SHARED_CORPUS, examples
from ingest.formats.pdf.tesseract import find_tesseract
from ingest.formats.pdf.parser import OcrSettings, parse_pdf
from ingest.formats.pdf.text_layer import LayerVerdict, judge_layers, layer_stats
from schemas.errors import OcrError
from schemas.records import OcrMode, ParsedDocument

AUTO = OcrSettings(OcrMode.AUTO)
INVOICE = "Invoice 4471 was paid on 12 March 2024 for $3,250.00 in full."
LINES = [
    "The quarterly review found that storage costs fell by nine percent.",
    "Support tickets were answered within four hours on average.",
    "The board approved the migration plan for the western region.",
]


def _needs(languages: str = "eng"):
    try:
        return find_tesseract(languages)
    except OcrError as exc:
        warnings.warn(f"OCR tests skipped: {exc.message}", stacklevel=2)
        pytest.skip(f"tesseract cannot read {languages}: {exc.message}")


@pytest.fixture(scope="module")
def tesseract():
    return _needs("eng")


def _text_page(doc: pymupdf.Document, lines: list[str], width: float = 595, height: float = 842) -> None:
    page = doc.new_page(width=width, height=height)
    for i, line in enumerate(lines):
        page.insert_text((72, 100 + 24 * i), line, fontname="helv", fontsize=13)


def _scan_of(doc: pymupdf.Document, dpi: int = 200) -> pymupdf.Document:
    return pymupdf.open(stream=image_only_pdf(doc, dpi=dpi), filetype="pdf")


def _runs_of_page(parsed: ParsedDocument, number: int):
    return [r for r in parsed.char_runs if r.page == number]


# -- without Tesseract -------------------------------------------------------------------------


def test_missing_tesseract_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OcrError, match="apt-get install tesseract-ocr"):
        find_tesseract("eng")


def test_a_build_without_tesseract_warns_once_and_keeps_the_page_as_it_was(monkeypatch, tmp_path):
    doc = pymupdf.open()
    _text_page(doc, LINES)
    scan = _scan_of(doc).tobytes()
    monkeypatch.setenv("PATH", str(tmp_path))
    parsed = parse_pdf(scan, "scan.pdf", AUTO)
    assert parsed.pages_without_text == 1 and not parsed.pages[0].ocr
    assert [w for w in parsed.warnings if w.startswith("OCR skipped: the tesseract program is not on PATH")]


def test_language_string_is_checked_before_anything_runs():
    with pytest.raises(OcrError, match="not a Tesseract language string"):
        find_tesseract("eng; rm -rf /")


def test_missing_language_pack_names_the_debian_package(tesseract):
    with pytest.raises(OcrError, match="tesseract-ocr-xyz"):
        find_tesseract("eng+xyz")


def test_a_failing_tesseract_is_a_warning_and_the_page_stays(monkeypatch, tmp_path, tesseract):
    fake = tmp_path / "tesseract"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$1" in --version) echo "tesseract 5.3.0";; '
        f'--list-langs) echo \'List of available languages in "{tesseract.tessdata}" (1):\'; echo eng;; '
        '*) echo "Error: image is bad" >&2; exit 1;; esac\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    doc = pymupdf.open()
    _text_page(doc, LINES)
    parsed = parse_pdf(_scan_of(doc).tobytes(), "scan.pdf", AUTO)
    assert not parsed.pages[0].ocr and parsed.pages_without_text == 1
    (failed,) = [w for w in parsed.warnings if w.startswith("OCR failed on 1 pages")]
    assert "image is bad" in failed


# -- which pages are read: the text-layer test ----------------------------------------------------

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzäöüéß", min_size=1, max_size=12)
_SHAPED = st.tuples(_WORDS, st.sampled_from([str.lower, str.title, str.upper])).map(lambda t: t[1](t[0]))


@settings(max_examples=examples(200))
@given(st.lists(_SHAPED, min_size=1, max_size=200), st.lists(st.integers(0, 99999), max_size=20))
def test_words_shaped_like_words_are_never_garbled(words, numbers):
    text = " ".join(words + [str(n) for n in numbers])
    assert judge_layers([layer_stats(text)]) == [LayerVerdict.USABLE]


def test_latin_lookalike_mojibake_is_garbled_and_unmapped_glyphs_are_unmapped():
    mojibake = "CyMMa aBaHcosoro nnaTe>Ka K ynnaTe no cpoKy He no3.QHee .QB8AL\\8Tb mnoro 8npeml OT4eTHoro ro.Q8 " * 3
    assert judge_layers([layer_stats(mojibake)]) == [LayerVerdict.GARBLED]
    assert judge_layers([layer_stats("\ufffd" * 40 + " ok")]) == [LayerVerdict.UNMAPPED]
    assert judge_layers([layer_stats(" \n ")]) == [LayerVerdict.NO_TEXT]


def test_shared_corpus_layers_are_usable_except_the_russian_mojibake_and_the_scans():
    if not (SHARED_CORPUS / "pdf").is_dir():
        pytest.skip("../shared/corpus is absent")
    from schemas.errors import DocumentError

    expected_unusable = {
        "pdfjs__issue12963.pdf": {n: LayerVerdict.GARBLED for n in range(1, 9)},
        "pymupdf__test_4034.pdf": {1: LayerVerdict.NO_TEXT, 2: LayerVerdict.NO_TEXT},
        "pdfjs__PDFBOX-3148-2-fuzzed.pdf": {1: LayerVerdict.NO_TEXT},
        "pdfjs__vertical.pdf": {2: LayerVerdict.NO_TEXT, 3: LayerVerdict.NO_TEXT},  # two rules, no text
    }
    for path in sorted((SHARED_CORPUS / "pdf").glob("*.pdf")):
        try:
            parsed = parse_pdf(path.read_bytes(), path.name)
        except DocumentError:
            continue
        verdicts = judge_layers([layer_stats(parsed.text[p.start : p.end]) for p in parsed.pages])
        unusable = {p.page: v for p, v in zip(parsed.pages, verdicts) if v is not LayerVerdict.USABLE}
        assert unusable == expected_unusable.get(path.name, {}), path.name


# -- OCR through the character map ------------------------------------------------------------------


def test_scanned_page_gets_its_words_with_boxes_and_confidences(tesseract):
    doc = pymupdf.open()
    _text_page(doc, LINES)
    original = parse_pdf(doc.tobytes(), "digital.pdf")
    parsed = parse_pdf(_scan_of(doc).tobytes(), "scan.pdf", AUTO)
    assert parsed.pages[0].ocr and parsed.pages[0].has_text
    assert [w for w in parsed.warnings if w.startswith("1 page read by OCR (tesseract") and "no text layer: 1" in w]
    for line in LINES:
        assert line in parsed.text
    score = score_page(1, page_words(original, char_boxes(original), 0), page_words(parsed, char_boxes(parsed), 0))
    assert score.recall == 1.0 and score.placed == 1.0
    for run in parsed.char_runs:
        assert run.ocr_confidence is not None and run.ocr_confidence.shape == (run.end - run.start,)
        assert run.ocr_confidence.dtype == np.uint8 and (run.ocr_confidence <= 100).all()
        assert not parsed.text[run.start : run.end].isspace()
        x0, y0, x1, y1 = run.glyph_boxes.T
        assert (x0 <= x1).all() and (y0 <= y1).all() and (x1 <= 595).all() and (y1 <= 842).all()
    assert min(int(r.ocr_confidence.min()) for r in parsed.char_runs) >= 80  # clean print reads surely
    assert parsed.hidden_runs == ()


def test_mixed_digital_and_scanned_pdf_indexes_both_in_page_order_with_one_offset_space(tesseract):
    digital = pymupdf.open()
    _text_page(digital, ["Page one is born digital and keeps its text layer."])
    _text_page(digital, LINES)
    _text_page(digital, ["Page three is born digital as well."])
    mixed = pymupdf.open()
    mixed.insert_pdf(digital, from_page=0, to_page=0)
    mixed.insert_pdf(_scan_of(digital), from_page=1, to_page=1)
    mixed.insert_pdf(digital, from_page=2, to_page=2)
    parsed = parse_pdf(mixed.tobytes(), "mixed.pdf", AUTO)
    assert [p.ocr for p in parsed.pages] == [False, True, False]
    pages = parsed.text.split("\f")
    assert pages[0] == "Page one is born digital and keeps its text layer."
    assert pages[2] == "Page three is born digital as well."
    assert all(line in pages[1] for line in LINES)
    assert [(p.start, p.end) for p in parsed.pages] == [
        (0, len(pages[0])),
        (len(pages[0]) + 1, len(pages[0]) + 1 + len(pages[1])),
        (len(parsed.text) - len(pages[2]), len(parsed.text)),
    ]
    previous_end = 0
    for run in parsed.char_runs:
        page = parsed.pages[run.page - 1]
        assert page.start <= run.start < run.end <= page.end and run.start >= previous_end
        assert (run.ocr_confidence is not None) == page.ocr
        previous_end = run.end


def test_force_reads_every_page_and_auto_keeps_a_digital_layer(tesseract):
    doc = pymupdf.open()
    _text_page(doc, LINES)
    data = doc.tobytes()
    kept = parse_pdf(data, "digital.pdf", AUTO)
    assert not kept.pages[0].ocr and kept.text in ("\n".join(LINES), "\n\n".join(LINES))
    forced = parse_pdf(data, "digital.pdf", OcrSettings(OcrMode.FORCE))
    assert forced.pages[0].ocr and all(line in forced.text for line in LINES)
    assert [w for w in forced.warnings if "--ocr force: 1" in w]


def test_rotated_scan_gets_boxes_on_the_page_as_displayed(tesseract):
    """A landscape scan stored upright-rotated (/Rotate 90): boxes land on the words of the displayed page."""
    digital = pymupdf.open()
    _text_page(digital, LINES, width=842, height=595)  # landscape as displayed
    original = parse_pdf(digital.tobytes(), "digital.pdf")
    image = digital[0].get_pixmap(dpi=200)
    scan = pymupdf.open()
    page = scan.new_page(width=595, height=842)  # portrait storage, shown rotated by 90 degrees
    page.insert_image(page.rect, pixmap=image, rotate=90)
    page.set_rotation(90)
    assert page.rect.width == 842
    parsed = parse_pdf(scan.tobytes(), "rotated-scan.pdf", AUTO)
    assert parsed.pages[0].ocr and parsed.pages[0].rotation == 90
    score = score_page(1, page_words(original, char_boxes(original), 0), page_words(parsed, char_boxes(parsed), 0))
    assert score.recall == 1.0 and score.placed == 1.0


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_page_scanned_sideways_or_upside_down_is_read_with_boxes_along_its_words(tesseract, turn):
    """The image itself is turned (no /Rotate): Tesseract finds the orientation, boxes follow the turned words."""
    digital = pymupdf.open()
    _text_page(digital, LINES * 3)
    image = digital[0].get_pixmap(dpi=200)
    size = (842, 595) if turn in (90, 270) else (595, 842)
    scan, turned = pymupdf.open(), pymupdf.open()
    scan.new_page(width=size[0], height=size[1]).insert_image(scan[0].rect, pixmap=image, rotate=turn)
    turned.new_page(width=size[0], height=size[1]).show_pdf_page(turned[0].rect, digital, 0, rotate=turn)
    original = parse_pdf(turned.tobytes(), "turned.pdf")  # the same words, turned the same way
    parsed = parse_pdf(scan.tobytes(), "turned-scan.pdf", AUTO)
    assert all(line in parsed.text for line in LINES)
    score = score_page(1, page_words(original, char_boxes(original), 0), page_words(parsed, char_boxes(parsed), 0))
    assert score.recall == 1.0 and score.placed >= 0.9
    # Characters follow the reading direction of the turned page: "quarterly" from its first letter on.
    for doc in (original, parsed):
        at = doc.text.index("quarterly")
        centres = char_boxes(doc)[at : at + 9]
        centres = ((centres[:, 0] + centres[:, 2]) / 2, (centres[:, 1] + centres[:, 3]) / 2)
        axis, sign = {90: (1, -1), 180: (0, -1), 270: (1, 1)}[turn]
        assert (np.diff(centres[axis]) * sign > 0).all(), (turn, doc.doc_id)


@pytest.mark.slow
@pytest.mark.parametrize(
    "relative, pages",
    [("handbook/two-column.pdf", [1, 2]), ("pricing/rate-card.pdf", [3]), ("reports/rotated-and-scanned.pdf", [1, 4])],
)
def test_ocr_of_rendered_sample_pages_finds_and_places_the_original_words(tesseract, tokenizer, relative, pages):
    from benchmarks.ocr import evaluate

    reports, _seconds = evaluate(SAMPLE_CORPUS / relative, pages, tokenizer)
    for report in reports:
        assert report.score.recall >= 0.97, report
        assert report.score.placed >= 0.95, report
        assert report.verified >= 0.9 * report.sentences and report.landed >= 0.9 * report.sentences, report


@pytest.mark.slow
def test_ocr_of_rendered_dpr_pages_finds_places_and_verifies(tesseract, tokenizer):
    from benchmarks.ocr import evaluate

    path = SHARED_CORPUS / "pdf" / "unstructured__dpr-multi-column.pdf"
    if not path.is_file():
        pytest.skip("../shared/corpus is absent")
    reports, _seconds = evaluate(path, [1, 9], tokenizer)  # running text in two columns
    for report in reports:
        assert report.score.recall >= 0.97 and report.score.placed >= 0.95, report
        assert report.verified >= 0.9 * report.sentences and report.landed >= 0.9 * report.sentences, report


# -- real scans of the shared corpus -------------------------------------------------------------


def _corpus(name: str):
    path = SHARED_CORPUS / "pdf" / name
    if not path.is_file():
        pytest.skip("../shared/corpus is absent")
    return path.read_bytes()


@pytest.mark.slow
def test_real_scan_without_a_text_layer_gets_text_on_every_page(tesseract):
    parsed = parse_pdf(_corpus("pymupdf__test_4034.pdf"), "scan.pdf", AUTO)
    assert all(p.ocr and p.has_text for p in parsed.pages)
    first, second = parsed.pages
    assert first.end - first.start > 4000 and second.end - second.start > 200  # a form; a signature page
    assert "Faculdade de Engenharia" in parsed.text  # the letterhead of the scanned form
    assert parsed.hidden_runs == ()


def test_ocr_layer_scan_keeps_its_layer_under_auto(tesseract):
    parsed = parse_pdf(_corpus("unstructured__pdf-with-ocr-text.pdf"), "ocr-layer.pdf", AUTO)
    assert not any(p.ocr for p in parsed.pages)
    assert parsed.hidden_runs == ()


@pytest.mark.slow
def test_garbled_layer_is_replaced_only_by_ocr_that_reads_better(tesseract):
    data = _corpus("pdfjs__issue12963.pdf")
    one_page = pymupdf.open()
    one_page.insert_pdf(pymupdf.open(stream=data), from_page=2, to_page=2)
    data = one_page.tobytes()
    english = parse_pdf(data, "form.pdf", OcrSettings(OcrMode.AUTO, "eng"))
    assert not english.pages[0].ocr  # eng reads Cyrillic as look-alikes again: the layer stays
    assert [w for w in english.warnings if "read no better: the layer is kept" in w]
    _needs("rus")
    russian = parse_pdf(data, "form.pdf", OcrSettings(OcrMode.AUTO, "rus"))
    assert russian.pages[0].ocr
    assert [w for w in russian.warnings if "text layer garbled (its words are not words): 1" in w]
    assert re.search("Сумма авансового платежа", russian.text)


def test_tesseract_dies_with_the_worker_that_started_it(tesseract, tmp_path):
    """A worker killed for --doc-timeout leaves no OCR process behind (Linux: PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signals are Linux only")
    doc = pymupdf.open()
    for _ in range(3):
        _text_page(doc, LINES * 12)
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(_scan_of(doc, dpi=300).tobytes())
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "from ingest.formats.pdf.parser import OcrSettings, parse_pdf\n"
        "from schemas.records import OcrMode\n"
        "parse_pdf(open(%r, 'rb').read(), 'scan.pdf', OcrSettings(OcrMode.FORCE, dpi=300))\n"
    ) % (str(ROOT), str(scan))
    worker = subprocess.Popen([sys.executable, "-c", script])
    try:
        children = _wait_for_children(worker.pid, "tesseract")
        assert children, "no tesseract process started"
        time.sleep(1.0)  # its page is read in by now: it is reading, for seconds more
    finally:
        worker.kill()
        worker.wait()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(_alive(pid) for pid in children):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in children)


def _wait_for_children(pid: int, name: str, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for task in Path(f"/proc/{pid}/task").glob("*"):
            for child in (task / "children").read_text().split():
                if _command(int(child))[:1] == [name] and "hocr" in _command(int(child)):
                    found.append(int(child))  # reading a page (not --version or --list-langs)
        if found:
            return found
        time.sleep(0.05)
    return []


def _command(pid: int) -> list[str]:
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []
    return [Path(arguments[0].decode()).name, *(a.decode() for a in arguments[1:] if a)] if arguments[0] else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_poster_sized_page_is_read_at_a_lower_resolution(tesseract):
    from ingest.formats.pdf.tesseract import MAX_PIXELS

    poster = pymupdf.open()
    page = poster.new_page(width=4000, height=3000)
    page.insert_text((200, 400), "A very large poster headline", fontname="helv", fontsize=120)
    parsed = parse_pdf(_scan_of(poster, dpi=20).tobytes(), "poster.pdf", AUTO)
    assert parsed.pages[0].ocr and "poster headline" in parsed.text
    (lowered,) = [w for w in parsed.warnings if w.startswith("large pages read at a lower resolution: 1 at ")]
    dpi = int(lowered.rsplit(" at ", 1)[1].split()[0])
    assert 4000 * 3000 * (dpi / 72) ** 2 <= MAX_PIXELS


def test_a_scan_with_a_digital_stamp_is_read_whole_and_a_captioned_photo_is_not(tesseract):
    digital = pymupdf.open()
    _text_page(digital, LINES)
    stamped = _scan_of(digital)
    stamped[0].insert_text((450, 820), "BATES 000123", fontname="helv", fontsize=9)
    parsed = parse_pdf(stamped.tobytes(), "stamped.pdf", AUTO)
    assert parsed.pages[0].ocr
    assert all(line in parsed.text for line in LINES) and "000123" in parsed.text
    assert [w for w in parsed.warnings if "a few words over a page-sized image: 1" in w]

    photo = pymupdf.open()
    page = photo.new_page()
    picture = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 48), False)
    picture.set_rect(picture.irect, (90, 140, 200))
    page.insert_image(pymupdf.Rect(72, 72, 372, 297), pixmap=picture)  # a fifth of the page
    page.insert_text((72, 320), "Figure 1: the data centre in Frankfurt.", fontname="helv", fontsize=10)
    kept = parse_pdf(photo.tobytes(), "photo.pdf", AUTO)
    assert not kept.pages[0].ocr and kept.text == "Figure 1: the data centre in Frankfurt."


# -- citations on OCR text ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ocr_index(tmp_path_factory, tesseract):
    """A corpus of one scanned PDF (LINES as an image) and one born-digital PDF, built with OCR."""
    from doubles import HashingEmbedder

    from ingest.build import BuildSettings, build_index

    corpus = tmp_path_factory.mktemp("ocr-corpus")
    digital = pymupdf.open()
    _text_page(digital, [*LINES, INVOICE])
    (corpus / "scan.pdf").write_bytes(_scan_of(digital).tobytes())
    (corpus / "digital.pdf").write_bytes(digital.tobytes())
    index_dir = tmp_path_factory.mktemp("ocr-index")
    report = build_index(corpus, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    assert report.ocr == "auto eng 200 dpi" and report.ocr_pages == 1
    return index_dir


def test_a_citation_on_ocr_text_says_so_with_its_lowest_word_confidence(ocr_index):
    import index
    from index.citations.verify import Verifier
    from schemas.citations import CitationStatus, Support

    idx = index.open(ocr_index)
    assert idx.manifest.ocr == "auto eng 200 dpi"
    verifier = Verifier(idx)
    (chunk,) = idx.chunks_of("scan.pdf")
    citation = verifier.cite(Support(chunk.chunk_id, "storage costs fell by nine percent"))
    assert citation.status is CitationStatus.EXACT and citation.ocr
    runs = [r for r in idx.pdf_char_runs("scan.pdf") if r.start < citation.doc_end and citation.doc_start < r.end]
    assert citation.ocr_confidence == min(
        int(r.ocr_confidence[max(citation.doc_start - r.start, 0) : citation.doc_end - r.start].min()) for r in runs
    )
    assert citation.rects and all(rect.page == 1 for rect in citation.rects)
    (digital_chunk,) = idx.chunks_of("digital.pdf")
    born_digital = verifier.cite(Support(digital_chunk.chunk_id, "storage costs fell by nine percent"))
    assert born_digital.status is CitationStatus.EXACT and not born_digital.ocr and born_digital.ocr_confidence is None


def test_a_misread_number_on_an_ocr_page_is_quote_not_found_naming_ocr(ocr_index):
    import index
    from index.citations.verify import Verifier
    from schemas.citations import CitationStatus, Support

    idx = index.open(ocr_index)
    (chunk,) = idx.chunks_of("scan.pdf")
    assert INVOICE in chunk.text  # OCR read it right; a quote with one digit off must not pass
    misread = INVOICE.replace("3,250.00", "3,520.00")
    citation = Verifier(idx).cite(Support(chunk.chunk_id, misread))
    assert citation.status is CitationStatus.QUOTE_NOT_FOUND
    assert citation.ocr and "read by OCR" in citation.error
    (digital_chunk,) = idx.chunks_of("digital.pdf")
    plain = Verifier(idx).cite(Support(digital_chunk.chunk_id, misread))
    assert plain.status is CitationStatus.QUOTE_NOT_FOUND and not plain.ocr and not plain.error


def test_ocr_pages_are_recorded_in_pdf_pages_and_their_runs_carry_confidences(ocr_index):
    import index

    idx = index.open(ocr_index)
    assert [p.ocr for p in idx.pdf_pages("scan.pdf")] == [True]
    assert [p.ocr for p in idx.pdf_pages("digital.pdf")] == [False]
    assert all(r.ocr_confidence is not None for r in idx.pdf_char_runs("scan.pdf"))
    assert all(r.ocr_confidence is None for r in idx.pdf_char_runs("digital.pdf"))


def test_the_report_shows_that_a_citation_was_read_by_ocr(ocr_index):
    import index
    from index.citations.verify import verify_answer
    from index.viewer.report import render_report
    from schemas.citations import Answer, Claim, Support

    idx = index.open(ocr_index)
    (scan,), (digital,) = idx.chunks_of("scan.pdf"), idx.chunks_of("digital.pdf")
    answer = Answer("a1", (
        Claim("c1", "Storage got cheaper.", (Support(scan.chunk_id, "storage costs fell by nine percent"),)),
        Claim("c2", "Tickets were fast.", (Support(digital.chunk_id, "answered within four hours on average"),)),
    ))
    records, _summary = verify_answer(idx, answer)
    confidence = records[0].citations[0].ocr_confidence
    html = render_report(idx, records)
    pills = re.findall(r'<span class="ocr-pill"[^>]*>([^<]*)</span>', html)
    assert pills == [f"OCR · confidence {confidence}"] * 2  # the marker's popup and the source view
