"""One page's share of a PDF's document text, whether it came from the text layer or from OCR."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schemas.records import HiddenRun

PAGE_SEPARATOR = "\f"
LINE_SEPARATOR = "\n"
BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class PageText:
    """A page's text (no page separator), its runs of real characters, and what was found on the way.

    Offsets are relative to the page's text; the parser shifts them into the document.
    """

    text: str
    runs: list[tuple[int, int, np.ndarray]]  # [start, end) and glyph boxes (end - start, 4)
    has_text: bool
    n_replaced: int = 0  # form feeds and lone surrogates turned into U+FFFD
    n_unmapped: int = 0  # U+FFFD the text layer itself yields
    hidden: list[HiddenRun] = field(default_factory=list)  # sorted, page-relative
    n_dropped: int = 0  # glyphs left out: outside the crop box or the clip path
    confidences: list[np.ndarray] | None = None  # OCR: per run, each character's word confidence
    lines: list[tuple[int, int, float]] = field(default_factory=list)  # [start, end) and font size of each line


EMPTY_PAGE = PageText("", [], False)


def to_displayed(boxes: np.ndarray, matrix) -> np.ndarray:
    """Map (n, 4) unrotated boxes through the page's rotation matrix (a ``pymupdf.Matrix``, six
    numbers); x0 < x1, y0 < y1 again."""
    a, b, c, d, e, f = matrix
    if (a, b, c, d, e, f) == (1.0, 0.0, 0.0, 1.0, 0.0, 0.0):
        return boxes
    x0, y0, x1, y1 = boxes.T
    xa, ya = a * x0 + c * y0 + e, b * x0 + d * y0 + f
    xb, yb = a * x1 + c * y1 + e, b * x1 + d * y1 + f
    return np.stack(
        [np.minimum(xa, xb), np.minimum(ya, yb), np.maximum(xa, xb), np.maximum(ya, yb)], axis=1
    )
