"""PPTX shape frames: each shape's text and where the slide draws it, from the slide's own geometry."""

from __future__ import annotations

import io
import zipfile

import pytest

from conftest import SHARED_CORPUS
from office_checks import parsed_and_checked
from ingest.formats.office import parse_pptx
from schemas.records import RunKind

pptx = pytest.importorskip("pptx")
from pptx.util import Emu, Inches  # noqa: E402  (python-pptx is optional: skip without it)

CORPUS = sorted(SHARED_CORPUS.glob("office/*.pptx")) if (SHARED_CORPUS / "office").is_dir() else []
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
INCH = 72.0  # points


def parse_checked(prs) -> object:
    buffer = io.BytesIO()
    prs.save(buffer)
    return parsed_and_checked(parse_pptx, buffer.getvalue(), "t.pptx")


def frames(doc) -> dict[str, tuple[float, float, float, float]]:
    """Each shape's text -> its frame (to a thousandth of a point: ``frame`` rounds)."""
    return {doc.text[s.start:s.end]: tuple(round(v, 3) for v in (s.x0, s.y0, s.x1, s.y1)) for s in doc.office_shapes}


def points(emu: int) -> float:
    return round(emu / 12700, 3)


def box(left: float, top: float, right: float, bottom: float) -> tuple[float, float, float, float]:
    """A frame given in inches, in points."""
    return (left * INCH, top * INCH, right * INCH, bottom * INCH)


def set_group_xfrm(group, offset, extent, child_offset, child_extent) -> None:
    """Give a python-pptx group shape the transform (in inches) it would not write itself."""
    xfrm = group._element.grpSpPr.get_or_add_xfrm()
    for name, (a, b), keys in (("off", offset, "xy"), ("ext", extent, ("cx", "cy")), ("chOff", child_offset, "xy"),
                               ("chExt", child_extent, ("cx", "cy"))):
        element = xfrm.find(f"{A}{name}")
        element.set(keys[0], str(Inches(a)))
        element.set(keys[1], str(Inches(b)))


def test_a_placeholder_without_a_frame_takes_its_layouts_else_its_masters():
    prs = pptx.Presentation()
    title_slide = prs.slides.add_slide(prs.slide_layouts[0])  # the layout's placeholders have frames
    title_slide.shapes.title.text = "Cover"
    title_slide.placeholders[1].text = "Sub"
    content = prs.slides.add_slide(prs.slide_layouts[1])  # the layout's have none: the master's
    content.shapes.title.text = "Agenda"
    content.placeholders[1].text = "First point"
    two = prs.slides.add_slide(prs.slide_layouts[3])
    two.placeholders[2].text = "Right column"  # idx 2: the layout's second content placeholder
    moved = prs.slides.add_slide(prs.slide_layouts[1])
    moved.shapes.title.text = "Moved title"
    moved.shapes.title.left, moved.shapes.title.top = Inches(1), Inches(2)  # its own frame wins
    doc = parse_checked(prs)

    def expected(placeholder):  # python-pptx inherits the same way; its numbers are the check
        return (points(placeholder.left), points(placeholder.top), points(placeholder.left + placeholder.width),
                points(placeholder.top + placeholder.height))
    master = {p.placeholder_format.idx: p for p in prs.slide_master.placeholders}
    assert frames(doc) == {
        "Cover": expected(prs.slide_layouts[0].placeholders[0]), "Sub": expected(prs.slide_layouts[0].placeholders[1]),
        "Agenda": expected(master[0]), "First point": expected(master[1]),
        "Right column": expected(prs.slide_layouts[3].placeholders[2]),
        "Moved title": (72.0, 144.0, 72.0 + points(moved.shapes.title.width), 144.0 + points(moved.shapes.title.height)),
    }
    assert expected(master[1]) == (36.0, 126.0, 684.0, 482.375)  # the default template's body


def test_group_members_are_scaled_from_child_space_and_nested_groups_compose():
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    outer = slide.shapes.add_group_shape()
    outer.shapes.add_textbox(Inches(0.5), Inches(0.5), Inches(0.5), Inches(0.25)).text_frame.text = "in outer"
    inner = outer.shapes.add_group_shape()
    inner.shapes.add_textbox(0, 0, Inches(2), Inches(1)).text_frame.text = "in inner"
    # outer: child space 2 x 1 in drawn at (1, 1) as 4 x 2 in (twice the size);
    # inner, in outer's child space: 2 x 2 in drawn at (1, 0) as 1 x 1 in (half the size)
    set_group_xfrm(inner, (1, 0), (1, 1), (0, 0), (2, 2))
    set_group_xfrm(outer, (1, 1), (4, 2), (0, 0), (2, 1))
    doc = parse_checked(prs)
    assert frames(doc) == {"in outer": box(2, 2, 3, 2.5), "in inner": box(3, 1, 5, 2)}


