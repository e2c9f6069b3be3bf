"""What a range of a part's XML reads as: the check that an office run says the truth.

For every run that is not synthetic, ``read_back(source[src_start:src_end]) == text[start:end]``
(tags stripped, character references unescaped, CRLF read as LF, and an element that stands for
one character read as that character). Tests hold every parser of this package to it; a
checker of a built index can hold the stored map to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from schemas.records import OfficeRun, RunKind

# Local names of the elements that stand for one character (w:tab, w:br, a:br, ...).
ELEMENT_CHARACTERS = {"tab": "\t", "ptab": "\t", "br": "\n", "cr": "\n", "noBreakHyphen": "\u2011"}
_START_TAG = re.compile(r"<((?:[\w.-]+:)?([\w.-]+))((?:\s[^>]*?)?)(/?)>", re.S)
_TAG = re.compile(r"<!\[CDATA\[|\]\]>|<[^>]*>")
_REFERENCE = re.compile(r"&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_SYMBOL_CHAR = re.compile(r"""(?:[\w.-]+:)?char\s*=\s*["']([0-9a-fA-F]+)["']""")


def read_back(fragment: str) -> str:
    """The text a range of XML source stands for.

    >>> read_back("Fish &amp; chips"), read_back('<w:tab/>'), read_back("<w:t>a</w:t>&#x42;\\r\\n")
    ('Fish & chips', '\\t', 'aB\\n')
    >>> read_back('<w:sym w:font="Wingdings" w:char="F0FC"/>')
    '\\uf0fc'
    >>> read_back('<a:br><a:rPr lang="en"/></a:br>')
    '\\n'
    """
    tag = _START_TAG.match(fragment)
    # The whole of one element (its properties inside it, as a:br holds a:rPr)
    whole = tag is not None and (len(tag.group(0)) == len(fragment) if tag.group(4)
                                 else fragment.endswith(f"</{tag.group(1)}>"))
    if whole:
        name, attributes = tag.group(2), tag.group(3)
        if name in ELEMENT_CHARACTERS:
            return ELEMENT_CHARACTERS[name]
        symbol = _SYMBOL_CHAR.search(attributes) if name == "sym" else None
        if symbol is not None:
            return chr(int(symbol.group(1), 16))
    text = _TAG.sub("", fragment).replace("\r\n", "\n").replace("\r", "\n")
    return _REFERENCE.sub(_unescape, text)


def _unescape(match: re.Match) -> str:
    name = match.group(1)
    if name.startswith("#x"):
        return chr(int(name[2:], 16))
    if name.startswith("#"):
        return chr(int(name[1:]))
    return _NAMED[name]


def office_run_problems(text: str, runs: Sequence[OfficeRun], part_text: Callable[[str], str]) -> list[str]:
    """Where ``runs`` break the office map's rules for ``text`` ([] when none does).

    Runs are sorted and cover every character exactly once; a synthetic run has no part and an
    empty source range; every other run reads back from ``part_text(part)`` as its text, and a
    text run's source is literal text (no markup, no reference).
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
        if read_back(source) != text[run.start:run.end]:
            problems.append(f"{run}: {source[:60]!r} reads back as {read_back(source)[:60]!r}, "
                            f"the text has {text[run.start:run.end][:60]!r}")
        elif run.kind is RunKind.TEXT and source != text[run.start:run.end]:
            problems.append(f"{run}: a text run's source differs from its text")
    if position != len(text):
        problems.append(f"the runs end at {position}, the text at {len(text)}")
    return problems
