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
