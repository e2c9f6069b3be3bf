"""An HTML tokenizer that reports where every token lies in the decoded source.

It follows the tokenizer states of the HTML standard where they decide what is
text and what is markup (comments and their malformed closers, bogus comments,
raw-text and RCDATA elements, the escape states of ``<script>``, end of file
inside a tag), because Python's ``html.parser`` does not: it ends a comment at
``-- >``, leaks an unclosed comment as text at end of file, and so on.

Tokens are tuples, cheap to make and to unpack:

- ``(TEXT, start, end)``: character data, character references still in it;
- ``(RAW, start, end, name)``: the content of a raw-text or RCDATA element
  (``script``, ``style``, ``title``, ``textarea``...) or a CDATA section in
  foreign content (name ``"#cdata"``);
- ``(START, start, end, name, self_closing, attrs_start)``: a start tag,
  ``source[attrs_start:end - 1]`` holds its attributes;
- ``(END, start, end, name)``: an end tag.

Comments, doctypes and processing instructions produce no token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

TEXT, RAW, START, END = range(4)

# Quoted attribute values may hold ">"; a quote left open runs to the end of the
# file (and then the tag is dropped, as browsers do). Possessive quantifiers keep
# the match linear on malformed input.
_TAG_REST = (
    r"(?:[\t\n\f\r /]++"
    r"|[^\t\n\f\r />][^\t\n\f\r /=>]*+"
    r"(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+"
    r"(?:\"[^\"]*+(?:\"|\Z)|'[^']*+(?:'|\Z)|[^\t\n\f\r >\"'][^\t\n\f\r >]*+|(?=>)))?+"
    r")*+>"
)
_START_TAG = re.compile(r"<([a-zA-Z][^\t\n\f\r />]*+)" + _TAG_REST)
_END_TAG = re.compile(r"</([a-zA-Z][^\t\n\f\r />]*+)" + _TAG_REST)
_MARKUP_OPEN = re.compile(r"<[a-zA-Z!/?]")
_COMMENT_END = re.compile(r"--!?>")
_ATTR = re.compile(
    r"([^\t\n\f\r />][^\t\n\f\r /=>]*)"
    r"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"([^\"]*)\"|'([^']*)'|([^\t\n\f\r >]*)))?"
)

_SCRIPT_DATA = re.compile(r"</script[\t\n\f\r />]|<!--", re.I)
_SCRIPT_ESCAPED = re.compile(r"</script[\t\n\f\r />]|<script[\t\n\f\r />]|-->", re.I)
_SCRIPT_DOUBLE_ESCAPED = re.compile(r"</script[\t\n\f\r />]|-->", re.I)

# Elements whose content the tokenizer reads as text up to their end tag
# (scripting enabled, so <noscript> is raw text too).
RAW_TEXT_ELEMENTS = frozenset(
    {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "title", "textarea"}
)
_RAW_END = {
    name: re.compile(r"</" + name + r"[\t\n\f\r />]", re.I) for name in RAW_TEXT_ELEMENTS
}


def parse_attrs(source: str, start: int, end: int) -> dict[str, str]:
    """Attributes of a tag from its attribute text; the first of a repeated name wins.

    >>> parse_attrs('<p class="a" HIDDEN>', 2, 19)
    {'class': 'a', 'hidden': ''}
    """
    attrs: dict[str, str] = {}
    for m in _ATTR.finditer(source, start, end):
        name = m.group(1).lower()
        if name not in attrs:
            value = m.group(2)
            if value is None:
                value = m.group(3)
            if value is None:
                value = m.group(4) or ""
            attrs[name] = value
    return attrs


def _script_end(source: str, pos: int) -> int:
    """Where the content of a <script> that starts at ``pos`` ends.

    A ``</script>`` ends it even inside a JavaScript string; only the
    ``<!-- <script>`` double-escape of the standard protects one.
    """
    n = len(source)
    while True:
        m = _SCRIPT_DATA.search(source, pos)
        if m is None:
            return n
        if m.group()[1] == "/":
            return m.start()
        pos = m.end() - 2  # the "--" of "<!--" may already begin "-->"
        while True:  # script data escaped
            m = _SCRIPT_ESCAPED.search(source, pos)
            if m is None:
                return n
            found = m.group()
            if found[0] == "-":
                pos = m.end()
                break
            if found[1] == "/":
                return m.start()
            m = _SCRIPT_DOUBLE_ESCAPED.search(source, m.end())
            if m is None:
                return n
            pos = m.end()
            if m.group()[0] == "-":
                break


class Tokenizer:
    """Iterate over the tokens of ``source``.

    The tree builder sets ``foreign`` while it is inside <svg> or <math>, where
    <style> and <title> are ordinary elements and CDATA sections are text.

    >>> [t[:3] for t in Tokenizer("a<!-- x -- > y -->b")]
    [(0, 0, 1), (0, 18, 19)]
    """

    def __init__(self, source: str, start: int = 0) -> None:
        """``start``: where to begin, a position in character data (the viewer shows a window of
        a large page from a place its source map knows to be text)."""
        self.source = source
        self.start = start
        self.foreign = False

    def __iter__(self) -> Iterator[tuple]:
        source = self.source
        n = len(source)
        pos = self.start  # where scanning resumes
        text_start = self.start  # start of character data not yet reported
        while True:
            m = _MARKUP_OPEN.search(source, pos)
            if m is None:
                break
            lt = m.start()
            second = source[lt + 1]
            if second == "/" and lt + 2 >= n:
                break  # "</" at the end of the file is text
            if text_start < lt:
                yield (TEXT, text_start, lt)
            if second == "!":
                end = self._markup_declaration(lt)
                if end < 0:  # a CDATA section in foreign content: text
                    close = source.find("]]>", lt + 9)
                    close = n if close < 0 else close
                    if close > lt + 9:
                        yield (RAW, lt + 9, close, "#cdata")
                    end = n if close == n else close + 3
            elif second == "?":
                end = self._to_gt(lt + 2)
            elif second == "/":
                third = source[lt + 2]
                if third == ">":
                    end = lt + 3
                elif "a" <= third <= "z" or "A" <= third <= "Z":
                    t = _END_TAG.match(source, lt)
                    if t is None:
                        return  # end of file inside a tag: the tag is dropped
                    end = t.end()
                    yield (END, lt, end, t.group(1).lower())
                else:
                    end = self._to_gt(lt + 2)  # bogus comment
            else:
                t = _START_TAG.match(source, lt)
                if t is None:
                    return
                end = t.end()
                name = t.group(1).lower()
                yield (START, lt, end, name, source[end - 2] == "/", t.end(1))
                # The tree builder has now seen the tag and set `foreign`.
                if name in RAW_TEXT_ELEMENTS and not self.foreign:
                    if name == "script":
                        close = _script_end(source, end)
                    else:
                        found = _RAW_END[name].search(source, end)
                        close = found.start() if found else n
                    if close > end:
                        yield (RAW, end, close, name)
                    end = close
                elif name == "plaintext" and not self.foreign:
                    if n > end:
                        yield (RAW, end, n, name)
                    return
            pos = text_start = end
        if text_start < n:
            yield (TEXT, text_start, n)

    def _to_gt(self, pos: int) -> int:
        end = self.source.find(">", pos)
        return len(self.source) if end < 0 else end + 1

    def _markup_declaration(self, lt: int) -> int:
        """End of a comment, doctype or bogus comment at ``lt``; -1 for foreign CDATA."""
        source = self.source
        if source.startswith("<!--", lt):
            p = lt + 4
            if source.startswith(">", p):  # <!--> closes at once
                return p + 1
            if source.startswith("->", p):  # and so does <!--->
                return p + 2
            m = _COMMENT_END.search(source, p)
            return m.end() if m else len(source)
        if self.foreign and source.startswith("<![CDATA[", lt):
            return -1
        return self._to_gt(lt + 2)
