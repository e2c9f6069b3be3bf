"""A spreadsheet as the viewer shows a span of it: the cells around the cited ones, as a grid.

Spreadsheets are not rendered (their printed pages are not their sheets, and a narrow cell
prints "###"): the viewer draws the sheet's own grid, with its row numbers and column letters,
the cells whose text the span covers marked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from schemas.records import OfficeCell, OfficePage

_REF = re.compile(r"^(?:(?P<sheet>'(?:[^']|'')*'|[^!]*)!)?\$?(?P<col>[A-Z]{1,3})\$?(?P<row>[0-9]{1,7})$")
MARGIN_ROWS = 3  # rows shown above and below the cited cells
MARGIN_COLUMNS = 2
MAX_ROWS = 40  # a span over more rows shows its first ones
MAX_COLUMNS = 12


@dataclass(frozen=True, slots=True)
class GridCell:
    text: str
    marked: bool  # the span covers some of its text


@dataclass(frozen=True, slots=True)
class GridRow:
    number: int  # the sheet's row number, 1-based
    cells: tuple[GridCell, ...]


@dataclass(frozen=True, slots=True)
class SheetGrid:
    sheet: str
    columns: tuple[str, ...]  # column letters, left to right
    rows: tuple[GridRow, ...]
    clipped: bool = False  # the span covers more than the grid shows


def cell_position(ref: str) -> tuple[int, int] | None:
    """``"Sheet1!B7"`` -> ``(7, 2)``: row and column, 1-based; None for what is not a cell reference.

    >>> cell_position("'Q1 sales'!AA10"), cell_position("Sheet1!B7"), cell_position("nonsense")
    ((10, 27), (7, 2), None)
    """
    match = _REF.match(ref)
    if match is None:
        return None
    column = 0
    for letter in match["col"]:
        column = column * 26 + ord(letter) - ord("A") + 1
    return int(match["row"]), column


def column_letters(column: int) -> str:
    """1 -> "A", 27 -> "AA".

    >>> column_letters(1), column_letters(26), column_letters(27), column_letters(703)
    ('A', 'Z', 'AA', 'AAA')
    """
    letters = ""
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def sheet_grid(text: str, sheet: OfficePage, cells: Sequence[OfficeCell], start: int, end: int) -> SheetGrid | None:
    """The grid around the cells of ``sheet`` that ``[start, end)`` covers; None when it covers none."""
    placed = {}
    for cell in cells:
        if sheet.start <= cell.start and cell.end <= sheet.end:
            position = cell_position(cell.ref)
            if position is not None:
                placed[position] = cell
    cited = [p for p, c in placed.items() if c.start < end and start < c.end]
    if not cited:
        return None
    top, bottom = min(r for r, _ in cited), max(r for r, _ in cited)
    left, right = min(c for _, c in cited), max(c for _, c in cited)
    first_row, first_column = max(1, top - MARGIN_ROWS), max(1, left - MARGIN_COLUMNS)
    last_row = min(bottom + MARGIN_ROWS, first_row + MAX_ROWS - 1)
    last_column = min(right + MARGIN_COLUMNS, first_column + MAX_COLUMNS - 1)
    rows = []
    for number in range(first_row, last_row + 1):
        row = []
        for column in range(first_column, last_column + 1):
            cell = placed.get((number, column))
            row.append(GridCell(text[cell.start:cell.end], cell.start < end and start < cell.end) if cell
                       else GridCell("", False))
        rows.append(GridRow(number, tuple(row)))
    columns = tuple(column_letters(c) for c in range(first_column, last_column + 1))
    return SheetGrid(sheet.name, columns, tuple(rows), clipped=bottom > last_row or right > last_column)
