"""A document's source as the viewer shows it: spans marked, untrusted markup defused.

The page is defused by ``ingest.formats.html.defuse`` (the one defuser, shared with the
layout stage of the build): rebuilt token by token from the decoded source, with
nothing left that runs or loads, CSS included. Text tokens are copied verbatim,
so a highlight lands on exactly the source ranges a span of text came from: each
text token inside them gets its own ``<mark>``, and a span crossing elements
gives several. The result is still shown only in a sandboxed iframe under a
restrictive CSP: this is the second wall, not the only one.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ingest.formats import Defuser
from schemas.limits import VIEW_ATTRIBUTE_CHARS, VIEW_CHUNK_CHARS, VIEW_SOURCE_CHARS, VIEW_TEXT_CHARS

HIT_ID = "spanindex-hit"  # the first mark of the span: what the viewer scrolls to

_ENTITY = re.compile(r"&(?:#[xX]?[0-9a-fA-F]*|[a-zA-Z][a-zA-Z0-9]*);?")

MARK_STYLE = (
    "<style>mark.spanindex-hit{background:#ffe066;color:inherit;outline:2px solid #e8a400;"
    "scroll-margin:4em}</style>"
)
# One copy of a page for all its citations: marks stay plain until the viewer switches on one citation's.
SHARED_MARK_STYLE = (
    "<style>mark.spanindex-hit{background:none;color:inherit}mark.spanindex-hit.on{background:#ffe066;"
    "outline:2px solid #e8a400;scroll-margin:4em}</style>"
)


# Between two windows of a large page: where the page goes on without being shown.
WINDOW_GAP = '<p style="text-align:center;color:#888">[\u2026]</p>'


@dataclass(frozen=True, slots=True)
class MarkedText:
    """A window of document text around a span: ``before + marked + after``."""

    before: str
    marked: str
    after: str
    clipped_before: bool
    clipped_after: bool


def marked_html(
    decoded_source: str,
    ranges: Sequence[tuple[int, int]],
    cite_keys: Sequence[str] | None = None,
    *,
    windows: Sequence[tuple[int, int]] | None = None,
) -> str:
    """The decoded HTML source, defused, with the text inside ``ranges`` wrapped in ``<mark>``s.

    ``ranges`` are sorted, disjoint ``[src_start, src_end)`` ranges of the decoded source:
    those of the runs a span of document text came from, so that text the parser left out
    (hidden elements, scripts, comments) between them is not marked. With ``cite_keys``
    (one per range: the space-separated keys of the citations covering it, as
    ``labelled_ranges`` makes them) every mark carries ``data-cite`` and stays plain
    until the viewer switches on those of one citation. With ``windows`` (sorted, disjoint
    ``[start, end)`` ranges of the source, each starting in character data: see
    ``HtmlSourceMap.data_position``) only those parts of a large page are shown, each
    separated from the next by a marker, and an attribute value over
    ``VIEW_ATTRIBUTE_CHARS`` (an inline image) is left out.

    >>> marked_html('<p onclick="x()">Hi <b>there</b> you</p><script>evil()</script>', [(23, 36)]).split("</style>")[1]
    '<p>Hi <b><mark class="spanindex-hit" id="spanindex-hit">there</mark></b><mark class="spanindex-hit"> you</mark></p>'
    >>> marked_html('<p>one</p><p>two</p><p>three</p>', [(13, 16)], windows=[(13, 20)]).split("</style>")[1]
    '<mark class="spanindex-hit" id="spanindex-hit">two</mark></p>'
    """
    return "".join(iter_marked_html(decoded_source, ranges, cite_keys, windows=windows))


def iter_marked_html(
    decoded_source: str,
    ranges: Sequence[tuple[int, int]],
    cite_keys: Sequence[str] | None = None,
    *,
    windows: Sequence[tuple[int, int]] | None = None,
) -> Iterator[str]:
    """``marked_html`` in pieces, as they are made: what a server streams."""
    windowed = windows is not None
    return _Marking(decoded_source, ranges, cite_keys).pieces(
        MARK_STYLE if cite_keys is None else SHARED_MARK_STYLE,
        windows=windows,
        gap=WINDOW_GAP,
        max_attribute=VIEW_ATTRIBUTE_CHARS if windowed else None,
        max_tag=VIEW_SOURCE_CHARS if windowed else None,  # a window holds no tag longer than itself
    )


class _Marking(Defuser):
    def __init__(self, source: str, ranges: Sequence[tuple[int, int]], cite_keys: Sequence[str] | None) -> None:
        super().__init__(source)
        self.ranges = ranges
        self.range_ends = [b for _, b in ranges]
        self.cite_keys = cite_keys
        self.first_mark = [True]

    def text(self, start: int, end: int) -> str:
        return _marked_text_token(self.source, start, end, self.ranges, self.range_ends, self.first_mark,
                                  self.cite_keys)


def defused_html(decoded_source: str) -> Iterator[str]:
    """The decoded HTML source with nothing marked, in pieces: what a live-page stand-in streams."""
    return iter_marked_html(decoded_source, [])


def labelled_ranges(spans: Sequence[tuple[int, int, str]]) -> tuple[list[tuple[int, int]], list[str]]:
    """Possibly overlapping ``(start, end, key)`` spans as sorted disjoint ranges, each with the keys covering it.

    >>> labelled_ranges([(0, 10, "a"), (5, 15, "b")])
    ([(0, 5), (5, 10), (10, 15)], ['a', 'a b', 'b'])
    """
    cuts = sorted({x for a, b, _ in spans for x in (a, b)})
    ranges: list[tuple[int, int]] = []
    keys: list[str] = []
    for a, b in zip(cuts, cuts[1:]):
        covering = " ".join(dict.fromkeys(key for s, e, key in spans if s <= a and b <= e))
        if not covering:
            continue
        if ranges and ranges[-1][1] == a and keys[-1] == covering:
            ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((a, b))
            keys.append(covering)
    return ranges, keys


def _marked_text_token(
    source: str,
    start: int,
    end: int,
    ranges: Sequence[tuple[int, int]],
    range_ends: list[int],
    first: list[bool],
    cite_keys: Sequence[str] | None,
) -> str:
    out, pos = [], start
    for i in range(bisect.bisect_right(range_ends, start), len(ranges)):
        if ranges[i][0] >= end:
            break
        a, b = _outside_entities(source, start, end, max(start, ranges[i][0]), min(end, ranges[i][1]))
        a = max(a, pos)
        if a >= b or not source[a:b].strip():  # whitespace between blocks: a mark there is invalid or invisible
            continue
        if cite_keys is not None:  # the viewer gives the first mark of the chosen citation the id
            attrs = f'class="{HIT_ID}" data-cite="{html.escape(cite_keys[i], quote=True)}"'
        else:
            attrs = f'class="{HIT_ID}"' + (f' id="{HIT_ID}"' if first[0] else "")
            first[0] = False
        out += [source[pos:a], f"<mark {attrs}>", source[a:b], "</mark>"]
        pos = b
    out.append(source[pos:end])
    return "".join(out)


def _outside_entities(source: str, start: int, end: int, a: int, b: int) -> tuple[int, int]:
    """Move cut points that fall inside a character reference to its edges."""
    for m in _ENTITY.finditer(source, start, end):
        if m.start() < a < m.end():
            a = m.start()
        if m.start() < b < m.end():
            b = m.end()
        if m.start() >= b:
            break
    return a, b


def marked_text(
    doc_text: str, start: int, end: int, window: int = VIEW_TEXT_CHARS, max_marked: int = VIEW_CHUNK_CHARS
) -> MarkedText:
    """``doc_text`` around ``[start, end)``, at most ``window`` characters on each side, and at
    most ``max_marked`` of the span itself (a longer one is cut, and nothing after it shown).

    >>> marked_text("abcdef", 2, 4, window=1)
    MarkedText(before='b', marked='cd', after='e', clipped_before=True, clipped_after=True)
    >>> marked_text("abcdef", 1, 5, window=1, max_marked=2)
    MarkedText(before='a', marked='bc', after='', clipped_before=False, clipped_after=True)
    """
    lo = max(0, start - window)
    if end - start > max_marked:
        return MarkedText(doc_text[lo:start], doc_text[start : start + max_marked], "", lo > 0, True)
    hi = min(len(doc_text), end + window)
    return MarkedText(doc_text[lo:start], doc_text[start:end], doc_text[end:hi], lo > 0, hi < len(doc_text))
