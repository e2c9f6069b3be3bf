"""The characters of an office document's rendered PDF matched to its document text: a glyph box
for every character LibreOffice drew, in the conventions of the PDF parser's char runs.

The rendered PDF is read by the PDF parser itself (``parse_pdf``: its text, one box a real
character, points from the displayed page's top left). Its text and the document text are the
same words in a different order and with different separators: a DOCX's headers and footers are
drawn on every page but come once, at the end, in our text; comments and speaker notes are not
drawn; list labels, line breaks and spaces differ; hyphenation adds hyphens; a slide's shapes
are drawn in z-order, not reading order.

So the two are aligned in passes, each near-linear in time and memory:

1. Words (maximal runs of non-space characters) in order, as patience diff does: the common
   head and tail, then the words found once on each side are anchors, the longest chain of
   them in the same order on both sides cuts the texts into segments, cut again the same way;
   a segment without such words is aligned by the longest common subsequence of its words
   (rapidfuzz, bit-parallel), or piece by proportional piece where even that would be large.
   A PPTX or ODP is aligned slide by slide (page k is slide k); of a DOCX or ODT only the body,
   not the sections after it (headers, footers, notes, comments: drawn elsewhere, if at all).
2. Characters, in each gap between two matched words (their longest common subsequence): a
   hyphenated word, a label glued to its text, spaces. One or two characters in common count
   only where the gap has much in common or where they touch its ends: elsewhere they are the
   chance letters two unrelated texts share.
3. Moves: the characters left unmatched on both sides, in their order, are aligned again (twice
   at most) by the longest runs of words found in both first (difflib), and of several copies
   the first (a header: on the first page that draws it). Only runs of ``MIN_MOVE`` characters
   or more are kept, and line breaks are words here, so that a run never joins two lines that
   only one side has together: a header, a shape drawn before the title, a footnote.

A document character gets a box only if it is matched to a rendered character that is the same
character, with these equivalences only: a no-break space (U+00A0, U+202F, U+2007) and a space;
a non-breaking hyphen (U+2011) or a minus sign (U+2212: LibreOffice draws a formula's "-" so)
and a hyphen-minus; a ligature glyph (U+FB00-U+FB06) and the letters it stands for, each letter
getting an equal share of the glyph's width. Synthetic characters (separators, titles, list
labels) never get a box, as separators in a PDF never do.

Where the same words come twice and the layout tells them apart only by place (two text boxes
that start alike, drawn in another order than they are read), a box may go to the other copy:
the same characters, drawn elsewhere.
"""

from __future__ import annotations

import difflib
import re
import time
from bisect import bisect_left
from collections import Counter
from dataclasses import astuple, dataclass, replace

import numpy as np
from rapidfuzz.distance import Indel

from ingest.formats.office.render import RenderError, render_pdf
from schemas.errors import DocumentError
from schemas.records import RUN_KINDS, MediaType, ParsedDocument, PdfCharRun, PdfPage, RunKind

MIN_MOVE = 8  # characters: the shortest stretch matched out of order (pass 3)
_LOOSE = 3  # characters: the shortest stretch a gap that has little in common keeps (pass 2)
_SMALL = 1 << 12  # cells (items x items): a segment this small is aligned whole, without anchors
_LONGEST_FIRST_CELLS = 1 << 22  # the largest segment difflib aligns (it slows down on frequent items)
_MAX_CELLS = 1 << 26  # the largest LCS (cells of its bit matrix: 8 MB); larger segments are cut
_WORD = re.compile(r"[^\s\ue000\ue001]+")
_TOKEN = re.compile(r"[^\s\ue000\ue001]+|[\n\f\ue000\ue001]")  # a word, or a line break
_FOLD = str.maketrans({"\u00a0": " ", "\u202f": " ", "\u2007": " ", "\u2011": "-", "\u2212": "-"})
_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
              "\ufb05": "st", "\ufb06": "st"}
