"""PPTX: the slides in show order, each slide's shapes in reading order, then its speaker notes.

Reading order: title placeholders, the other placeholders as the slide lists them, then every
other shape top to bottom, left to right (by the offset of its frame; a shape without one keeps
its place at the end). Group shapes are read in the same order inside; tables cell by cell.
A chart shows its title, each series' name and the categories (once), a SmartArt diagram the
text of its data model's points, each on a line, mapped into the chart or diagram part.

Every shape whose text is in the document text (groups give their members') gets an
``OfficeShape``: its text, without the line breaks between shapes, and its frame on the slide
(``geometry``), cut to the slide's size (``p:sldSz``): a shape placed off the slide keeps a frame
with no area on the nearest edge. A shape whose place cannot be found (no transform of its own,
no layout or master placeholder to take one from) gets none; speaker notes get none.

Hidden, besides a hidden slide: a run under 1 pt (``sz`` below 100, which the schema forbids but
files carry), and a run filled with the RGB colour it is drawn over (its shape's solid fill, else
its slide's own background); theme colours and inherited backgrounds are not resolved, so such
runs are never flagged.
"""

from __future__ import annotations

import math

from ingest.formats.headings import headings_in
from ingest.formats.office.builder import BuiltText, TextBuilder
from ingest.formats.office.geometry import (
    EMU_PER_POINT, IDENTITY, Affine, Placeholder, Xfrm, clip, compose, frame, group_transform, match_placeholder,
    on_slide, read_placeholder, read_xfrm,
)
from ingest.formats.office.numbers import format_value
from ingest.formats.office.package import OfficePackage, Relationship, within_depth
from ingest.formats.office.xml_positions import Element, Piece
from schemas.errors import CorruptDocumentError
from schemas.records import (
    RUN_KINDS, HiddenReason, MediaType, OfficePage, OfficeShape, ParsedDocument, RunKind,
)

_SHAPES = frozenset({"p:sp", "p:grpSp", "p:graphicFrame", "p:cxnSp", "p:pic", "p:contentPart"})
_TITLES = frozenset({"title", "ctrTitle"})
_FRAME = {"p:sp": "p:spPr", "p:cxnSp": "p:spPr", "p:pic": "p:spPr", "p:grpSp": "p:grpSpPr"}
_NOT_NOTES = frozenset({"sldImg", "sldNum", "hdr", "ftr", "dt"})  # placeholders of a notes page that are no notes
_NOT_DIAGRAM_TEXT = frozenset({"parTrans", "sibTrans", "pres"})  # connectors and layout points of a data model
_TRUE = frozenset({"1", "true"})

Box = tuple[float, float, float, float]


