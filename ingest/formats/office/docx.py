"""DOCX (and .docm, Transitional and Strict): the text a reader of the final document sees.

Tracked changes read as accepted (insertions in, deletions out), a field shows its result and
never its instruction, ``mc:AlternateContent`` is read once (its first Choice, else its
Fallback), text boxes are read where they are anchored, and list labels are synthetic text.
"""

from __future__ import annotations

from ingest.formats.headings import headings_in
from ingest.formats.office.builder import TextBuilder
from ingest.formats.office.numbering import Numbering
from ingest.formats.office.package import OfficePackage, within_depth
from ingest.formats.office.styles import WHITE, Styles, outline_level, page_colour_of, shading
from ingest.formats.office.xml_positions import Element, Piece
from schemas.errors import CorruptDocumentError
from schemas.records import MediaType, ParsedDocument, RunKind

# Elements that hold nothing a reader sees: properties, deleted or moved-away text, field
# instructions, bookmarks. Skipped with everything inside them.
_SKIP = frozenset({
    "w:del", "w:moveFrom", "w:pPr", "w:rPr", "w:sectPr", "w:tblPr", "w:tblGrid", "w:trPr", "w:tcPr",
    "w:sdtPr", "w:sdtEndPr", "w:instrText", "w:delText", "w:delInstrText", "w:fldData", "w:tblPrEx",
    "mc:Fallback", "w:rt",  # ruby annotation text: the base text is what is read
})
# Elements that stand for one character (the run holds them between its w:t).
_CHARACTERS = {"w:tab": "\t", "w:br": "\n", "w:cr": "\n", "w:noBreakHyphen": "\u2011", "w:ptab": "\t"}
_SECTIONS = (("Headers", "header"), ("Footers", "footer"))
_NOTES = (("Footnotes", "footnotes", "w:footnote"), ("Endnotes", "endnotes", "w:endnote"),
          ("Comments", "comments", "w:comment"))


