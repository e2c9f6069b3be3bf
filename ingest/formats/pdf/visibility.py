"""Which characters of a PDF page can a reader see? A verdict per character, with its reason.

Text that nobody sees is what an attacker hides in a PDF to steer a RAG system
(white on white, render mode 3, a 0.5 pt font, text under an opaque box); it
stays in the document text and every offset, and the verdicts let the build
keep it out of what is embedded and flag citations of it.

The verdict is taken per *word* (a run of non-space characters of one span:
one font, size, colour, render mode) from what MuPDF's structured text says
about the span and, where that cannot settle it, from the rendered page:

1. Render mode 3 (or 7: a clip only), or a fill opacity of 0: the word paints
   nothing. It is visible when the rendered page shows something in its box
   (an OCR'd scan: invisible text laid over the page image that shows it, or an
   invisible search layer over outlined text); over nothing it is hidden
   (``invisible_render_mode``, ``transparent``).
2. A font size below 1 pt: ``tiny``.
3. A painted word whose colour stands out from white, with no filled area
   under or over its centre (no image, filled path, shading or annotation from
   ``page.get_bboxlog()`` at least half as tall as the word: a rule or a frame
   does not count), is visible without rendering.
4. Any other word is looked at on the page rendered as displayed: if its box
   is uniform (no two pixels differ by more than ``UNIFORM_RANGE`` in any
   channel), nothing of it can be seen: ``background_color`` when that uniform
   colour is the word's own, ``covered`` when something was painted over it
   after it (the paint log says so) and shows nothing there. A word seen
   through what lies over or under it (3 above, or covered) gets a margin of
   a quarter of its height: an OCR layer's boxes are often a little off.

The page is rendered at most once, only when some word needs it, and only
over those words, at a zoom that gives most of them at least
``MIN_GLYPH_PIXELS`` pixels of height. Glyphs entirely outside the crop box or
the clip path are not judged here: the parser leaves them out of the text
(MuPDF's ``TEXT_CLIP`` and the crop box test) and counts them in its warnings.

Known limits: hidden text laid exactly over visible text (or over a busy
image) is judged visible, since its box is not uniform; so is dark text on a
dark shading MuPDF logs without a bound, or under a thick stroke. A visible
word whose colour is within ``UNIFORM_RANGE`` of its background (very faint
grey on white) is judged ``background_color``, which is what a reader sees too.

On the shared corpus (15 PDFs, 169 readable pages) one character is flagged:
the Russian form ``pdfjs__issue12963.pdf`` carries an old OCR layer drawn
*under* its page scans, and its bullet "•" lies over a solid black square of
the scan (``background_color``); everything else there, and the OCR layer of
``unstructured__pdf-with-ocr-text.pdf``, is seen through the image. Math
extension glyphs (GeoTopo's braces) whose ink lies outside their metric box
and zero-width combining overlays are not judged (nothing is painted over
them; no area).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pymupdf

from ingest.formats.pdf.page import to_displayed
from schemas.records import HiddenReason, HiddenRun

# MuPDF's per-character flags (fz_stext_char.flags), reported per span as "char_flags".
FILLED = 16
STROKED = 32
CLIPPED = 64  # the text is (also) a clip path; with alpha 0 it is render mode 7: a clip only

# Index 0 means visible (or no verdict: whitespace and synthetic separators).
REASONS: tuple[HiddenReason | None, ...] = (
    None,
    HiddenReason.INVISIBLE_RENDER_MODE,
    HiddenReason.TRANSPARENT,
    HiddenReason.TINY,
    HiddenReason.BACKGROUND_COLOR,
    HiddenReason.COVERED,
)
_CODE = {reason: code for code, reason in enumerate(REASONS) if reason is not None}

MIN_FONT_SIZE = 1.0  # points
UNIFORM_RANGE = 24  # of 255: a box whose pixels all lie this close shows nothing
STANDS_OUT = 64  # of 255: a colour this far from white is seen on a white page
MIN_GLYPH_PIXELS = 4  # a glyph this tall still darkens pixels well beyond UNIFORM_RANGE
MIN_ZOOM, MAX_ZOOM = 1.0, 4.0  # below 1 (72 dpi), small words of OCR layers lose their ink
SEEN_THROUGH_MARGIN = 0.25  # of the box height, top and bottom, for text seen through an image
BOX_INSET = 0.1  # of a painted word's box height, top and bottom: line boxes overlap the lines around them

_MUPDF_ERRORS = (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase)
_WHITESPACE = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)
_UNBOUNDED = 1e6  # points: MuPDF's "infinite" rect is about 2**31
_PAINTLESS_ANNOTATIONS = frozenset({pymupdf.PDF_ANNOT_LINK, pymupdf.PDF_ANNOT_POPUP})  # a hyperlink paints nothing
_TEXT_KINDS = frozenset({"fill-text", "stroke-text", "ignore-text", "clip-text", "clip-stroke-text"})


@dataclass(frozen=True, slots=True, eq=False)
class GlyphStyles:
    """What MuPDF says about the span of each character, one row per character.

    Built from the spans in the order the parser flattens their characters.
    """

    span: np.ndarray  # int32: index of the character's span
    flags: np.ndarray  # uint16: the span's char_flags
    alpha: np.ndarray  # uint8: fill opacity, 0-255
    color: np.ndarray  # uint32: sRGB 0xRRGGBB
    size: np.ndarray  # float32: font size in points


def styles_of_spans(spans: Sequence[dict]) -> GlyphStyles:
    """The per-character style rows of ``spans`` (rawdict spans, in the order their characters are used).

    >>> styles_of_spans([{"chars": [{}, {}], "char_flags": 16, "alpha": 255, "color": 0, "size": 9.0}]).span
    array([0, 0], dtype=int32)
    """
    counts = np.fromiter((len(s["chars"]) for s in spans), dtype=np.int64, count=len(spans))

    def column(key: str, default, dtype) -> np.ndarray:
        values = np.fromiter((s.get(key, default) for s in spans), dtype=dtype, count=len(spans))
        return np.repeat(values, counts)

    return GlyphStyles(
        span=np.repeat(np.arange(len(spans), dtype=np.int32), counts),
        flags=column("char_flags", FILLED, np.uint16),
        alpha=column("alpha", 255, np.uint8),
        color=column("color", 0, np.uint32),
        size=column("size", 12.0, np.float32),
    )


def hidden_codes(
    page: pymupdf.Page,
    text: str,
    boxes: np.ndarray,
    synthetic: np.ndarray,
    styles: GlyphStyles,
) -> np.ndarray:
    """A code per character of ``text`` (an index into ``REASONS``; 0: visible or no verdict).

    ``boxes`` are the characters' boxes in displayed-page points (n, 4) and
    ``synthetic`` marks separators MuPDF inserted; both, like ``styles``, are in
    the order of ``text``. Whitespace and synthetic characters get 0.
    """
    n = len(text)
    codes = np.zeros(n, dtype=np.uint8)
    if n == 0:
        return codes
    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    space = np.isin(code_points, _WHITESPACE) | synthetic
    starts, ends = _words(space, styles.span)
    if len(starts) == 0:
        return codes
    # The union of each word's boxes: reduce over [start, end) pairs (a padding row lets end == n).
    padded = np.vstack([boxes, np.zeros((1, 4))])
    bounds = np.column_stack([starts, ends]).ravel()
    word_boxes = np.stack(
        [
            np.minimum.reduceat(padded[:, 0], bounds)[::2],
            np.minimum.reduceat(padded[:, 1], bounds)[::2],
            np.maximum.reduceat(padded[:, 2], bounds)[::2],
            np.maximum.reduceat(padded[:, 3], bounds)[::2],
        ],
        axis=1,
    )
    flags, alpha = styles.flags[starts], styles.alpha[starts]
    color, size = styles.color[starts], styles.size[starts]
    paints = (flags & (FILLED | STROKED) != 0) & ~((flags & CLIPPED != 0) & (alpha == 0))
    unpainted = ~paints | (alpha == 0)
    tiny = ~unpainted & (size < MIN_FONT_SIZE)
    rgb = _rgb(color)
    on_white = 255 - (255 - rgb) * (alpha[:, None] / 255.0)  # the colour a word shows on white
    stands_out = (255 - on_white).max(axis=1) >= STANDS_OUT
    needs_raster = unpainted | (~tiny & ~stands_out)
    candidates = ~unpainted & ~tiny & stands_out
    log = _PaintLog(page)
    if candidates.any():
        paint = log.boxes[log.fills]
        if len(paint):
            needs_raster |= candidates & _touches_any(word_boxes, paint)

    word_codes = np.zeros(len(starts), dtype=np.uint8)
    word_codes[tiny] = _CODE[HiddenReason.TINY]
    if needs_raster.any():
        raster = _Raster(page, word_boxes[needs_raster], size[needs_raster])
        for w in np.flatnonzero(needs_raster).tolist():
            code = _raster_verdict(raster, word_boxes[w], bool(unpainted[w]), bool(paints[w]), on_white[w])
            if code == _CODE[HiddenReason.COVERED] and not log.covers(word_boxes[w]):
                code = 0  # the box shows nothing, yet nothing is painted over it: the glyph's ink lies elsewhere
            word_codes[w] = code
    for w in np.flatnonzero(word_codes).tolist():
        codes[starts[w] : ends[w]] = word_codes[w]
    return codes


def _words(space: np.ndarray, span: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) of each run of non-space characters of one span."""
    n = len(space)
    boundary = np.ones(n, dtype=bool)
    boundary[1:] = (span[1:] != span[:-1]) | space[:-1]
    starts = np.flatnonzero(~space & boundary)
    next_boundary = np.ones(n, dtype=bool)
    next_boundary[:-1] = (span[1:] != span[:-1]) | space[1:]
    ends = np.flatnonzero(~space & next_boundary) + 1
    return starts, ends


