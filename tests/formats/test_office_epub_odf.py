"""EPUB and OpenDocument (ODT, ODP, ODS): the office map's rules, and the text laid out as the OOXML
format of the same kind lays it out. The files are written here (zip and XML): no office suite."""

from __future__ import annotations

import io
import time
import zipfile
from urllib.parse import unquote

import pytest

from conftest import SHARED_CORPUS
from office_checks import parsed_and_checked
from ingest.formats.office.epub import parse_epub
from ingest.formats.office.odf import parse_odp, parse_odt
from ingest.formats.office.ods import MAX_CELLS, parse_ods
from schemas.errors import CorruptDocumentError, DocumentTooLargeError, EncryptedDocumentError
from schemas.records import HiddenReason, MediaType, RunKind

OFFICE = SHARED_CORPUS / "office"
EPUB_CORPUS = sorted(OFFICE.glob("*.epub")) if OFFICE.is_dir() else []
ODF_CORPUS = sorted(p for p in OFFICE.glob("*.od[tps]")) if OFFICE.is_dir() else []
ODF_PARSERS = {".odt": parse_odt, ".odp": parse_odp, ".ods": parse_ods}

NS = " ".join(f'xmlns:{prefix}="urn:oasis:names:tc:opendocument:xmlns:{name}"' for prefix, name in (
    ("office", "office:1.0"), ("text", "text:1.0"), ("table", "table:1.0"), ("draw", "drawing:1.0"),
    ("presentation", "presentation:1.0"), ("style", "style:1.0"), ("fo", "xsl-fo-compatible:1.0"),
    ("svg", "svg-compatible:1.0"), ("meta", "meta:1.0"))) + ' xmlns:dc="http://purl.org/dc/elements/1.1/"'
BODY = {"text": "text", "presentation": "presentation", "spreadsheet": "spreadsheet"}


