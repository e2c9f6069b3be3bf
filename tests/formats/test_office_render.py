"""Office documents rendered by LibreOffice: pages, and a glyph box for the characters it draws.

The rendering follows the parsers' text (tracked changes accepted, hidden slides drawn), each
box is the box of a glyph that is the document's character, and LibreOffice never fetches
anything, never waits for input and never outlives its caller.
"""

from __future__ import annotations

import http.server
import io
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import zipfile

import numpy as np
import pymupdf
import pytest

from conftest import ROOT, SHARED_CORPUS
from ingest.formats.office import parse_docx, parse_odt, parse_pptx, parse_xlsx
from ingest.formats.office.align import OfficeLayout, OfficeLayoutStats, align_rendered, layout_office
from ingest.formats.office.render import (
    RenderError,
    convert_legacy,
    office_renderer_engine,
    office_renderer_unavailable,
    render_pdf,
)
from ingest.formats.pdf.parser import TEXT_FLAGS
from schemas.records import MediaType, ParsedDocument, RunKind

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
PARSERS = {".docx": parse_docx, ".pptx": parse_pptx, ".odt": parse_odt}
CORPUS = sorted(p for p in (SHARED_CORPUS / "office").glob("*") if p.suffix in (".docx", ".pptx", ".odt")) \
    if (SHARED_CORPUS / "office").is_dir() else []
# The characters a box may stand for besides the glyph's own (align's documented equivalences).
EQUIVALENT = str.maketrans({"\u00a0": " ", "\u202f": " ", "\u2007": " ", "\u2011": "-", "\u2212": "-"})
LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
             "\ufb06": "st"}
# Measured on the shared corpus with LibreOffice 7.4 (docx 0.977, their bodies 0.99, pptx 0.90, odt 0.997;
# what is not boxed is what LibreOffice does not draw: comments, speaker notes, some shapes).
MIN_SHARE = {".docx": 0.95, ".pptx": 0.85, ".odt": 0.95}
MIN_BODY_SHARE = 0.8  # of each DOCX's body (textbox.docx: LibreOffice leaves some shapes' text out)

needs_libreoffice = pytest.mark.skipif(office_renderer_unavailable() is not None,
                                       reason=office_renderer_unavailable() or "")


def docx_bytes(build) -> bytes:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    build(document)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def tracked_changes(document) -> None:
    from docx.oxml import parse_xml

    paragraph = document.add_paragraph("Alpha ")
    paragraph._p.append(parse_xml(f'<w:ins xmlns:w="{W}" w:id="1" w:author="a" w:date="2024-01-01T00:00:00Z">'
                                  '<w:r><w:t xml:space="preserve">Insertedword </w:t></w:r></w:ins>'))
    paragraph._p.append(parse_xml(f'<w:del xmlns:w="{W}" w:id="2" w:author="a" w:date="2024-01-01T00:00:00Z">'
                                  '<w:r><w:delText xml:space="preserve">Deletedword </w:delText></w:r></w:del>'))
    paragraph.add_run("Omega")
    document.add_paragraph("Second paragraph.")


