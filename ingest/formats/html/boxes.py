"""Measured character boxes made into pages, line runs and visibility verdicts.

A box counts where the reader sees it: inside the laid-out document, inside what
clips it, inside the box it scrolls in, and on the page images (``HTML_PAGE_WIDTH``
wide); the layout is cut into pages of ``HTML_PAGE_HEIGHT`` and each box is made
relative to its page's top. Each character gets a verdict from its box and its
element's computed style (``ingest.formats.html.layout_js.MEASURE``): no box because a style
hides it, off the page, clipped, under 1 px, zero-sized, transparent, or in the
colour of what lies under it; inside ``aria-hidden`` the reason is ``aria_hidden``.
Content of a closed ``<details>`` or a form control is the reader's to open: not hidden.
"""

from __future__ import annotations

import base64
import math
import unicodedata
from dataclasses import dataclass

import numpy as np

from schemas.records import HiddenReason, HiddenRun, PdfCharRun
from schemas.tables import HTML_PAGE_HEIGHT as PAGE_HEIGHT
from schemas.tables import HTML_PAGE_WIDTH as PAGE_WIDTH

# Below these a reader sees nothing: contrast against what lies under the text, text alpha.
MIN_CONTRAST = 1.1
MIN_ALPHA = 0.05
# A box counts as clipped when less than this share of it is inside its clip.
MIN_SHOWN = 0.5

NODE_FIELDS = 12  # flags, font size, alpha, contrast, clip x0 y0 x1 y1, scroller x0 y0 x1 y1
_NONE, _REVEALABLE, _VIS_HIDDEN, _ARIA, _PAINTED = 1, 2, 4, 8, 16

# Reasons by precedence: where several apply, the first is given.
_REASONS = (
    HiddenReason.CSS_HIDDEN,
    HiddenReason.NOT_LAID_OUT,
    HiddenReason.OFF_PAGE,
    HiddenReason.CLIPPED,
    HiddenReason.TINY,
    HiddenReason.ZERO_SIZE,
    HiddenReason.TRANSPARENT,
    HiddenReason.BACKGROUND_COLOR,
)
_CODE = {reason: len(_REASONS) - i for i, reason in enumerate(_REASONS)}  # higher wins
_REASON_OF = {code: reason for reason, code in _CODE.items()}
_ARIA_CODE = len(_REASONS) + 1
_REASON_OF[_ARIA_CODE] = HiddenReason.ARIA_HIDDEN
# Characters whose own box says nothing about visibility: spaces, marks, format controls.
_WEAK = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me"})


@dataclass(frozen=True, slots=True, eq=False)
class Boxes:
    """What the measurements of one page's characters come to."""

    boxes: np.ndarray  # (len(chars), 4) in CSS px of the whole layout; NaN: no box
    shown: np.ndarray  # per measured character: its box is drawn on a page image
    char_runs: tuple[PdfCharRun, ...]
    hidden_runs: tuple[HiddenRun, ...]
    not_laid_out: int  # letters, digits, signs without a box


def measured_boxes(text: str, chars: np.ndarray, char_node: np.ndarray, nodes: np.ndarray, measured: dict,
                   width: float, height: float) -> Boxes:
    """The boxes and styles MEASURE returned for the characters ``chars`` of ``text`` (in text
    nodes ``char_node``; ``nodes`` the sorted distinct nodes) as pages, runs and verdicts."""
    n = len(text)
    boxes = np.frombuffer(base64.b64decode(measured["boxes"]), dtype=np.float32).reshape(-1, 4)
    info = np.frombuffer(base64.b64decode(measured["nodes"]), dtype=np.float32).reshape(-1, NODE_FIELDS)
    per_char = info[np.searchsorted(nodes, char_node)]
    strong = np.array([unicodedata.category(text[i]) not in _WEAK for i in chars.tolist()], dtype=bool)
    codes = np.zeros(n, dtype=np.int8)
    codes[chars] = _verdicts(strong, boxes, per_char, width, height)
    hidden_runs = _hidden_runs(text, codes)
    hidden = np.zeros(n, dtype=bool)
    for run in hidden_runs:
        hidden[run.start:run.end] = True
    shown = _on_page(boxes, per_char, width, height) & ~hidden[chars]  # hidden text is not drawn
    return Boxes(boxes, shown, _char_runs(chars, boxes, shown), hidden_runs,
                 int((np.isnan(boxes[:, 0]) & strong).sum()))


