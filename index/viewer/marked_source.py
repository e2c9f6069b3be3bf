"""A document's source as the viewer shows it: spans marked, untrusted markup defused.

HTML is rebuilt token by token from the decoded source (``ingest.html_tokens``,
the tokenizer whose offsets the source map counts), so a highlight lands on
exactly the source ranges a span of text came from: each text token inside
them gets its own ``<mark>``, and a span crossing elements gives several. On the
way, whatever could run or reach out is left out: ``<script>`` and other
active elements, ``on*`` attributes, ``javascript:``/``vbscript:``/``data:``
URLs, ``<base>``, ``<meta>``, ``<link>``, comments, and the URLs the page would fetch by
itself (``src``, ``poster``...; inline ``data:image`` kept). Tags are re-serialised
from their parsed attributes, never copied, so malformed markup cannot smuggle
anything through. The result is still shown only in a sandboxed iframe under a
restrictive CSP: this is the second wall, not the only one.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.html_tokens import END, RAW, START, TEXT, Tokenizer, parse_attrs

HIT_ID = "spanindex-hit"  # the first mark of the span: what the viewer scrolls to

# Elements dropped with their tags; those the tokenizer reads as raw text lose their content too.
_DROPPED = frozenset({
    "script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "meta",
    "link", "noscript", "portal", "fencedframe", "animate", "animatemotion",
    "animatetransform", "set", "handler", "listener",
})
_URL_ATTRS = frozenset({"href", "action", "formaction", "xlink:href", "cite", "longdesc", "ping", "manifest", "icon", "usemap"})
# URLs the page would fetch by itself: the stored copy cannot load them (no network, and a
# relative one would point at the viewer), so only inline images are kept.
_SUBRESOURCE_ATTRS = frozenset({"src", "poster", "background", "data", "codebase", "lowsrc", "dynsrc"})
_DROPPED_ATTRS = frozenset({"srcset", "srcdoc", "http-equiv", "autofocus", "imagesrcset"})
_SAFE_ATTR_NAME = re.compile(r"[a-z_][a-z0-9_.:-]*\Z")
_SAFE_DATA_URL = re.compile(r"data:image/(?:png|jpeg|gif|webp);", re.IGNORECASE)
_ACTIVE_SCHEME = re.compile(r"(?:javascript|vbscript|data|livescript):", re.IGNORECASE)
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")  # browsers strip these from URLs before parsing
_ENTITY = re.compile(r"&(?:#[xX]?[0-9a-fA-F]*|[a-zA-Z][a-zA-Z0-9]*);?")
_DOCTYPE = re.compile(r"\s*<!doctype", re.IGNORECASE)
_FOREIGN = frozenset({"svg", "math"})

MARK_STYLE = (
    "<style>mark.spanindex-hit{background:#ffe066;color:inherit;outline:2px solid #e8a400;"
    "scroll-margin:4em}</style>"
)
# One copy of a page for all its citations: marks stay plain until the viewer switches on one citation's.
SHARED_MARK_STYLE = (
    "<style>mark.spanindex-hit{background:none;color:inherit}mark.spanindex-hit.on{background:#ffe066;"
    "outline:2px solid #e8a400;scroll-margin:4em}</style>"
)


@dataclass(frozen=True, slots=True)
class MarkedText:
    """A window of document text around a span: ``before + marked + after``."""

    before: str
    marked: str
    after: str
    clipped_before: bool
    clipped_after: bool


def marked_html(
    decoded_source: str, ranges: Sequence[tuple[int, int]], cite_keys: Sequence[str] | None = None
) -> str:
    """The decoded HTML source, defused, with the text inside ``ranges`` wrapped in ``<mark>``s.

    ``ranges`` are sorted, disjoint ``[src_start, src_end)`` ranges of the decoded source:
    those of the runs a span of document text came from, so that text the parser left out
    (hidden elements, scripts, comments) between them is not marked. With ``cite_keys``
    (one per range: the space-separated keys of the citations covering it, as
    ``labelled_ranges`` makes them) every mark carries ``data-cite`` and stays plain
    until the viewer switches on those of one citation.

    >>> marked_html('<p onclick="x()">Hi <b>there</b> you</p><script>evil()</script>', [(23, 36)]).split("</style>")[1]
    '<p>Hi <b><mark class="spanindex-hit" id="spanindex-hit">there</mark></b><mark class="spanindex-hit"> you</mark></p>'
    """
    out: list[str] = []
    doctype = _DOCTYPE.match(decoded_source)
    if doctype:
        out.append("<!DOCTYPE html>")
    out.append(MARK_STYLE if cite_keys is None else SHARED_MARK_STYLE)
    range_ends = [b for _, b in ranges]
    tokens = Tokenizer(decoded_source)
    skipping: str | None = None  # inside a dropped element whose content is raw text
    first_mark = [True]
    for token in tokens:
        kind = token[0]
        if kind == START:
            _, start, end, name, self_closing, attrs_at = token
            if name in _FOREIGN:
                tokens.foreign = True
            if name in _DROPPED:
                skipping = name
                continue
            skipping = None
            out.append(_start_tag(name, parse_attrs(decoded_source, attrs_at, end - 1), self_closing))
        elif kind == END:
            name = token[3]
            if name in _FOREIGN:
                tokens.foreign = False
            if name not in _DROPPED:
                out.append(f"</{name}>")
        elif kind == RAW:
            _, start, end, name = token
            if skipping == name or name in _DROPPED:
                continue
            if name in ("#cdata", "plaintext"):
                out.append(html.escape(decoded_source[start:end], quote=False))
            else:  # style, title, textarea, xmp...: the same raw-text context it came from
                out.append(decoded_source[start:end])
        elif kind == TEXT:
            _, start, end = token
            out.append(_marked_text_token(decoded_source, start, end, ranges, range_ends, first_mark, cite_keys))
    return "".join(out)


def defused_html(decoded_source: str) -> str:
    """The decoded HTML source with nothing marked: what a live-page stand-in serves."""
    return marked_html(decoded_source, [])


def _start_tag(name: str, attrs: dict[str, str], self_closing: bool) -> str:
    parts = [name]
    for attr, raw_value in attrs.items():
        if attr.startswith("on") or attr in _DROPPED_ATTRS or not _SAFE_ATTR_NAME.match(attr):
            continue
        value = html.unescape(raw_value)  # what the browser would see, entities decoded
        if attr in _URL_ATTRS and not _safe_url(value):
            continue
        if attr in _SUBRESOURCE_ATTRS and not _SAFE_DATA_URL.match(_URL_NOISE.sub("", value)):
            continue
        parts.append(f'{attr}="{html.escape(value, quote=True)}"')
    return "<" + " ".join(parts) + ("/>" if self_closing else ">")


def _safe_url(value: str) -> bool:
    squeezed = _URL_NOISE.sub("", value)
    return not _ACTIVE_SCHEME.match(squeezed) or bool(_SAFE_DATA_URL.match(squeezed))


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


def marked_text(doc_text: str, start: int, end: int, window: int = 6000) -> MarkedText:
    """``doc_text`` around ``[start, end)``, at most ``window`` characters on each side.

    >>> marked_text("abcdef", 2, 4, window=1)
    MarkedText(before='b', marked='cd', after='e', clipped_before=True, clipped_after=True)
    """
    lo, hi = max(0, start - window), min(len(doc_text), end + window)
    return MarkedText(doc_text[lo:start], doc_text[start:end], doc_text[end:hi], lo > 0, hi < len(doc_text))