def rewritten(source: bytes, change) -> bytes:
    """A copy of a zip with ``change(name, data)`` applied to each member (None drops it)."""
    original, out = zipfile.ZipFile(io.BytesIO(source)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in original.infolist():
            data = change(info.filename, original.read(info))
            if data is not None:
                copy.writestr(info.filename, data)
    return out.getvalue()


def rendered_text(pdf: bytes) -> str:
    with pymupdf.open(stream=pdf, filetype="pdf") as rendered:
        return "\f".join(page.get_text() for page in rendered)


def boxed_mask(layout: OfficeLayout, length: int) -> np.ndarray:
    mask = np.zeros(length, dtype=bool)
    for run in layout.char_runs:
        mask[run.start:run.end] = True
    return mask


def glyphs_of(pdf: bytes) -> tuple[dict, list]:
    """Every glyph of the PDF read again with PyMuPDF: (page, box as the parser stores it) ->
    characters drawn there; and each page's size."""
    glyphs: dict[tuple, set[str]] = {}
    sizes = []
    with pymupdf.open(stream=pdf, filetype="pdf") as rendered:
        for number, page in enumerate(rendered, 1):
            assert page.rotation == 0
            width, height = page.rect.width, page.rect.height
            sizes.append((width, height))
            for block in page.get_text("rawdict", flags=TEXT_FLAGS)["blocks"]:
                for line in block.get("lines", ()):
                    for span in line["spans"]:
                        for char in span["chars"]:
                            x0, y0, x1, y1 = char["bbox"]
                            box = np.array([min(max(x0, 0), width), min(max(y0, 0), height),
                                            min(max(x1, 0), width), min(max(y1, 0), height)], dtype=np.float32)
                            glyphs.setdefault((number, *box.tolist()), set()).add(char["c"])
    return glyphs, sizes


def assert_boxes_are_the_characters(doc: ParsedDocument, layout: OfficeLayout) -> None:
    """Every box lies on a page of the rendering, within it, and is the box of a glyph that draws
    the document's character; boxes go to real characters only, in sorted, disjoint runs."""
    glyphs, sizes = glyphs_of(layout.pdf)
    assert layout.n_pages == len(sizes) == len(layout.pages)
    for number, (page, (width, height)) in enumerate(zip(layout.pages, sizes), 1):
        assert (page.page, page.width, page.height) == (number, width, height)
        on_page = [run for run in layout.char_runs if run.page == number]
        assert page.has_text == bool(on_page)
        assert (page.start, page.end) == ((min(r.start for r in on_page), max(r.end for r in on_page))
                                          if on_page else (0, 0))
    synthetic = np.zeros(len(doc.text), dtype=bool)
    for run in doc.office_runs:
        if run.kind is RunKind.SYNTHETIC:
            synthetic[run.start:run.end] = True
    previous_end = 0
    for run in layout.char_runs:
        assert previous_end <= run.start < run.end <= len(doc.text)
        previous_end = run.end
        assert 1 <= run.page <= layout.n_pages
        assert run.glyph_boxes.shape == (run.end - run.start, 4) and run.glyph_boxes.dtype == np.float32
        assert not synthetic[run.start:run.end].any()
        width, height = sizes[run.page - 1]
        boxes = run.glyph_boxes
        assert (boxes[:, 0] >= 0).all() and (boxes[:, 2] <= width).all() and (boxes[:, 0] <= boxes[:, 2]).all()
        assert (boxes[:, 1] >= 0).all() and (boxes[:, 3] <= height).all() and (boxes[:, 1] <= boxes[:, 3]).all()
        for offset, box in zip(range(run.start, run.end), boxes.tolist()):
            char = doc.text[offset].translate(EQUIVALENT)
            drawn = glyphs.get((run.page, *box))
            if drawn is None:  # one letter of a ligature: a share of the glyph's box
                drawn = {LIGATURES.get(c, c) for (page, x0, y0, x1, y1), cs in glyphs.items() for c in cs
                         if page == run.page and x0 <= box[0] and box[2] <= x1 and (y0, y1) == (box[1], box[3])
                         and c in LIGATURES}
                assert any(char in letters for letters in drawn), (offset, doc.text[offset], box)
            else:
                assert char in {c.translate(EQUIVALENT) for c in drawn}, (offset, doc.text[offset], drawn)


# -- without LibreOffice: the aligner on PDFs made here ------------------------------------------


def pdf_of_lines(pages: list[list[str]], fontfile: str | None = None) -> bytes:
    rendered = pymupdf.open()
    for lines in pages:
        page = rendered.new_page()
        for number, line in enumerate(lines):
            if fontfile:
                page.insert_text((72, 72 + 14 * number), line, fontfile=fontfile, fontname="F0", fontsize=11)
            else:
                page.insert_text((72, 72 + 14 * number), line, fontsize=11)
    return rendered.tobytes()


def docx_text(text: str, synthetic: tuple[int, int] | None = None) -> ParsedDocument:
    """A DOCX's parse as the aligner sees it: ``text``, real but for the ``synthetic`` range."""
    from schemas.records import OfficeRun, OfficeRuns

    cuts = sorted({0, len(text), *(synthetic or ())})
    runs = [OfficeRun(s, e, "", 0, 0, RunKind.SYNTHETIC) if (s, e) == synthetic
            else OfficeRun(s, e, "word/document.xml", s, e, RunKind.TEXT) for s, e in zip(cuts, cuts[1:])]
    return ParsedDocument("t.docx", MediaType.DOCX, text, office_runs=OfficeRuns.from_records(runs))


def test_header_drawn_on_every_page_is_boxed_where_it_is_first_drawn():
    body = [f"Paragraph {n} of the body says something about item {n * 7}." for n in range(60)]
    pages = [["Quarterly report header"] + body[:30], ["Quarterly report header"] + body[30:]]
    title = "\n\nHeaders\n"
    text = "\n".join(body) + title + "Quarterly report header"
    at = text.index(title)
    doc = docx_text(text, (at, at + len(title)))
    layout = align_rendered(doc, pdf_of_lines(pages))
    assert_boxes_are_the_characters(doc, layout)
    boxed = boxed_mask(layout, len(text))
    assert boxed[:at].sum() == sum(len(line) for line in body)  # all but the line breaks
    header = text.rindex("Quarterly")
    assert boxed[header:].all()
    assert {run.page for run in layout.char_runs if run.start >= header} == {1}
    assert layout.source_chars == len(text) - len(title) and layout.boxed == boxed.sum()


def test_text_drawn_in_another_order_is_boxed_where_it_is_drawn():
    shapes = ["Quarterly results of the northern region", "Revenue grew by twelve percent", "Costs fell slightly"]
    doc = docx_text("\n".join(shapes))
    layout = align_rendered(doc, pdf_of_lines([shapes[::-1]]))  # drawn bottom shape first
    assert layout.boxed == sum(len(shape) for shape in shapes)
    assert_boxes_are_the_characters(doc, layout)
    top = {run.start: float(run.glyph_boxes[0, 1]) for run in layout.char_runs}
    assert top[0] > top[doc.text.index(shapes[1])] > top[doc.text.index(shapes[2])]  # the first shape drawn lowest


def test_synthetic_labels_and_separators_get_no_box():
    doc = docx_text("1.\tFirst item", (0, 3))
    layout = align_rendered(doc, pdf_of_lines([["1. First item"]]))
    assert [(run.start, run.end) for run in layout.char_runs] == [(3, 13)]
    assert layout.source_chars == layout.boxed == 10


def test_a_ligature_glyph_boxes_each_of_its_letters():
    fontfile = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    if not os.path.exists(fontfile):
        pytest.skip("no DejaVu Sans to draw a ligature with")
    pdf = pdf_of_lines([["A \ufb01ne \ufb02ow"]], fontfile)
    if "\ufb01" not in "".join(c for g in glyphs_of(pdf)[0].values() for c in g):
        pytest.skip("MuPDF spells the ligature out here")
    doc = docx_text("A fine flow")
    layout = align_rendered(doc, pdf)
    assert layout.boxed == layout.source_chars == len(doc.text)
    assert_boxes_are_the_characters(doc, layout)
    boxes = np.concatenate([run.glyph_boxes for run in layout.char_runs])
    f, i = boxes[2], boxes[3]
    assert f[2] == pytest.approx(i[0]) and f[0] < f[2] < i[2]  # the glyph's width, halved


def test_a_long_document_with_a_header_on_every_page_aligns_whole_and_fast():
    rng = np.random.default_rng(3)
    vocabulary = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), rng.integers(2, 9))) for _ in range(3000)]
    weights = 1 / np.arange(1, len(vocabulary) + 1)
    words = rng.choice(vocabulary, 46_000, p=weights / weights.sum()).tolist()
    lines = [" ".join(words[k:k + 10]) for k in range(0, len(words), 10)]
    text = "\n".join(lines) + "\n\nHeaders\nRunning head of the report"
    pages = [["Running head of the report"] + lines[k:k + 50] for k in range(0, len(lines), 50)]
    pdf = pdf_of_lines(pages)
    at = text.index("\n\nHeaders\n")
    doc = docx_text(text, (at, at + len("\n\nHeaders\n")))
    started = time.perf_counter()
    layout = align_rendered(doc, pdf)
    seconds = time.perf_counter() - started
    print(f"{len(text):,} characters, {layout.n_pages} pages aligned in {seconds:.2f} s")
    assert len(text) > 250_000
    drawn = np.array([c != "\n" for c in text])
    drawn[at:at + len("\n\nHeaders\n")] = False
    assert (boxed_mask(layout, len(text)) == drawn).all()  # every character but the line breaks
    assert seconds < 30


