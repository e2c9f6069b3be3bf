"""PPTX: the slides in show order, each slide's shapes in reading order, then its speaker notes.

Reading order: title placeholders, the other placeholders as the slide lists them, then every
other shape top to bottom, left to right (by the offset of its frame; a shape without one keeps
its place at the end). Group shapes are read in the same order inside; tables cell by cell.
"""

from __future__ import annotations

from ingest.formats.office.builder import TextBuilder
from ingest.formats.office.package import OfficePackage
from ingest.formats.office.xml_positions import Element, Piece
from schemas.errors import CorruptDocumentError
from schemas.records import HiddenReason, MediaType, OfficePage, ParsedDocument, RunKind

_SHAPES = frozenset({"p:sp", "p:grpSp", "p:graphicFrame", "p:cxnSp", "p:pic", "p:contentPart"})
_TITLES = frozenset({"title", "ctrTitle"})
_FRAME = {"p:sp": "p:spPr", "p:cxnSp": "p:spPr", "p:pic": "p:spPr", "p:grpSp": "p:grpSpPr"}
_NOT_NOTES = frozenset({"sldImg", "sldNum", "hdr", "ftr", "dt"})  # placeholders of a notes page that are no notes


def parse_pptx(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse PPTX bytes into the document text; ``office_pages`` gives each slide's range.

    Example::

        doc = parse_pptx(Path("deck.pptx").read_bytes(), "deck.pptx")
        page = doc.office_pages[2]                  # slide 3
        doc.text[page.start:page.end]               # its shapes' text, then "Notes" and its notes
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
    for number, part in enumerate(slides, 1):
        if not part or not package.has(part):
            raise CorruptDocumentError(f"slide {number} names a missing part", doc_id=doc_id, page=number)
        slide, _ = package.xml(part)
        hidden = slide.attrs.get("show", "1").lower() in ("0", "false")
        builder.separate("\n\n")
        builder.flush()
        builder.hold("\n")
        start = builder.length
        with builder.hidden(HiddenReason.HIDDEN_SLIDE if hidden else None):
            _shapes(builder, part, slide.find("p:cSld", "p:spTree"))
            notes = next((r.target for r in package.relationships(part) if r.rel_type == "notesSlide"
                          and r.target and package.has(r.target)), None)
            if notes is not None:
                with builder.titled("Notes", "\n"):
                    _notes(builder, notes, package.xml(notes)[0])
        builder.drop_separator("\n\n")
        pages.append(OfficePage(number, start, builder.length, part, hidden))
    built = builder.result()
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.PPTX, text=built.text, title=package.title(),
                          office_runs=built.runs, hidden_runs=built.hidden_runs, office_pages=tuple(pages))


def _notes(builder: TextBuilder, part: str, notes: Element) -> None:
    tree = notes.find("p:cSld", "p:spTree")
    for shape in tree.iter("p:sp") if tree is not None else ():
        placeholder = _placeholder(shape)
        if placeholder is not None and placeholder.attrs.get("type", "obj") not in _NOT_NOTES:
            _text_body(builder, part, shape.child("p:txBody"))


def _shapes(builder: TextBuilder, part: str, tree: Element | None) -> None:
    if tree is None:
        return
    for shape in reading_order(list(_children_shapes(tree))):
        builder.separate("\n")
        if shape.name == "p:grpSp":
            _shapes(builder, part, shape)
        elif shape.name == "p:sp":
            _text_body(builder, part, shape.child("p:txBody"))
        elif shape.name == "p:graphicFrame":
            table = shape.find("a:graphic", "a:graphicData", "a:tbl")
            if table is not None:
                _table(builder, part, table)
        builder.separate("\n")


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


def _offset(shape: Element) -> tuple[int, int] | None:
    frame = shape.find(_FRAME[shape.name], "a:xfrm") if shape.name in _FRAME else shape.child("p:xfrm")
    offset = frame.child("a:off") if frame is not None else None
    if offset is None:
        return None
    try:
        return int(offset.attrs.get("x", "0")), int(offset.attrs.get("y", "0"))
    except ValueError:
        return None


def _text_body(builder: TextBuilder, part: str, body: Element | None, separator: str = "\n") -> None:
    for paragraph in body.children_named("a:p") if body is not None else ():
        builder.separate(separator)
        for child in paragraph.elements():
            if child.name in ("a:r", "a:fld"):  # a field (slide number, date) shows its cached text
                text = child.child("a:t")
                for piece in text.children if text is not None else ():
                    if isinstance(piece, Piece):
                        builder.piece(piece, part)
            elif child.name == "a:br":
                builder.source("\n", part, child.src_start, child.src_end, RunKind.ENTITY)
        builder.separate(separator)


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
