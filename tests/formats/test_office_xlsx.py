"""XLSX: sheets under their names, cells as Excel displays them, every real character mapped."""

from __future__ import annotations

import io
import zipfile
from datetime import date, datetime

import pytest

from conftest import SHARED_CORPUS
from office_checks import parsed_and_checked
from ingest.formats.office import parse_xlsx
from ingest.formats.office.numbers import format_value, general
from schemas.records import HiddenReason, MediaType, RunKind

S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
CORPUS = sorted(p for p in SHARED_CORPUS.glob("office/*.xls[xm]")) if (SHARED_CORPUS / "office").is_dir() else []
STYLES = (f'<styleSheet xmlns="{S}"><numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/>'
          '<numFmt numFmtId="165" formatCode="0.0%"/></numFmts><cellXfs count="4"><xf numFmtId="0"/>'
          '<xf numFmtId="164"/><xf numFmtId="165"/><xf numFmtId="4"/></cellXfs></styleSheet>')
SHARED = (f'<sst xmlns="{S}"><si><t>Item</t></si><si><r><t>Rich </t></r><r><rPr><b/></rPr><t>text &amp; more</t></r>'
          '<rPh><t>PHONETIC</t></rPh></si><si><t>Hidden one</t></si></sst>')


def xlsx(sheets: list[tuple[str, str, str]], shared: str = SHARED) -> bytes:
    """Sheets as (name, state, worksheet body XML)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_rels/.rels", f'<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
                                  f'Type="{R}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
        listed = "".join(f'<sheet name="{name}" sheetId="{i + 1}" {f"state={state!r}" if state else ""} r:id="rId{i + 1}"/>'
                         for i, (name, state, _) in enumerate(sheets))
        z.writestr("xl/workbook.xml", f'<workbook xmlns="{S}" xmlns:r="{R}"><sheets>{listed}</sheets></workbook>')
        rels = "".join(f'<Relationship Id="rId{i + 1}" Type="{R}/worksheet" Target="worksheets/sheet{i + 1}.xml"/>'
                       for i in range(len(sheets)))
        rels += (f'<Relationship Id="rId90" Type="{R}/sharedStrings" Target="sharedStrings.xml"/>'
                 f'<Relationship Id="rId91" Type="{R}/styles" Target="styles.xml"/>')
        z.writestr("xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{RELS}">{rels}</Relationships>')
        z.writestr("xl/sharedStrings.xml", shared)
        z.writestr("xl/styles.xml", STYLES)
        for i, (_, _, body) in enumerate(sheets):
            z.writestr(f"xl/worksheets/sheet{i + 1}.xml", f'<worksheet xmlns="{S}">{body}</worksheet>')
    return buffer.getvalue()


def parse_checked(source: bytes, doc_id: str = "t.xlsx"):
    return parsed_and_checked(parse_xlsx, source, doc_id)


def cells(doc) -> dict[str, str]:
    return {cell.ref: doc.text[cell.start:cell.end] for cell in doc.office_cells}


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_office_run_reads_back_from_its_part(path):
    doc = parse_checked(path.read_bytes(), path.name)
    assert doc.media_type is MediaType.XLSX and doc.office_cells
    assert all(doc.office_pages[0].start <= c.start and c.end <= doc.office_pages[-1].end for c in doc.office_cells)


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
def test_the_values_openpyxl_reads_are_the_cells_we_show():
    openpyxl = pytest.importorskip("openpyxl")
    found = total = 0
    for path in CORPUS:
        shown = cells(parse_xlsx(path.read_bytes(), path.name))
        for sheet in openpyxl.load_workbook(path, data_only=True).worksheets:
            for row in sheet.iter_rows():
                for cell in row:
                    if cell.value is None or cell.value == "":
                        continue
                    total += 1
                    expected = _as_excel_shows(cell.value)
                    found += shown.get(f"{_quoted(sheet.title)}!{cell.coordinate}") == expected
    print(f"openpyxl cell values found: {found}/{total}")
    assert total > 100 and found / total > 0.95, (found, total)


def _as_excel_shows(value) -> str:
    if isinstance(value, bool):
        return str(value).upper()
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d} {value.hour}:{value:%M:%S}"  # the corpus's one date format
    if isinstance(value, (int, float)):
        return general(float(value))
    return str(value)


def _quoted(name: str) -> str:
    return name if name.replace("_", "").isalnum() else "'" + name.replace("'", "''") + "'"


def test_cells_show_their_number_format_and_formulas_their_cached_value():
    body = ('<sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
            '<row r="2"><c r="A2" s="1"><v>45658</v></c><c r="B2" s="2"><v>0.5</v></c><c r="C2" s="3"><v>1234.5</v></c>'
            '<c r="D2"><f>A2+1</f><v>45659</v></c><c r="E2" t="str"><f>"a"&amp;"b"</f><v>ab</v></c>'
            '<c r="F2" t="b"><v>1</v></c><c r="G2" t="inlineStr"><is><t>inline &lt;x&gt;</t></is></c>'
            '<c r="H2" t="e"><v>#DIV/0!</v></c><c r="I2"><f>1/3</f><v>0.33333333333333331</v></c></row></sheetData>')
    doc = parse_checked(xlsx([("Data", "", body)]))
    assert cells(doc) == {"Data!A1": "Item", "Data!B1": "Rich text & more", "Data!A2": "2025-01-01", "Data!B2": "50.0%",
                          "Data!C2": "1,234.50", "Data!D2": "45659", "Data!E2": "ab", "Data!F2": "TRUE",
                          "Data!G2": "inline <x>", "Data!H2": "#DIV/0!", "Data!I2": "0.333333333"}
    assert doc.text == ("Data\nItem\tRich text & more\n2025-01-01\t50.0%\t1,234.50\t45659\tab\tTRUE\tinline <x>\t"
                        "#DIV/0!\t0.333333333")
    rich = doc.text.index("Rich")
    assert {r.part for r in doc.office_runs if rich <= r.start < rich + 16} == {"xl/sharedStrings.xml"}
    formatted = doc.text.index("50.0%")
    assert next(r for r in doc.office_runs if r.start <= formatted < r.end).kind is RunKind.SYNTHETIC
    stored = doc.text.index("45659")
    assert next(r for r in doc.office_runs if r.start <= stored < r.end).part == "xl/worksheets/sheet1.xml"


def test_columns_keep_their_place_and_merged_cells_show_once():
    body = ('<sheetData><row r="3"><c r="B3" t="s"><v>0</v></c><c r="E3"><v>7</v></c></row>'
            '<row r="5"><c r="C5"><v>1</v></c><c r="D5"/></row></sheetData>'
            '<mergeCells count="1"><mergeCell ref="B3:D3"/></mergeCells>')
    doc = parse_checked(xlsx([("S", "", body)]))
    assert doc.text == "S\nItem\t\t\t7\n\t1"
    assert cells(doc) == {"S!B3": "Item", "S!E3": "7", "S!C5": "1"}


def test_hidden_rows_columns_and_sheets_stay_in_the_text_and_are_flagged():
    body = ('<cols><col min="2" max="2" hidden="1"/></cols><sheetData><row r="1"><c r="A1"><v>1</v></c>'
            '<c r="B1"><v>2</v></c></row><row r="2" hidden="1"><c r="A2" t="s"><v>2</v></c></row></sheetData>')
    doc = parse_checked(xlsx([("Open", "", body), ("Secret sheet", "hidden", '<sheetData><row r="1"><c r="A1">'
                                                                           '<v>9</v></c></row></sheetData>')]))
    assert doc.text == "Open\n1\t2\nHidden one\n\nSecret sheet\n9"
    assert [(doc.text[h.start:h.end], h.reason) for h in doc.hidden_runs] == [
        ("2", HiddenReason.HIDDEN_COLUMN), ("Hidden one", HiddenReason.HIDDEN_ROW),
        ("Secret sheet\n9", HiddenReason.HIDDEN_SHEET)]
    assert [(p.page, p.name, p.hidden) for p in doc.office_pages] == [(1, "Open", False), (2, "Secret sheet", True)]
    assert "'Secret sheet'!A1" in cells(doc)


@pytest.mark.parametrize(("value", "code", "shown"), [
    (0.5, "0.0%", "50.0%"), (0.1234, "0%", "12%"), (45658, "m/d/yyyy", "1/1/2025"),
    (45658.5, "yyyy-mm-dd hh:mm:ss", "2025-01-01 12:00:00"), (45658, "d-mmm-yy", "1-Jan-25"),
    (45658, "mmmm d, yyyy", "January 1, 2025"), (0.75, "h:mm AM/PM", "6:00 PM"), (1.5, "[h]:mm", "36:00"),
    (1234567.891, "#,##0.00", "1,234,567.89"), (-1234.5, '"$"#,##0.00_);("$"#,##0.00)', "($1,234.50)"),
    (0, '0.00;-0.00;"zero"', "zero"), (12345.678, "0.00E+00", "1.23E+04"), (1.5, "# ?/?", "1 1/2"),
    (5551234, "000-0000", "555-1234"), (7, "000", "007"), (2.5, "0", "3"), (1234, "[$€-407]#,##0", "€1,234"),
    (3, "General", "3"), (1 / 3, "General", "0.333333333"), (123456789012, "General", "1.23457E+11"),
    (1e-12, "General", "1E-12"), (12.5, '0.0 "kg"', "12.5 kg"), (-3, "0;(0)", "(3)"), (-0.001, "0.00", "0.00"),
])
def test_a_number_shows_as_excel_displays_it(value, code, shown):
    assert format_value(value, code) == shown


def test_the_1904_date_system_and_the_1900_leap_bug_are_honoured():
    assert format_value(0, "yyyy-mm-dd", date1904=True) == "1904-01-01"
    assert format_value(59, "yyyy-mm-dd") == "1900-02-28" and format_value(61, "yyyy-mm-dd") == "1900-03-01"
    assert format_value((date(2024, 2, 29) - date(1899, 12, 30)).days, "d mmm yyyy") == "29 Feb 2024"


COMMENTS_WORKBOOK = SHARED_CORPUS / "office" / "docling__xlsx_comments.xlsx"
THREADED = "http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"


def with_parts(source: bytes, parts: dict[str, str]) -> bytes:
    """``source`` with ``parts`` (name -> XML) added to its zip."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            zout.writestr(item, zin.read(item))
        for name, xml in parts.items():
            zout.writestr(name, xml)
    return out.getvalue()


