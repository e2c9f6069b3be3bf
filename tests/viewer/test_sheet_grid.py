"""The viewer's grid of a spreadsheet span: the sheet's own rows and columns, the cited cells marked."""

from __future__ import annotations

from index.viewer.sheet_grid import MAX_ROWS, cell_position, column_letters, sheet_grid
from schemas.records import OfficeCell, OfficePage


def sheet_of(rows: dict[str, str], name: str = "Prices") -> tuple[str, OfficePage, list[OfficeCell]]:
    """A sheet's text ("A1\\tB1\\n...") and its cells from ``{"B7": "text"}``, in reference order."""
    text, cells = "", []
    for ref, value in rows.items():
        cells.append(OfficeCell(len(text), len(text) + len(value), f"{name}!{ref}"))
        text += value + "\t"
    return text, OfficePage(1, 0, len(text), name), cells


def test_references_and_column_letters_are_inverse():
    for column in (1, 2, 26, 27, 52, 53, 702, 703, 16384):
        assert cell_position(f"S!{column_letters(column)}5") == (5, column)
    assert cell_position("'It''s'!$C$3") == (3, 3)


def test_the_grid_marks_the_cells_the_span_covers_and_shows_their_neighbours():
    text, sheet, cells = sheet_of({"A1": "Item", "B1": "Price", "A2": "Widget", "B2": "4.50", "A9": "far away"})
    widget = text.index("Widget")
    grid = sheet_grid(text, sheet, cells, widget, widget + len("Widget\t4.50"))
    assert grid.sheet == "Prices" and grid.columns == ("A", "B", "C", "D")
    assert [r.number for r in grid.rows] == [1, 2, 3, 4, 5]
    marked = [(r.number, grid.columns[i], c.text) for r in grid.rows for i, c in enumerate(r.cells) if c.marked]
    assert marked == [(2, "A", "Widget"), (2, "B", "4.50")]
    assert grid.rows[0].cells[1].text == "Price" and not grid.clipped


def test_a_span_over_more_rows_than_the_grid_holds_is_clipped_and_a_span_of_no_cell_has_no_grid():
    text, sheet, cells = sheet_of({f"A{n}": f"row {n}" for n in range(1, 200)})
    grid = sheet_grid(text, sheet, cells, 0, len(text))
    assert len(grid.rows) == MAX_ROWS and grid.clipped
    assert sheet_grid(text, sheet, cells, len(text), len(text)) is None
