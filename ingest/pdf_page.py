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


EMPTY_PAGE = PageText("", [], False)
