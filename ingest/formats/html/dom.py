"""The DOM the browser built from a page, mapped back to the source the document text came from.

Before the page is loaded, a comment ``<!--start:end-->`` naming its source range is
written before every text token (``ingest.formats.html.layout.layout_source``). Comments
neither render nor join text, so a marker claims the text node right after it (the
parser may have reconstructed formatting elements around it: ``<p><b>x<p>y`` puts a
new ``<b>`` around "y"), and that node's text must equal the token's text as the
browser decodes it (``dom_text``: character references, CR LF, NUL). The browser
repairs misnested markup its own way: text it moved away from its marker (out of a
table, into the body, the whitespace it dropped before ``<body>``) is the text of a
marker that claimed nothing, found again where it starts, further on in the source.
Finally every character is checked against the DOM text it is mapped to: one that
does not match is *unmatched*, and gets no box, never a guessed one.
"""

from __future__ import annotations

import base64
import bisect
import re
import unicodedata

import numpy as np

from ingest.formats.html.text import charref
from schemas.records import ParsedDocument, RunKind

_DOM_SPECIAL = re.compile(r"\r\n?|\x00|&")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ORPHAN_TRIES = 8
_HTML_SPACE = " \t\n\r\f"


def dom_text(source: str, start: int, end: int, refs: dict) -> tuple[str, np.ndarray]:
    """The text node the browser makes of ``source[start:end]``, and each character's source offset.

    CR LF and CR read as LF, NUL is dropped, character references are decoded (all the
    characters of one reference carry its offset).

    >>> text, offsets = dom_text("a&lt;\\r\\nb", 0, 8, {})
    >>> text, offsets.tolist()
    ('a<\\nb', [0, 1, 5, 7])
    """
    parts: list[str] = []
    offsets: list[np.ndarray] = []
    pos = start
    for m in _DOM_SPECIAL.finditer(source, start, end):
        at = m.start()
        if at < pos:
            continue  # inside a reference already read
        if at > pos:
            parts.append(source[pos:at])
            offsets.append(np.arange(pos, at))
        found = m.group()
        if found[0] == "\r":
            parts.append("\n")
            offsets.append(np.array([at]))
            pos = m.end()
        elif found == "\x00":
            pos = at + 1
        else:
            ref = charref(source, at, end, refs)
            if ref is None:
                parts.append("&")
                offsets.append(np.array([at]))
                pos = at + 1
            else:
                pos, value = ref
                parts.append(value)
                offsets.append(np.full(len(value), at))
    if pos < end:
        parts.append(source[pos:end])
        offsets.append(np.arange(pos, end))
    text = "".join(parts)
    return text, (np.concatenate(offsets) if offsets else np.zeros(0, dtype=np.int64))


