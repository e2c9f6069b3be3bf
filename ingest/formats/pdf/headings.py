"""A PDF's headings: its outline where it has one, else its lines set clearly larger than the body.

The outline (``doc.get_toc()``) gives each entry's level, words and page. An entry stands at
the first place its words occur on its page in the document text (whitespace between the
words may differ: a title wrapped over two lines; a line start is preferred over the middle of
a sentence, the exact case over another), and that text is the heading. An entry whose words
are not on its page (a title the outline spells otherwise, a page of scanned images) stands at
the page's start with the outline's words.

Without an outline, a line is a heading when its font size (the size most of its characters
have) is at least ``SIZE_RATIO`` times the body's and ``MIN_SIZE_GAP`` points more: the body
size is the size most characters of the document have. Consecutive heading lines of one size
are one heading (a title wrapped over lines). Larger sizes are outer levels. When such lines
hold more than ``MAX_HEADING_SHARE`` of the text, sizes do not mark headings in this document
(a poster, a slide deck) and it gets none: cheap and conservative rather than clever.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import pymupdf

from ingest.formats.headings import MAX_HEADING_CHARS, headings_in
from schemas.records import Heading, HiddenRun, PdfPage

SIZE_RATIO = 1.15
MIN_SIZE_GAP = 1.0  # points
MAX_HEADING_SHARE = 0.2  # of the document's characters
MAX_LEVELS = 6
_SURROGATES = re.compile("[\ud800-\udfff]")
_LETTER = re.compile(r"[^\W\d_]")

Line = tuple[int, int, float]  # [start, end) in the document text, font size in points (0: not horizontal)


def pdf_headings(doc: pymupdf.Document, doc_text: str, pages: Sequence[PdfPage], lines: Sequence[Line],
                 hidden: Sequence[HiddenRun] = ()) -> tuple[Heading, ...]:
    """The headings of an open PDF whose document text and pages the parser made (see the module)."""
    try:
        toc = doc.get_toc(simple=True)
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase):  # a damaged outline is no outline
        toc = []
    if toc:
        return outline_headings(toc, doc_text, pages)
    return headings_by_size(doc_text, lines, hidden)


def outline_headings(toc: Sequence[Sequence], doc_text: str, pages: Sequence[PdfPage]) -> tuple[Heading, ...]:
    """Each outline entry ``[level, title, page]`` placed in the text of its page.

    >>> pages = [PdfPage(1, 0, 32, 600, 800, 0, "", True)]
    >>> outline_headings([[1, "Intro", 1], [2, "Methods  used", 1], [1, "Gone", 9]], "see methods\\n1 Intro\\nMethods\\nused", pages)
    (Heading(start=14, level=1, text='Intro'), Heading(start=20, level=2, text='Methods\\nused'))
    """
    headings = []
    for level, title, page_number, *_ in toc:
        words = _SURROGATES.sub("\ufffd", str(title)).split()
        if not words or not 1 <= page_number <= len(pages) or len(" ".join(words)) > MAX_HEADING_CHARS:
            continue
        page = pages[page_number - 1]
        found = _find_on_page(doc_text, page, words)
        if found is None:
            headings.append(Heading(page.start, max(1, int(level)), " ".join(words)))
        else:
            headings.append(Heading(found[0], max(1, int(level)), doc_text[found[0] : found[1]]))
    return tuple(sorted(headings, key=lambda h: h.start))


def _find_on_page(doc_text: str, page: PdfPage, words: list[str]) -> tuple[int, int] | None:
    pattern = r"\s+".join(map(re.escape, words))
    for flags in (0, re.IGNORECASE):
        matches = list(re.compile(pattern, flags).finditer(doc_text, page.start, page.end))
        at_line_start = (m for m in matches if m.start() == page.start or doc_text[m.start() - 1] == "\n")
        found = next(at_line_start, None) or (matches[0] if matches else None)
        if found is not None:
            return found.start(), found.end()
    return None


def headings_by_size(doc_text: str, lines: Sequence[Line], hidden: Sequence[HiddenRun] = ()) -> tuple[Heading, ...]:
    """Lines set clearly larger than the body, as headings (see the module).

    >>> text = "Title\\nbody text here, long enough\\nmore body text, long enough"
    >>> headings_by_size(text, [(0, 5, 20.0), (6, 32, 10.0), (33, 60, 10.0)])
    (Heading(start=0, level=1, text='Title'),)
    """
    chars_by_size: Counter[float] = Counter()
    lines = [line for line in lines if line[2] > 0]  # size 0: a line not written left to right
    for start, end, size in lines:
        chars_by_size[round(size, 1)] += end - start
    if not chars_by_size:
        return ()
    body = chars_by_size.most_common(1)[0][0]
    threshold = max(body * SIZE_RATIO, body + MIN_SIZE_GAP)
    spans: list[list] = []  # [start, end, size]
    previous_end = -2
    for start, end, size in lines:
        size = round(size, 1)
        if size < threshold or not _LETTER.search(doc_text, start, end):
            previous_end = -2
            continue
        if spans and spans[-1][2] == size and doc_text[previous_end:start] == "\n":  # a wrapped heading
            spans[-1][1] = end
        else:
            spans.append([start, end, size])
        previous_end = end
    if sum(end - start for start, end, _ in spans) > MAX_HEADING_SHARE * sum(chars_by_size.values()):
        return ()
    levels = {size: min(rank, MAX_LEVELS) for rank, size in enumerate(sorted({s for *_, s in spans}, reverse=True), 1)}
    return headings_in(doc_text, [(start, end, levels[size]) for start, end, size in spans], hidden)
