"""Ground truth for OCR: born-digital pages rendered to image-only PDFs, read back, compared.

A born-digital page knows its words and their boxes. Rendered to an image at
200 dpi and wrapped in a PDF with no text layer, it is a "scan" whose right
answer is known: the OCR text is compared with the original as a multiset of
words (reading order may differ on multi-column pages), by character accuracy
(1 - edit distance / length), and each word matched between the two is checked
for placement: the OCR box's centre lies inside the original word box and the
OCR box covers at least half of its width (Tesseract's boxes follow the ink,
PyMuPDF's span the line height, so IoU alone would punish correct boxes).
"""

from __future__ import annotations

import collections
import difflib
import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import pymupdf
from rapidfuzz.distance import Levenshtein

_EDGE_PUNCTUATION = "\"'()[]{}.,;:!?*\u2018\u2019\u201c\u201d\u00ab\u00bb"
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


def image_only_pdf(source: pymupdf.Document, pages: list[int] | None = None, dpi: int = 200) -> bytes:
    """A PDF whose pages are images of ``source``'s pages (0-based ``pages``), as displayed, with no text."""
    out = pymupdf.open()
    for number in range(source.page_count) if pages is None else pages:
        page = source[number]
        pixmap = page.get_pixmap(dpi=dpi, alpha=False)
        target = out.new_page(width=page.rect.width, height=page.rect.height)
        target.insert_image(target.rect, pixmap=pixmap)
    data = out.tobytes(deflate=True)
    out.close()
    return data


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # normalised for comparison
    box: tuple[float, float, float, float]  # displayed-page points
    vertical: bool | None = None  # written up or down the page; None: one character, no direction


def words_of(text: str, boxes: np.ndarray | None, starts: np.ndarray | None = None) -> list[Word]:
    """Whitespace-separated words of ``text`` with the union of their characters' boxes.

    ``boxes[i]`` is the box of ``text[i]`` (rows of characters without a box are NaN).
    """
    words = []
    for match in re.finditer(r"\S+", text):
        token = normalise_word(match.group())
        if not token:
            continue
        box, vertical = (0.0, 0.0, 0.0, 0.0), None
        if boxes is not None:
            rows = boxes[match.start() : match.end()]
            rows = rows[~np.isnan(rows[:, 0])]
            if len(rows):
                box = (float(rows[:, 0].min()), float(rows[:, 1].min()),
                       float(rows[:, 2].max()), float(rows[:, 3].max()))
            if len(rows) > 1:
                centres = (rows[:, :2] + rows[:, 2:]) / 2
                run = np.abs(centres[-1] - centres[0])
                vertical = bool(run[1] > run[0])
        words.append(Word(token, box, vertical))
    return words


def normalise_word(token: str) -> str:
    token = unicodedata.normalize("NFKC", token).translate(_QUOTES)
    return token.strip(_EDGE_PUNCTUATION)


@dataclass(frozen=True, slots=True)
class PageScore:
    page: int
    words: int  # in the original
    recall: float  # share of the original's words (as a multiset) found in the OCR text
    char_accuracy: float  # 1 - Levenshtein(original, ocr) / len(original), on whitespace-joined words
    matched: int  # words aligned between the two (same text, same place in the sequence)
    placed: float  # share of matched words whose OCR box sits on the original word
    iou: float  # median IoU of matched word boxes (reported, not a goal)


def score_page(page: int, original: list[Word], ocr: list[Word]) -> PageScore:
    """Compare the OCR words of a page with the original words."""
    original_counts = collections.Counter(w.text for w in original)
    ocr_counts = collections.Counter(w.text for w in ocr)
    found = sum(min(n, ocr_counts[t]) for t, n in original_counts.items())
    recall = found / len(original) if original else 1.0
    original_text = " ".join(w.text for w in original)
    ocr_text = " ".join(w.text for w in ocr)
    distance = Levenshtein.distance(original_text, ocr_text)
    char_accuracy = max(0.0, 1.0 - distance / max(len(original_text), 1))
    matcher = difflib.SequenceMatcher(None, [w.text for w in original], [w.text for w in ocr], autojunk=False)
    placed = matched = 0
    ious = []
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            a, b = original[block.a + k], ocr[block.b + k]
            matched += 1
            placed += is_placed(a.box, b.box, a.vertical)
            ious.append(iou(a.box, b.box))
    return PageScore(
        page=page,
        words=len(original),
        recall=recall,
        char_accuracy=char_accuracy,
        matched=matched,
        placed=placed / matched if matched else 0.0,
        iou=float(np.median(ious)) if ious else 0.0,
    )