def test_a_flipped_group_mirrors_where_its_members_lie():
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(0, 0, Inches(1), Inches(1)).text_frame.text = "left in the group"
    group.shapes.add_textbox(Inches(3), 0, Inches(1), Inches(1)).text_frame.text = "right in the group"
    set_group_xfrm(group, (1, 1), (4, 1), (0, 0), (4, 1))
    group._element.grpSpPr.get_or_add_xfrm().set("flipH", "1")
    doc = parse_checked(prs)
    assert frames(doc) == {"left in the group": box(4, 1, 5, 2), "right in the group": box(1, 1, 2, 2)}


def test_a_quarter_turn_swaps_the_frame_about_its_centre():
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    for rotation, text in ((90, "quarter"), (270, "three quarters"), (180, "half")):
        shape = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1))
        shape.text_frame.text, shape.rotation = text, rotation
    doc = parse_checked(prs)
    assert frames(doc) == {"quarter": box(1.5, 0.5, 2.5, 2.5), "three quarters": box(1.5, 0.5, 2.5, 2.5),
                           "half": box(1, 1, 3, 2)}


def test_a_table_is_framed_by_its_graphic_frame():
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, column), text in {(0, 0): "a", (0, 1): "b", (1, 0): "c", (1, 1): "d"}.items():
        table.cell(row, column).text = text
    doc = parse_checked(prs)
    assert frames(doc) == {"a\tb\nc\td": box(1, 2, 5, 3)}


def test_frames_are_cut_to_the_slide():
    prs = pptx.Presentation()  # 10 x 7.5 in
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_textbox(Inches(-1), Inches(1), Inches(2), Inches(1)).text_frame.text = "over the left edge"
    slide.shapes.add_textbox(Inches(11), Inches(2), Inches(2), Inches(1)).text_frame.text = "off to the right"
    slide.shapes.add_textbox(Inches(9), Inches(7), Inches(2), Inches(2)).text_frame.text = "over the corner"
    doc = parse_checked(prs)
    assert frames(doc) == {"over the left edge": box(0, 1, 1, 2), "off to the right": box(10, 2, 10, 3),
                           "over the corner": box(9, 7, 10, 7.5)}


def test_shapes_cover_their_own_text_and_not_the_breaks_between_them():
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = "Title"
    slide.placeholders[1].text = "line one\nline two"
    slide.shapes.add_textbox(Inches(1), Inches(6), Inches(1), Inches(1)).text_frame.text = "box"
    slide.shapes.add_textbox(Inches(1), Inches(7), Inches(1), Inches(1))  # no text: no shape
    slide.notes_slide.notes_text_frame.text = "spoken, not shown"
    second = prs.slides.add_slide(prs.slide_layouts[6])
    second.shapes.add_textbox(0, 0, Inches(1), Inches(1)).text_frame.text = "next slide"
    doc = parse_checked(prs)
    assert doc.text == "Title\nline one\nline two\nbox\nNotes\nspoken, not shown\n\nnext slide"
    assert [(s.page, doc.text[s.start:s.end]) for s in doc.office_shapes] == [
        (1, "Title"), (1, "line one\nline two"), (1, "box"), (2, "next slide")]
    assert [doc.text[a.end:b.start] for a, b in zip(doc.office_shapes[:2], doc.office_shapes[1:3])] == ["\n", "\n"]


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_shape_lies_in_its_slide_sorted_disjoint_and_framed_on_it(path):
    source = path.read_bytes()
    doc = parsed_and_checked(parse_pptx, source, path.name)
    prs = pptx.Presentation(io.BytesIO(source))
    width, height = prs.slide_width / 12700, prs.slide_height / 12700
    pages = {page.page: page for page in doc.office_pages}
    notes_parts = {part for part in zipfile.ZipFile(io.BytesIO(source)).namelist() if "notesSlide" in part}
    previous_end = 0
    for shape in doc.office_shapes:
        page = pages[shape.page]
        assert page.start <= shape.start < shape.end <= page.end, shape
        assert shape.start >= previous_end, "shapes are sorted and do not overlap"
        previous_end = shape.end
        assert 0 <= shape.x0 <= shape.x1 <= width and 0 <= shape.y0 <= shape.y1 <= height, shape
        runs = [r for r in doc.office_runs if shape.start <= r.start < shape.end]
        assert not {r.part for r in runs} & notes_parts, "speaker notes are in no shape"
        assert runs[0].kind is not RunKind.SYNTHETIC or doc.text[shape.start] != "\n"


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_frames_agree_with_python_pptx_on_the_corpus(path):
    doc = parse_pptx(path.read_bytes(), path.name)
    prs = pptx.Presentation(str(path))
    for number, slide in enumerate(prs.slides, 1):
        if any(s.shape_type == 6 for s in slide.shapes):  # python-pptx leaves group members in child space
            continue
        width, height = points(prs.slide_width), points(prs.slide_height)
        theirs = [(min(max(points(s.left), 0), width), min(max(points(s.top), 0), height),
                   min(points(s.left + s.width), width), min(points(s.top + s.height), height))
                  for s in slide.shapes if s.width is not None and s.rotation == 0]
        for shape in (s for s in doc.office_shapes if s.page == number):
            ours = (shape.x0, shape.y0, shape.x1, shape.y1)
            assert any(ours == pytest.approx(frame, abs=0.001) for frame in theirs), (number, ours, theirs)