_LIGATURE = re.compile("[\ufb00-\ufb06]")
_SYNTHETIC = RUN_KINDS.index(RunKind.SYNTHETIC)
# the titles of the sections a DOCX's or ODT's text has after its body (see ingest.formats.office)
_DOCX_SECTION = re.compile(r"(?:\A|\n\n)((?:Headers|Footers|Footnotes|Endnotes|Comments)\n)")
_GAP_DOC, _GAP_RENDERED = "\ue000", "\ue001"  # between stretches of pass 3: never match each other


@dataclass(frozen=True, slots=True, eq=False)
class OfficeLayout:
    """An office document as LibreOffice rendered it, and the box of each character it drew.

    ``pages`` are the rendered pages, their size as displayed; a page's ``start``/``end`` span
    the document characters boxed on it (0, 0 where none is), which need not be all of that
    range: a header drawn on page 1 comes at the end of the text.
    """

    char_runs: tuple[PdfCharRun, ...]  # boxes in points on the rendered PDF's displayed pages
    pdf: bytes  # the rendered PDF (the viewer shows its pages)
    n_pages: int
    source_chars: int  # characters of the text from the source: not synthetic, not hidden
    boxed: int  # of those, with a box
    seconds: float
    pages: tuple[PdfPage, ...] = ()


@dataclass(frozen=True, slots=True)
class OfficeLayoutStats:
    """What the office layout stage did over some documents (a build sums them)."""

    documents: int = 0
    pages: int = 0
    source_chars: int = 0
    boxed: int = 0
    seconds: float = 0.0
    failed: int = 0  # documents LibreOffice could not render (indexed without boxes)

    @classmethod
    def of(cls, layout: OfficeLayout) -> OfficeLayoutStats:
        return cls(1, layout.n_pages, layout.source_chars, layout.boxed, layout.seconds)

    def __add__(self, other: OfficeLayoutStats) -> OfficeLayoutStats:
        return OfficeLayoutStats(*(a + b for a, b in zip(astuple(self), astuple(other))))


def layout_office(parsed: ParsedDocument, source: bytes, suffix: str) -> OfficeLayout:
    """Render an office file with LibreOffice and box its document text (``render_pdf`` then
    ``align_rendered``; ``seconds`` covers both).

    >>> layout = layout_office(parse_docx(data, "a.docx"), data, ".docx")  # doctest: +SKIP
    >>> layout.boxed / layout.source_chars                                 # doctest: +SKIP
    0.97
    """
    started = time.perf_counter()
    pdf = render_pdf(source, suffix, doc_id=parsed.doc_id)
    layout = align_rendered(parsed, pdf)
    return replace(layout, seconds=time.perf_counter() - started)


def align_rendered(parsed: ParsedDocument, pdf: bytes) -> OfficeLayout:
    """Box the characters of ``parsed.text`` with the glyphs of ``pdf``, its rendering.

    Raises ``RenderError`` when the PDF cannot be read.

    >>> import pymupdf
    >>> page = (rendered := pymupdf.open()).new_page()
    >>> _ = page.insert_text((72, 72), "Hello world")
    >>> doc = ParsedDocument("a.docx", MediaType.DOCX, "Hello\\tworld")
    >>> layout = align_rendered(doc, rendered.tobytes())
    >>> [(r.page, r.start, r.end) for r in layout.char_runs], layout.boxed, layout.source_chars
    ([(1, 0, 5), (1, 6, 11)], 10, 11)
    """
    started = time.perf_counter()
    try:
        from ingest.formats.pdf.parser import parse_pdf  # PyMuPDF: loaded where a document is rendered

        rendered = parse_pdf(pdf, f"{parsed.doc_id} (rendered)")
    except DocumentError as exc:
        raise RenderError(f"the rendered PDF cannot be read: {exc.message}", doc_id=parsed.doc_id) from exc
    glyphs = _Glyphs(rendered)
    text = parsed.text
    real = _real_characters(parsed)
    doc_matched = np.full(len(text), -1, dtype=np.int64)  # -> index into glyphs' expanded text
    for in_order, whole, rendered_range in _segments(parsed, rendered, real):
        _align_segment(text, glyphs.text, in_order, whole, glyphs.expanded_range(*rendered_range), doc_matched)
    runs = _char_runs(text, real, doc_matched, glyphs)
    visible = real.copy()
    for hidden in parsed.hidden_runs:
        visible[hidden.start:hidden.end] = False
    boxed = np.zeros(len(text), dtype=bool)
    spans: dict[int, tuple[int, int]] = {}
    for run in runs:
        boxed[run.start:run.end] = True
        start, end = spans.get(run.page, (run.start, run.end))
        spans[run.page] = (min(start, run.start), max(end, run.end))
    pages = tuple(PdfPage(p.page, *spans.get(p.page, (0, 0)), p.width, p.height, p.rotation, p.label,
                          p.page in spans) for p in rendered.pages)
    return OfficeLayout(tuple(runs), pdf, len(rendered.pages), int(visible.sum()), int((boxed & visible).sum()),
                        time.perf_counter() - started, pages)