def test_layout_stats_add_up():
    layout = align_rendered(docx_text("Hello world"), pdf_of_lines([["Hello world"], []]))
    total = OfficeLayoutStats.of(layout) + OfficeLayoutStats.of(layout) + OfficeLayoutStats(failed=1)
    assert (total.documents, total.pages, total.source_chars, total.boxed, total.failed) == (2, 4, 22, 22, 1)
    assert [(p.page, p.start, p.end, p.has_text) for p in layout.pages] == [(1, 0, 11, True), (2, 0, 0, False)]


def test_an_unreadable_rendering_is_a_render_error():
    with pytest.raises(RenderError):
        align_rendered(docx_text("text"), b"not a pdf")


# -- LibreOffice ---------------------------------------------------------------------------------


@needs_libreoffice
def test_engine_names_libreoffice_and_its_version():
    assert re.fullmatch(r"LibreOffice \d+(\.\d+)+", office_renderer_engine())


@pytest.fixture(scope="module")
def corpus_layouts():
    """Each DOCX, PPTX and ODT of the shared corpus parsed and rendered once: name -> (parsed, layout)."""
    if office_renderer_unavailable():
        pytest.skip(office_renderer_unavailable())
    if not CORPUS:
        pytest.skip("no shared office corpus")
    found = {}
    for path in CORPUS:
        source = path.read_bytes()
        doc = PARSERS[path.suffix](source, path.name)
        found[path.name] = (doc, layout_office(doc, source, path.suffix))
    return found