def odf(kind: str, body: str, automatic: str = "", styles: str = "", title: str = "",
        manifest_extra: str = "", mimetype: str = "") -> bytes:
    """An ODF package of ``kind`` (text, presentation, spreadsheet) whose office body is ``body``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mimetype or f"application/vnd.oasis.opendocument.{kind}")
        z.writestr("META-INF/manifest.xml", '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:'
                   'xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="content.xml" '
                   f'manifest:media-type="text/xml">{manifest_extra}</manifest:file-entry></manifest:manifest>')
        z.writestr("content.xml", f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content {NS} '
                                  f'office:version="1.3"><office:automatic-styles>{automatic}</office:automatic-styles>'
                                  f'<office:body><office:{BODY[kind]}>{body}</office:{BODY[kind]}></office:body>'
                                  '</office:document-content>')
        z.writestr("styles.xml", f'<office:document-styles {NS}>{styles}</office:document-styles>')
        z.writestr("meta.xml", f'<office:document-meta {NS}><office:meta><dc:title>{title}</dc:title>'
                               '</office:meta></office:document-meta>')
    return buffer.getvalue()


def p(*content: str, style: str = "") -> str:
    return f'<text:p{f" text:style-name={style!r}" if style else ""}>{"".join(content)}</text:p>'


def hidden_texts(doc) -> list[tuple[str, HiddenReason]]:
    return [(doc.text[h.start:h.end], h.reason) for h in doc.hidden_runs]


def synthetic_text(doc) -> str:
    return "".join(doc.text[r.start:r.end] for r in doc.office_runs if r.kind is RunKind.SYNTHETIC)


def assert_pages_tile_the_text(doc) -> None:
    """Pages in order, never overlapping, and between them only the separators."""
    position = 0
    for number, page in enumerate(doc.office_pages, 1):
        assert page.page == number and position <= page.start <= page.end <= len(doc.text)
        assert not doc.text[position:page.start].strip(), (page, doc.text[position:page.start])
        position = page.end
    assert not doc.text[position:].strip()


def odt_checked(body: str, **kwargs):
    doc = parsed_and_checked(parse_odt, odf("text", body, **kwargs), "t.odt")
    assert doc.media_type is MediaType.ODT
    return doc


# --- the shared corpus

@pytest.mark.skipif(not EPUB_CORPUS, reason="no shared office corpus")
@pytest.mark.parametrize("path", EPUB_CORPUS, ids=lambda p: p.name)
def test_every_epub_run_reads_back_from_its_chapter(path):
    doc = parsed_and_checked(parse_epub, path.read_bytes(), path.name)
    assert doc.media_type is MediaType.EPUB and doc.text.strip() and doc.office_pages
    assert_pages_tile_the_text(doc)
    archive = zipfile.ZipFile(path)
    assert all(page.name in archive.namelist() and page.name.endswith("html") for page in doc.office_pages)
    mapped = sum(r.end - r.start for r in doc.office_runs if r.kind is not RunKind.SYNTHETIC)
    assert mapped / len(doc.text) > 0.9


@pytest.mark.skipif(not (OFFICE / "docling__epub_purvis_poetry.epub").is_file(), reason="no shared office corpus")
def test_the_shared_epub_gives_its_chapters_in_spine_order():
    doc = parsed_and_checked(parse_epub, (OFFICE / "docling__epub_purvis_poetry.epub").read_bytes(), "poetry.epub")
    assert doc.title == "Poetry"
    assert [page.name for page in doc.office_pages] == [
        f"epub/text/{name}.xhtml" for name in ("titlepage", "imprint", "poetry", "colophon", "uncopyright")]
    poems = doc.office_pages[2]
    assert doc.text[poems.start:poems.end].startswith(
        "The Grave of the Slave\n\nThe cold storms of winter shall chill him no more,\n")


@pytest.mark.skipif(not ODF_CORPUS, reason="no shared office corpus")
@pytest.mark.parametrize("path", ODF_CORPUS, ids=lambda p: p.name)
def test_every_odf_run_reads_back_from_its_part(path):
    doc = parsed_and_checked(ODF_PARSERS[path.suffix], path.read_bytes(), path.name)
    assert doc.text.strip()
    if path.suffix != ".odt":  # slides and sheets are pages; a text document has none
        assert_pages_tile_the_text(doc)


@pytest.mark.skipif(not (OFFICE / "docling__text_document_01.odt").is_file(), reason="no shared office corpus")
def test_the_shared_odt_reads_as_its_paragraphs_and_numbered_lists():
    doc = parsed_and_checked(parse_odt, (OFFICE / "docling__text_document_01.odt").read_bytes(), "t.odt")
    assert doc.text.startswith("Title\nSubtitle\nheading level 1.0\nLorem Ipsum\xa0is simply dummy text")
    assert "\n1.\tnumbered list 1\n2.\tnumbered list 2\n\u25e6\tbullet list 2.1\n" in doc.text
    assert doc.text.endswith("written in 45 BC. \nX2 + Y2 = Z")


# --- ODT

def test_a_space_element_is_its_spaces_over_the_whole_element():
    doc = odt_checked(p('a<text:s text:c="3"/>b<text:tab/>c<text:line-break/>d <text:s/>e'))
    assert doc.text == "a   b\tc\nd  e"
    spaces = next(r for r in doc.office_runs if doc.text[r.start:r.end] == "   ")
    assert spaces.kind is RunKind.ENTITY and spaces.src_end - spaces.src_start == len('<text:s text:c="3"/>')


def test_paragraph_white_space_collapses_as_odf_says():
    doc = odt_checked(p("\r\n   Fish\r\n   &amp;  chips ") + p("<text:span> one</text:span> two"))
    assert doc.text == "Fish & chips \none two"
    assert RunKind.WHITESPACE in {r.kind for r in doc.office_runs}


def test_tracked_deletions_are_left_out_and_insertions_kept():
    changes = ('<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><office:change-info>'
               '<dc:creator>a</dc:creator></office:change-info>' + p("gone") + '</text:deletion></text:changed-region>'
               '</text:tracked-changes>')
    doc = odt_checked(changes + p('Keep <text:change text:change-id="c1"/><text:change-start text:change-id="c2"/>'
                                  'added <text:change-end text:change-id="c2"/>end'))
    assert doc.text == "Keep added end"


def test_notes_and_comments_follow_the_body_under_titles():
    note = ('<text:note text:id="n1" text:note-class="{}"><text:note-citation>1</text:note-citation>'
            '<text:note-body>{}</text:note-body></text:note>')
    comment = ('<office:annotation><dc:creator>x</dc:creator><dc:date>2024-01-01T00:00:00</dc:date>'
               + p("Nice.") + '</office:annotation>')
    header = '<office:master-styles><style:master-page style:name="Standard"><style:header>' + p(
        "Running head") + '</style:header><style:footer style:display="false">' + p("Off") + \
        '</style:footer></style:master-page></office:master-styles>'
    doc = odt_checked(p("With note", note.format("footnote", p("A note.")), comment, " commented")
                      + p("End", note.format("endnote", p("An endnote."))), styles=header)
    assert doc.text == ("With note commented\nEnd\n\nHeaders\nRunning head\n\nFootnotes\n[1] A note.\n\n"
                        "Endnotes\n[1] An endnote.\n\nComments\n[1] Nice.")
    assert next(r.part for r in doc.office_runs if doc.text[r.start:r.end] == "Running head") == "styles.xml"


def test_hidden_text_stays_in_the_text_and_is_flagged():
    automatic = ('<style:style style:name="T1" style:family="text"><style:text-properties text:display="none"/>'
                 '</style:style><style:style style:name="T2" style:family="text" style:parent-style-name="T1"/>')
    body = (p("Seen ", '<text:span text:style-name="T1">unseen</text:span> ',
              '<text:span text:style-name="T2">inherited</text:span>')
            + p('<text:hidden-paragraph text:condition="ooow:1" text:is-hidden="true"/>Hidden paragraph')
            + p('<text:hidden-paragraph text:condition="ooow:0" text:is-hidden="false"/>Shown paragraph')
            + p('A <text:hidden-text text:condition="ooow:1" text:string-value="field">field</text:hidden-text>')
            + '<text:section text:name="S" text:display="none">' + p("Hidden section") + '</text:section>')
    doc = odt_checked(body, automatic=automatic)
    assert doc.text == "Seen unseen inherited\nHidden paragraph\nShown paragraph\nA field\nHidden section"
    assert hidden_texts(doc) == [("unseen", HiddenReason.HIDDEN_FORMATTING),
                                 ("inherited", HiddenReason.HIDDEN_FORMATTING),
                                 ("Hidden paragraph", HiddenReason.HIDDEN_FORMATTING),
                                 ("field", HiddenReason.HIDDEN_FORMATTING),
                                 ("Hidden section", HiddenReason.HIDDEN_FORMATTING)]


def test_list_labels_are_synthetic_and_count_as_libreoffice_does():
    # The expected text is what LibreOffice's own text export gives for this list (labels, tabs).
    automatic = ('<text:list-style style:name="L1"><text:list-level-style-number text:level="1" style:num-suffix="." '
                 'style:num-format="1"/><text:list-level-style-number text:level="2" style:num-suffix=")" '
                 'style:num-format="a" text:display-levels="2"/></text:list-style>'
                 '<text:list-style style:name="L2"><text:list-level-style-bullet text:level="1" '
                 'text:bullet-char="\u2022"/></text:list-style>')

    def item(*content):
        return "<text:list-item>" + "".join(content) + "</text:list-item>"

    body = ('<text:list text:style-name="L1">' + item('<text:list>' + item(p("inner first")) + '</text:list>')
            + item(p("One"), p("One second para"), '<text:list>' + item(p("One a")) + item(p("One b")) + '</text:list>')
            + item(p("Two")) + '<text:list-header>' + p("Header") + '</text:list-header>' + item(p("Three"))
            + '</text:list>' + p("Between") + '<text:list text:style-name="L1">' + item(p("Again")) + '</text:list>'
            + '<text:list text:style-name="L1" text:continue-numbering="true">' + item(p("Cont")) + '</text:list>'
            + '<text:list text:style-name="L2">' + item(p("Dot")) + '</text:list>')
    doc = odt_checked(body, automatic=automatic)
    assert doc.text == ("1.a)\tinner first\n2.\tOne\nOne second para\n2.a)\tOne a\n2.b)\tOne b\n3.\tTwo\nHeader\n"
                        "4.\tThree\nBetween\n1.\tAgain\n2.\tCont\n\u2022\tDot")
    assert synthetic_text(doc).replace("\n", "") == "1.a)\t2.\t2.a)\t2.b)\t3.\t4.\t1.\t2.\t\u2022\t"


def test_continued_lists_count_items_that_only_wrap_a_deeper_list_as_libreoffice_does():
    # Numbered headings as LibreOffice saves a Word file's: each in a list of its own that continues
    # the last, deeper levels wrapped in items of their own. LibreOffice shows these labels.
    automatic = ('<text:list-style style:name="L1"><text:list-level-style-number text:level="1" style:num-suffix="." '
                 'style:num-format="1"/><text:list-level-style-number text:level="2" style:num-suffix="." '
                 'style:num-format="1" text:display-levels="2"/></text:list-style>')

    def heading(text, level, continues=True):
        nested = f"<text:h>{text}</text:h>"
        for _ in range(level - 1):
            nested = f"<text:list><text:list-item>{nested}</text:list-item></text:list>"
        attrs = ' text:continue-numbering="true"' if continues else ""
        return f'<text:list text:style-name="L1"{attrs}><text:list-item>{nested}</text:list-item></text:list>'

    doc = odt_checked(heading("S1", 1, False) + p("x") + heading("S1.1", 2) + heading("S1.2", 2) + heading("S2", 1)
                      + heading("S2.1", 2), automatic=automatic)
    assert doc.text == "1.\tS1\nx\n1.1.\tS1.1\n1.2.\tS1.2\n2.\tS2\n2.1.\tS2.1"


def test_tables_give_cells_by_tabs_and_rows_by_lines():
    def cell(*texts):
        return "<table:table-cell>" + "".join(p(t) for t in texts) + "</table:table-cell>"
    table = ('<table:table><table:table-column table:number-columns-repeated="3"/><table:table-header-rows>'
             '<table:table-row>' + cell("a") + cell() + cell("c1", "c2")
             + '</table:table-row></table:table-header-rows>'
             '<table:table-row><table:table-cell table:number-columns-spanned="2">' + p("wide")
             + '</table:table-cell><table:covered-table-cell/>' + cell("f") + '</table:table-row></table:table>')
    doc = odt_checked(p("Intro") + table + p("After"))
    assert doc.text == "Intro\na\t\tc1 c2\nwide\t\tf\nAfter"


def test_a_text_box_is_read_where_it_is_anchored():
    frame = ('<draw:frame draw:name="F" svg:width="2cm"><svg:title>alt text</svg:title><draw:text-box>'
             + p("In the box") + '</draw:text-box></draw:frame>')
    doc = odt_checked(p("Before ", frame, "after") + p("Next"))
    assert doc.text == "Before \nIn the box\nafter\nNext"


def test_a_multibyte_part_maps_code_points_and_the_title_comes_from_meta():
    doc = odt_checked(p("Grüße, 日本語 \U0001f986 &amp; done"), title="Über")
    assert doc.text == "Grüße, 日本語 \U0001f986 & done" and doc.title == "Über"


@pytest.mark.hostile('an encrypted (password-protected) OpenDocument file', 'error row: EncryptedDocumentError')
def test_an_encrypted_package_is_an_encrypted_document_error():
    source = odf("text", p("x"), manifest_extra='<manifest:encryption-data manifest:checksum="x"/>')
    with pytest.raises(EncryptedDocumentError, match="encrypted"):
        parse_odt(source, "secret.odt")


@pytest.mark.hostile('OpenDocument XML nested thousands of elements deep', 'error row: CorruptDocumentError, not a RecursionError')
def test_elements_nested_too_deep_are_a_corrupt_document_not_a_crash():
    with pytest.raises(CorruptDocumentError, match="nested too deep"):
        parse_odt(odf("text", p("<text:span>" * 3000 + "x" + "</text:span>" * 3000)), "deep.odt")


@pytest.mark.hostile('a damaged deflate stream or an unknown XML encoding in an office zip', 'error row: CorruptDocumentError')
def test_a_damaged_member_or_an_unknown_encoding_is_a_corrupt_document_not_a_crash():
    source = bytearray(odf("text", p("x" * 200)))
    info = zipfile.ZipFile(io.BytesIO(bytes(source))).getinfo("content.xml")
    data_at = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    source[data_at:data_at + info.compress_size] = b"\xff" * info.compress_size  # no deflate stream
    with pytest.raises(CorruptDocumentError, match="cannot read part content.xml"):
        parse_odt(bytes(source), "damaged.odt")
    unknown = odf("text", p("x"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(unknown)) as original, zipfile.ZipFile(buffer, "w") as z:
        for name in original.namelist():
            data = original.read(name)
            z.writestr(name, data.replace(b'encoding="UTF-8"', b'encoding="UTF-x"') if name == "content.xml" else data)
    with pytest.raises(CorruptDocumentError, match="unknown encoding"):
        parse_odt(buffer.getvalue(), "odd.odt")


def test_a_spreadsheet_given_as_a_text_document_is_refused_by_its_mimetype():
    with pytest.raises(CorruptDocumentError, match="mimetype"):
        parse_odt(odf("spreadsheet", ""), "sheet.odt")
    with pytest.raises(CorruptDocumentError, match="not an office file"):
        parse_odt(b"<office:document/>", "flat.fodt")


# --- ODP

def frame(text: str, x: str = "1cm", y: str = "1cm", cls: str = "") -> str:
    placeholder = f' presentation:class="{cls}"' if cls else ""
    return (f'<draw:frame svg:x="{x}" svg:y="{y}"{placeholder}><draw:text-box>{p(text)}</draw:text-box>'
            '</draw:frame>')


def test_slides_in_order_shapes_in_reading_order_notes_after_them():
    automatic = ('<style:style style:name="dp2" style:family="drawing-page"><style:drawing-page-properties '
                 'presentation:visibility="hidden"/></style:style>')
    notes = ('<presentation:notes><draw:page-thumbnail draw:page-number="1" presentation:class="page"/>'
             + frame("Speaker notes", cls="notes") + frame("9", cls="page-number") + '</presentation:notes>')
    table = ('<draw:frame svg:x="1cm" svg:y="8cm"><table:table><table:table-row><table:table-cell>' + p("a")
             + '</table:table-cell><table:table-cell>' + p("b") + '</table:table-cell></table:table-row>'
             '</table:table></draw:frame>')
    slides = ('<draw:page draw:name="Intro">' + frame("Lower right", "10cm", "10cm") + frame("Upper", "5cm", "2cm")
              + frame("Body", cls="outline") + frame("The title", cls="title") + table + notes + '</draw:page>'
              '<draw:page draw:name="Secret" draw:style-name="dp2"><draw:custom-shape svg:x="0in" svg:y="0in">'
              + p("Hidden shape") + '</draw:custom-shape></draw:page>')
    doc = parsed_and_checked(parse_odp, odf("presentation", slides, automatic=automatic), "t.odp")
    assert doc.media_type is MediaType.ODP
    assert doc.text == "The title\nBody\nUpper\na\tb\nLower right\nNotes\nSpeaker notes\n\nHidden shape"
    assert [(page.page, page.name, page.hidden) for page in doc.office_pages] == [(1, "Intro", False),
                                                                                 (2, "Secret", True)]
    assert_pages_tile_the_text(doc)
    assert hidden_texts(doc) == [("Hidden shape", HiddenReason.HIDDEN_SLIDE)]


# --- ODS

def sheet(name: str, rows: str, columns: str = "", style: str = "") -> str:
    styled = f' table:style-name="{style}"' if style else ""
    return f'<table:table table:name="{name}"{styled}>{columns}{rows}</table:table>'


def row(*cells: str, repeated: int = 1, visibility: str = "") -> str:
    attrs = (f' table:number-rows-repeated="{repeated}"' if repeated > 1 else "") + (
        f' table:visibility="{visibility}"' if visibility else "")
    return f"<table:table-row{attrs}>{''.join(cells)}</table:table-row>"


def cell(*texts: str, repeated: int = 1, extra: str = "") -> str:
    attrs = f' table:number-columns-repeated="{repeated}"' if repeated > 1 else ""
    return f"<table:table-cell{attrs}>{''.join(p(t) for t in texts)}{extra}</table:table-cell>"


def ods_checked(body: str, automatic: str = ""):
    doc = parsed_and_checked(parse_ods, odf("spreadsheet", body, automatic=automatic), "t.ods")
    assert doc.media_type is MediaType.ODS
    assert_pages_tile_the_text(doc)
    return doc


def cells(doc) -> dict[str, str]:
    return {c.ref: doc.text[c.start:c.end] for c in doc.office_cells}


def test_repeated_columns_and_rows_give_each_cell_its_reference():
    doc = ods_checked(sheet("Sheet1", row(cell(), cell("x", repeated=2), cell(repeated=3), cell("y"))
                            + row(cell("r", repeated=1), repeated=2) + row(cell(repeated=1024), repeated=5)
                            + row(cell(), cell("two", "lines"))))
    assert doc.text == "Sheet1\n\tx\tx\t\t\t\ty\nr\nr\n\ttwo\nlines"  # rows start at column A
    assert cells(doc) == {"Sheet1!B1": "x", "Sheet1!C1": "x", "Sheet1!G1": "y", "Sheet1!A2": "r",
                          "Sheet1!A3": "r", "Sheet1!B9": "two\nlines"}


def test_a_sheet_claiming_a_million_empty_rows_costs_nothing():
    body = sheet("Big", row(cell("top")) + row(cell(repeated=16384), repeated=1_048_000) + row(cell("end")))
    started = time.perf_counter()
    doc = ods_checked(body)
    assert time.perf_counter() - started < 2
    assert cells(doc) == {"Big!A1": "top", "Big!A1048002": "end"}


@pytest.mark.hostile('an ODS repeating a filled cell into billions of cells', 'error row: DocumentTooLargeError, counted without looping')
def test_repeats_of_a_filled_cell_past_the_cell_budget_are_refused():
    body = sheet("Bomb", row(cell("x", repeated=16384), repeated=1_000_000))
    started = time.perf_counter()
    with pytest.raises(DocumentTooLargeError, match=f"{MAX_CELLS:,}"):
        parse_ods(odf("spreadsheet", body), "bomb.ods")
    assert time.perf_counter() - started < 30


def test_hidden_rows_columns_and_sheets_stay_in_the_text_and_are_flagged():
    automatic = ('<style:style style:name="ta2" style:family="table"><style:table-properties table:display="false"/>'
                 '</style:style>')
    columns = ('<table:table-column/>'
               '<table:table-column table:number-columns-repeated="2" table:visibility="collapse"/>'
               '<table:table-column table:number-columns-repeated="16381"/>')
    open_sheet = sheet("Open", row(cell("a"), cell("b"), cell("c"), cell("d"))
                       + row(cell("filtered"), visibility="filter"), columns)
    doc = ods_checked(open_sheet + sheet("Secret sheet", row(cell("s")), style="ta2"), automatic)
    assert doc.text == "Open\na\tb\tc\td\nfiltered\n\nSecret sheet\ns"
    assert [(page.page, page.name, page.hidden) for page in doc.office_pages] == [(1, "Open", False),
                                                                                 (2, "Secret sheet", True)]
    assert hidden_texts(doc) == [("b", HiddenReason.HIDDEN_COLUMN), ("c", HiddenReason.HIDDEN_COLUMN),
                                 ("filtered", HiddenReason.HIDDEN_ROW),
                                 ("Secret sheet\ns", HiddenReason.HIDDEN_SHEET)]
    assert cells(doc)["'Secret sheet'!A1"] == "s"


def test_cell_comments_follow_the_rows_labelled_by_their_cell():
    comment = '<office:annotation><dc:creator>x</dc:creator>' + p("Check this") + '</office:annotation>'
    doc = ods_checked(sheet("S", row(cell("a"), cell("b", extra=comment)) + row(cell(extra=comment))))
    assert doc.text == "S\na\tb\nComments\n[B1] Check this\n[A2] Check this"
    assert cells(doc) == {"S!A1": "a", "S!B1": "b"}


# --- EPUB

CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             '</rootfiles></container>')
XHTML = ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
         '"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">'
         '<head><title>{title}</title></head>\n<body>\n{body}\n</body></html>')


def epub(chapters: list[tuple[str, str, bytes | str | None]], opf_head: str = "", encryption: str = "") -> bytes:
    """An EPUB whose spine lists ``chapters`` as (href in the OPF, itemref attributes, content:
    None for none in the zip); an href ending in .svg is an SVG page."""
    types = ["image/svg+xml" if href.endswith(".svg") else "application/xhtml+xml" for href, _, _ in chapters]
    items = "".join(f'<item id="c{i}" href="{href}" media-type="{types[i]}"/>'
                    for i, (href, _, _) in enumerate(chapters))
    spine = "".join(f'<itemref idref="c{i}" {attrs}/>' for i, (_, attrs, _) in enumerate(chapters))
    opf = (f'<?xml version="1.0" encoding="UTF-8"?>{opf_head}<package xmlns="http://www.idpf.org/2007/opf" '
           'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title> A  tiny\nbook </dc:title>'
           f'</metadata><manifest>{items}<item id="css" href="style.css" media-type="text/css"/></manifest>'
           f'<spine>{spine}</spine></package>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        z.writestr("META-INF/container.xml", CONTAINER)
        z.writestr("OEBPS/content.opf", opf)
        if encryption:
            z.writestr("META-INF/encryption.xml", encryption)
        for href, _, content in chapters:
            if content is not None:
                z.writestr("OEBPS/" + unquote(href), content)
    return buffer.getvalue()


def chapter(body: str, title: str = "T") -> str:
    return XHTML.format(title=title, body=body)


def epub_checked(source: bytes):
    doc = parsed_and_checked(parse_epub, source, "t.epub")
    assert doc.media_type is MediaType.EPUB
    assert_pages_tile_the_text(doc)
    return doc


def test_chapters_follow_the_spine_with_non_linear_ones_last():
    doc = epub_checked(epub([("one.xhtml", "", chapter("<h1>One</h1><p>First.</p>")),
                             ("notes.xhtml", 'linear="no"', chapter("<p>A note.</p>")),
                             ("chapter%20two.xhtml", "", chapter("<p>Second.</p>")),
                             ("empty.xhtml", "", chapter(""))]))
    assert doc.text == "One\n\nFirst.\n\nSecond.\n\nA note."
    assert doc.title == "A tiny book"
    assert [(page.page, page.name, doc.text[page.start:page.end]) for page in doc.office_pages] == [
        (1, "OEBPS/one.xhtml", "One\n\nFirst."), (2, "OEBPS/chapter two.xhtml", "Second."),
        (3, "OEBPS/empty.xhtml", ""), (4, "OEBPS/notes.xhtml", "A note.")]


def test_spine_items_that_are_no_chapter_or_are_missing_are_left_out_with_a_warning():
    doc = epub_checked(epub([("cover.svg", "", "<svg/>"), ("gone.xhtml", "", None),
                             ("c.xhtml", "", chapter("<p>Kept.</p>"))]))
    assert doc.text == "Kept." and [page.name for page in doc.office_pages] == ["OEBPS/c.xhtml"]
    assert len(doc.warnings) == 2 and "'c0'" in doc.warnings[0] and "gone.xhtml" in doc.warnings[1]


def test_a_chapter_with_a_bom_crlf_and_html_entities_reads_back_from_its_part():
    body = "<p>Fish&nbsp;&amp; chips&copy\n   and\n<b>tea</b></p>\n<pre>a\nb</pre>"
    doc = epub_checked(epub([("c.xhtml", "", "\ufeff" + chapter(body).replace("\n", "\r\n"))]))
    assert doc.text == "Fish\xa0& chips\xa9 and tea\n\na\nb"
    kinds = {doc.text[r.start:r.end]: r.kind for r in doc.office_runs}
    assert kinds["\xa0"] is RunKind.ENTITY and kinds[" "] in (RunKind.TEXT, RunKind.WHITESPACE)
    whitespace = [r for r in doc.office_runs if r.kind is RunKind.WHITESPACE]
    assert whitespace and all(doc.text[r.start:r.end] in (" ", "\n") for r in whitespace)


def test_xhtml_empty_elements_do_not_swallow_the_chapter():
    body = ('<p>Kept<span style="display:none"/> after a hidden empty span<a id="p5"/> and an anchor.</p>'
            '<script type="text/javascript" src="x.js"/><p>After the script.</p>')
    doc = epub_checked(epub([("c.xhtml", "", XHTML.replace("<title>{title}</title>", "<title/>").format(body=body))]))
    assert doc.text == "Kept after a hidden empty span and an anchor.\n\nAfter the script."


def test_a_reference_html_and_xml_read_differently_keeps_its_text_and_loses_its_source():
    doc = epub_checked(epub([("c.xhtml", "", chapter("<p>It&#146;s here.</p>"))]))
    assert doc.text == "It\u2019s here."
    quote = next(r for r in doc.office_runs if r.start <= 2 < r.end)
    assert quote.kind is RunKind.SYNTHETIC and doc.warnings and "1 characters" in doc.warnings[0]


def test_hidden_runs_of_a_chapter_move_with_it():
    doc = epub_checked(epub([("a.xhtml", "", chapter("<p>First</p>")),
                             ("b.xhtml", "", chapter('<p>Seen <span style="font-size:0">unseen</span></p>'))]))
    assert hidden_texts(doc) == [("unseen", HiddenReason.TINY)]


def test_a_reference_in_another_case_maps_to_the_part_as_the_zip_spells_it():
    source = epub([("Text/Ch1.xhtml", "", chapter("<p>Hello</p>"))])
    source = source.replace(b"OEBPS/Text/Ch1.xhtml", b"OEBPS/text/ch1.xhtml")  # the zip's own spelling
    doc = epub_checked(source)
    assert doc.office_pages[0].name == "OEBPS/text/ch1.xhtml" and doc.text == "Hello"


def test_a_chapter_not_in_utf8_is_refused_with_its_name():
    with pytest.raises(CorruptDocumentError, match="OEBPS/c.xhtml is not UTF-8"):
        parse_epub(epub([("c.xhtml", "", chapter("<p>Hi</p>").encode("utf-16"))]), "t.epub")


@pytest.mark.hostile('an EPUB with a DRM-encrypted chapter', 'error row: EncryptedDocumentError')
def test_a_drm_encrypted_chapter_is_an_encrypted_document_error():
    encryption = ('<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                  'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
                  '<enc:CipherReference URI="OEBPS/c.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>')
    with pytest.raises(EncryptedDocumentError, match="OEBPS/c.xhtml"):
        parse_epub(epub([("c.xhtml", "", chapter("<p>Hi</p>"))], encryption=encryption), "t.epub")


def test_the_opf_is_read_without_its_dtd_and_never_with_entities():
    doctype = '<!DOCTYPE package PUBLIC "+//ISBN 0-9673008-1-9//DTD OEB 1.2 Package//EN" "http://x/oebpkg12.dtd">'
    assert epub_checked(epub([("c.xhtml", "", chapter("<p>Hi</p>"))], opf_head=doctype)).text == "Hi"
    entity = '<!DOCTYPE package [<!ENTITY boom "boom">]>'
    with pytest.raises(CorruptDocumentError, match="DOCTYPE"):
        parse_epub(epub([("c.xhtml", "", chapter("<p>Hi</p>"))], opf_head=entity), "t.epub")


def test_a_zip_without_a_container_is_no_epub():
    with pytest.raises(CorruptDocumentError, match="container.xml"):
        parse_epub(odf("text", p("x")), "t.epub")
