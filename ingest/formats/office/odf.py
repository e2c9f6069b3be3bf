"""OpenDocument (ODT, ODP and their templates; ODS in ``ods``): laid out as DOCX and PPTX are.

The text lives in ``content.xml`` (a text document's headers and footers in ``styles.xml``),
read by the positional XML walker through the same TextBuilder as the OOXML formats:

- ODT as DOCX: paragraphs and headings on lines, tables cell by cell (tabs, newlines; a cell's
  paragraphs joined by spaces), frames and text boxes where they are anchored, list labels
  ("1.\\t", "a)\\t", "•\\t": synthetic) from the list styles, tracked changes as accepted (the
  deleted text that ``text:tracked-changes`` keeps is left out), fields showing their value.
  Then, each after a blank line and a title line and only when it has text: "Headers",
  "Footers" (the master pages' in ``styles.xml``), "Footnotes", "Endnotes" and "Comments"
  (``office:annotation``), each note and comment on a line after "[1] ", "[2] ", ...
- ODP as PPTX: the slides (``draw:page``) in order, a blank line between them, each slide's
  shapes in reading order (placeholders, the title first, then the other shapes top to
  bottom, left to right), then its speaker notes after a line "Notes". ``office_pages``: the
  slides, named by their ``draw:name``.
- ODS as XLSX: each sheet after a title line with its name, rows as lines, cells separated by
  tabs (columns keep their place: an empty cell is a tab, rows start at the sheet's first used
  column), each cell as the user sees it (its ``text:p``, paragraphs on lines), then its
  comments under a line "Comments", each after its cell's label "[B7] ". ``office_pages``: the
  sheets; ``office_cells``: each cell's range and reference, counting repeated rows and columns
  (an empty repeat costs nothing, however many rows it claims).

``text:s`` (c spaces), ``text:tab`` and ``text:line-break`` are one entity run over their
element. Paragraph white space collapses as ODF says (a run of spaces, tabs and newlines is one
space, none at a paragraph's start). Hidden text stays in the text, flagged: HIDDEN_FORMATTING for
a style with ``text:display="none"``, ``text:hidden-text`` and ``text:hidden-paragraph`` (unless
``text:is-hidden="false"``) and a section with ``text:display="none"``; HIDDEN_SLIDE,
HIDDEN_SHEET, HIDDEN_ROW and HIDDEN_COLUMN as in PPTX and XLSX.

Left out: heading outline numbering (a ``text:number`` the file holds is read), image bullets,
conditions (a conditional section shows), repeats in ODT and ODP tables (read once), slide
comments, embedded objects (charts, formulas) and images. xml_positions knows no ODF namespace:
elements and attributes go by their local names (text:p is "p", table:name is "name").
"""

from __future__ import annotations

import re

from ingest.formats.headings import headings_in
from ingest.formats.office.builder import TextBuilder
from ingest.formats.office.numbering import SYMBOL_BULLETS
from ingest.formats.office.numbering import format_number
from ingest.formats.office.package import OfficePackage, within_depth
from ingest.formats.office.readback import space_count
from ingest.formats.office.xlsx import column_name
from ingest.formats.office.xml_positions import Element, Piece
from schemas.errors import CorruptDocumentError, EncryptedDocumentError
from schemas.records import HiddenReason, MediaType, OfficePage, ParsedDocument, RunKind

CONTENT, STYLES, MANIFEST = "content.xml", "styles.xml", "META-INF/manifest.xml"
_HIDDEN = HiddenReason.HIDDEN_FORMATTING
_SKIP = frozenset({"tracked-changes", "ruby-text", "forms", "note-citation", "image", "object", "object-ole",
                   "scripts", "event-listeners", "soft-page-break", "annotation-end", "change", "change-start",
                   "change-end"})
_SHAPES = frozenset({"frame", "custom-shape", "rect", "ellipse", "circle", "polygon", "polyline", "path", "line",
                     "connector", "caption", "measure", "regular-polygon", "g"})  # and draw:a around them