def is_placed(original: tuple[float, ...], ocr: tuple[float, ...], vertical: bool | None = False) -> bool:
    """The OCR box's centre is inside the original box, and it covers half the original's length.

    The length runs along the word: its width, or its height for a word written
    up or down the page; a one-character word (no direction) may cover either.
    """
    cx, cy = (ocr[0] + ocr[2]) / 2, (ocr[1] + ocr[3]) / 2
    inside = original[0] <= cx <= original[2] and original[1] <= cy <= original[3]

    def covers(axis: int) -> bool:
        overlap = min(original[2 + axis], ocr[2 + axis]) - max(original[axis], ocr[axis])
        return overlap >= 0.5 * (original[2 + axis] - original[axis])

    axes = (0, 1) if vertical is None else (1,) if vertical else (0,)
    return inside and any(covers(axis) for axis in axes)


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def char_boxes(parsed) -> np.ndarray:
    """(len(text), 4) boxes of every character of a parsed PDF; NaN rows for separators."""
    boxes = np.full((len(parsed.text), 4), np.nan)
    for run in parsed.char_runs:
        boxes[run.start : run.end] = run.glyph_boxes
    return boxes


def page_words(parsed, boxes: np.ndarray, page_index: int) -> list[Word]:
    page = parsed.pages[page_index]
    return words_of(parsed.text[page.start : page.end], boxes[page.start : page.end])


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences_of(text: str, start: int, end: int, min_chars: int = 40, max_chars: int = 300) -> list[tuple[int, int]]:
    """[start, end) of the sentences of ``text[start:end]`` a reader would quote (prose, not table rows)."""
    spans = []
    cursor = start
    for piece in [*_SENTENCE.finditer(text, start, end), None]:
        stop = piece.start() if piece else end
        s, e = cursor, stop
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        sentence = text[s:e]
        words = sentence.split()
        if (min_chars <= len(sentence) <= max_chars and len(words) >= 6 and "\n\n" not in sentence
                and sum(w.isalpha() for w in words) >= 0.7 * len(words)):
            spans.append((s, e))
        cursor = piece.end() if piece else end
    return spans


def line_rects(boxes: np.ndarray, start: int, end: int) -> list[tuple[float, float, float, float]]:
    """The boxes of [start, end) merged into one rect per line (a new line where a box starts left of the last)."""
    rows = [b for b in boxes[start:end] if not np.isnan(b[0])]
    lines: list[list[float]] = []
    for x0, y0, x1, y1 in rows:
        if lines and x0 >= lines[-1][0] - 1 and y0 < lines[-1][3] and y1 > lines[-1][1]:
            line = lines[-1]
            line[0], line[1], line[2], line[3] = min(line[0], x0), min(line[1], y0), max(line[2], x1), max(line[3], y1)
        else:
            lines.append([x0, y0, x1, y1])
    return [tuple(line) for line in lines]


def lands_on_lines(ocr_lines: list[tuple[float, ...]], original_lines: list[tuple[float, ...]]) -> bool:
    """Every OCR line rect sits on one of the original lines: its vertical centre inside, and they overlap across."""
    if not ocr_lines:
        return False
    for x0, y0, x1, y1 in ocr_lines:
        cy = (y0 + y1) / 2
        if not any(o[1] <= cy <= o[3] and min(x1, o[2]) > max(x0, o[0]) for o in original_lines):
            return False
    return True