@pytest.mark.spawns
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_box_of_the_shared_corpus_is_its_characters_glyph(corpus_layouts, path):
    doc, layout = corpus_layouts[path.name]
    assert layout.n_pages >= 1 and layout.seconds > 0
    assert_boxes_are_the_characters(doc, layout)
    if doc.media_type is MediaType.PPTX:
        assert layout.n_pages == len(doc.office_pages)  # a page a slide, hidden ones too


@pytest.mark.spawns
def test_boxed_share_of_the_shared_corpus(corpus_layouts):
    totals: dict[str, list[int]] = {}
    for name, (doc, layout) in corpus_layouts.items():
        suffix = "." + name.rsplit(".", 1)[1]
        share = layout.boxed / max(layout.source_chars, 1)
        body = ""
        if suffix in (".docx", ".odt"):
            end = re.search(r"\n\n(?:Headers|Footers|Footnotes|Endnotes|Comments)\n", doc.text)
            cut = end.start() if end else len(doc.text)
            hidden = np.zeros(len(doc.text), dtype=bool)
            for run in list(doc.hidden_runs):
                hidden[run.start:run.end] = True
            real = np.zeros(len(doc.text), dtype=bool)
            for run in doc.office_runs:
                real[run.start:run.end] = run.kind is not RunKind.SYNTHETIC
            counted = (real & ~hidden)[:cut]
            body_share = (boxed_mask(layout, len(doc.text))[:cut] & counted).sum() / max(counted.sum(), 1)
            body = f", body {body_share:.3f}"
            assert body_share >= MIN_BODY_SHARE, name
        print(f"{name}: {layout.boxed}/{layout.source_chars} boxed ({share:.3f}{body}), {layout.n_pages} pages")
        total = totals.setdefault(suffix, [0, 0])
        total[0] += layout.boxed
        total[1] += layout.source_chars
    for suffix, (boxed, source_chars) in totals.items():
        print(f"{suffix}: {boxed}/{source_chars} = {boxed / source_chars:.3f}")
        assert boxed / source_chars >= MIN_SHARE[suffix], suffix


@needs_libreoffice
@pytest.mark.spawns
def test_tracked_changes_render_accepted():
    source = docx_bytes(tracked_changes)
    doc = parse_docx(source, "tracked.docx")
    assert "Insertedword" in doc.text and "Deletedword" not in doc.text
    layout = layout_office(doc, source, ".docx")
    assert "Deletedword" not in rendered_text(layout.pdf)
    inserted = doc.text.index("Insertedword")
    assert boxed_mask(layout, len(doc.text))[inserted:inserted + len("Insertedword")].all()
    assert layout.boxed == layout.source_chars
    assert_boxes_are_the_characters(doc, layout)