class _Glyphs:
    """The rendered text with its ligatures spelled out (``text``), and for each of its
    characters: the rendered character it comes from (``source``), which letter of it (``part``
    of ``parts``), and that character's box, page and line (-1: no box; a run of ``char_runs``)."""

    def __init__(self, rendered: ParsedDocument) -> None:
        raw = rendered.text
        self.boxes = np.full((len(raw), 4), np.nan, dtype=np.float32)
        self.pages = np.zeros(len(raw), dtype=np.int32)
        self.lines = np.full(len(raw), -1, dtype=np.int64)
        for number, run in enumerate(rendered.char_runs):
            self.boxes[run.start:run.end] = run.glyph_boxes
            self.pages[run.start:run.end] = run.page
            self.lines[run.start:run.end] = number
        lengths = np.ones(len(raw), dtype=np.int64)
        for found in _LIGATURE.finditer(raw):
            lengths[found.start()] = len(_LIGATURES[found.group()])
        self.text = _LIGATURE.sub(lambda found: _LIGATURES[found.group()], raw)
        self.source = np.repeat(np.arange(len(raw)), lengths)
        self.part = np.arange(len(self.source)) - (np.cumsum(lengths) - lengths)[self.source]
        self.parts = lengths[self.source]

    def expanded_range(self, start: int, end: int) -> tuple[int, int]:
        """The range of ``text`` that rendered characters [start, end) became."""
        return int(np.searchsorted(self.source, start)), int(np.searchsorted(self.source, end))


def _real_characters(parsed: ParsedDocument) -> np.ndarray:
    real = np.zeros(len(parsed.text), dtype=bool)
    runs = parsed.office_runs
    if hasattr(runs, "kind"):  # OfficeRuns columns
        for start, end, kind in zip(runs.start.tolist(), runs.end.tolist(), runs.kind.tolist()):
            real[start:end] = kind != _SYNTHETIC
    elif runs:
        for run in runs:
            real[run.start:run.end] = run.kind is not RunKind.SYNTHETIC
    else:  # no map: every character came from the source
        real[:] = True
    return real


def _segments(parsed: ParsedDocument, rendered: ParsedDocument, real: np.ndarray):
    """(document range aligned in order, the whole range it belongs to; rendered range) triples
    aligned apart: slide k with page k for a PPTX whose rendering has a page a slide, else the
    whole of each, where the in-order part of a DOCX or ODT is its body (the sections after it,
    headers, footers, notes and comments, are drawn elsewhere, if at all: pass 3 finds them)."""
    slides = parsed.office_pages
    if parsed.media_type in (MediaType.PPTX, MediaType.ODP) and slides and len(slides) == len(rendered.pages):
        for slide, page in zip(slides, rendered.pages):
            yield (slide.start, slide.end), (slide.start, slide.end), (page.start, page.end)
        return
    whole = (0, len(parsed.text))
    in_order = whole
    if parsed.media_type in (MediaType.DOCX, MediaType.ODT):
        title = _DOCX_SECTION.search(parsed.text)
        while title is not None and real[title.start(1)]:  # the title is synthetic, not the same words in the text
            title = _DOCX_SECTION.search(parsed.text, title.end(1))
        if title is not None:
            in_order = (0, title.start(1))
    yield in_order, whole, (0, len(rendered.text))