@within_depth
def parse_docx(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse DOCX bytes into the document text, each real character mapped to its part and range.

    The body comes first; then, each under a title line and only when it has text, "Headers",
    "Footers", "Footnotes", "Endnotes" and "Comments" (notes and comments labelled "[1] ", ...).

    Example (a body of ``<w:p><w:r><w:t>Fish &amp;amp; chips</w:t></w:r></w:p>``)::

        doc = parse_docx(Path("menu.docx").read_bytes(), "menu.docx")
        doc.text                                  # 'Fish & chips'
        [r.kind.value for r in doc.office_runs]   # ['text', 'entity', 'text']
    """
    package = OfficePackage(source, doc_id)
    main = package.main_part()
    root, _ = package.xml(main)
    body = root.child("w:body")
    if body is None:
        raise CorruptDocumentError(f"{main} has no body", doc_id=doc_id)
    rels = package.relationships(main)
    targets = {rel.rel_type: rel.target for rel in rels if rel.target and package.has(rel.target)}
    styles = Styles.read(package.xml(targets["styles"])[0] if "styles" in targets else None, _num_pr)
    numbering = Numbering.read(package.xml(targets["numbering"])[0] if "numbering" in targets else None)
    page_colour = page_colour_of(root)
    builder = TextBuilder()
    headings: list[tuple[int, int, int]] = []  # the body's heading paragraphs: (start, end, level)
    _Walker(builder, main, styles, numbering, page_colour, headings).blocks(body)
    for title, rel_type in _SECTIONS:
        by_id = {rel.rel_id: rel.target for rel in rels if rel.rel_type == rel_type and package.has(rel.target)}
        referenced = [r.attrs.get("r:id", "") for r in root.iter(f"w:{rel_type}Reference")]
        parts = list(dict.fromkeys([by_id[i] for i in referenced if i in by_id] + sorted(by_id.values())))
        with builder.titled(title):
            for part in parts:
                builder.separate("\n")
                _Walker(builder, part, styles, numbering, page_colour).blocks(package.xml(part)[0])
    for title, rel_type, note_name in _NOTES:
        if rel_type in targets:
            with builder.titled(title):
                _notes(builder, targets[rel_type], package.xml(targets[rel_type])[0], note_name, styles, numbering,
                       page_colour)
    built = builder.result()
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.DOCX, text=built.text, title=package.title(),
                          created=package.created(),
                          office_runs=built.runs, hidden_runs=built.hidden_runs,
                          headings=headings_in(built.text, headings, built.hidden_runs))


def _notes(builder: TextBuilder, part: str, root: Element, note_name: str, styles: Styles,
           numbering: Numbering, page_colour: str) -> None:
    number = 0
    for note in root.children_named(note_name):
        if note.attrs.get("w:type", "normal") != "normal":  # separators and continuation notices
            continue
        number += 1
        walker = _Walker(builder, part, styles, numbering, page_colour)
        point = builder.checkpoint()
        builder.separate("\n")
        builder.synthetic(f"[{number}] ")
        builder.hold("\n")
        after = builder.length
        walker.blocks(note)
        if builder.length == after:
            builder.rollback(point)


class _Walker:
    """Writes one part's block and inline content (body, header, note, cell, text box)."""

    def __init__(self, builder: TextBuilder, part: str, styles: Styles, numbering: Numbering,
                 page_colour: str = WHITE, headings: list[tuple[int, int, int]] | None = None) -> None:
        self.builder, self.part, self.styles, self.numbering = builder, part, styles, numbering
        self.headings = headings  # where heading paragraphs go (the body's walker only)
        self.backgrounds = [page_colour]  # the page's colour, then each enclosing cell's and paragraph's shading
        self.cell_depth = 0
        self.fields: list[bool] = []  # per open complex field: True while in its instruction
        self.paragraph_style: str | None = None

    def blocks(self, container: Element) -> None:
        for child in container.elements():
            self.node(child)

    def node(self, element: Element) -> None:
        name = element.name
        if name in _SKIP:
            return
        if name == "w:p":
            self.paragraph(element)
        elif name == "w:tbl":
            self.table(element)
        elif name == "w:r":
            self.run(element)
        elif name == "m:t":
            self.text(element)
        elif name == "mc:AlternateContent":  # read once: the first Choice, else the Fallback
            chosen = element.child("mc:Choice") or element.child("mc:Fallback")
            if chosen is not None:
                self.blocks(chosen)
        else:  # containers: w:ins, w:hyperlink, w:fldSimple (its content is the result), w:sdt, ...
            self.blocks(element)

    def paragraph(self, paragraph: Element) -> None:
        separator = "\n" if self.cell_depth == 0 else " "
        self.builder.separate(separator)
        properties = paragraph.child("w:pPr")
        style = properties.find("w:pStyle") if properties is not None else None
        outer_style, self.paragraph_style = self.paragraph_style, style.attrs.get("w:val") if style is not None else None
        self.backgrounds.append(shading(properties) or self.backgrounds[-1])
        numbered = _num_pr(properties.child("w:numPr") if properties is not None else None)
        numbered = numbered or self.styles.numbering(self.paragraph_style)
        start = self.builder.length
        if numbered is not None and numbered[0] != "0" and not self.in_instruction:
            self.builder.synthetic(self.numbering.label(*numbered))
        self.blocks(paragraph)
        if self.headings is not None and self.cell_depth == 0:
            level = outline_level(properties)
            level = self.styles.outline_level(self.paragraph_style) if level is None else level
            if level is not None and 0 <= level < 9:
                self.headings.append((start, self.builder.length, level + 1))
        self.paragraph_style = outer_style
        self.backgrounds.pop()
        self.builder.separate(separator)

    def table(self, table: Element) -> None:
        nested = self.cell_depth > 0
        for row in _rows(table):
            self.builder.separate(" " if nested else "\n")
            for i, cell in enumerate(_cells(row)):
                if i:
                    if nested:
                        self.builder.separate(" ")
                    else:
                        self.builder.drop_separator(" ")  # the last paragraph's, not the row's
                        self.builder.synthetic("\t")
                        self.builder.hold()
                self.cell_depth += 1
                self.backgrounds.append(shading(cell.child("w:tcPr")) or self.backgrounds[-1])
                self.blocks(cell)
                self.backgrounds.pop()
                self.cell_depth -= 1
            self.builder.separate(" " if nested else "\n")

    @property
    def in_instruction(self) -> bool:
        return any(self.fields)

    def run(self, run: Element) -> None:
        look = self.styles.run_look(run.child("w:rPr"), self.paragraph_style)
        with self.builder.hidden(look.hidden_reason(self.backgrounds[-1])):
            for child in run.elements():
                name = child.name
                if name == "w:fldChar":
                    self._field_char(child.attrs.get("w:fldCharType", ""))
                elif name in _SKIP or self.in_instruction:
                    continue
                elif name == "w:t":
                    self.text(child)
                elif name in _CHARACTERS:
                    self.builder.source(_CHARACTERS[name], self.part, child.src_start, child.src_end, RunKind.ENTITY)
                elif name == "w:sym":
                    self._symbol(child)
                elif name != "w:softHyphen":  # drawings, pictures, AlternateContent: text boxes in place
                    self.node(child)

    def text(self, element: Element) -> None:
        for piece in element.children:
            if isinstance(piece, Piece):
                self.builder.piece(piece, self.part)

    def _symbol(self, symbol: Element) -> None:
        try:
            character = chr(int(symbol.attrs.get("w:char", ""), 16))
        except ValueError:
            return
        self.builder.source(character, self.part, symbol.src_start, symbol.src_end, RunKind.ENTITY)

    def _field_char(self, kind: str) -> None:
        if kind == "begin":
            self.fields.append(True)
        elif kind == "separate" and self.fields:
            self.fields[-1] = False
        elif kind == "end" and self.fields:
            self.fields.pop()


def _num_pr(num_pr: Element | None) -> tuple[str, int] | None:
    if num_pr is None:
        return None
    num_id, ilvl = num_pr.child("w:numId"), num_pr.child("w:ilvl")
    if num_id is None:
        return None
    try:
        level = int(ilvl.attrs.get("w:val", "0")) if ilvl is not None else 0
    except ValueError:
        level = 0
    return num_id.attrs.get("w:val", "0"), level


def _rows(table: Element):
    for child in table.elements():
        if child.name == "w:tr":
            yield child
        elif child.name in ("w:sdt", "w:customXml", "w:sdtContent", "w:ins"):
            yield from _rows(child)


def _cells(row: Element):
    for child in row.elements():
        if child.name == "w:tc":
            yield child
        elif child.name in ("w:sdt", "w:customXml", "w:sdtContent", "w:ins"):
            yield from _cells(child)