BLOCKS = frozenset({"p", "h", "list", "table"})
_SPACE = re.compile(r"[ \t\r\n]+")
_LENGTH = re.compile(r"\s*(-?[0-9]*\.?[0-9]+)\s*(cm|mm|in|pt|pc|px)?")
_POINTS = {"cm": 72 / 2.54, "mm": 72 / 25.4, "in": 72.0, "pt": 1.0, "pc": 12.0, "px": 0.75, None: 1.0}
_FORMATS = {"1": "decimal", "a": "lowerLetter", "A": "upperLetter", "i": "lowerRoman", "I": "upperRoman"}
_FOLLOWED_BY = {"listtab": "\t", "space": " ", "nothing": ""}
_SECTIONS = (("Headers", ("header-first", "header", "header-left")),  # the first page's first
             ("Footers", ("footer-first", "footer", "footer-left")))


@within_depth
def parse_odt(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse ODT bytes into the document text (the body, then headers, footers, notes and
    comments under their titles), each real character mapped to its part and range.

    Example::

        doc = parse_odt(Path("letter.odt").read_bytes(), "letter.odt")
        doc.text                                    # 'Dear Ann,\\n...\\n\\nFootnotes\\n[1] ...'
    """
    package, content, styles = open_package(source, doc_id, MediaType.ODT, "text")
    common = styles.child("styles") if styles is not None else None
    builder, notes, comments = TextBuilder(), [], []
    walker = OdfWalker(builder, CONTENT, OdfStyles(content.child("automatic-styles"), common), notes, comments, True)
    walker.headings = []  # the body's text:h, (start, end, outline level)
    walker.blocks(office_body(content, "text", doc_id))
    masters = styles.child("master-styles") if styles is not None else None
    header_styles = OdfStyles(styles.child("automatic-styles"), common) if styles is not None else OdfStyles()
    header_walker = OdfWalker(builder, STYLES, header_styles, notes, comments, True)
    for title, names in _SECTIONS:
        with builder.titled(title):
            for master in masters.children_named("master-page") if masters is not None else ():
                for region in (r for name in names for r in master.children_named(name)):
                    if region.attrs.get("display", "true") != "false":
                        builder.separate("\n")
                        header_walker.blocks(region)
    for title, note_class in (("Footnotes", "footnote"), ("Endnotes", "endnote")):
        with builder.titled(title):
            labelled(builder, [(w, note.child("note-body")) for w, note in notes
                                if note.attrs.get("note-class", "footnote") == note_class])
    with builder.titled("Comments"):
        labelled(builder, comments)
    built = builder.result()
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.ODT, text=built.text, title=document_title(package),
                          office_runs=built.runs, hidden_runs=built.hidden_runs,
                          headings=headings_in(built.text, walker.headings, built.hidden_runs))


@within_depth
def parse_odp(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse ODP bytes into the document text; ``office_pages`` gives each slide's range.

    Example::

        doc = parse_odp(Path("deck.odp").read_bytes(), "deck.odp")
        page = doc.office_pages[2]                  # slide 3, named by its draw:name
        doc.text[page.start:page.end]               # its shapes' text, then "Notes" and its notes
    """
    package, content, styles = open_package(source, doc_id, MediaType.ODP, "presentation")
    presentation = office_body(content, "presentation", doc_id)
    builder = TextBuilder()
    walker = OdfWalker(builder, CONTENT, OdfStyles(content.child("automatic-styles"),
                                               styles.child("styles") if styles is not None else None))
    pages = []
    for number, slide in enumerate(presentation.children_named("page"), 1):
        hidden = walker.styles.get(slide.attrs.get("style-name"), "drawing-page-properties", "visibility") == "hidden"
        builder.separate("\n\n")
        builder.flush()
        builder.hold("\n")
        start = builder.length
        with builder.hidden(HiddenReason.HIDDEN_SLIDE if hidden else None):
            walker.shapes(slide)
            notes = slide.child("notes")
            if notes is not None:
                with builder.titled("Notes", "\n"):
                    for frame in notes.iter("frame"):
                        if frame.attrs.get("class") == "notes":
                            walker.shape(frame)
        builder.drop_separator("\n\n")
        pages.append(OfficePage(number, start, builder.length, slide.attrs.get("name", f"Slide {number}"), hidden))
    built = builder.result()
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.ODP, text=built.text, title=document_title(package),
                          office_runs=built.runs, hidden_runs=built.hidden_runs, office_pages=tuple(pages))