def _rgb(color: np.ndarray) -> np.ndarray:
    color = color.astype(np.int64)
    return np.stack([(color >> 16) & 255, (color >> 8) & 255, color & 255], axis=1).astype(np.float64)


class _PaintLog:
    """What the page paints, in order: MuPDF's bbox log, then the annotations (drawn last); read on first use."""

    def __init__(self, page: pymupdf.Page) -> None:
        self._page = page
        self._boxes: np.ndarray | None = None
        self._is_text: np.ndarray | None = None
        self._fills: np.ndarray | None = None

    def _read(self) -> None:
        entries = self._page.get_bboxlog()
        boxes = [bbox for _kind, bbox in entries] + _annotation_rects(self._page)
        is_text = [kind in _TEXT_KINDS for kind, _bbox in entries]
        is_text += [False] * (len(boxes) - len(entries))
        # What can hide a word: filled areas (paths, images, shadings) and annotations. A stroke
        # (a rule, a frame around a box) only hides what its line runs over.
        # A shading MuPDF logs with an infinite box (its clip is not logged) says nothing of where it is.
        fills = [
            kind not in _TEXT_KINDS and not kind.startswith("stroke") and max(map(abs, bbox)) < _UNBOUNDED
            for kind, bbox in entries
        ]
        fills += [True] * (len(boxes) - len(entries))
        self._fills = np.asarray(fills, dtype=bool)
        # The bbox log and annotation rects are in unrotated page space, like MuPDF's text.
        self._boxes = to_displayed(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), self._page.rotation_matrix)
        self._is_text = np.asarray(is_text, dtype=bool)

    @property
    def boxes(self) -> np.ndarray:
        if self._boxes is None:
            self._read()
        return self._boxes

    @property
    def fills(self) -> np.ndarray:
        if self._boxes is None:
            self._read()
        return self._fills

    @property
    def is_text(self) -> np.ndarray:
        if self._is_text is None:
            self._read()
        return self._is_text

    def covers(self, box: np.ndarray) -> bool:
        """Whether something that is not text is painted over the centre of ``box`` after text was painted there."""
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        b = self.boxes
        at = (b[:, 0] <= cx) & (cx <= b[:, 2]) & (b[:, 1] <= cy) & (cy <= b[:, 3])
        text, paint = np.flatnonzero(at & self.is_text), np.flatnonzero(at & ~self.is_text)
        return bool(len(text) and len(paint) and paint.max() > text.min())


