"""Section context of chunks: the document's title and the headings a chunk lies under.

A parser gives a document's headings (``ParsedDocument.headings``: offset, level, text, in
document order); a chunk's section is the path of headings in force at its start, outermost
first. A heading closes every open heading of its level or deeper, as an outline does: after
``# A``, ``## B``, ``## C`` the path is (A, C). A heading that starts exactly where a chunk
starts is above it (the chunk opens its section).

Where the context is used. The lexical index tokenises it before each chunk's text
(``ingest.store.lexical.lexical_texts``); what the model embeds is the chunk's text alone.
Measured with ``benchmarks/retrieval.py`` over ../shared/corpus (90 labelled questions, real
model all-MiniLM-L6-v2, one build each; recall@5 / MRR@10):

    mode      before        context in BM25   context in BM25 and as a prefix of the embedded text
    dense     0.767 / 0.533  0.767 / 0.533    0.689 / 0.535
    lexical   0.900 / 0.784  0.922 / 0.785    0.922 / 0.785
    hybrid    0.878 / 0.696  0.889 / 0.714    0.900 / 0.727

The prefix cost dense search 8 points of recall@5 for no gain in MRR (the same words before
every chunk of a section pull their vectors together, and a 256-token chunk's tail falls past
the model's limit); its hybrid gain is one question of 90. So the embedded text stays the
chunk's own.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from schemas.records import Heading, ParsedDocument


class SectionPaths:
    """The heading path at any offset of one document, by bisection over its headings.

    >>> paths = SectionPaths([Heading(0, 1, "A"), Heading(10, 2, "B"), Heading(20, 2, "C"), Heading(30, 1, "D")])
    >>> paths.at(5), paths.at(15), paths.at(25), paths.at(30)
    (('A',), ('A', 'B'), ('A', 'C'), ('D',))
    """

    __slots__ = ("_paths", "_starts")

    def __init__(self, headings: Sequence[Heading]) -> None:
        self._starts = [h.start for h in headings]
        if any(a > b for a, b in zip(self._starts, self._starts[1:])):
            raise ValueError("headings must be sorted by start")
        self._paths: list[tuple[str, ...]] = []  # the path just after each heading
        open_headings: list[Heading] = []
        for heading in headings:
            while open_headings and open_headings[-1].level >= heading.level:
                open_headings.pop()
            open_headings.append(heading)
            self._paths.append(tuple(h.text for h in open_headings))

    def at(self, offset: int) -> tuple[str, ...]:
        """The headings in force at ``offset``, outermost first (() before the first heading)."""
        i = bisect.bisect_right(self._starts, offset)
        return self._paths[i - 1] if i else ()


def document_title(doc: ParsedDocument) -> str:
    """The document's own title (PDF metadata, HTML ``<title>``, office properties, a Markdown
    ``#`` line), else its first heading of the outermost level it uses (an HTML page's first
    ``h1``), else "".

    >>> from schemas.records import MediaType
    >>> document_title(ParsedDocument("a.html", MediaType.HTML, "x", headings=(Heading(0, 2, "Intro"), Heading(9, 1, "Guide"))))
    'Guide'
    """
    if doc.title.strip():
        return doc.title.strip()
    if not doc.headings:
        return ""
    top = min(h.level for h in doc.headings)
    return next(" ".join(h.text.split()) for h in doc.headings if h.level == top)


def section_text(title: str, headings: Sequence[str]) -> str:
    """A chunk's section context as one line each: the title, then the headings, outermost first;
    a line equal to the one before (a title that is also the first heading) is left out.

    >>> section_text("Guide", ["Guide", "Install"])
    'Guide\\nInstall'
    >>> section_text("", [])
    ''
    """
    lines: list[str] = []
    for line in (title, *headings):
        line = " ".join(line.split())
        if line and (not lines or line != lines[-1]):
            lines.append(line)
    return "\n".join(lines)