def open_package(source: bytes, doc_id: str, media_type: MediaType,
          body: str) -> tuple[OfficePackage, Element, Element | None]:
    package = OfficePackage(source, doc_id)
    if package.has("mimetype"):
        declared = package.read("mimetype").decode("ascii", "replace").strip()
        if declared and not declared.startswith(media_type.value):
            raise CorruptDocumentError(f"not an OpenDocument {body}: its mimetype is {declared!r}", doc_id=doc_id)
    # An encrypted package keeps its manifest readable and says so there; content.xml is ciphertext.
    if package.has(MANIFEST) and b"encryption-data" in package.read(MANIFEST):
        raise EncryptedDocumentError("the OpenDocument file is encrypted (it needs a password)", doc_id=doc_id)
    content, _ = package.xml(CONTENT)
    styles = package.xml(STYLES)[0] if package.has(STYLES) else None
    return package, content, styles


def office_body(content: Element, name: str, doc_id: str) -> Element:
    body = content.find("body", name)
    if body is None:
        raise CorruptDocumentError(f"{CONTENT} has no office:{name}", doc_id=doc_id)
    return body


def document_title(package: OfficePackage) -> str:
    if not package.has("meta.xml"):
        return ""
    title = next(package.xml("meta.xml")[0].iter("title"), None)
    return " ".join(title.text().split()) if title is not None else ""


def labelled(builder: TextBuilder, items: list[tuple[OdfWalker, Element | None]],
              labels: list[str] | None = None) -> None:
    """Each item's blocks on a line after its label ("[1] ", ...), left out whole when it has no text."""
    for number, (walker, element) in enumerate(items, 1):
        point = builder.checkpoint()
        builder.separate("\n")
        builder.synthetic(labels[number - 1] if labels else f"[{number}] ")
        builder.hold("\n")
        after = builder.length
        for child in element.elements() if element is not None else ():
            if child.name in BLOCKS or child.name == "section":  # not an annotation's creator and date
                walker.node(child)
        if builder.length == after:
            builder.rollback(point)


class OdfStyles:
    """Named styles (automatic ones first, then common ones) and list styles, with their parents."""

    def __init__(self, *containers: Element | None) -> None:
        self.styles: dict[str, Element] = {}
        self.lists: dict[str, Element] = {}
        for container in containers:
            for style in container.elements() if container is not None else ():
                if style.name in ("style", "list-style"):
                    table = self.styles if style.name == "style" else self.lists
                    table.setdefault(style.attrs.get("name", ""), style)

    def get(self, name: str | None, properties: str, attribute: str) -> str | None:
        """``attribute`` of the ``properties`` of style ``name`` or the nearest parent that has it."""
        seen = set()
        while name and name in self.styles and name not in seen:
            seen.add(name)
            found = self.styles[name].child(properties)
            if found is not None and attribute in found.attrs:
                return found.attrs[attribute]
            name = self.styles[name].attrs.get("parent-style-name")
        return None

    def hides(self, name: str | None) -> bool:
        return self.get(name, "text-properties", "display") == "none"


