"""Assembling HTML document text and the runs that map it back to the source.

Whitespace and separators are held back until the next visible character: only
then is it known whether a collapsed space is needed (not at a line start, not
next to a block separator) and how many newlines a run of separators makes
(the most any of them asked for, never more than two, counting newlines the
text already ends with).
"""

from __future__ import annotations

import re
from array import array
from html import unescape
from html.entities import html5

import numpy as np

from schemas.records import RUN_KINDS, HiddenReason, HtmlRuns, RunKind

# Separator levels: a tab between table cells, a line break, a blank line.
TAB, LINE, PARAGRAPH = -1, 1, 2

_CODE = {kind: code for code, kind in enumerate(RUN_KINDS)}
_TEXT = _CODE[RunKind.TEXT]
_JOIN_PARTS = 65536  # parts joined into one block this often: a part is a str object of its own

_CHARREF = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")


class TextBuilder:
    """Appends document text and its runs; holds back whitespace and separators
    until the next visible character shows whether they are needed."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.blocks: list[str] = []  # the text so far, joined every _JOIN_PARTS parts
        self.parts: list[str] = []
        # Runs as columns (a million runs as lists would take 200 MB): start, end, src_start, src_end, kind.
        self.starts, self.ends, self.src_starts, self.src_ends = array("q"), array("q"), array("q"), array("q")
        self.kinds = array("b")
        self.length = 0
        self.last_char = ""
        self.trailing_newlines = 0
        self.sep_newlines = 0
        self.sep_tab = False
        self.sep_at = -1  # source position of the pending separator; -1: none
        self.space: tuple[int, int, RunKind] | None = None  # pending collapsed whitespace
        self.reason: HiddenReason | None = None  # why what is appended now is hidden (the tree builder says)
        self.hidden: list[list] = []  # [start, end, reason] of text appended while a reason held

    def result(self) -> tuple[str, HtmlRuns]:
        columns = [np.frombuffer(c, dtype=np.int64) if len(c) else np.zeros(0, np.int64)
                   for c in (self.starts, self.ends, self.src_starts, self.src_ends)]
        kinds = np.frombuffer(self.kinds, dtype=np.int8) if len(self.kinds) else np.zeros(0, np.int8)
        text = "".join([*self.blocks, *self.parts])
        self.blocks, self.parts = [], []
        return text, HtmlRuns(*columns, kinds)

    def separator(self, level: int, at: int) -> None:
        if self.sep_at < 0:
            self.sep_at = at
        if level == TAB:
            self.sep_tab = True
        elif level > self.sep_newlines:
            self.sep_newlines = level
            self.sep_tab = False  # a tab before a line break aligns nothing
        self.space = None

    def line_break(self, at: int) -> None:
        """<br>: one more newline, up to a blank line."""
        self.separator(min(self.sep_newlines + 1, PARAGRAPH), at)

    def whitespace(self, start: int, end: int, kind: RunKind = RunKind.WHITESPACE) -> None:
        """Collapsible whitespace: dropped at a line start or next to a separator."""
        if self.sep_at >= 0 or self.length == 0 or self.trailing_newlines:
            return
        if self.last_char == " ":  # already ends in a space (one kept inside a text run)
            return
        if self.space is None or (
            self.space[2] is RunKind.SYNTHETIC and kind is not RunKind.SYNTHETIC
        ):  # prefer a space that source characters spell
            self.space = (start, end, kind)

    def _flush(self) -> None:
        if self.sep_at >= 0:
            if self.length:
                newlines = max(self.sep_newlines - self.trailing_newlines, 0)
                sep = "\n" * newlines + ("\t" if self.sep_tab else "")
                if sep:
                    self._append(sep, self.sep_at, self.sep_at, RunKind.SYNTHETIC)
            self.sep_newlines, self.sep_tab, self.sep_at = 0, False, -1
        elif self.space is not None:
            start, end, kind = self.space
            self.space = None
            if kind is RunKind.WHITESPACE and end - start == 1 and self.source[start] == " ":
                kind = RunKind.TEXT
            self._append(" ", start, end, kind)

    def text(self, start: int, end: int) -> None:
        """Source characters copied as they are."""
        if self.sep_at >= 0 or self.space is not None:
            self._flush()
        self._append(self.source[start:end], start, end, RunKind.TEXT)

    def emit(self, text: str, start: int, end: int, kind: RunKind) -> None:
        if self.sep_at >= 0 or self.space is not None:
            self._flush()
        self._append(text, start, end, kind)

    def _append(self, text: str, start: int, end: int, kind: RunKind) -> None:
        n = len(text)
        code = _CODE[kind]
        if code == _TEXT and self.kinds and self.kinds[-1] == _TEXT and self.src_ends[-1] == start:
            self.ends[-1] += n
            self.src_ends[-1] = end
        else:
            self.starts.append(self.length)
            self.ends.append(self.length + n)
            self.src_starts.append(start)
            self.src_ends.append(end)
            self.kinds.append(code)
        if self.reason is not None and kind is not RunKind.SYNTHETIC:
            hidden = self.hidden
            if hidden and hidden[-1][1] == self.length and hidden[-1][2] is self.reason:
                hidden[-1][1] += n
            else:
                hidden.append([self.length, self.length + n, self.reason])
        parts = self.parts
        parts.append(text)
        if len(parts) >= _JOIN_PARTS:
            self.blocks.append("".join(parts))
            parts.clear()
        self.length += n
        self.last_char = text[-1]
        if text[-1] == "\n":
            stripped = len(text.rstrip("\n"))
            self.trailing_newlines = (self.trailing_newlines if stripped == 0 else 0) + n - stripped
        else:
            self.trailing_newlines = 0


def charref(source: str, amp: int, end: int, cache: dict) -> tuple[int, str] | None:
    """The character reference at ``amp`` as html.unescape reads it: (its end, its text)."""
    m = _CHARREF.match(source, amp, end)
    if m is None:
        return None
    candidate = m.group()
    found = cache.get(candidate)
    if found is None:
        name = m.group(1)
        if name[0] == "#" or name in html5:
            length = len(candidate)
        else:  # the longest prefix that is a reference (legacy ones need no ";")
            for k in range(len(name) - 1, 1, -1):
                if name[:k] in html5:
                    length = k + 1
                    break
            else:
                length = 0
        found = cache[candidate] = (length, unescape(candidate[:length]) if length else "")
    length, value = found
    return (amp + length, value) if length else None
