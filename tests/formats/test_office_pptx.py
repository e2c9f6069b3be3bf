"""PPTX: slides in order, shapes in reading order, notes after each slide, every character mapped."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import date

import pytest

from conftest import SHARED_CORPUS
from office_checks import parsed_and_checked
from ingest.formats.office import parse_pptx
from schemas.records import HiddenReason, MediaType, RunKind

P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
NS = f'xmlns:p="{P}" xmlns:a="{A}" xmlns:r="{R}"'
CORPUS = sorted(SHARED_CORPUS.glob("office/*.pptx")) if (SHARED_CORPUS / "office").is_dir() else []


def shape(text: str, y: int = 0, x: int = 0, placeholder: str = "") -> str:
    ph = f"<p:nvPr>{placeholder}</p:nvPr>" if placeholder else "<p:nvPr/>"
    frame = "" if placeholder else f'<a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="10" cy="10"/></a:xfrm>'
    paragraphs = "".join(f"<a:p><a:r><a:t>{line}</a:t></a:r></a:p>" for line in text.split("|"))
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/>{ph}</p:nvSpPr><p:spPr>{frame}</p:spPr>'
            f"<p:txBody><a:bodyPr/>{paragraphs}</p:txBody></p:sp>")


def pptx(slides: list[tuple[str, str]], notes: dict[int, str] | None = None, show: dict[int, str] | None = None) -> bytes:
    """Slides given as (shapes XML, "") in show order; ``notes``: slide index -> notes text."""
    notes, show = notes or {}, show or {}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_rels/.rels", f'<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
                                  f'Type="{R}/officeDocument" Target="ppt/presentation.xml"/></Relationships>')
        # list the slides in an order unlike their part names: the show order is sldIdLst's
        ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{20 + i}"/>' for i in range(len(slides)))
        z.writestr("ppt/presentation.xml", f"<p:presentation {NS}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>")
        rels = "".join(f'<Relationship Id="rId{20 + i}" Type="{R}/slide" Target="slides/slide{len(slides) - i}.xml"/>'
                       for i in range(len(slides)))
        z.writestr("ppt/_rels/presentation.xml.rels", f'<Relationships xmlns="{RELS}">{rels}</Relationships>')
        for i, (shapes, _) in enumerate(slides):
            name = f"slide{len(slides) - i}.xml"
            attribute = f' show="{show[i]}"' if i in show else ""
            z.writestr(f"ppt/slides/{name}", f"<p:sld {NS}{attribute}><p:cSld><p:spTree>{shapes}</p:spTree>"
                                             "</p:cSld></p:sld>")
            if i in notes:
                z.writestr(f"ppt/slides/_rels/{name}.rels", f'<Relationships xmlns="{RELS}"><Relationship Id="rId1" '
                           f'Type="{R}/notesSlide" Target="../notesSlides/notes{i}.xml"/></Relationships>')
                body = shape(notes[i], placeholder='<p:ph type="body" idx="1"/>')
                image = shape("not notes", placeholder='<p:ph type="sldImg"/>')
                z.writestr(f"ppt/notesSlides/notes{i}.xml", f"<p:notes {NS}><p:cSld><p:spTree>{image}{body}"
                                                            "</p:spTree></p:cSld></p:notes>")
    return buffer.getvalue()


def parse_checked(source: bytes, doc_id: str = "t.pptx"):
    return parsed_and_checked(parse_pptx, source, doc_id)


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_office_run_reads_back_from_its_part(path):
    doc = parse_checked(path.read_bytes(), path.name)
    assert doc.media_type is MediaType.PPTX and [p.page for p in doc.office_pages] == list(
        range(1, len(doc.office_pages) + 1))


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
def test_sentences_python_pptx_extracts_are_in_the_text():
    pptx_reader = pytest.importorskip("pptx")
    found = total = 0
    for path in CORPUS:
        text = " ".join(parse_pptx(path.read_bytes(), path.name).text.split())
        for slide in pptx_reader.Presentation(str(path)).slides:
            for item in slide.shapes:
                if item.has_text_frame:
                    for para in item.text_frame.paragraphs:
                        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(para.text.split())):
                            if len(sentence) >= 10:
                                total += 1
                                found += sentence in text
    print(f"python-pptx sentences found: {found}/{total}")
    assert total > 10 and found / total > 0.95, (found, total)


def test_slides_follow_the_show_order_and_shapes_the_reading_order():
    first = (shape("lower right", y=500, x=500) + shape("lower left", y=500, x=0) + shape("top", y=10)
             + shape("Body text", placeholder='<p:ph idx="1"/>') + shape("The title", placeholder='<p:ph type="title"/>'))
    doc = parse_checked(pptx([(first, ""), (shape("Second slide"), "")]))
    assert doc.text == "The title\nBody text\ntop\nlower left\nlower right\n\nSecond slide"
    assert [(p.page, doc.text[p.start:p.end]) for p in doc.office_pages][1] == (2, "Second slide")
    assert doc.office_pages[0].name == "ppt/slides/slide2.xml"  # listed first in sldIdLst


def test_notes_come_after_their_slide_and_only_the_notes_body():
    doc = parse_checked(pptx([(shape("Slide one"), ""), (shape("Slide two"), "")], notes={0: "Say hello|Then go"}))
    assert doc.text == "Slide one\nNotes\nSay hello\nThen go\n\nSlide two"
    assert "not notes" not in doc.text


def test_a_hidden_slide_stays_in_the_text_and_is_flagged():
    doc = parse_checked(pptx([(shape("Shown"), ""), (shape("Hidden slide"), "")], show={1: "0"}))
    assert doc.office_pages[1].hidden and not doc.office_pages[0].hidden
    assert [(doc.text[h.start:h.end], h.reason) for h in doc.hidden_runs] == [("Hidden slide", HiddenReason.HIDDEN_SLIDE)]


def test_groups_and_tables_are_read_cells_by_tabs_rows_by_lines():
    group = ('<p:grpSp><p:nvGrpSpPr><p:cNvPr id="5" name="g"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
             '<p:grpSpPr><a:xfrm><a:off x="0" y="100"/></a:xfrm></p:grpSpPr>'
             + shape("group right", y=100, x=50) + shape("group left", y=100, x=0) + "</p:grpSp>")

    def cell(text):
        return f"<a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></a:txBody></a:tc>" if text \
            else "<a:tc><a:txBody><a:bodyPr/><a:p/></a:txBody></a:tc>"
    table = ('<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="6" name="t"/><p:cNvGraphicFramePr/><p:nvPr/>'
             '</p:nvGraphicFramePr><p:xfrm><a:off x="0" y="900"/></p:xfrm><a:graphic><a:graphicData><a:tbl>'
             f'<a:tr>{cell("a")}{cell("")}{cell("c")}</a:tr><a:tr>{cell("d")}{cell("e &amp; f")}{cell("")}</a:tr>'
             "</a:tbl></a:graphicData></a:graphic></p:graphicFrame>")
    doc = parse_checked(pptx([(table + group, "")]))
    assert doc.text == "group left\ngroup right\na\t\tc\nd\te & f\t"


def test_a_line_break_is_one_character_over_its_element():
    doc = parse_checked(pptx([('<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr>'
                               '<p:spPr/><p:txBody><a:p><a:r><a:t>one</a:t></a:r><a:br><a:rPr lang="en"/></a:br>'
                               '<a:r><a:t>two</a:t></a:r></a:p></p:txBody></p:sp>', "")]))
    assert doc.text == "one\ntwo"
    assert [r.kind for r in doc.office_runs] == [RunKind.TEXT, RunKind.ENTITY, RunKind.TEXT]


CHART_DECK = SHARED_CORPUS / "office" / "docling__pptx_chart.pptx"
DGM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"


def parts_of(doc, start: int, end: int) -> set[str]:
    return {r.part for r in doc.office_runs if start <= r.start < end and r.kind is not RunKind.SYNTHETIC}


@pytest.mark.skipif(not CHART_DECK.is_file(), reason="no shared office corpus")
def test_a_charts_title_series_and_categories_are_lines_mapped_into_the_chart_part():
    doc = parse_checked(CHART_DECK.read_bytes(), CHART_DECK.name)
    first = doc.office_pages[0]
    assert doc.text[first.start:first.end] == ("Quarterly Duck Survey\nWild Duck Observations by Year\n"
                                               "Freshwater Ducks\nSaltwater Ducks\n2019\n2020\n2021\n2022")
    chart = doc.text.index("Wild Duck")
    assert parts_of(doc, chart, first.end) == {"ppt/charts/chart1.xml"}
    second = doc.office_pages[1]  # a chart without a title of its own: its series and categories
    assert doc.text[second.start:second.end] == "Quarterly revenue\n2026\nQ1\nQ2\nQ3"
    assert [doc.text[s.start:s.end].split("\n")[0] for s in doc.office_shapes] == [
        "Quarterly Duck Survey", "Wild Duck Observations by Year", "Quarterly revenue", "2026"]


def test_a_generated_chart_shows_its_words_and_formats_its_date_categories():
    pptx_writer = pytest.importorskip("pptx")
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches
    prs = pptx_writer.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    data = CategoryChartData(number_format="yyyy-mm-dd")
    data.categories = [date(2024, 1, 1), date(2024, 2, 1)]
    data.add_series("Sales & more", (1.5, 2.5))
    data.add_series("Costs", (1, 2))
    chart = slide.shapes.add_chart(XL_CHART_TYPE.LINE, Inches(1), Inches(1), Inches(4), Inches(3), data).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Monthly sales"
    buffer = io.BytesIO()
    prs.save(buffer)
    doc = parse_checked(buffer.getvalue())
    assert doc.text == "Monthly sales\nSales & more\nCosts\n2024-01-01\n2024-02-01"
    assert "1.5" not in doc.text  # values are data, not words
    ampersand = doc.text.index("&")
    assert next(r for r in doc.office_runs if r.start == ampersand).kind is RunKind.ENTITY
    dated = doc.text.index("2024-01-01")  # the cached serial number shown as its format shows it
    assert next(r for r in doc.office_runs if r.start <= dated < r.end).kind is RunKind.SYNTHETIC
    [shape] = doc.office_shapes
    assert (shape.start, shape.end, shape.x0, shape.y0, shape.x1, shape.y1) == (0, len(doc.text), 72, 72, 360, 288)


def smartart_deck(points: str) -> bytes:
    """A deck whose one slide holds a SmartArt graphic frame over a data part of ``points``
    (python-pptx cannot make SmartArt: the data part is written by hand, layout parts left out)."""
    pptx_writer = pytest.importorskip("pptx")
    from pptx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
    from pptx.opc.package import Part
    from pptx.opc.packuri import PackURI
    from pptx.oxml import parse_xml
    prs = pptx_writer.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    data = (f'<dgm:dataModel xmlns:dgm="{DGM}" xmlns:a="{A}"><dgm:ptLst>{points}</dgm:ptLst><dgm:cxnLst/>'
            "</dgm:dataModel>").encode()
    part = Part(PackURI("/ppt/diagrams/data1.xml"), CONTENT_TYPE.DML_DIAGRAM_DATA, prs.part.package, data)
    rel_id = slide.part.relate_to(part, RELATIONSHIP_TYPE.DIAGRAM_DATA)
    slide.shapes._spTree.append(parse_xml(
        f'<p:graphicFrame {NS}><p:nvGraphicFramePr><p:cNvPr id="9" name="Diagram"/><p:cNvGraphicFramePr/><p:nvPr/>'
        '</p:nvGraphicFramePr><p:xfrm><a:off x="914400" y="914400"/><a:ext cx="1828800" cy="914400"/></p:xfrm>'
        f'<a:graphic><a:graphicData uri="{DGM}"><dgm:relIds xmlns:dgm="{DGM}" r:dm="{rel_id}" r:lo="" r:qs="" '
        'r:cs=""/></a:graphicData></a:graphic></p:graphicFrame>'))
    buffer = io.BytesIO()
    prs.save(buffer)
    return buffer.getvalue()


def test_smartart_shows_its_points_text_in_order_and_not_its_connectors():
    def point(model_id: str, text: str, kind: str = "") -> str:
        attribute = f' type="{kind}"' if kind else ""
        body = f"<dgm:t><a:bodyPr/>{''.join(f'<a:p><a:r><a:t>{line}</a:t></a:r></a:p>' for line in text.split('|'))}" \
               "</dgm:t>" if text else ""
        return f'<dgm:pt modelId="{model_id}"{attribute}><dgm:prSet/><dgm:spPr/>{body}</dgm:pt>'
    points = (point("0", "", "doc") + point("1", "Plan") + point("2", "joins", "parTrans") + point("3", "Build|then ship")
              + point("4", "next", "sibTrans") + point("5", "layout", "pres") + point("6", "Ask &amp; learn", "asst"))
    doc = parse_checked(smartart_deck(points))
    assert doc.text == "Plan\nBuild\nthen ship\nAsk & learn"
    assert parts_of(doc, 0, len(doc.text)) == {"ppt/diagrams/data1.xml"}
    [shape] = doc.office_shapes
    assert (shape.start, shape.end, shape.x0, shape.y0, shape.x1, shape.y1) == (0, len(doc.text), 72, 72, 216, 144)


def test_text_under_one_point_or_in_the_colour_it_is_drawn_over_is_hidden():
    pptx_lib = pytest.importorskip("pptx")
    from pptx.dml.color import RGBColor
    from pptx.util import Inches, Pt

    deck = pptx_lib.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    slide.background.fill.solid()
    slide.background.fill.fore_color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
    body = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(1)).text_frame.paragraphs[0]
    for text, colour, size in [("Seen. ", RGBColor(0, 0, 0), None), ("White on white. ", RGBColor(0xFF, 0xFF, 0xFF), None),
                               ("Tiny. ", None, Pt(0.5))]:
        run = body.add_run()
        run.text = text
        if colour is not None:
            run.font.color.rgb = colour
        if size is not None:  # the schema's least size is 1 pt (sz="100"): a file that breaks it
            run.font._rPr.set("sz", str(int(size.pt * 100)))
    boxed = slide.shapes.add_textbox(Inches(1), Inches(3), Inches(6), Inches(1))
    boxed.fill.solid()
    boxed.fill.fore_color.rgb = RGBColor(0, 0, 0)
    run = boxed.text_frame.paragraphs[0].add_run()
    run.text = "White on a black box."
    run.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
    buffer = io.BytesIO()
    deck.save(buffer)
    doc = parsed_and_checked(parse_pptx, buffer.getvalue(), "hidden.pptx")
    hidden = [(doc.text[h.start:h.end], h.reason) for h in doc.hidden_runs]
    assert hidden == [("White on white. ", HiddenReason.BACKGROUND_COLOR), ("Tiny. ", HiddenReason.TINY)]
    assert "White on a black box." in doc.text