def _verdicts(strong: np.ndarray, boxes: np.ndarray, info: np.ndarray,
              width: float, height: float) -> np.ndarray:
    """A reason code per measured character (0: a reader sees it), by precedence."""
    flags = info[:, 0].astype(np.int64)
    font_size, alpha, contrast = info[:, 1], info[:, 2], info[:, 3]
    x0, y0, x1, y1 = boxes.T
    boxed = ~np.isnan(x0)
    revealable = (flags & _REVEALABLE) != 0
    painted = (flags & _PAINTED) != 0
    w = np.where(boxed, x1 - x0, 0)
    h = np.where(boxed, y1 - y0, 0)
    # Content inside a box the reader can scroll counts where that box is.
    scroller = ~np.isnan(info[:, 8])
    rx0, ry0 = np.where(scroller, info[:, 8], x0), np.where(scroller, info[:, 9], y0)
    rx1, ry1 = np.where(scroller, info[:, 10], x1), np.where(scroller, info[:, 11], y1)
    off_page = boxed & ((rx1 <= 0) | (ry1 <= 0) | (rx0 >= width) | (ry0 >= height))
    cx0, cy0 = np.maximum(x0, info[:, 4]), np.maximum(y0, info[:, 5])
    cx1, cy1 = np.minimum(x1, info[:, 6]), np.minimum(y1, info[:, 7])
    shown_area = np.clip(cx1 - cx0, 0, None) * np.clip(cy1 - cy0, 0, None)
    area = w * h
    mid_x, mid_y = (x0 + x1) / 2, (y0 + y1) / 2
    centre_in = (mid_x >= info[:, 4]) & (mid_x <= info[:, 6]) & (mid_y >= info[:, 5]) & (mid_y <= info[:, 7])
    clipped = boxed & np.where(area > 0, shown_area < MIN_SHOWN * np.where(area > 0, area, 1), ~centre_in)
    checks = [
        # checkVisibility() says no (display:none, content-visibility:hidden: the rectangles of
        # such text are computed on demand, though never drawn), or visibility:hidden
        (HiddenReason.CSS_HIDDEN, ((flags & _NONE) != 0) | (boxed & ((flags & _VIS_HIDDEN) != 0))),
        (HiddenReason.NOT_LAID_OUT, ~boxed & ((flags & _NONE) == 0)),
        (HiddenReason.OFF_PAGE, off_page),
        (HiddenReason.CLIPPED, clipped),
        (HiddenReason.TINY, boxed & ((font_size < 1) | (strong & (h > 0) & (h < 1)))),
        (HiddenReason.ZERO_SIZE, boxed & strong & ((w <= 0) | (h <= 0))),
        (HiddenReason.TRANSPARENT, boxed & ~painted & (alpha < MIN_ALPHA)),
        (HiddenReason.BACKGROUND_COLOR, boxed & ~painted & (contrast >= 0) & (contrast < MIN_CONTRAST)),
    ]
    verdict = np.zeros(len(strong), dtype=np.int8)
    for reason, where in reversed(checks):
        verdict[where] = _CODE[reason]
    # A closed <details> or a form control the reader can open hides nothing (unless it is hidden itself).
    verdict[revealable & ((flags & _NONE) == 0)] = 0
    verdict[(verdict > 0) & ((flags & _ARIA) != 0)] = _ARIA_CODE
    return verdict


def _on_page(boxes: np.ndarray, info: np.ndarray, width: float, height: float) -> np.ndarray:
    """Characters whose box is drawn on a page: inside the document, their clip and their scroller."""
    x0, y0, x1, y1 = boxes.T
    mid_x, mid_y = (x0 + x1) / 2, (y0 + y1) / 2
    with np.errstate(invalid="ignore"):
        # on the page images (PAGE_WIDTH wide: what overflows to the right is not drawn)
        inside = (mid_x >= 0) & (mid_y >= 0) & (mid_x < min(width, PAGE_WIDTH)) & (mid_y < height) & (y1 > y0)
        inside &= (mid_x >= info[:, 4]) & (mid_x <= info[:, 6]) & (mid_y >= info[:, 5]) & (mid_y <= info[:, 7])
        scroller = ~np.isnan(info[:, 8])
        in_scroller = (mid_x >= info[:, 8]) & (mid_x <= info[:, 10]) & (mid_y >= info[:, 9]) & (mid_y <= info[:, 11])
    return inside & (~scroller | in_scroller)


def _char_runs(chars: np.ndarray, boxes: np.ndarray, shown: np.ndarray) -> tuple[PdfCharRun, ...]:
    """Runs of consecutive characters drawn on one line of one page, boxes relative to the page."""
    idx = np.flatnonzero(shown)
    if len(idx) == 0:
        return ()
    offsets = chars[idx]
    b = boxes[idx].astype(np.float64)
    pages = ((b[:, 1] + b[:, 3]) / 2 // PAGE_HEIGHT).astype(np.int64) + 1
    top = (pages - 1) * PAGE_HEIGHT
    b[:, 1] -= top
    b[:, 3] -= top
    overlap = np.minimum(b[1:, 3], b[:-1, 3]) - np.maximum(b[1:, 1], b[:-1, 1])
    shorter = np.minimum(b[1:, 3] - b[1:, 1], b[:-1, 3] - b[:-1, 1])
    continues = (offsets[1:] == offsets[:-1] + 1) & (pages[1:] == pages[:-1]) & (overlap > 0.5 * shorter)
    cuts = np.concatenate(([0], np.flatnonzero(~continues) + 1, [len(idx)]))
    b32 = b.astype(np.float32)
    return tuple(
        PdfCharRun(int(pages[a]), int(offsets[a]), int(offsets[z - 1]) + 1, b32[a:z])
        for a, z in zip(cuts[:-1].tolist(), cuts[1:].tolist())
    )


def _hidden_runs(text: str, codes: np.ndarray) -> tuple[HiddenRun, ...]:
    """Runs of one reason; spaces, marks and separators between two characters hidden for the
    same reason belong to the run, and never begin or end one."""
    runs: list[HiddenRun] = []
    start = -1
    code = 0
    last_strong = -1
    for i in np.flatnonzero(codes).tolist():
        c = int(codes[i])
        if unicodedata.category(text[i]) in _WEAK:
            continue
        if start >= 0 and c == code and _all_weak(text, last_strong + 1, i):
            last_strong = i
            continue
        if start >= 0:
            runs.append(HiddenRun(start, last_strong + 1, _REASON_OF[code]))
        start, code, last_strong = i, c, i
    if start >= 0:
        runs.append(HiddenRun(start, last_strong + 1, _REASON_OF[code]))
    return tuple(runs)


def _all_weak(text: str, start: int, end: int) -> bool:
    return all(unicodedata.category(c) in _WEAK for c in text[start:end])


def pages(height: float) -> int:
    return max(1, math.ceil(height / PAGE_HEIGHT))