class DomMap:
    """Where each character of a document's text is in the DOM the browser built: its text node
    and its position there (``chars``, ``char_node``, ``char_pos``; ``mapped`` per character)."""

    def __init__(self, doc: ParsedDocument, entries: list) -> None:
        self.doc = doc
        source = doc.decoded_source
        self.node_data: dict[int, str] = {}
        self._pieces: list[tuple[np.ndarray, int, np.ndarray]] = []  # source offsets, node, DOM positions
        self._match(source, entries)
        self._map_chars()

    # -- DOM text nodes to source offsets

    def _match(self, source: str, entries: list) -> None:
        refs: dict = {}
        orphans = sorted((start, end) for node, start, end, _ in entries if node < 0)
        orphan_starts = [s for s, _ in orphans]
        used = [False] * len(orphans)
        last = -1  # the furthest source position matched so far, in tree order
        for node, start, end, data in entries:
            if node < 0:
                continue
            self.node_data[node] = data
            pos = 0
            if start >= 0:
                text, offsets = dom_text(source, start, end, refs)
                if data.startswith(text):  # its own text, perhaps with moved text after it
                    self._assign(node, 0, offsets)
                    pos = len(text)
                elif len(data) == len(text):  # decoded differently in places: keep what agrees
                    same = np.frombuffer(data.encode("utf-32-le"), dtype=np.uint32) == \
                        np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
                    self._assign(node, 0, np.where(same, offsets, -1))
                    pos = len(data)
                elif data and text.startswith(data):  # the rest went elsewhere (whitespace in <head>)
                    self._assign(node, 0, offsets[:len(data)])
                    rest = (int(offsets[len(data)]), end)
                    i = bisect.bisect_left(orphans, rest)
                    orphans.insert(i, rest)
                    orphan_starts.insert(i, rest[0])
                    used.insert(i, False)
                    pos = len(data)
                last = max(last, end if pos < len(data) else start)
            # Text the browser moved away from its marker (out of a table, into the body) is
            # the text of a marker that claimed nothing, further on in the source; the browser
            # may have dropped the whitespace it began with (before <body>).
            i = bisect.bisect_left(orphan_starts, last)
            tries = 0
            while pos < len(data) and i < len(orphans) and tries < _ORPHAN_TRIES:
                if not used[i]:
                    tries += 1
                    text, offsets = dom_text(source, orphans[i][0], orphans[i][1], refs)
                    if not data.startswith(text, pos):
                        lead = len(text) - len(text.lstrip(_HTML_SPACE))
                        text, offsets = text[lead:], offsets[lead:]
                    if text and data.startswith(text, pos):
                        used[i] = True
                        self._assign(node, pos, offsets)
                        pos += len(text)
                        last = max(last, orphans[i][1])
                        i = bisect.bisect_left(orphan_starts, last)
                        tries = 0
                        continue
                i += 1

    def _assign(self, node: int, at: int, offsets: np.ndarray) -> None:
        """DOM text ``data[at:at + len(offsets)]`` came from these source offsets (-1: from none)."""
        if len(offsets) == 0:
            return
        first = np.ones(len(offsets), dtype=bool)  # of a reference's characters, the first
        first[1:] = offsets[1:] != offsets[:-1]
        first &= offsets >= 0
        positions = at + np.arange(len(offsets))
        self._pieces.append((offsets[first], node, positions[first]))

    # -- document characters to DOM positions

    def _map_chars(self) -> None:
        doc = self.doc
        n = len(doc.text)
        src = np.full(n, -1, dtype=np.int64)
        step = np.zeros(n, dtype=np.int64)  # k-th character of a multi-character reference
        for run in doc.html_runs:
            if run.kind is RunKind.SYNTHETIC:
                continue
            length = run.end - run.start
            if run.kind is RunKind.TEXT:
                src[run.start:run.end] = np.arange(run.src_start, run.src_start + length)
            else:
                src[run.start:run.end] = run.src_start
                step[run.start:run.end] = np.arange(length)
        self.from_source = src >= 0
        # Source offset -> (node, position in its text), sorted by offset, for a binary search.
        pieces = self._pieces or [(np.zeros(0, dtype=np.int64), -1, np.zeros(0, dtype=np.int64))]
        offsets = np.concatenate([p[0] for p in pieces] + [np.array([-1])])  # -1: a sentinel
        nodes = np.concatenate([np.full(len(p[0]), p[1], dtype=np.int64) for p in pieces] + [np.array([-1])])
        positions = np.concatenate([p[2] for p in pieces] + [np.array([-1])])
        order = np.argsort(offsets, kind="stable")
        offsets, nodes, positions = offsets[order], nodes[order], positions[order]
        at = np.minimum(np.searchsorted(offsets, src), len(offsets) - 1)
        has = self.from_source & (offsets[at] == src)
        node = np.where(has, nodes[at], -1)
        pos = np.where(has, positions[at] + step, -1)
        text = doc.text
        for i in np.flatnonzero(has).tolist():  # never a box for a character the DOM does not hold
            data = self.node_data[int(node[i])]
            p = int(pos[i])
            if p >= len(data) or (data[p] != text[i] and not (data[p].isspace() and text[i].isspace())):
                has[i] = False
        self.mapped = has
        self.chars = np.flatnonzero(has)
        self.char_node = node[self.chars]
        self.char_pos = pos[self.chars]
        self.n_chars = len(self.chars)

    def request(self, node_fields: int) -> dict:
        """What MEASURE needs: (node, UTF-16 start, UTF-16 end) per character, and the nodes."""
        starts = self.char_pos.copy()
        ends = starts + 1
        for node in np.unique(self.char_node).tolist():
            data = self.node_data[node]
            if _ASTRAL.search(data):
                units = np.concatenate(([0], np.cumsum([2 if ord(c) > 0xFFFF else 1 for c in data])))
                at = self.char_node == node
                ends[at] = units[starts[at] + 1]
                starts[at] = units[starts[at]]
        self.nodes = np.unique(self.char_node)
        triples = np.stack([self.char_node, starts, ends], axis=1).astype(np.int32).reshape(-1)
        self.utf16 = (starts, ends)
        return {"chars": _b64(triples), "nodes": _b64(self.nodes.astype(np.int32)), "fields": node_fields}


def caret_on_char(data: str, offset: int, start: int, end: int) -> bool:
    """Whether a caret at UTF-16 ``offset`` is an edge of the character [start, end) or of the
    grapheme cluster it belongs to (a caret never stops inside a cluster).

    >>> caret_on_char("e\u0301x", 0, 1, 2), caret_on_char("ex", 0, 1, 2)
    (True, False)
    """
    if start <= offset <= end:
        return True
    units = _utf16_units(data)
    at, first, last = (bisect.bisect_left(units, u) for u in (offset, start, end))
    if offset < start:  # before the cluster: it and everything up to this character extend it
        return all(_extends(c) for c in data[at + 1:first + 1])
    return all(_extends(c) for c in data[last:at])


def _extends(c: str) -> bool:
    return unicodedata.category(c) in ("Mn", "Mc", "Me") or c in "\u200d\uff9e\uff9f" or "\ufe00" <= c <= "\ufe0f"


def _utf16_units(data: str) -> list[int]:
    units, n = [], 0
    for c in data:
        units.append(n)
        n += 2 if ord(c) > 0xFFFF else 1
    return units


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype="<i4").tobytes()).decode("ascii")


