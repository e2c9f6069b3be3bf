"""ODS (and .ots): laid out as XLSX is, through the OpenDocument walker of ``odf``.

Each sheet after a title line with its name, rows as lines, cells separated by tabs (columns keep
their place: an empty cell is a tab, rows start at the sheet's first used column), each cell as
the user sees it (its ``text:p``, paragraphs on lines), then its comments under a line
"Comments", each after its cell's label "[B7] ". ``office_pages``: the sheets; ``office_cells``:
each cell's range and reference, counting repeated rows and columns (an empty repeat costs
nothing, however many rows it claims; filled ones count against ``MAX_CELLS``).
"""

from __future__ import annotations

from bisect import bisect_right

from ingest.formats.office.builder import TextBuilder
from ingest.formats.office.odf import (
    BLOCKS,
    CONTENT,
    OdfStyles,
    OdfWalker,
    document_title,
    labelled,
    office_body,
    open_package,
    repeat,
    table_rows,
)
from ingest.formats.office.package import within_depth
from ingest.formats.office.xlsx import MAX_COLUMNS, column_name, sheet_prefix
from ingest.formats.office.xml_positions import Element, Piece
from schemas.errors import DocumentTooLargeError
from schemas.records import HiddenReason, MediaType, OfficeCell, ParsedDocument

MAX_ROWS = 1_048_576
MAX_CELLS = 4_000_000  # cells of an ODS with content, repeats counted: more is a bomb, not a sheet


@within_depth
def parse_ods(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse ODS bytes into the document text; ``office_pages`` gives each sheet's range and
    ``office_cells`` each cell's range and reference.

    Example::

        doc = parse_ods(Path("budget.ods").read_bytes(), "budget.ods")
        cell = doc.office_cells[0]
        cell.ref, doc.text[cell.start:cell.end]     # ('Sheet1!A1', 'Item')
    """
    package, content, styles = open_package(source, doc_id, MediaType.ODS, "spreadsheet")
    spreadsheet = office_body(content, "spreadsheet", doc_id)
    builder = TextBuilder()
    walker = OdfWalker(builder, CONTENT, OdfStyles(content.child("automatic-styles"),
                                               styles.child("styles") if styles is not None else None))
    sheet = _Sheets(walker, doc_id)
    pages = []
    for number, table in enumerate(spreadsheet.children_named("table"), 1):
        name = table.attrs.get("name", f"Sheet{number}")
        hidden = walker.styles.get(table.attrs.get("style-name"), "table-properties", "display") == "false"
        with builder.sheet(number, name, hidden, pages):
            sheet.write(table, sheet_prefix(name))
    built = builder.result()
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.ODS, text=built.text, title=document_title(package),
                          office_runs=built.runs, hidden_runs=built.hidden_runs, office_pages=tuple(pages),
                          office_cells=tuple(sheet.cells))


class _Sheets:
    """The sheets of an ODS: rows and cells with their references, repeats counted, not looped over."""

    def __init__(self, walker: OdfWalker, doc_id: str) -> None:
        self.walker, self.builder, self.doc_id = walker, walker.builder, doc_id
        self.cells: list[OfficeCell] = []
        self.budget = MAX_CELLS

    def write(self, table: Element, prefix: str) -> None:
        hidden_columns = _hidden_columns(table)
        rows: list[tuple[int, bool, list[tuple[int, Element]]]] = []
        comments: list[tuple[int, int, Element]] = []
        hidden_rows: set[int] = set()
        row_number = 0
        for row in table_rows(table):
            first_row, row_number = row_number + 1, row_number + repeat(row, "number-rows-repeated")
            if first_row > MAX_ROWS:
                break
            hidden = row.attrs.get("visibility") in ("collapse", "filter")
            cells, column = [], 0
            for cell in row.elements():
                if cell.name not in ("table-cell", "covered-table-cell"):
                    continue
                first, column = column + 1, column + repeat(cell, "number-columns-repeated")
                if cell.name == "covered-table-cell" or first > MAX_COLUMNS:  # merged away: it keeps its place
                    continue
                comments += [(first_row, first, a) for a in cell.children_named("annotation")]
                if _has_text(cell):
                    cells += [(c, cell) for c in range(first, self._take(first, min(column, MAX_COLUMNS)) + 1)]
            if hidden:
                hidden_rows.add(first_row)
            if cells:
                for number in range(first_row, self._take(first_row, min(row_number, MAX_ROWS), len(cells)) + 1):
                    rows.append((number, hidden, cells))
        first_column = min((cells[0][0] for _, _, cells in rows), default=1)
        builder = self.builder
        for row_number, hidden, cells in rows:
            builder.separate("\n")
            with builder.hidden(HiddenReason.HIDDEN_ROW if hidden else None):
                previous = first_column
                for column, cell in cells:
                    builder.synthetic("\t" * (column - previous))
                    builder.flush()  # the row's newline is not the cell's
                    builder.hold("\n")  # nor is the separator before its first paragraph
                    previous = column
                    with builder.hidden(HiddenReason.HIDDEN_COLUMN if _within(hidden_columns, column) else None):
                        start = builder.length
                        for child in cell.elements():  # not its comments, nor the shapes anchored in it
                            if child.name in ("p", "h", "list"):
                                self.walker.node(child)
                        builder.drop_separator("\n")
                        if builder.length > start:
                            self.cells.append(OfficeCell(start, builder.length,
                                                         f"{prefix}{column_name(column)}{row_number}"))
        with builder.titled("Comments", "\n"):
            for row_number, column, annotation in sorted(comments, key=lambda c: c[:2]):
                reason = (HiddenReason.HIDDEN_ROW if row_number in hidden_rows else
                          HiddenReason.HIDDEN_COLUMN if _within(hidden_columns, column) else None)
                with builder.hidden(reason):
                    labelled(builder, [(self.walker, annotation)], [f"[{column_name(column)}{row_number}] "])

    def _take(self, first: int, last: int, per: int = 1) -> int:
        """Count cells ``first``..``last`` (``per`` each) against the budget; ``last``."""
        self.budget -= (last - first + 1) * per
        if self.budget < 0:
            raise DocumentTooLargeError(f"the spreadsheet repeats its cells into over {MAX_CELLS:,} cells",
                                        doc_id=self.doc_id)
        return last


def _columns(table: Element):
    for child in table.elements():
        if child.name == "table-column":
            yield child
        elif child.name in ("table-header-columns", "table-columns", "table-column-group"):
            yield from _columns(child)


def _hidden_columns(table: Element) -> tuple[list[int], list[int]]:
    """The hidden columns as spans: their first columns and their last, in order."""
    firsts, lasts, column = [], [], 0
    for col in _columns(table):
        first, column = column + 1, column + repeat(col, "number-columns-repeated")
        if col.attrs.get("visibility") in ("collapse", "filter"):
            firsts.append(first)
            lasts.append(column)
        if column >= MAX_COLUMNS:
            break
    return firsts, lasts


def _within(spans: tuple[list[int], list[int]], column: int) -> bool:
    i = bisect_right(spans[0], column) - 1
    return i >= 0 and column <= spans[1][i]


def _has_text(cell: Element) -> bool:
    stack = [c for c in cell.elements() if c.name in BLOCKS]
    while stack:
        node = stack.pop()
        if node.name in ("s", "tab", "line-break") or any(isinstance(c, Piece) and c.text.strip()
                                                          for c in node.children):
            return True
        stack.extend(c for c in node.elements() if c.name not in ("note", "annotation"))
    return False