def commented(sheet: int, notes: str = "", threads: str = "") -> dict[str, str]:
    """The parts of sheet ``sheet``'s notes (``comment`` elements) and threaded comments."""
    rels, parts = "", {}
    if notes:
        rels += f'<Relationship Id="rId1" Type="{R}/comments" Target="../comments{sheet}.xml"/>'
        parts[f"xl/comments{sheet}.xml"] = (f'<comments xmlns="{S}"><authors><author>A</author></authors>'
                                            f"<commentList>{notes}</commentList></comments>")
    if threads:
        rels += (f'<Relationship Id="rId2" Type="http://schemas.microsoft.com/office/2017/10/relationships/'
                 f'threadedComment" Target="../threadedComments/threadedComment{sheet}.xml"/>')
        parts[f"xl/threadedComments/threadedComment{sheet}.xml"] = f'<ThreadedComments xmlns="{THREADED}">{threads}' \
                                                                     "</ThreadedComments>"
    parts[f"xl/worksheets/_rels/sheet{sheet}.xml.rels"] = f'<Relationships xmlns="{RELS}">{rels}</Relationships>'
    return parts


def note(ref: str, *runs: str) -> str:
    body = "".join(f"<r><rPr><b/></rPr><t xml:space=\"preserve\">{run}</t></r>" for run in runs)
    return f'<comment ref="{ref}" authorId="0"><text>{body}</text></comment>'


