"""The headings a parser finds, as ``Heading`` records of the document text it built.

Each format knows its headings its own way (PDF outline or font sizes, HTML and EPUB ``h1``-``h6``,
Markdown ``#`` lines, DOCX heading styles, ODT ``text:h``, slide titles, sheet names); all of them become
records here, the same way: a heading is the document text it spans, whitespace at its ends
left out, and a heading with no text is no heading.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from schemas.records import Heading, HiddenRun

MAX_HEADING_CHARS = 300  # a longer "heading" is a paragraph in a heading's style


def heading_in(doc_text: str, start: int, end: int, level: int) -> Heading | None:
    """The heading that ``doc_text[start:end]`` holds, trimmed of whitespace; None when it holds
    no text (an empty or hidden heading element) or is too long to be one.

    >>> heading_in("\\n\\n Intro \\nBody", 0, 9, 2)
    Heading(start=3, level=2, text='Intro')
    """
    piece = doc_text[start:end]
    stripped = piece.lstrip()
    text = stripped.rstrip()
    if not text or len(text) > MAX_HEADING_CHARS:
        return None
    return Heading(start + len(piece) - len(stripped), max(1, level), text)


def headings_in(doc_text: str, spans: Iterable[tuple[int, int, int]],
                hidden: Sequence[HiddenRun] = ()) -> tuple[Heading, ...]:
    """The headings of (start, end, level) spans of ``doc_text``, in document order; one that
    starts in ``hidden`` text (sorted runs a reader cannot see) is left out."""
    found = (heading_in(doc_text, start, end, level) for start, end, level in spans)
    hidden_starts = [run.start for run in hidden]

    def seen(heading: Heading) -> bool:
        i = bisect.bisect_right(hidden_starts, heading.start) - 1
        return i < 0 or hidden[i].end <= heading.start

    return tuple(sorted((h for h in found if h is not None and seen(h)), key=lambda h: h.start))