def _annotation_rects(page: pymupdf.Page) -> list[tuple[float, float, float, float]]:
    """Rects of the page's annotations and form fields, read from their /Rect (unrotated page space)."""
    rects = []
    doc, matrix = page.parent, page.transformation_matrix
    for xref, annotation_type, _name in page.annot_xrefs():
        if annotation_type in _PAINTLESS_ANNOTATIONS:
            continue
        kind, value = doc.xref_get_key(xref, "Rect")
        numbers = value.strip("[] ").split() if kind == "array" else []
        try:
            rect = pymupdf.Rect(*(float(v) for v in numbers)) * matrix
        except (TypeError, ValueError):
            continue  # a malformed /Rect: the annotation is not drawn either
        rect.normalize()
        rects.append(tuple(rect))
    return rects


def _touches_any(words: np.ndarray, paint: np.ndarray) -> np.ndarray:
    """Words whose centre lies in a painted box at least half as tall as the word.

    Rules, underlines and table borders touch words but cannot hide them; a box
    that can is under or over the middle of the word and about as tall.
    """
    hits = np.zeros(len(words), dtype=bool)
    cx = (words[:, 0] + words[:, 2]) / 2
    cy = (words[:, 1] + words[:, 3]) / 2
    half_height = (words[:, 3] - words[:, 1]) / 2
    for chunk in range(0, len(paint), 256):  # bounded memory on pages with thousands of paths
        p = paint[chunk : chunk + 256]
        tall = (p[None, :, 3] - p[None, :, 1]) >= half_height[:, None]
        inside = (
            (p[None, :, 0] <= cx[:, None]) & (cx[:, None] <= p[None, :, 2])
            & (p[None, :, 1] <= cy[:, None]) & (cy[:, None] <= p[None, :, 3])
        )
        hits |= (inside & tall).any(axis=1)
    return hits


