"""PDF layout primitives shared by every generated PDF: fonts, line wrapping and page flow.

Faces pair the name a page uses with the font file the layout measures; `wrap` breaks
lines greedily (honouring soft hyphens); `PageFlow` pours text blocks into columns and
pages; `pdf_bytes` serialises a document with fixed metadata so that its bytes are stable.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SERIF_TTF = str(FONT_DIR / "DejaVuSerif.ttf")
SERIF_BOLD_TTF = str(FONT_DIR / "DejaVuSerif-Bold.ttf")
SANS_TTF = str(FONT_DIR / "DejaVuSans.ttf")

# Fixed dates keep PDF bytes stable; PyMuPDF would otherwise stamp the wall clock.
PDF_DATE = "D:20240901090000Z"
LETTER = (612.0, 792.0)
A4 = (595.0, 842.0)
SOFT_HYPHEN = "\u00ad"  # marks where the layout may break a word and print a hyphen


@dataclass(frozen=True)
class Face:
    """A font as a page names it (`name`) and as the layout measures it (`file`)."""

    name: str
    file: str | None = None  # None: a base-14 font, Latin-1 only, not embedded

    def length(self, text: str, size: float) -> float:
        return _measuring_font(self.name, self.file).text_length(text, fontsize=size)

    def ascent(self, size: float) -> float:
        return _measuring_font(self.name, self.file).ascender * size


@functools.lru_cache(maxsize=None)
def _measuring_font(name: str, file: str | None) -> pymupdf.Font:
    return pymupdf.Font(fontfile=file) if file else pymupdf.Font(name)


HELV, HELV_BOLD = Face("helv"), Face("hebo")
TIMES, TIMES_BOLD = Face("tiro"), Face("tibo")
SERIF, SERIF_BOLD = Face("dvserif", SERIF_TTF), Face("dvserifb", SERIF_BOLD_TTF)
SANS = Face("dvsans", SANS_TTF)


def wrap(text: str, face: Face, size: float, width: float) -> list[str]:
    """Greedy line breaking; a word may split at a soft hyphen, printing "-" at the break.

    >>> wrap("a b", HELV, 10, 500)
    ['a b']
    """
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        plain = word.replace(SOFT_HYPHEN, "")
        joined = f"{current} {plain}" if current else plain
        if face.length(joined, size) <= width:
            current = joined
            continue
        pieces = word.split(SOFT_HYPHEN)
        for cut in range(len(pieces) - 1, 0, -1):
            head = "".join(pieces[:cut]) + "-"
            with_head = f"{current} {head}" if current else head
            if face.length(with_head, size) <= width:
                lines.append(with_head)
                current = "".join(pieces[cut:])
                break
        else:
            if current:
                lines.append(current)
            current = plain
    if current:
        lines.append(current)
    return lines


def put_text(page: pymupdf.Page, x: float, baseline: float, text: str, face: Face,
             size: float, color: tuple[float, float, float] = (0, 0, 0)) -> None:
    page.insert_text((x, baseline), text, fontname=face.name, fontfile=face.file,
                     fontsize=size, color=color)


class PageFlow:
    """Pours text blocks into columns, column after column, page after page.

    Each column is filled completely before the next one starts, so the content
    stream holds the text in reading order (left column, then right column).
    """

    def __init__(self, doc: pymupdf.Document, page_size: tuple[float, float],
                 columns: list[tuple[float, float]], top: float, bottom: float,
                 finish_page: Callable[[pymupdf.Page, int], None] | None = None) -> None:
        self.doc = doc
        self.page_size = page_size
        self.columns = columns
        self.top = top
        self.bottom = bottom
        self.finish_page = finish_page
        self.page: pymupdf.Page | None = None
        self.column = 0
        self.y = top

    def new_page(self, top: float | None = None) -> pymupdf.Page:
        self._finish()
        self.page = self.doc.new_page(width=self.page_size[0], height=self.page_size[1])
        self.column = 0
        self.y = self.top if top is None else top
        return self.page

    def close(self) -> None:
        self._finish()
        self.page = None

    def _finish(self) -> None:
        if self.page is not None and self.finish_page is not None:
            self.finish_page(self.page, self.page.number)

    def _advance_column(self) -> None:
        if self.column + 1 < len(self.columns):
            self.column += 1
            self.y = self.top
        else:
            self.new_page()

    @property
    def width(self) -> float:
        left, right = self.columns[self.column]
        return right - left

    def reserve(self, height: float) -> float:
        """Room for `height` points in the current column; returns the top y."""
        if self.page is None:
            self.new_page()
        if self.y + height > self.bottom:
            self._advance_column()
        top = self.y
        self.y += height
        return top

    def block(self, text: str, face: Face, size: float, leading: float,
              space_after: float = 0.0, keep_with_next: int = 0) -> None:
        if self.page is None:
            self.new_page()
        lines = wrap(text, face, size, self.width)
        if keep_with_next and self.y + leading * (len(lines) + keep_with_next) > self.bottom:
            self._advance_column()
        for line in lines:
            if self.y + leading > self.bottom:
                self._advance_column()
            left = self.columns[self.column][0]
            put_text(self.page, left, self.y + face.ascent(size), line, face, size)
            self.y += leading
        self.y += space_after


def pdf_bytes(doc: pymupdf.Document, title: str, subject: str, **save_options: object) -> bytes:
    """Serialise with fixed metadata, subset fonts and no fresh file ID."""
    doc.set_metadata({
        "title": title,
        "author": "Northwind Cloud",
        "subject": subject,
        "keywords": "northwind, sample corpus",
        "creator": "Northwind Cloud Publishing",
        "producer": "PyMuPDF",
        "creationDate": PDF_DATE,
        "modDate": PDF_DATE,
    })
    doc.subset_fonts()
    return doc.tobytes(garbage=3, deflate=True, no_new_id=True, **save_options)