class _Lists:
    """List labels: one set of counters per list style, restarted by a new list unless it continues."""

    def __init__(self, styles: OdfStyles) -> None:
        self.styles = styles
        self.counters: dict[str, dict[int, int]] = {}

    def start(self, style: str, continues: bool) -> None:
        if not continues:
            self.counters.pop(style, None)

    def label(self, style: str, level: int, start_value: str | None, wrapper: bool = False) -> str:
        """Count an item at ``level`` (1-based) of a list of ``style``; its label ("" if none).

        An item that only wraps a deeper list is counted as LibreOffice counts it: it takes the
        start value where its level has no count yet and otherwise leaves the counts alone.
        """
        levels = self._levels(style)
        counters = self.counters.setdefault(style, {})
        start = _int(levels[level].attrs.get("start-value"), 1) if level in levels else 1
        if wrapper:
            counters.setdefault(level, start)
            return ""
        for deeper in [lvl for lvl in counters if lvl > level]:
            del counters[deeper]
        counters[level] = _int(start_value, start) if start_value is not None else counters.get(level, start - 1) + 1
        own = levels.get(level)
        if own is None:
            return ""
        alignment = own.find("list-level-properties", "list-level-label-alignment")
        followed = _FOLLOWED_BY.get(alignment.attrs.get("label-followed-by", "") if alignment is not None else "", "\t")
        if own.name == "list-level-style-bullet":
            bullet = own.attrs.get("bullet-char", "\u2022")
            return SYMBOL_BULLETS.get(bullet, bullet) + followed
        if own.name != "list-level-style-number":
            return ""  # an image bullet
        shown = max(min(_int(own.attrs.get("display-levels"), 1), level), 1)
        numbers = [self._format(counters.get(lvl, 1), levels.get(lvl)) for lvl in range(level - shown + 1, level + 1)]
        label = own.attrs.get("num-prefix", "") + ".".join(n for n in numbers if n) + own.attrs.get("num-suffix", "")
        return label + followed if label else ""

    def _levels(self, style: str) -> dict[int, Element]:
        list_style = self.styles.lists.get(style)
        return {_int(level.attrs.get("level"), 1): level for level in list_style.elements()} if list_style else {}

    @staticmethod
    def _format(value: int, level: Element | None) -> str:
        fmt = level.attrs.get("num-format", "1") if level is not None else "1"
        if fmt in ("a", "A") and level.attrs.get("num-letter-sync", "false") != "true":
            letters = column_name(value).lower() if value > 0 else ""  # a..z, aa, ab: ODF's default
            return letters.upper() if fmt == "A" else letters
        return format_number(value, _FORMATS[fmt]) if fmt in _FORMATS else (str(value) if fmt else "")