@needs_libreoffice
@pytest.mark.spawns
@pytest.mark.parametrize("settings", ["missing", "markup shown"])
def test_tracked_changes_render_accepted_whatever_the_settings_said(settings):
    def change(name, data):
        if name == "word/settings.xml":
            if settings == "missing":
                return None
            return data.replace(b"<w:zoom ", b'<w:revisionView w:markup="1" w:insDel="1"/><w:zoom ', 1)
        if name == "word/_rels/document.xml.rels" and settings == "missing":
            return re.sub(rb'<Relationship [^>]*Target="settings.xml"/>', b"", data)
        return data

    source = rewritten(docx_bytes(tracked_changes), change)
    assert (b"word/settings.xml" in source) == (settings != "missing")
    pdf = render_pdf(source, ".docx")
    text = rendered_text(pdf)
    assert "Insertedword" in text and "Deletedword" not in text


@pytest.fixture(scope="module")
def tracked_odt() -> bytes:
    """An ODT with a tracked insertion and deletion, as LibreOffice saves it."""
    if office_renderer_unavailable():
        pytest.skip(office_renderer_unavailable())
    return saved_as(docx_bytes(tracked_changes), ".docx", "odt:writer8")


@pytest.mark.spawns
@pytest.mark.parametrize("settings", ["as saved", "no ShowRedlineChanges", "missing"])
def test_odt_tracked_changes_render_accepted(tracked_odt, settings):
    odt = tracked_odt

    def change(name, data):
        if name == "settings.xml":
            return None if settings == "missing" else (
                data if settings == "as saved" else re.sub(rb'<config:config-item config:name="ShowRedlineChanges"'
                                                          rb"[^>]*>[^<]*</config:config-item>", b"", data))
        if name == "META-INF/manifest.xml" and settings == "missing":
            return re.sub(rb'<manifest:file-entry manifest:full-path="settings.xml"[^>]*/>', b"", data)
        return data

    source = rewritten(odt, change)
    assert b"tracked-changes" in zipfile.ZipFile(io.BytesIO(source)).read("content.xml")
    doc = parse_odt(source, "tracked.odt")
    assert "Insertedword" in doc.text and "Deletedword" not in doc.text
    layout = layout_office(doc, source, ".odt")
    assert "Deletedword" not in rendered_text(layout.pdf)
    assert layout.boxed == layout.source_chars
    assert_boxes_are_the_characters(doc, layout)


@needs_libreoffice
@pytest.mark.spawns
def test_a_hidden_slide_is_rendered_and_boxed():
    pptx = pytest.importorskip("pptx")
    presentation = pptx.Presentation()
    for title in ("Shown slide", "Hidden slide text", "Third slide"):
        presentation.slides.add_slide(presentation.slide_layouts[5]).shapes.title.text = title
    presentation.slides[1]._element.set("show", "0")
    buffer = io.BytesIO()
    presentation.save(buffer)
    doc = parse_pptx(buffer.getvalue(), "deck.pptx")
    assert doc.office_pages[1].hidden
    layout = layout_office(doc, buffer.getvalue(), ".pptx")
    assert layout.n_pages == 3
    hidden = doc.text.index("Hidden slide text")
    on_hidden = [run for run in layout.char_runs if hidden <= run.start < hidden + len("Hidden slide text")]
    assert boxed_mask(layout, len(doc.text))[hidden:hidden + len("Hidden slide text")].all()
    assert {run.page for run in on_hidden} == {2}
    assert layout.source_chars == len("Shown slide") + len("Third slide")  # hidden text is not counted
    assert_boxes_are_the_characters(doc, layout)


@needs_libreoffice
@pytest.mark.spawns
def test_linked_images_are_not_fetched():
    """LibreOffice fetches a DOCX's or PPTX's linked image while loading it; its profile sends
    every request to a proxy where nothing answers."""
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            self.send_response(404)
            self.end_headers()

        do_HEAD = do_OPTIONS = do_PROPFIND = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/image.png"
        png = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False).tobytes("png")
        source = docx_bytes(lambda d: (d.add_paragraph("Before the image"), d.add_picture(io.BytesIO(png)),
                                       d.add_paragraph("After the image")))

        def link(name, data):
            if name == "word/_rels/document.xml.rels":
                return re.sub(rb'Target="media/image1\.png"', f'Target="{url}" TargetMode="External"'.encode(), data)
            return data.replace(b"r:embed=", b"r:link=") if name == "word/document.xml" else data

        linked = rewritten(source, link)
        assert b"r:link=" in zipfile.ZipFile(io.BytesIO(linked)).read("word/document.xml")
        assert "After the image" in rendered_text(render_pdf(linked, ".docx"))
    finally:
        server.shutdown()
    assert requests == []