def thread(ref: str, text: str, parent: str = "") -> str:
    return f'<threadedComment ref="{ref}" id="{{{ref}{len(parent)}}}"{parent}><text>{text}</text></threadedComment>'


ROWS = ('<sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row><row r="3" hidden="1"><c r="B3"><v>5</v></c></row>'
        "</sheetData>")


def test_each_sheets_comments_follow_its_rows_in_cell_order_labelled_by_their_cell():
    source = with_parts(xlsx([("First", "", ROWS), ("Second", "", ROWS)]),
                        {**commented(1, notes=note("C9", "Late ", "&amp; bold") + note("A1", "On the item")),
                         **commented(2, notes=note("A1", "Second sheet's"))})
    doc = parse_checked(source)
    assert doc.text == ("First\nItem\n\t5\nComments\n[A1] On the item\n[C9] Late & bold\n\n"
                        "Second\nItem\n\t5\nComments\n[A1] Second sheet's")
    for page in doc.office_pages:
        assert doc.text[page.start:page.end].endswith(("[C9] Late & bold", "[A1] Second sheet's"))
    late = doc.text.index("Late")
    assert {r.part for r in doc.office_runs if late <= r.start < late + 11} == {"xl/comments1.xml"}
    assert not [c for c in doc.office_cells if doc.text[c.start:c.end].startswith(("On the", "Late"))]