class OdfWalker:
    """Writes one part's block and paragraph content (body, header, note, cell, text box, shape)."""

    def __init__(self, builder: TextBuilder, part: str, styles: OdfStyles, notes: list | None = None,
                 comments: list | None = None, labels: bool = False) -> None:
        self.builder, self.part, self.styles = builder, part, styles
        self.notes, self.comments = notes, comments  # (walker, element) of the notes and comments met
        self.lists = _Lists(styles) if labels else None
        self.cell_depth = 0
        self.paragraph_depth = 0  # inside a paragraph, character data is text; outside, layout
        self.hidden_sections = 0
        self.space_before = True  # the paragraph so far ends in white space (or has no text yet)
        self.label: str | Element = ""  # the label of the list item whose first paragraph comes next
        self.headings: list[tuple[int, int, int]] | None = None  # where text:h goes: (start, end, level)

    def blocks(self, container: Element) -> None:
        for child in container.elements():
            self.node(child)

    def node(self, element: Element) -> None:
        name = element.name
        if name in _SKIP or name.endswith("-source") or name.endswith("-decls"):
            return
        if name in ("p", "h"):
            self.paragraph(element)
        elif name == "list":
            self.list(element)
        elif name == "table":
            self.table(element)
        elif name == "s":
            self.character(" " * space_count(element.attrs.get("c")), element)
        elif name == "tab":
            self.character("\t", element)
        elif name == "line-break":
            self.character("\n", element)
        elif name in ("note", "annotation"):
            found = self.notes if name == "note" else self.comments
            if found is not None:
                found.append((self, element))
        elif name == "section":  # its paragraphs are hidden, not the separators before them
            hidden = element.attrs.get("display") == "none"
            self.hidden_sections += hidden
            self.blocks(element)
            self.hidden_sections -= hidden
        elif name in ("span", "hidden-text"):
            hidden = self.styles.hides(element.attrs.get("style-name")) if name == "span" else _hidden(element)
            with self.builder.hidden(_HIDDEN if hidden else None):
                self.inline(element)
        elif name in _SHAPES:
            self.shape(element)
        elif name == "number":  # the number of a heading or list item that the file holds
            before = self.builder.length
            self.inline(element)
            if self.builder.length > before:
                self.builder.synthetic("\t")
        else:  # text:a, draw:a, text:meta, fields (their value), ruby bases, index bodies, ...
            self.inline(element)

    def inline(self, element: Element) -> None:
        if not self.paragraph_depth:
            self.blocks(element)
            return
        for child in element.children:
            if isinstance(child, Piece):
                self.characters(child)
            else:
                self.node(child)

    def paragraph(self, paragraph: Element) -> None:
        separator = "\n" if self.cell_depth == 0 else " "
        self.builder.separate(separator)
        hidden = self.hidden_sections or self.styles.hides(paragraph.attrs.get("style-name")) or any(
            _hidden(child) for child in paragraph.children_named("hidden-paragraph"))
        outer, self.space_before = self.space_before, True
        label, self.label = self.label, ""
        self.paragraph_depth += 1
        start = self.builder.length
        with self.builder.hidden(_HIDDEN if hidden else None):
            if isinstance(label, Element):
                self.node(label)
            else:
                self.builder.synthetic(label)
            self.inline(paragraph)
        self.paragraph_depth -= 1
        if paragraph.name == "h" and self.headings is not None and self.cell_depth == 0:
            level = paragraph.attrs.get("outline-level", "1")
            self.headings.append((start, self.builder.length, int(level) if level.isdigit() else 1))
        self.space_before = outer
        self.builder.separate(separator)

    def list(self, element: Element, style: str = "", level: int = 0) -> None:
        style = element.attrs.get("style-name") or style
        if level == 0 and self.lists is not None:
            continues = element.attrs.get("continue-numbering") == "true" or "continue-list" in element.attrs
            self.lists.start(style, continues)
        self.label = ""
        for item in element.elements():
            if item.name not in ("list-item", "list-header"):
                self.node(item)
                continue
            label: str | Element = ""
            children = list(item.elements())
            if item.name == "list-item" and self.lists is not None:
                label = self.lists.label(style, level + 1, item.attrs.get("start-value"),
                                         bool(children) and children[0].name == "list")
            if children and children[0].name == "number":
                label, children = children[0], children[1:]
            self.label = label if children and children[0].name in ("p", "h") else ""
            for child in children:
                if child.name == "list":
                    self.list(child, style, level + 1)
                else:
                    self.node(child)
            self.label = ""

    def table(self, table: Element) -> None:
        nested = self.cell_depth > 0
        for row in table_rows(table):
            self.builder.separate(" " if nested else "\n")
            cells = [c for c in row.elements() if c.name in ("table-cell", "covered-table-cell")]
            for i, cell in enumerate(cells):  # a cell merged away keeps its place, as PPTX's do
                if i:
                    if nested:
                        self.builder.separate(" ")
                    else:
                        self.builder.drop_separator(" ")
                        self.builder.synthetic("\t")
                        self.builder.hold()
                self.cell_depth += 1
                if cell.name == "table-cell":
                    self.blocks(cell)
                self.cell_depth -= 1
            self.builder.separate(" " if nested else "\n")

    def shapes(self, container: Element) -> None:
        for shape in reading_order([c for c in container.elements() if c.name in _SHAPES or c.name == "a"]):
            self.builder.separate("\n")
            self.shape(shape)
            self.builder.separate("\n")

    def shape(self, shape: Element) -> None:
        if shape.name in ("g", "a"):
            self.shapes(shape)
            return
        for child in shape.elements():
            if child.name == "text-box":
                self.blocks(child)
            elif child.name in BLOCKS:
                self.node(child)

    def character(self, text: str, element: Element) -> None:
        self.builder.source(text, self.part, element.src_start, element.src_end, RunKind.ENTITY)
        self.space_before = text == "\n"

    def characters(self, piece: Piece) -> None:
        """Paragraph text with its white space collapsed: one space for a run, none to start with."""
        if piece.kind is RunKind.ENTITY:  # a character reference is no white space to collapse
            self.builder.piece(piece, self.part)
            self.space_before = False
        elif piece.kind is RunKind.WHITESPACE:  # CR LF, read as one newline
            self._space(piece.src_start, piece.src_end, RunKind.WHITESPACE)
        else:
            text, at, position = piece.text, piece.src_start, 0
            for match in _SPACE.finditer(text):
                if match.start() > position:
                    self.builder.source(text[position:match.start()], self.part, at + position, at + match.start())
                    self.space_before = False
                self._space(at + match.start(), at + match.end(),
                            RunKind.TEXT if match.group() == " " else RunKind.WHITESPACE)
                position = match.end()
            if position < len(text):
                self.builder.source(text[position:], self.part, at + position, piece.src_end)
                self.space_before = False

    def _space(self, src_start: int, src_end: int, kind: RunKind) -> None:
        if not self.space_before:
            self.builder.source(" ", self.part, src_start, src_end, kind)
            self.space_before = True


