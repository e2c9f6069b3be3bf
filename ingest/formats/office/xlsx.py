"""XLSX (and .xlsm): each sheet under its name, rows as lines, cells as Excel displays them.

A string cell maps to its text in ``xl/sharedStrings.xml`` (or to its inline string in the
sheet); a number maps to its ``<v>`` in the sheet when Excel shows it as stored, and is
synthetic text when its number format changes it ("50.0%" for 0.5): the cell's reference in
``office_cells`` still says where it came from. Formulas show their cached value; a file never
recalculated has none and shows nothing. Columns keep their place: an empty cell between two
is a tab, and every row starts at the sheet's first used column.

After a sheet's rows, its comments under a line "Comments": notes (``xl/commentsN.xml``) and
threaded comments with their replies (``xl/threadedComments/``), in cell order (row by row),
each on a line after a label "[B7] " and mapped into its comments part. Excel writes a note
beside every threaded comment for older readers, its text starting "[Threaded comment]": where
the thread is there, that copy is left out. A comment on a hidden row or column is hidden too.
"""

from __future__ import annotations

import math
import re

from ingest.formats.headings import headings_in
from ingest.formats.office.builder import TextBuilder
from ingest.formats.office.numbers import BUILTIN, format_value
from ingest.formats.office.package import OfficePackage, within_depth
from ingest.formats.office.xml_positions import Element, Piece
from schemas.errors import CorruptDocumentError
from schemas.records import HiddenReason, MediaType, OfficeCell, ParsedDocument

_TRUE = frozenset({"1", "true"})
_REF = re.compile(r"([A-Za-z]{1,3})([0-9]+)")
_PLAIN_SHEET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
MAX_COLUMNS = 16384  # XFD: Excel's last column