@pytest.mark.skipif(not CORPUS, reason="no shared office corpus")
def test_nearly_all_slide_text_is_in_a_shape():
    covered = total = 0
    for path in CORPUS:
        doc = parse_pptx(path.read_bytes(), path.name)
        inside = set()
        for shape in doc.office_shapes:
            inside.update(range(shape.start, shape.end))
        for run in doc.office_runs:
            if run.kind is not RunKind.SYNTHETIC and "notesSlide" not in run.part:
                total += run.end - run.start
                covered += len(inside.intersection(range(run.start, run.end)))
    print(f"slide text in shapes: {covered}/{total}")
    assert total > 100 and covered / total > 0.95, (covered, total)


def test_a_deck_without_a_slide_size_keeps_its_frames_uncut():
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_textbox(Inches(11), 0, Emu(127000), Emu(127000)).text_frame.text = "far right"

    def without_size(text: str) -> str:
        start = text.index("<p:sldSz")
        return text[:start] + text[text.index("/>", start) + 2:]
    doc = parsed_and_checked(parse_pptx, patched(prs, {"ppt/presentation.xml": without_size}), "t.pptx")
    assert frames(doc) == {"far right": (792.0, 0.0, 802.0, 10.0)}


@pytest.mark.hostile("a PPTX whose transforms hold no numbers and whose layout names itself as its master",
                     "handled: a frame from what is readable (0 for the rest), no endless inheritance")
def test_transforms_without_numbers_and_a_layout_that_is_its_own_master():
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])  # its placeholders have no frame in the layout
    slide.shapes.title.text = "Orphan title"
    garbled = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(1), Inches(1))
    garbled.text_frame.text = "garbled"
    garbled._element.spPr.xfrm.find(f"{A}off").set("x", "one inch")
    layout = prs.slide_layouts[1].part.partname.lstrip("/")
    rels = layout.replace("slideLayouts/", "slideLayouts/_rels/") + ".rels"

    def own_master(text: str) -> str:
        assert "../slideMasters/slideMaster1.xml" in text
        return text.replace("../slideMasters/slideMaster1.xml", "../" + layout.split("/", 1)[1])
    doc = parsed_and_checked(parse_pptx, patched(prs, {rels: own_master}), "t.pptx")
    assert "Orphan title" in doc.text
    assert frames(doc) == {"garbled": box(0, 1, 1, 2)}  # the title has no frame to take


def patched(prs, edits: dict) -> bytes:
    """The saved deck with each named part's XML passed through its edit."""
    buffer, out = io.BytesIO(), io.BytesIO()
    prs.save(buffer)
    with zipfile.ZipFile(buffer) as zin, zipfile.ZipFile(out, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename in edits:
                data = edits[item.filename](data.decode("utf-8")).encode("utf-8")
            zout.writestr(item, data)
    return out.getvalue()