def reading_order(shapes: list[Element]) -> list[Element]:
    """Placeholders (the title first) in document order, then shapes by top, left (in points).

    >>> from ingest.formats.office.xml_positions import parse_xml
    >>> page = parse_xml(b'<page><frame x="1cm" y="9cm" n="low"/><frame y="2in" n="high"/>'
    ...                  b'<frame class="title" n="title"/></page>', "content.xml", "d")[0]
    >>> [shape.attrs["n"] for shape in reading_order(list(page.elements()))]
    ['title', 'high', 'low']
    """
    def key(indexed: tuple[int, Element]):
        index, shape = indexed
        placeholder = shape.attrs.get("class")
        if placeholder is not None:
            return (0, 0 if placeholder == "title" else 1, 0.0, 0.0, index)
        position = _position(shape)
        return (2, 0, 0.0, 0.0, index) if position is None else (1, 0, position[1], position[0], index)
    return [shape for _, shape in sorted(enumerate(shapes), key=key)]


def _position(shape: Element) -> tuple[float, float] | None:
    if "y" in shape.attrs or "x" in shape.attrs:
        return _points(shape.attrs.get("x", "0")), _points(shape.attrs.get("y", "0"))
    inside = [p for p in (_position(c) for c in shape.elements() if c.name in _SHAPES) if p is not None]
    return (min(x for x, _ in inside), min(y for _, y in inside)) if inside else None


def _points(length: str) -> float:
    match = _LENGTH.match(length)
    return float(match.group(1)) * _POINTS[match.group(2)] if match else 0.0


def table_rows(table: Element):
    for child in table.elements():
        if child.name == "table-row":
            yield child
        elif child.name in ("table-header-rows", "table-rows", "table-row-group"):
            yield from table_rows(child)


def _hidden(element: Element) -> bool:
    return element.attrs.get("is-hidden", "true").strip().lower() != "false"


def repeat(element: Element, attribute: str) -> int:
    return max(_int(element.attrs.get(attribute), 1), 1)


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
