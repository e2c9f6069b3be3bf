"""What a range of a part's XML reads as: the check that an office run says the truth.

For every run that is not synthetic, ``read_back(source[src_start:src_end]) == text[start:end]``
(tags stripped, character references unescaped, CRLF read as LF, and an element that stands for
one character read as that character), except that a whitespace run of one space stands for
any run of source whitespace (HTML collapses it: the chapters of an EPUB). Tests hold every
parser of this package to it; a checker of a built index can hold the stored map to it.

References are read as XML reads them (``&#x80;`` is U+0080); a reference XML does not define
is read as HTML does (``&nbsp;``, ``&copy`` without its semicolon): no XML part can hold one,
and the XHTML chapters of an EPUB are read by the HTML parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from html import unescape as html_unescape

from schemas.records import OfficeRun, RunKind

# Local names of the elements that stand for one character (w:tab, w:br, a:br, ODF's text:tab
# and text:line-break, ...); ODF's text:s stands for text:c spaces (1 without it).
ELEMENT_CHARACTERS = {"tab": "\t", "ptab": "\t", "br": "\n", "cr": "\n", "noBreakHyphen": "\u2011",
                      "line-break": "\n"}
MAX_SPACES = 10_000  # text:s c="n" beyond this reads (and is parsed) as this many spaces: no bomb
_START_TAG = re.compile(r"<((?:[\w.-]+:)?([\w.-]+))((?:\s[^>]*?)?)(/?)>", re.S)
_TAG = re.compile(r"<!\[CDATA\[|\]\]>|<[^>]*>")
# What html.unescape reads as a reference (names with or without ";", numbers).
_REFERENCE = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")
_SYMBOL_CHAR = re.compile(r"""(?:[\w.-]+:)?char\s*=\s*["']([0-9a-fA-F]+)["']""")
_SPACE_COUNT = re.compile(r"""(?<![\w.:-])(?:[\w.-]+:)?c\s*=\s*["']\s*([0-9]+)\s*["']""")
_HTML_WHITESPACE = frozenset(" \t\n\r\f")


def read_back(fragment: str) -> str:
    """The text a range of XML source stands for.

    >>> read_back("Fish &amp; chips"), read_back('<w:tab/>'), read_back("<w:t>a</w:t>&#x42;\\r\\n")
    ('Fish & chips', '\\t', 'aB\\n')
    >>> read_back('<w:sym w:font="Wingdings" w:char="F0FC"/>')
    '\\uf0fc'
    >>> read_back('<a:br><a:rPr lang="en"/></a:br>')
    '\\n'
    >>> read_back('<text:s text:c="3"/>'), read_back("&nbsp;&#x80;&copy")
    ('   ', '\\xa0\\x80©')
    """
    tag = _START_TAG.match(fragment)
    # The whole of one element (its properties inside it, as a:br holds a:rPr)
    whole = tag is not None and (len(tag.group(0)) == len(fragment) if tag.group(4)
                                 else fragment.endswith(f"</{tag.group(1)}>"))
    if whole:
        name, attributes = tag.group(2), tag.group(3)
        if name in ELEMENT_CHARACTERS:
            return ELEMENT_CHARACTERS[name]
        if name == "s":
            count = _SPACE_COUNT.search(attributes)
            return " " * space_count(count.group(1) if count is not None else None)
        symbol = _SYMBOL_CHAR.search(attributes) if name == "sym" else None
        if symbol is not None:
            return chr(int(symbol.group(1), 16))
    text = _TAG.sub("", fragment).replace("\r\n", "\n").replace("\r", "\n")
    return _REFERENCE.sub(_unescape, text)


def space_count(c: str | None) -> int:
    """The spaces an ODF ``<text:s text:c="c"/>`` stands for (the parser writes as many)."""
    try:
        count = int(c) if c is not None else 1
    except ValueError:
        count = 1
    return min(max(count, 1), MAX_SPACES)


def _unescape(match: re.Match) -> str:
    reference = match.group(0)
    if reference.endswith(";") and reference[1] == "#":
        code = int(reference[3:-1], 16) if reference[2] in "xX" else int(reference[2:-1])
        if code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF:
            return chr(code)  # a character XML allows: what the XML parser read
    return html_unescape(reference)


def reads_back(source: str, text: str, kind: RunKind) -> bool:
    """Whether a run of ``kind`` whose source is ``source`` may stand for ``text``.

    >>> reads_back("\\n    ", " ", RunKind.WHITESPACE), reads_back("\\n", " ", RunKind.TEXT)
    (True, False)
    """
    if kind is RunKind.WHITESPACE and text == " " and source and all(c in _HTML_WHITESPACE for c in source):
        return True
    return read_back(source) == text


def office_run_problems(text: str, runs: Sequence[OfficeRun], part_text: Callable[[str], str]) -> list[str]:
    """Where ``runs`` break the office map's rules for ``text`` ([] when none does).

    Runs are sorted and cover every character exactly once; a synthetic run has no part and an
    empty source range; every other run reads back from ``part_text(part)`` as its text (a
    whitespace run of one space from any run of whitespace), and a text run's source is literal
    text (no markup, no reference).
    """
    problems, position = [], 0
    for run in runs:
        if run.start != position or run.end <= run.start:
            problems.append(f"{run}: runs must tile the text (next expected at {position})")
        position = max(position, run.end)
        if run.kind is RunKind.SYNTHETIC:
            if run.part or run.src_start != run.src_end:
                problems.append(f"{run}: a synthetic run has a source")
            continue
        source = part_text(run.part)[run.src_start:run.src_end]
        if not reads_back(source, text[run.start:run.end], run.kind):
            problems.append(f"{run}: {source[:60]!r} reads back as {read_back(source)[:60]!r}, "
                            f"the text has {text[run.start:run.end][:60]!r}")
        elif run.kind is RunKind.TEXT and source != text[run.start:run.end]:
            problems.append(f"{run}: a text run's source differs from its text")
    if position != len(text):
        problems.append(f"the runs end at {position}, the text at {len(text)}")
    return problems
