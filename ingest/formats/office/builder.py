"""The document text of an office file, built piece by piece with its runs back to the parts.

Every parser of this package writes through one ``TextBuilder``: real text with the part and
source range it came from, synthetic text (separators, titles, labels) with none. Separators
are asked for, not written: ``separate("\\n")`` takes effect only before the next text, so an
empty paragraph or cell adds no blank line and the text never ends in a separator.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ingest.formats.office.xml_positions import Piece
from schemas.records import RUN_KINDS, HiddenReason, HiddenRun, OfficePage, OfficeRuns, RunKind

_STRENGTH = {"": 0, " ": 1, "\t": 2, "\n": 3, "\n\n": 4}


@dataclass(frozen=True, slots=True)
class BuiltText:
    text: str
    runs: OfficeRuns
    hidden_runs: tuple[HiddenRun, ...]


class TextBuilder:
    """Text and runs in the making.

    >>> b = TextBuilder()
    >>> b.source("Fish", "p.xml", 3, 7); b.separate("\\n"); b.source("&", "p.xml", 9, 14, RunKind.ENTITY)
    >>> built = b.result(); built.text, [(r.start, r.end, r.src_start, r.kind.value) for r in built.runs]
    ('Fish\\n&', [(0, 4, 3, 'text'), (4, 5, 0, 'synthetic'), (5, 6, 9, 'entity')])
    """

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self.length = 0
        self._pending = ""
        self._parts: dict[str, int] = {"": 0}
        # run columns: start, end, part code, src_start, src_end, kind code
        self._runs: list[list[int]] = []
        self._hidden: list[list] = []  # [start, end, reason]
        self._hidden_reason: HiddenReason | None = None
        self._holding = 0  # separators up to this strength are ignored until the next text

    def hold(self, weakest: str = " ") -> None:
        """Ignore separators up to ``weakest`` until the next text (after a cell's tab, a label)."""
        self._pending, self._holding = "", _STRENGTH[weakest]

    def separate(self, separator: str) -> None:
        """Ask for ``separator`` before the next text (the strongest asked for wins)."""
        strength = _STRENGTH[separator]
        if self.length and strength > self._holding and strength > _STRENGTH[self._pending]:
            self._pending = separator

    def drop_separator(self, weakest: str = " ") -> None:
        """Forget the separator asked for if it is no stronger than ``weakest``."""
        if _STRENGTH[self._pending] <= _STRENGTH[weakest]:
            self._pending = ""

    def flush(self) -> None:
        """Write the separator asked for now (a table row that starts with an empty cell needs it)."""
        if self._pending:
            pending, self._pending = self._pending, ""
            self._append(pending, 0, 0, 0, RunKind.SYNTHETIC)

    def source(self, text: str, part: str, src_start: int, src_end: int, kind: RunKind = RunKind.TEXT) -> None:
        if not text:
            return
        self.flush()
        code = self._parts.setdefault(part, len(self._parts))
        self._append(text, code, src_start, src_end, kind)

    def piece(self, piece: Piece, part: str) -> None:
        self.source(piece.text, part, piece.src_start, piece.src_end, piece.kind)

    def synthetic(self, text: str) -> None:
        if text:
            self.flush()
            self._append(text, 0, 0, 0, RunKind.SYNTHETIC)

    @contextmanager
    def hidden(self, reason: HiddenReason | None):
        """Text written inside is hidden for ``reason`` (an outer reason wins; None: no change)."""
        outer = self._hidden_reason
        if outer is None and reason is not None:
            self.flush()  # the separator before hidden text is not hidden
            self._hidden_reason = reason
        try:
            yield
        finally:
            self._hidden_reason = outer

    def checkpoint(self) -> tuple:
        """A point to ``rollback`` to (a section title whose section turns out empty)."""
        last = list(self._runs[-1]) if self._runs else None
        hidden = list(self._hidden[-1]) if self._hidden else None
        return (len(self._chunks), self.length, self._pending, self._holding, len(self._runs), last,
                len(self._hidden), hidden)

    def rollback(self, point: tuple) -> None:
        chunks, self.length, self._pending, self._holding, runs, last, hidden, last_hidden = point
        del self._chunks[chunks:], self._runs[runs:], self._hidden[hidden:]
        if last is not None:
            self._runs[-1] = last
        if last_hidden is not None:
            self._hidden[-1] = last_hidden

    @contextmanager
    def titled(self, title: str, gap: str = "\n\n"):
        """A section after ``gap`` and a title line, taken back whole if it gets no text."""
        before = self.checkpoint()
        self.separate(gap)
        self.synthetic(title)
        after = self.length
        self.separate("\n")
        yield
        if self.length == after:
            self.rollback(before)
        self.separate("\n")

    @contextmanager
    def sheet(self, number: int, name: str, hidden: bool, pages: list[OfficePage]):
        """A spreadsheet's sheet: after a blank line, a title line with its name, then what is
        written inside (hidden whole for a hidden sheet); its page is added to ``pages``."""
        self.separate("\n\n")
        self.flush()
        start = self.length
        with self.hidden(HiddenReason.HIDDEN_SHEET if hidden else None):
            self.synthetic(name)
            self.separate("\n")
            yield
        self.drop_separator("\n\n")
        pages.append(OfficePage(number, start, self.length, name, hidden))

    def result(self) -> BuiltText:
        text = "".join(self._chunks)
        columns = np.array(self._runs, dtype=np.int64).reshape(-1, 6)
        parts = tuple(self._parts)
        runs = OfficeRuns(columns[:, 0].copy(), columns[:, 1].copy(), columns[:, 2].astype(np.int32),
                          columns[:, 3].copy(), columns[:, 4].copy(), columns[:, 5].astype(np.int8), parts)
        return BuiltText(text, runs, tuple(HiddenRun(s, e, r) for s, e, r in self._hidden))

    def _append(self, text: str, code: int, src_start: int, src_end: int, kind: RunKind) -> None:
        start, end = self.length, self.length + len(text)
        self._holding = 0
        self._chunks.append(text)
        self.length = end
        kind_code = RUN_KINDS.index(kind)
        last = self._runs[-1] if self._runs else None
        mergeable = kind in (RunKind.TEXT, RunKind.SYNTHETIC)
        if (mergeable and last is not None and last[5] == kind_code and last[2] == code and last[1] == start
                and last[4] == src_start):
            last[1], last[4] = end, src_end
        else:
            self._runs.append([start, end, code, src_start, src_end, kind_code])
        if self._hidden_reason is not None:
            if self._hidden and self._hidden[-1][1] == start and self._hidden[-1][2] is self._hidden_reason:
                self._hidden[-1][1] = end
            else:
                self._hidden.append([start, end, self._hidden_reason])