def legacy_docx(document) -> None:
    document.add_heading("Legacy report", 1)
    document.add_paragraph("First paragraph with some text.")
    document.add_paragraph("A bullet point", style="List Bullet")
    document.add_paragraph("Last words.")


IMPORT_FILTERS = {".docx": "MS Word 2007 XML", ".pptx": "Impress MS PowerPoint 2007 XML",
                  ".xlsx": "Calc MS Excel 2007 XML"}
LEGACY_EXPORTS = {".docx": "doc:MS Word 97", ".pptx": "ppt:MS PowerPoint 97", ".xlsx": "xls:MS Excel 97"}


def saved_as(source: bytes, suffix: str, export: str) -> bytes:
    """The file as LibreOffice saves it with the ``export`` filter (no binary fixture in the repository)."""
    from ingest.formats.office import render

    return render._convert(source, suffix, IMPORT_FILTERS[suffix], export, "." + export.split(":")[0], 120, None)


def saved_as_legacy(source: bytes, suffix: str) -> bytes:
    return saved_as(source, suffix, LEGACY_EXPORTS[suffix])


@pytest.fixture(scope="module")
def legacy_doc() -> tuple[bytes, bytes]:
    if office_renderer_unavailable():
        pytest.skip(office_renderer_unavailable())
    source = docx_bytes(legacy_docx)
    return source, saved_as_legacy(source, ".docx")


@pytest.mark.spawns
def test_a_legacy_doc_converts_to_a_docx_with_the_same_text(legacy_doc):
    source, doc = legacy_doc
    assert doc.startswith(b"\xd0\xcf\x11\xe0")
    converted, suffix = convert_legacy(doc, ".doc")
    assert suffix == ".docx"
    assert parse_docx(converted, "old.docx").text == parse_docx(source, "new.docx").text


@needs_libreoffice
@pytest.mark.spawns
@pytest.mark.parametrize("suffix", [".pptx", ".xlsx"])
def test_a_legacy_presentation_or_workbook_converts_with_the_same_text(suffix):
    buffer = io.BytesIO()
    if suffix == ".pptx":
        pptx = pytest.importorskip("pptx")
        presentation = pptx.Presentation()
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text, slide.placeholders[1].text = "Title here", "Body text"
        presentation.save(buffer)
        legacy, parse = ".ppt", parse_pptx
    else:
        openpyxl = pytest.importorskip("openpyxl")
        book = openpyxl.Workbook()
        book.active.append(["Name", "Value"])
        book.active.append(["x", 3.5])
        book.save(buffer)
        legacy, parse = ".xls", parse_xlsx
    old = saved_as_legacy(buffer.getvalue(), suffix)
    converted, new_suffix = convert_legacy(old, legacy)
    assert new_suffix == suffix
    assert parse(converted, "old" + suffix).text == parse(buffer.getvalue(), "new" + suffix).text


@pytest.mark.hostile('an encrypted legacy .doc given to LibreOffice', 'handled: RenderError at once; LibreOffice never waits for a password')
@pytest.mark.spawns
def test_an_encrypted_legacy_doc_fails_at_once_without_waiting_for_a_password(legacy_doc):
    """A .doc whose header says it is encrypted (fEncrypted in its FIB): LibreOffice would ask for
    a password; with no one to answer, the conversion fails (a real encrypted .doc, saved with a
    password through UNO, fails the same way)."""
    _, doc = legacy_doc
    data = bytearray(doc)
    fib = next(at for at in range(512, len(data), 512) if data[at:at + 2] == b"\xec\xa5")
    data[fib + 11] |= 0x01  # fEncrypted: bit 8 of the FIB's flags
    started = time.perf_counter()
    with pytest.raises(RenderError, match="made no .docx"):
        convert_legacy(bytes(data), ".doc", timeout_s=120)
    assert time.perf_counter() - started < 60


@needs_libreoffice
@pytest.mark.spawns
def test_a_doc_that_is_rtf_inside_converts_as_rtf():
    rtf = rb"{\rtf1\ansi\deff0 {\fonttbl {\f0 Times New Roman;}}\f0\fs24 Hello from RTF.\par Second line.\par}"
    converted, suffix = convert_legacy(rtf, ".doc")
    assert suffix == ".docx" and parse_docx(converted, "old.docx").text == "Hello from RTF.\nSecond line."