@within_depth
def parse_xlsx(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse XLSX bytes into the document text; ``office_pages`` gives each sheet's range and
    ``office_cells`` each cell's range and reference.

    Example::

        doc = parse_xlsx(Path("budget.xlsx").read_bytes(), "budget.xlsx")
        cell = doc.office_cells[0]
        cell.ref, doc.text[cell.start:cell.end]     # ('Sheet1!A1', 'Item')
    """
    package = OfficePackage(source, doc_id)
    main = package.main_part()
    workbook, _ = package.xml(main)
    relationships = package.relationships(main)
    by_id = {rel.rel_id: rel for rel in relationships}
    targets = {rel.rel_type: rel.target for rel in relationships if rel.target and package.has(rel.target)}
    shared_part = targets.get("sharedStrings", "")
    shared = _shared_strings(package.xml(shared_part)[0]) if shared_part else []
    formats = _cell_formats(package.xml(targets["styles"])[0] if "styles" in targets else None)
    properties = workbook.child("s:workbookPr")
    date1904 = properties is not None and properties.attrs.get("date1904", "0").lower() in _TRUE
    sheets = workbook.child("s:sheets")
    if sheets is None:
        raise CorruptDocumentError(f"{main} lists no sheets", doc_id=doc_id)
    context = _Context(TextBuilder(), shared, shared_part, formats, date1904, [])
    pages = []
    for number, sheet in enumerate(sheets.children_named("s:sheet"), 1):
        name = sheet.attrs.get("name", f"Sheet{number}")
        hidden = sheet.attrs.get("state", "visible") in ("hidden", "veryHidden")
        rel = by_id.get(sheet.attrs.get("r:id", ""))
        builder = context.builder
        with builder.sheet(number, name, hidden, pages):
            # chart sheets and dialog sheets have no cells: their title alone
            if rel is not None and rel.rel_type == "worksheet" and package.has(rel.target):
                hidden_rows, hidden_columns = _sheet(context, rel.target, package.xml(rel.target)[0],
                                                     sheet_prefix(name))
                with builder.titled("Comments", "\n"):
                    _comments(builder, package, rel.target, hidden_rows, hidden_columns)
    built = context.builder.result()
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.XLSX, text=built.text, title=package.title(),
                          created=package.created(),
                          office_runs=built.runs, hidden_runs=built.hidden_runs, office_pages=tuple(pages),
                          office_cells=tuple(context.cells),
                          # each sheet's title line (its name) heads it
                          headings=headings_in(built.text, [(p.start, p.start + len(p.name), 1) for p in pages],
                                               built.hidden_runs))


class _Context:
    def __init__(self, builder: TextBuilder, shared: list[list[Piece]], shared_part: str, formats: list[str],
                 date1904: bool, cells: list[OfficeCell]) -> None:
        self.builder, self.shared, self.shared_part = builder, shared, shared_part
        self.formats, self.date1904, self.cells = formats, date1904, cells


def _sheet(context: _Context, part: str, worksheet: Element, prefix: str) -> tuple[set[int], set[int]]:
    """The sheet's rows into the builder and its cells into the context; its hidden rows and columns."""
    hidden_columns = _hidden_columns(worksheet.child("s:cols"))
    hidden_rows: set[int] = set()
    rows = []
    row_number = 0
    for row in worksheet.find("s:sheetData").children_named("s:row") if worksheet.find("s:sheetData") else ():
        row_number = _int(row.attrs.get("r"), row_number + 1)
        if row.attrs.get("hidden", "0").lower() in _TRUE:
            hidden_rows.add(row_number)
        cells, column = [], 0
        for cell in row.children_named("s:c"):
            column = _column_of(cell.attrs.get("r", ""), column + 1)
            if cell.child("s:v") is not None or cell.child("s:is") is not None:
                cells.append((column, cell))
        if cells:
            rows.append((row_number, row_number in hidden_rows, cells))
    first_column = min((cells[0][0] for _, _, cells in rows), default=1)
    builder = context.builder
    for row_number, hidden, cells in rows:
        builder.separate("\n")
        with builder.hidden(HiddenReason.HIDDEN_ROW if hidden else None):
            previous = first_column
            for column, cell in cells:
                builder.synthetic("\t" * (column - previous))
                builder.flush()  # the row's newline is not the cell's
                previous = column
                with builder.hidden(HiddenReason.HIDDEN_COLUMN if column in hidden_columns else None):
                    start = builder.length
                    _cell(context, part, cell)
                    if builder.length > start:
                        context.cells.append(OfficeCell(start, builder.length,
                                                        f"{prefix}{column_name(column)}{row_number}"))
    return hidden_rows, hidden_columns


def _comments(builder: TextBuilder, package: OfficePackage, sheet_part: str, hidden_rows: set[int],
              hidden_columns: set[int]) -> None:
    """The sheet's notes and threaded comments, each on a line "[B7] text", in cell order."""
    relationships = [rel for rel in package.relationships(sheet_part) if rel.target and package.has(rel.target)]
    threaded: list[tuple[str, str, list[Piece]]] = []  # (ref, part, text)
    for rel in relationships:
        if rel.rel_type == "threadedComment":
            # the threaded comments' namespace has no prefix in xml_positions: their local names
            for comment in package.xml(rel.target)[0].children_named("threadedComment"):
                text = comment.child("text")
                threaded.append((comment.attrs.get("ref", ""), rel.target, text.pieces() if text is not None else []))
    has_thread = {ref.upper() for ref, _, _ in threaded}
    notes: list[tuple[str, str, list[Piece]]] = []
    for rel in relationships:
        if rel.rel_type == "comments":
            comment_list = package.xml(rel.target)[0].child("s:commentList")
            for comment in comment_list.children_named("s:comment") if comment_list is not None else ():
                text = comment.child("s:text")
                pieces = _string_pieces(text) if text is not None else []
                ref = comment.attrs.get("ref", "")
                if ref.upper() in has_thread and "".join(p.text for p in pieces).startswith("[Threaded comment]"):
                    continue  # the copy Excel keeps for readers without threads
                notes.append((ref, rel.target, pieces))
    for ref, part, pieces in sorted(notes + threaded, key=lambda comment: _cell_order(comment[0])):
        row, column = _cell_order(ref)
        hidden = HiddenReason.HIDDEN_ROW if row in hidden_rows else \
            HiddenReason.HIDDEN_COLUMN if column in hidden_columns else None
        point = builder.checkpoint()
        builder.separate("\n")
        with builder.hidden(hidden):
            builder.synthetic(f"[{ref}] ")
            builder.hold("\n")
            after = builder.length
            for piece in pieces:
                builder.piece(piece, part)
        if builder.length == after:  # a comment without text: no label either
            builder.rollback(point)
        builder.separate("\n")


def _cell_order(ref: str) -> tuple[int, int]:
    match = _REF.fullmatch(ref)
    return (int(match.group(2)), _column_of(ref, 0)) if match is not None else (0, 0)


def _cell(context: _Context, part: str, cell: Element) -> None:
    builder = context.builder
    kind = cell.attrs.get("t", "n")
    value = cell.child("s:v")
    if kind == "inlineStr":
        _string(builder, part, cell.child("s:is"))
        return
    if value is None:
        return
    if kind == "s":
        index = _int(value.text().strip(), -1)
        if 0 <= index < len(context.shared):
            for piece in context.shared[index]:
                builder.piece(piece, context.shared_part)
    elif kind == "b":
        builder.synthetic("TRUE" if value.text().strip() in _TRUE else "FALSE")
    elif kind in ("str", "e", "d"):  # a formula's string, an error (#DIV/0!), an ISO date
        _pieces(builder, part, value)
    else:
        stored = value.text().strip()
        try:
            number = float(stored)
        except ValueError:
            _pieces(builder, part, value)
            return
        style = _int(cell.attrs.get("s"), 0)
        code = context.formats[style] if 0 <= style < len(context.formats) else "General"
        try:
            shown = format_value(number, code, context.date1904) if math.isfinite(number) else value.text()
        except (ValueError, ArithmeticError):  # a date past the calendar's end: the number as stored
            shown = value.text()
        if shown == value.text():
            _pieces(builder, part, value)
        else:
            builder.synthetic(shown)


def _string(builder: TextBuilder, part: str, string: Element | None) -> None:
    for pieces in [_string_pieces(string)] if string is not None else []:
        for piece in pieces:
            builder.piece(piece, part)


def _pieces(builder: TextBuilder, part: str, element: Element) -> None:
    for piece in element.pieces():
        builder.piece(piece, part)


def _string_pieces(string: Element) -> list[Piece]:
    """The text of a shared or inline string: its t, or its rich-text runs' t (not phonetic runs)."""
    pieces: list[Piece] = []
    for child in string.elements():
        if child.name == "s:t":
            pieces += child.pieces()
        elif child.name == "s:r":
            text = child.child("s:t")
            pieces += text.pieces() if text is not None else []
    return pieces


def _shared_strings(root: Element) -> list[list[Piece]]:
    return [_string_pieces(item) for item in root.children_named("s:si")]


def _cell_formats(styles: Element | None) -> list[str]:
    """The number format code of each cell format (the ``s`` of a cell indexes this list)."""
    if styles is None:
        return []
    custom = {}
    for number_format in styles.find("s:numFmts").children_named("s:numFmt") if styles.find("s:numFmts") else ():
        custom[_int(number_format.attrs.get("numFmtId"), -1)] = number_format.attrs.get("formatCode", "General")
    cell_xfs = styles.child("s:cellXfs")
    return [custom.get(_int(xf.attrs.get("numFmtId"), 0)) or BUILTIN.get(_int(xf.attrs.get("numFmtId"), 0), "General")
            for xf in (cell_xfs.children_named("s:xf") if cell_xfs is not None else ())]


def _hidden_columns(cols: Element | None) -> set[int]:
    hidden: set[int] = set()
    for col in cols.children_named("s:col") if cols is not None else ():
        if col.attrs.get("hidden", "0").lower() in _TRUE:
            first = max(_int(col.attrs.get("min"), 1), 1)
            hidden.update(range(first, min(_int(col.attrs.get("max"), first), MAX_COLUMNS) + 1))
    return hidden


def column_name(column: int) -> str:
    """The letters of a 1-based column number.

    >>> column_name(1), column_name(28), column_name(16384)
    ('A', 'AB', 'XFD')
    """
    letters = ""
    while column > 0:
        column, rest = divmod(column - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _column_of(ref: str, default: int) -> int:
    match = _REF.fullmatch(ref)
    if match is None:
        return default
    column = 0
    for letter in match.group(1).upper():
        column = column * 26 + ord(letter) - ord("A") + 1
    return min(column, MAX_COLUMNS)


def sheet_prefix(name: str) -> str:
    if _PLAIN_SHEET_NAME.fullmatch(name) and not _REF.fullmatch(name):
        return f"{name}!"
    return "'" + name.replace("'", "''") + "'!"


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
