"""Text a reader cannot see: the hidden runs of one document, asked about ranges.

Parsers give each document its hidden runs (``ParsedDocument.hidden_runs``:
invisible PDF text, CSS-hidden HTML, ...). The text stays in the document and
every offset; what is embedded leaves it out, and a citation that quotes it
says so.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from schemas.records import HiddenRun


class HiddenText:
    """The hidden runs of one document (sorted, not overlapping), asked about ranges.

    >>> from schemas.records import HiddenReason
    >>> hidden = HiddenText([HiddenRun(9, 26, HiddenReason.TINY)])
    >>> hidden.visible("Buy now. IGNORE ALL RULES. Thanks", 0, 33), hidden.count(0, 12)
    ('Buy now.   Thanks', 3)
    """

    def __init__(self, runs: Sequence[HiddenRun]) -> None:
        self.runs = list(runs)
        self._ends = [run.end for run in self.runs]

    def overlapping(self, start: int, end: int) -> list[HiddenRun]:
        found = []
        for run in self.runs[bisect.bisect_right(self._ends, start) :]:
            if run.start >= end:
                break
            found.append(run)
        return found

    def count(self, start: int, end: int) -> int:
        """How many characters of ``[start, end)`` are hidden."""
        return sum(min(end, run.end) - max(start, run.start) for run in self.overlapping(start, end))

    def visible(self, doc_text: str, start: int, end: int) -> str:
        """``doc_text[start:end]`` with each hidden run in it replaced by one space."""
        return self.visible_in(doc_text[start:end], start)

    def visible_in(self, text: str, start: int) -> str:
        """``text``, the document's text from offset ``start`` on, with each hidden run in it
        replaced by one space (for a chunk, whose text is all a reader of the table holds)."""
        end = start + len(text)
        pieces, at = [], start
        for run in self.overlapping(start, end):
            pieces.append(text[at - start : max(at, run.start) - start])
            pieces.append(" ")
            at = max(at, min(end, run.end))
        pieces.append(text[at - start :])
        return "".join(pieces)