def test_comment_labels_and_the_title_are_synthetic():
    doc = parse_checked(with_parts(xlsx([("S", "", ROWS)]), commented(1, notes=note("A1", "Hello"))))
    synthetic = "".join(doc.text[r.start:r.end] for r in doc.office_runs if r.kind is RunKind.SYNTHETIC)
    assert synthetic == "S\n\n\t\nComments\n[A1] "  # the sheet name, line breaks, the tab, title, label


def test_a_threaded_comment_replaces_the_copy_excel_keeps_for_older_readers():
    copy = "[Threaded comment]\n\nYour version of Excel allows you to read this threaded comment...\n\nComment:\n    First"
    threads = thread("A1", "First") + thread("A1", "A reply", ' parentId="{A10}"') + thread("B3", "On a hidden row")
    notes = note("A1", copy) + note("D4", "[Threaded comment] written by a person, no thread here")
    doc = parse_checked(with_parts(xlsx([("S", "", ROWS)]), commented(1, notes=notes, threads=threads)))
    assert doc.text == ("S\nItem\n\t5\nComments\n[A1] First\n[A1] A reply\n[B3] On a hidden row\n"
                        "[D4] [Threaded comment] written by a person, no thread here")
    first = doc.text.index("First")
    assert {r.part for r in doc.office_runs if first <= r.start < first + 5} == {
        "xl/threadedComments/threadedComment1.xml"}
    hidden = [(doc.text[h.start:h.end], h.reason) for h in doc.hidden_runs]
    assert ("[B3] On a hidden row", HiddenReason.HIDDEN_ROW) in hidden


def test_a_comment_without_text_leaves_no_label_and_no_title():
    doc = parse_checked(with_parts(xlsx([("S", "", ROWS)]), commented(1, notes='<comment ref="A1"><text/></comment>')))
    assert doc.text == "S\nItem\n\t5"


@pytest.mark.skipif(not COMMENTS_WORKBOOK.is_file(), reason="no shared office corpus")
def test_the_corpus_workbooks_notes_and_threads_are_read_once_each():
    doc = parse_checked(COMMENTS_WORKBOOK.read_bytes(), COMMENTS_WORKBOOK.name)
    comments = doc.text[doc.text.index("\nComments\n") + 10:]
    assert comments.split("\n") == ["[A1] Why Python specifically?", "[B2] Which libraries are you referring to?",
                                    "[F7] Minimum number of saltwater ducks", "[F7] I never thought it would be so low",
                                    "[G12] Maximum number of ducks"]
    assert "[Threaded comment]" not in doc.text
    assert doc.office_pages[-1].end == len(doc.text)
    assert max(c.end for c in doc.office_cells) <= doc.text.index("\nComments\n")


@pytest.mark.hostile("an XLSX number no format can show (1e300 as a date, NaN, inf)",
                     "handled: the number shows as it is stored, mapped to its <v>")
def test_a_number_no_format_can_show_is_shown_as_stored():
    body = ('<sheetData><row r="1"><c r="A1" s="1"><v>1e300</v></c><c r="B1" s="3"><v>NaN</v></c>'
            '<c r="C1" s="1"><v>-inf</v></c><c r="D1" s="3"><v>1e300</v></c></row></sheetData>')
    doc = parse_checked(xlsx([("S", "", body)]))
    assert cells(doc) == {"S!A1": "1e300", "S!B1": "NaN", "S!C1": "-inf", "S!D1": "1e300"}