def _align_segment(doc_text: str, glyph_text: str, in_order: tuple[int, int], whole: tuple[int, int],
                   rendered_range: tuple[int, int], doc_matched: np.ndarray) -> None:
    """Match doc_text[in_order] to glyph_text[rendered_range] (the expanded rendered text) in
    order, then what is left of doc_text[whole] out of order; the matches go in doc_matched."""
    doc_start, doc_end = whole
    rendered_start, rendered_end = rendered_range
    a = doc_text[doc_start:doc_end].translate(_FOLD)
    b = glyph_text[rendered_start:rendered_end].translate(_FOLD)
    first = in_order[0] - doc_start
    for a_start, b_start, length in _matching_blocks(a[first:in_order[1] - doc_start], b):
        at = doc_start + first + a_start
        doc_matched[at:at + length] = np.arange(rendered_start + b_start, rendered_start + b_start + length)
    # moves: what is left on both sides, in order, stretches of MIN_MOVE or more
    rendered_taken = np.zeros(rendered_end - rendered_start, dtype=bool)
    for _ in range(2):
        mine = doc_matched[doc_start:doc_end]
        rendered_taken[:] = False
        rendered_taken[mine[mine >= 0] - rendered_start] = True
        a_left, a_map = _leftover(a, mine < 0, _GAP_DOC)
        b_left, b_map = _leftover(b, ~rendered_taken, _GAP_RENDERED)
        if not a_map.size or not b_map.size:
            return
        added = 0
        for a_start, b_start, length in _matching_blocks(a_left, b_left, moves=True):
            if length < MIN_MOVE or not any(c.isalnum() for c in a_left[a_start:a_start + length]):
                continue
            a_at, b_at = a_map[a_start:a_start + length], b_map[b_start:b_start + length]
            ok = (a_at >= 0) & (b_at >= 0)
            doc_matched[doc_start + a_at[ok]] = rendered_start + b_at[ok]
            added += int(ok.sum())
        if not added:
            return


def _leftover(text: str, left: np.ndarray, gap: str) -> tuple[str, np.ndarray]:
    """The characters of ``text`` where ``left``, stretches joined by ``gap``; and for each
    character of that string its index in ``text`` (-1 for a gap)."""
    pieces, where = [], []
    edges = np.flatnonzero(np.diff(np.concatenate(([0], left.view(np.int8), [0]))))
    for start, end in zip(edges[0::2].tolist(), edges[1::2].tolist()):
        if pieces:
            pieces.append(gap)
            where.append(np.array([-1]))
        pieces.append(text[start:end])
        where.append(np.arange(start, end))
    if not pieces:
        return "", np.zeros(0, dtype=np.int64)
    return "".join(pieces), np.concatenate(where).astype(np.int64)


def _matching_blocks(a: str, b: str, moves: bool = False) -> list[tuple[int, int, int]]:
    """Blocks (a_start, b_start, length) of equal characters, in order on both sides: words (and
    line breaks, so that a run of words never spans a break only one side has) aligned first,
    then the characters between matched words.

    >>> _matching_blocks("one two-\\nthree", "one two three")
    [(0, 0, 7), (9, 8, 5)]
    """
    tokens = _TOKEN if moves else _WORD
    a_words = [(m.start(), m.end()) for m in tokens.finditer(a)]
    b_words = [(m.start(), m.end()) for m in tokens.finditer(b)]
    ids: dict[str, int] = {}
    a_ids = [ids.setdefault(a[s:e], len(ids)) for s, e in a_words]
    b_ids = [ids.setdefault(b[s:e], len(ids)) for s, e in b_words]
    blocks: list[tuple[int, int, int]] = []
    a_at = b_at = 0
    for i, j in _aligned_items(a_ids, b_ids, longest_first=moves):
        (a_start, a_end), (b_start, b_end) = a_words[i], b_words[j]
        blocks.extend(_character_blocks(a, a_at, a_start, b, b_at, b_start))
        blocks.append((a_start, b_start, a_end - a_start))
        a_at, b_at = a_end, b_end
    blocks.extend(_character_blocks(a, a_at, len(a), b, b_at, len(b)))
    return _merged(blocks)