@within_depth
def parse_pptx(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse PPTX bytes into the document text; ``office_pages`` gives each slide's range,
    ``office_shapes`` each shape's text and frame.

    Example::

        doc = parse_pptx(Path("deck.pptx").read_bytes(), "deck.pptx")
        page = doc.office_pages[2]                  # slide 3
        doc.text[page.start:page.end]               # its shapes' text, then "Notes" and its notes
        shape = doc.office_shapes[0]
        shape.page, (shape.x0, shape.y0), doc.text[shape.start:shape.end]
    """
    package = OfficePackage(source, doc_id)
    main = package.main_part()
    root, _ = package.xml(main)
    targets = {rel.rel_id: rel.target for rel in package.relationships(main)}
    slide_list = root.child("p:sldIdLst")
    slides = [targets.get(s.attrs.get("r:id", ""), "") for s in slide_list.children_named("p:sldId")] \
        if slide_list is not None else []
    builder = TextBuilder()
    pages = []
    drawn: list[tuple[int, int, int, Box]] = []
    layouts = _LayoutPlaceholders(package)
    titles: list[tuple[int, int, int]] = []  # each slide's title placeholders: its headings (level 1)
    for number, part in enumerate(slides, 1):
        if not part or not package.has(part):
            raise CorruptDocumentError(f"slide {number} names a missing part", doc_id=doc_id, page=number)
        slide, _ = package.xml(part)
        hidden = slide.attrs.get("show", "1").lower() in ("0", "false")
        builder.separate("\n\n")
        builder.flush()
        builder.hold("\n")
        start = builder.length
        relationships = package.relationships(part)
        with builder.hidden(HiddenReason.HIDDEN_SLIDE if hidden else None):
            reader = _SlideReader(builder, package, part, number, relationships, layouts, drawn,
                                  solid_rgb(slide.find("p:cSld", "p:bg", "p:bgPr")), titles)
            reader.shapes(slide.find("p:cSld", "p:spTree"), IDENTITY)
            notes = next((r.target for r in relationships if r.rel_type == "notesSlide"
                          and r.target and package.has(r.target)), None)
            if notes is not None:
                with builder.titled("Notes", "\n"):
                    _notes(builder, notes, package.xml(notes)[0])
        builder.drop_separator("\n\n")
        pages.append(OfficePage(number, start, builder.length, part, hidden))
    built = builder.result()
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.PPTX, text=built.text, title=package.title(),
                          created=package.created(),
                          office_runs=built.runs, hidden_runs=built.hidden_runs, office_pages=tuple(pages),
                          office_shapes=_office_shapes(built, drawn, _slide_size(root)),
                          headings=headings_in(built.text, titles, built.hidden_runs))


class _SlideReader:
    """One slide's shapes into the builder, each shape's text range and frame into ``drawn``."""

    def __init__(self, builder: TextBuilder, package: OfficePackage, part: str, page: int,
                 relationships: list[Relationship], layouts: _LayoutPlaceholders,
                 drawn: list[tuple[int, int, int, Box]], background: str | None = None,
                 titles: list[tuple[int, int, int]] | None = None) -> None:
        self.builder, self.package, self.part, self.page = builder, package, part, page
        self.background = background  # the slide's own background colour, where it sets one
        self.targets = {rel.rel_id: rel.target for rel in relationships if rel.target and package.has(rel.target)}
        self.layout = next((rel.target for rel in relationships if rel.rel_type == "slideLayout"
                            and rel.target and package.has(rel.target)), None)
        self.layouts, self.drawn = layouts, drawn
        self.titles = titles if titles is not None else []  # (start, end, 1) of the slide's title placeholders

    def shapes(self, tree: Element | None, to_slide: Affine) -> None:
        if tree is None:
            return
        builder = self.builder
        for shape in reading_order(list(_children_shapes(tree))):
            builder.separate("\n")
            if shape.name == "p:grpSp":
                group = read_xfrm(_xfrm_element(shape))
                self.shapes(shape, compose(to_slide, group_transform(group)) if group is not None else to_slide)
            else:
                start = builder.length
                if shape.name == "p:sp":
                    _text_body(builder, self.part, shape.child("p:txBody"),
                               background=solid_rgb(shape.child("p:spPr")) or self.background)
                elif shape.name == "p:graphicFrame":
                    self._graphic(shape.find("a:graphic", "a:graphicData"))
                placeholder = _placeholder(shape) if shape.name == "p:sp" else None
                if placeholder is not None and placeholder.attrs.get("type") in _TITLES:
                    self.titles.append((start, builder.length, 1))
                box = self._frame(shape, to_slide) if builder.length > start else None
                if box is not None:
                    self.drawn.append((start, builder.length, self.page, box))
            builder.separate("\n")

    def _frame(self, shape: Element, to_slide: Affine) -> Box | None:
        own = read_xfrm(_xfrm_element(shape))
        placeholder = _placeholder(shape)
        if placeholder is not None and (own is None or not own.complete()) and self.layout is not None:
            inherited = self.layouts.xfrm(read_placeholder(placeholder), self.layout)
            if inherited is not None:
                # what it leaves out it takes from a layout's or master's placeholder, which no
                # group of this slide moves
                return frame(own.inherit(inherited) if own is not None else inherited)
        if own is None or (own.offset is None and own.extent is None):
            return None
        return frame(own, to_slide)

    def _graphic(self, data: Element | None) -> None:
        for child in data.elements() if data is not None else ():
            if child.name == "a:tbl":
                _table(self.builder, self.part, child)
            # The chart and diagram namespaces have no prefix in xml_positions: their local names.
            elif child.name.rpartition(":")[2] == "chart" and child.attrs.get("r:id") in self.targets:
                chart = self.targets[child.attrs["r:id"]]
                _chart(self.builder, chart, self.package.xml(chart)[0])
            elif child.name.rpartition(":")[2] == "relIds" and child.attrs.get("r:dm") in self.targets:
                data_model = self.targets[child.attrs["r:dm"]]
                _diagram(self.builder, data_model, self.package.xml(data_model)[0])


class _LayoutPlaceholders:
    """The transforms the placeholders of each layout and master give, each part read once."""

    def __init__(self, package: OfficePackage) -> None:
        self.package = package
        self._by_part: dict[str, list[tuple[Placeholder, Xfrm | None]]] = {}
        self._parents: dict[tuple[str, str], str | None] = {}

    def xfrm(self, wanted: Placeholder, layout: str) -> Xfrm | None:
        """The transform on the slide of ``wanted``'s match in ``layout``, else in its master."""
        for part in (layout, self._parent(layout, "slideMaster")):
            placeholders = self._placeholders(part) if part is not None else []
            found = match_placeholder(wanted, [placeholder for placeholder, _ in placeholders])
            if found is not None and placeholders[found][1] is not None:
                return placeholders[found][1]
        return None

    def _placeholders(self, part: str) -> list[tuple[Placeholder, Xfrm | None]]:
        if part not in self._by_part:
            self._by_part[part] = []  # a layout that names itself as its master reads as none
            master = self._parent(part, "slideMaster")
            from_master = self._placeholders(master) if master is not None and master != part else []
            found = []
            for shape, to_slide in _placed(self.package.xml(part)[0].find("p:cSld", "p:spTree"), IDENTITY):
                ph = _placeholder(shape)
                if ph is None:
                    continue
                wanted, own = read_placeholder(ph), read_xfrm(_xfrm_element(shape))
                if own is None or not own.complete():
                    match = match_placeholder(wanted, [placeholder for placeholder, _ in from_master])
                    base = from_master[match][1] if match is not None else None
                    own = own.inherit(base) if own is not None else base
                found.append((wanted, on_slide(own, to_slide) if own is not None else None))
            self._by_part[part] = found
        return self._by_part[part]

    def _parent(self, part: str, rel_type: str) -> str | None:
        if (part, rel_type) not in self._parents:
            self._parents[part, rel_type] = next((rel.target for rel in self.package.relationships(part)
                                                  if rel.rel_type == rel_type and rel.target
                                                  and self.package.has(rel.target)), None)
        return self._parents[part, rel_type]


def _placed(tree: Element | None, to_slide: Affine):
    """Every shape below ``tree`` that is not a group, with what its groups do to it."""
    for shape in _children_shapes(tree) if tree is not None else ():
        if shape.name == "p:grpSp":
            group = read_xfrm(_xfrm_element(shape))
            yield from _placed(shape, compose(to_slide, group_transform(group)) if group is not None else to_slide)
        else:
            yield shape, to_slide


def _office_shapes(built: BuiltText, drawn: list[tuple[int, int, int, Box]],
                   size: tuple[float, float] | None) -> tuple[OfficeShape, ...]:
    synthetic = RUN_KINDS.index(RunKind.SYNTHETIC)
    starts, kinds = built.runs.start, built.runs.kind
    shapes = []
    for start, end, page, box in drawn:
        # the line break the builder wrote before the shape's text is between shapes, not in one
        while start < end and built.text[start] == "\n" and kinds[starts.searchsorted(start, "right") - 1] == synthetic:
            start += 1
        if start < end:
            x0, y0, x1, y1 = clip(box, *size) if size is not None else box
            shapes.append(OfficeShape(start, end, page, x0, y0, x1, y1))
    return tuple(shapes)


def _slide_size(presentation: Element) -> tuple[float, float] | None:
    size = presentation.child("p:sldSz")
    try:
        width, height = int(size.attrs["cx"]), int(size.attrs["cy"])
    except (AttributeError, KeyError, ValueError):  # no p:sldSz, or no number in it: no clipping
        return None
    return (width / EMU_PER_POINT, height / EMU_PER_POINT) if width > 0 and height > 0 else None


def _notes(builder: TextBuilder, part: str, notes: Element) -> None:
    tree = notes.find("p:cSld", "p:spTree")
    for shape in tree.iter("p:sp") if tree is not None else ():
        placeholder = _placeholder(shape)
        if placeholder is not None and placeholder.attrs.get("type", "obj") not in _NOT_NOTES:
            _text_body(builder, part, shape.child("p:txBody"))


def _children_shapes(tree: Element):
    for child in tree.elements():
        if child.name in _SHAPES:
            yield child
        elif child.name == "mc:AlternateContent":  # read once: the first Choice, else the Fallback
            chosen = child.child("mc:Choice") or child.child("mc:Fallback")
            if chosen is not None:
                yield from _children_shapes(chosen)


def reading_order(shapes: list[Element]) -> list[Element]:
    """Title placeholders, other placeholders (in document order), then shapes by top, left."""
    def key(indexed: tuple[int, Element]):
        index, shape = indexed
        placeholder = _placeholder(shape)
        if placeholder is not None:
            return (0, 0 if placeholder.attrs.get("type") in _TITLES else 1, 0, 0, index)
        offset = _offset(shape)
        if offset is None:
            return (2, 0, 0, 0, index)
        return (1, 0, offset[1], offset[0], index)
    return [shape for _, shape in sorted(enumerate(shapes), key=key)]


def _placeholder(shape: Element) -> Element | None:
    properties = next((c for c in shape.elements() if c.name.startswith("p:nv")), None)
    return properties.find("p:nvPr", "p:ph") if properties is not None else None


def _xfrm_element(shape: Element) -> Element | None:
    return shape.find(_FRAME[shape.name], "a:xfrm") if shape.name in _FRAME else shape.child("p:xfrm")


def _offset(shape: Element) -> tuple[int, int] | None:
    frame_element = _xfrm_element(shape)
    offset = frame_element.child("a:off") if frame_element is not None else None
    if offset is None:
        return None
    try:
        return int(offset.attrs.get("x", "0")), int(offset.attrs.get("y", "0"))
    except ValueError:
        return None


def _text_body(builder: TextBuilder, part: str, body: Element | None, separator: str = "\n",
               background: str | None = None) -> None:
    """A text body's paragraphs; ``background``: the RGB colour the text is drawn over, where known."""
    for paragraph in body.children_named("a:p") if body is not None else ():
        builder.separate(separator)
        for child in paragraph.elements():
            if child.name in ("a:r", "a:fld"):  # a field (slide number, date) shows its cached text
                text = child.child("a:t")
                with builder.hidden(run_hidden(child.child("a:rPr"), background)):
                    for piece in text.children if text is not None else ():
                        if isinstance(piece, Piece):
                            builder.piece(piece, part)
            elif child.name == "a:br":
                builder.source("\n", part, child.src_start, child.src_end, RunKind.ENTITY)
        builder.separate(separator)


MIN_SIZE = 100  # a:rPr sz counts hundredths of a point: under 1 pt nobody reads it


def run_hidden(properties: Element | None, background: str | None) -> HiddenReason | None:
    """Why a reader cannot see a run: under 1 pt, or filled with the colour it is drawn over.
    Only explicit RGB colours are compared (a theme colour is not resolved: never flagged)."""
    if properties is None:
        return None
    try:
        if int(properties.attrs.get("sz", MIN_SIZE)) < MIN_SIZE:
            return HiddenReason.TINY
    except ValueError:
        pass
    colour = solid_rgb(properties)
    if colour is not None and colour == background:
        return HiddenReason.BACKGROUND_COLOR
    return None


def solid_rgb(element: Element | None) -> str | None:
    """The RGB colour of an element's ``a:solidFill`` (``"FFFFFF"``), if it names one."""
    fill = element.child("a:solidFill") if element is not None else None
    rgb = fill.child("a:srgbClr") if fill is not None else None
    value = rgb.attrs.get("val", "").upper() if rgb is not None else ""
    return value if len(value) == 6 else None


def _table(builder: TextBuilder, part: str, table: Element) -> None:
    for row in table.children_named("a:tr"):
        builder.separate("\n")
        for i, cell in enumerate(row.children_named("a:tc")):
            if i:
                builder.drop_separator(" ")
                builder.synthetic("\t")
                builder.hold()
            _text_body(builder, part, cell.child("a:txBody"), " ")
        builder.separate("\n")


def _chart(builder: TextBuilder, part: str, chart_space: Element) -> None:
    """A chart part's title, its series' names, then its categories once (the first series'
    that has any), each on a line. Values are left out: they are the chart's data, not its words.
    """
    chart = chart_space.child("chart")
    if chart is None:
        return
    date1904 = chart_space.child("date1904")
    date1904 = date1904 is not None and date1904.attrs.get("val", "1").lower() in _TRUE
    title = chart.find("title", "tx")
    if title is not None:
        rich = title.child("rich")
        if rich is not None:
            _text_body(builder, part, rich)
        else:
            _values(builder, part, title, date1904)
    plot_area = chart.child("plotArea")
    series = [ser for kind in (plot_area.elements() if plot_area is not None else ()) if kind.name.endswith("Chart")
              for ser in kind.children_named("ser")]
    for ser in series:
        name = ser.child("tx")
        builder.separate("\n")
        for value in name.iter("v") if name is not None else ():
            builder.separate(" ")
            _pieces(builder, part, value)
        builder.separate("\n")
    for ser in series:
        categories = ser.child("cat")
        if categories is not None and next(categories.iter("pt"), None) is not None:
            _values(builder, part, categories, date1904)
            break


def _values(builder: TextBuilder, part: str, reference: Element, date1904: bool) -> None:
    """The cached points below a chart's data reference, each on a line; numbers as their format shows them."""
    for cache in reference.elements():
        numbers = cache.name.rpartition(":")[2] in ("numRef", "numLit")
        points = cache.child("numCache") if cache.name.rpartition(":")[2] == "numRef" else cache
        if points is None:
            continue
        default_code = points.child("formatCode")
        default_code = default_code.text().strip() if default_code is not None else "General"
        for point in points.iter("pt"):
            value = point.child("v")
            if value is None:
                continue
            builder.separate("\n")
            shown = _formatted(value.text(), point.attrs.get("formatCode", default_code), date1904) \
                if numbers else value.text()
            if shown == value.text():
                _pieces(builder, part, value)
            else:
                builder.synthetic(shown)
            builder.separate("\n")


def _formatted(stored: str, code: str, date1904: bool) -> str:
    """A cached number as its format shows it; the stored text where it is no finite number."""
    try:
        number = float(stored)
        return format_value(number, code, date1904) if math.isfinite(number) else stored
    except (ValueError, ArithmeticError):  # not a number; a date too far out for the calendar
        return stored


def _diagram(builder: TextBuilder, part: str, data_model: Element) -> None:
    """The text of a SmartArt data model's points in document order, paragraphs on lines."""
    points = data_model.child("ptLst")
    for point in points.children_named("pt") if points is not None else ():
        if point.attrs.get("type", "node") not in _NOT_DIAGRAM_TEXT:
            builder.separate("\n")
            _text_body(builder, part, point.child("t"))
            builder.separate("\n")


def _pieces(builder: TextBuilder, part: str, element: Element) -> None:
    for piece in element.pieces():
        builder.piece(piece, part)