@pytest.mark.hostile('a .doc/.ppt/.xls that is not an OLE file', 'handled: RenderError before LibreOffice starts')
def test_a_legacy_suffix_with_no_legacy_file_inside_is_refused():
    with pytest.raises(RenderError, match="not a legacy .doc file"):
        convert_legacy(b"just some text\n", ".doc")
    with pytest.raises(ValueError):
        convert_legacy(b"", ".docx")
    with pytest.raises(ValueError):
        render_pdf(b"", ".xlsx")


@pytest.mark.hostile('a truncated or random office file given to LibreOffice', 'handled: RenderError; the document is indexed without boxes')
@needs_libreoffice
@pytest.mark.spawns
@pytest.mark.parametrize("damage", ["truncated", "random bytes"])
def test_a_corrupt_file_is_a_render_error(damage):
    source = docx_bytes(tracked_changes)
    rng = np.random.default_rng(0)
    broken = source[:len(source) // 3] if damage == "truncated" else rng.bytes(5000)
    with pytest.raises(RenderError) as raised:
        render_pdf(broken, ".docx", doc_id="broken.docx")
    assert raised.value.doc_id == "broken.docx"
    # LibreOffice itself, given the damaged file, reads no text out of it (its import filter is named)
    from ingest.formats.office import render

    with pytest.raises(RenderError, match="made no .pdf"):
        render._convert(broken, ".docx", IMPORT_FILTERS[".docx"], "pdf:writer_pdf_Export", ".pdf", 120, None)


def soffice_children() -> list:
    psutil = pytest.importorskip("psutil")
    return [p for p in psutil.Process().children(recursive=True) if p.name().startswith("soffice")]


@pytest.mark.hostile('LibreOffice running past its time limit', 'bounded: RenderError; its whole process group killed, nothing left running')
@needs_libreoffice
@pytest.mark.spawns
def test_a_timeout_is_a_render_error_and_leaves_no_libreoffice_running():
    source = docx_bytes(tracked_changes)
    with pytest.raises(RenderError, match="did not finish within"):
        render_pdf(source, ".docx", timeout_s=0.2)
    assert soffice_children() == []
    assert b"%PDF" in render_pdf(source, ".docx")[:8]  # the profile is still good


@needs_libreoffice
@pytest.mark.spawns
def test_parallel_processes_render_each_with_a_profile_of_its_own_removed_at_exit(tmp_path):
    source = tmp_path / "tracked.docx"
    source.write_bytes(docx_bytes(tracked_changes))
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from ingest.formats.office import render
        pdf = render.render_pdf(Path({str(source)!r}).read_bytes(), ".docx")
        print(render._profile_dir(), pdf[:5].decode())
    """)
    workers = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [worker.communicate(timeout=300)[0].split() for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    assert [pdf for _, pdf in outputs] == ["%PDF-", "%PDF-"]
    profiles = {profile for profile, _ in outputs}
    assert len(profiles) == 2
    assert not any(os.path.exists(profile) for profile in profiles)


@needs_libreoffice
@pytest.mark.spawns
def test_libreoffice_dies_with_its_caller(tmp_path):
    psutil = pytest.importorskip("psutil")
    source = tmp_path / "long.docx"
    source.write_bytes(docx_bytes(lambda d: [d.add_paragraph(f"Paragraph {n} " + "words " * 80)
                                             for n in range(3000)]))
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from ingest.formats.office.render import render_pdf
        render_pdf(Path({str(source)!r}).read_bytes(), ".docx")
    """)
    temporary = tmp_path / "tmp"  # where the killed caller leaves its profile and work folder
    temporary.mkdir()
    caller = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(temporary)})
    caller_process = psutil.Process(caller.pid)
    deadline = time.monotonic() + 60
    office = []
    while not office and time.monotonic() < deadline and caller.poll() is None:
        office = [p for p in caller_process.children(recursive=True) if p.name().startswith("soffice")]
        time.sleep(0.02)
    if not office:
        caller.kill()
        pytest.skip("LibreOffice finished before it could be seen running")
    caller.kill()
    caller.wait()
    gone, alive = psutil.wait_procs(office, timeout=30)
    assert alive == []