def _merged(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    merged: list[tuple[int, int, int]] = []
    for a_start, b_start, length in blocks:
        if merged and merged[-1][0] + merged[-1][2] == a_start and merged[-1][1] + merged[-1][2] == b_start:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + length)
        elif length:
            merged.append((a_start, b_start, length))
    return merged


def _character_blocks(a: str, a_start: int, a_end: int, b: str, b_start: int, b_end: int):
    """The common characters of a gap between matched words. Stretches of one or two characters
    count only where the gap has much in common (a hyphenated word, a space) or where they touch
    its ends on both sides: elsewhere they are the chance letters two unrelated texts share."""
    if a_start >= a_end or b_start >= b_end:
        return []
    found = [(a_start + i[0], b_start + j[0], i[1])
             for i, j in _runs(_aligned_items(a[a_start:a_end], b[b_start:b_end]))]
    if sum(n for _, _, n in found) * 2 >= min(a_end - a_start, b_end - b_start):
        return found
    return [(i, j, n) for i, j, n in found
            if n >= _LOOSE or (i == a_start and j == b_start) or (i + n == a_end and j + n == b_end)]


def _runs(pairs: list[tuple[int, int]]):
    """Consecutive pairs (i, j), (i+1, j+1), ... as ((i, length), (j, length))."""
    start, last_i, last_j = None, -2, -2
    for i, j in pairs:
        if start is not None and i == last_i + 1 and j == last_j + 1:
            last_i, last_j = i, j
            continue
        if start is not None:
            yield (start[0], last_i - start[0] + 1), (start[1], last_i - start[0] + 1)
        start, last_i, last_j = (i, j), i, j
    if start is not None:
        yield (start[0], last_i - start[0] + 1), (start[1], last_i - start[0] + 1)