class _Raster:
    """The page as displayed, rendered over the boxes that need a look, at a zoom fit for the smallest word."""

    def __init__(self, page: pymupdf.Page, boxes: np.ndarray, sizes: np.ndarray) -> None:
        smallest = max(float(np.percentile(sizes, 10)), MIN_FONT_SIZE)  # a few subscripts do not set the zoom
        self.zoom = min(MAX_ZOOM, max(MIN_ZOOM, MIN_GLYPH_PIXELS / smallest))
        clip = pymupdf.Rect(boxes[:, 0].min() - 1, boxes[:, 1].min() - 1, boxes[:, 2].max() + 1, boxes[:, 3].max() + 1)
        clip &= page.rect  # clip is in displayed page space, like the boxes
        pixmap = page.get_pixmap(
            matrix=pymupdf.Matrix(self.zoom, self.zoom), colorspace=pymupdf.csRGB, alpha=False, clip=clip
        )
        self.pixels = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.width, pixmap.n)
        self.x, self.y = pixmap.x, pixmap.y  # the pixel at the raster's top left, in whole-page pixels

    def uniform_colour(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray | None:
        """The colour of the box if it is uniform (nothing shows in it), else None."""
        height, width = self.pixels.shape[:2]
        z = self.zoom
        left, right = max(int(np.floor(x0 * z)) - self.x, 0), min(int(np.ceil(x1 * z)) - self.x, width)
        top, bottom = max(int(np.floor(y0 * z)) - self.y, 0), min(int(np.ceil(y1 * z)) - self.y, height)
        if right <= left or bottom <= top:
            return None  # off the raster: no verdict
        pixels = self.pixels[top:bottom, left:right].reshape(-1, self.pixels.shape[2])
        low, high = pixels.min(axis=0), pixels.max(axis=0)
        if int((high.astype(np.int16) - low).max()) >= UNIFORM_RANGE:
            return None
        return (low.astype(np.float64) + high) / 2


def _raster_verdict(raster: _Raster, box: np.ndarray, unpainted: bool, paints: bool, color: np.ndarray) -> int:
    x0, y0, x1, y1 = (float(v) for v in box)
    if (x1 - x0) * raster.zoom < 1 or (y1 - y0) * raster.zoom < 1:
        return 0  # no area to judge by (a zero-advance glyph such as a combining overlay)
    # A painted word shows its own ink wherever it is seen: the inset keeps the ink of the lines
    # above and below out. A word seen through what lies under or over it (it paints nothing,
    # or something covers it) is an OCR layer's guess at where the image shows it, often a
    # little off (an underscore above a scanned rule): a margin then, not an inset.
    margin = (y1 - y0) * SEEN_THROUGH_MARGIN
    if unpainted:
        if raster.uniform_colour(x0, y0 - margin, x1, y1 + margin) is None:
            return 0
        return _CODE[HiddenReason.INVISIBLE_RENDER_MODE if not paints else HiddenReason.TRANSPARENT]
    inset = (y1 - y0) * BOX_INSET
    shown = raster.uniform_colour(x0, y0 + inset, x1, y1 - inset)
    if shown is None:
        return 0
    if float(np.abs(shown - color).max()) < STANDS_OUT:
        return _CODE[HiddenReason.BACKGROUND_COLOR]
    if raster.uniform_colour(x0, y0 - margin, x1, y1 + margin) is None:
        return 0
    return _CODE[HiddenReason.COVERED]


def hidden_runs(codes: np.ndarray, offsets: np.ndarray, text: str) -> list[HiddenRun]:
    """Runs of document text [start, end) that are hidden, one reason each.

    ``codes`` and ``offsets`` give each character's code and its offset in the
    document ``text``; a run spans the separators between two hidden
    characters of the same reason when only whitespace lies between them.

    >>> hidden_runs(np.array([1, 1, 0, 1], dtype=np.uint8), np.array([0, 1, 3, 4]), "ab cd")
    [HiddenRun(start=0, end=2, reason=<HiddenReason.INVISIBLE_RENDER_MODE: 'invisible_render_mode'>), \
HiddenRun(start=4, end=5, reason=<HiddenReason.INVISIBLE_RENDER_MODE: 'invisible_render_mode'>)]
    """
    runs: list[HiddenRun] = []
    hidden = np.flatnonzero(codes)
    for i in hidden.tolist():
        start, reason = int(offsets[i]), REASONS[int(codes[i])]
        if runs and runs[-1].reason is reason and (
            runs[-1].end == start or text[runs[-1].end : start].isspace()
        ):
            runs[-1] = HiddenRun(runs[-1].start, start + 1, reason)
        else:
            runs.append(HiddenRun(start, start + 1, reason))
    return runs