def _aligned_items(a, b, longest_first: bool = False) -> list[tuple[int, int]]:
    """Pairs (i, j) with a[i] == b[j], increasing on both sides: patience diff (a common head and
    tail, then items found once on each side as anchors, recursively); where no such item is left,
    the longest common subsequence (rapidfuzz), or proportional pieces where even that would be
    too large. ``longest_first`` (pass 3): no common tail, and the longest runs found in both
    first, of equal runs the earliest (difflib, where small enough): of several copies of a
    header, the first is taken.

    >>> _aligned_items([1, 2, 3, 9, 4], [1, 3, 2, 4, 9])
    [(0, 0), (1, 2), (3, 4)]
    >>> _aligned_items([5, 7], [7, 3, 7]), _aligned_items([5, 7], [7, 3, 7], longest_first=True)
    ([(1, 2)], [(1, 0)])
    """
    pairs: list[tuple[int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        a_lo, a_hi, b_lo, b_hi = stack.pop()
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
            pairs.append((a_lo, b_lo))
            a_lo, b_lo = a_lo + 1, b_lo + 1
        while not longest_first and a_lo < a_hi and b_lo < b_hi and a[a_hi - 1] == b[b_hi - 1]:
            a_hi, b_hi = a_hi - 1, b_hi - 1  # (not where the first copy is wanted: this takes the last)
            pairs.append((a_hi, b_hi))
        cells = (a_hi - a_lo) * (b_hi - b_lo)
        if not cells:
            continue
        if cells > _SMALL:
            anchors = _unique_anchors(a, a_lo, a_hi, b, b_lo, b_hi)
            if anchors:
                previous_i, previous_j = a_lo, b_lo
                for i, j in anchors:
                    pairs.append((i, j))
                    stack.append((previous_i, i, previous_j, j))
                    previous_i, previous_j = i + 1, j + 1
                stack.append((previous_i, a_hi, previous_j, b_hi))
                continue
        if longest_first and cells <= _LONGEST_FIRST_CELLS:
            matcher = difflib.SequenceMatcher(None, a[a_lo:a_hi], b[b_lo:b_hi], autojunk=False)
            pairs.extend((a_lo + i + k, b_lo + j + k) for i, j, n in matcher.get_matching_blocks() for k in range(n))
        elif cells <= _MAX_CELLS:
            pairs.extend(_lcs(a, a_lo, a_hi, b, b_lo, b_hi))
        else:
            pieces = -(-cells // _MAX_CELLS)  # equal proportional pieces, each within the limit
            a_cuts = np.linspace(a_lo, a_hi, pieces + 1).astype(int).tolist()
            b_cuts = np.linspace(b_lo, b_hi, pieces + 1).astype(int).tolist()
            stack.extend(zip(a_cuts[:-1], a_cuts[1:], b_cuts[:-1], b_cuts[1:]))
    pairs.sort()
    return pairs


def _lcs(a, a_lo: int, a_hi: int, b, b_lo: int, b_hi: int) -> list[tuple[int, int]]:
    pairs = []
    for tag, i1, i2, j1, j2 in Indel.opcodes(a[a_lo:a_hi], b[b_lo:b_hi]).as_list():
        if tag == "equal":
            pairs.extend(zip(range(a_lo + i1, a_lo + i2), range(b_lo + j1, b_lo + j2)))
    return pairs


def _unique_anchors(a, a_lo: int, a_hi: int, b, b_lo: int, b_hi: int) -> list[tuple[int, int]]:
    """Items found once in a[a_lo:a_hi] and once in b[b_lo:b_hi]: the longest chain of them in
    the same order on both sides (patience sorting)."""
    a_counts, b_counts = Counter(a[a_lo:a_hi]), Counter(b[b_lo:b_hi])
    b_at = {b[j]: j for j in range(b_lo, b_hi) if b_counts[b[j]] == 1 and a_counts.get(b[j]) == 1}
    if not b_at:
        return []
    candidates = [(i, b_at[a[i]]) for i in range(a_lo, a_hi) if a[i] in b_at]
    # the longest increasing subsequence of the j's
    tails: list[int] = []  # smallest j ending a chain of each length
    tail_index: list[int] = []
    previous = [-1] * len(candidates)
    for k, (_, j) in enumerate(candidates):
        at = bisect_left(tails, j)
        if at == len(tails):
            tails.append(j)
            tail_index.append(k)
        else:
            tails[at], tail_index[at] = j, k
        previous[k] = tail_index[at - 1] if at else -1
    chain, k = [], tail_index[-1]
    while k >= 0:
        chain.append(candidates[k])
        k = previous[k]
    return chain[::-1]


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.translate(_FOLD).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _char_runs(text: str, real: np.ndarray, doc_matched: np.ndarray, glyphs: _Glyphs) -> list[PdfCharRun]:
    """Runs of consecutive document characters drawn by consecutive glyphs of one line."""
    matched = np.flatnonzero((doc_matched >= 0) & real)
    if not matched.size:
        return []
    expanded = doc_matched[matched]
    source = glyphs.source[expanded]
    line = glyphs.lines[source]
    has_box = line >= 0
    # the aligner compared folded text: each pair is checked again (equal, or equivalent)
    equal = _code_points(text)[matched] == _code_points(glyphs.text)[expanded]
    keep = has_box & equal
    matched, expanded, source, line = matched[keep], expanded[keep], source[keep], line[keep]
    if not matched.size:
        return []
    boxes = glyphs.boxes[source].copy()
    parts = glyphs.parts[expanded]
    split = parts > 1
    if split.any():  # a ligature's letters share its width equally
        part, count = glyphs.part[expanded][split], parts[split]
        x0, x1 = boxes[split, 0].copy(), boxes[split, 2].copy()
        boxes[split, 0] = x0 + (x1 - x0) * part / count
        boxes[split, 2] = x0 + (x1 - x0) * (part + 1) / count
    step = np.diff(source)
    breaks = (np.diff(matched) != 1) | (np.diff(line) != 0) | ~((step == 1) | ((step == 0) & split[1:]))
    starts = np.concatenate(([0], np.flatnonzero(breaks) + 1))
    ends = np.concatenate((starts[1:], [len(matched)]))
    pages = glyphs.pages[source]
    return [PdfCharRun(int(pages[s]), int(matched[s]), int(matched[e - 1]) + 1, np.ascontiguousarray(boxes[s:e]))
            for s, e in zip(starts.tolist(), ends.tolist())]
