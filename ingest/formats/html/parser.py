"""HTML to document text, with a map from every character back to the decoded source.

The document text is what a browser renders (think ``innerText``): no scripts,
styles, comments or hidden elements; whitespace collapsed outside ``<pre>``;
block elements separated by line breaks. Every character of it is covered by
exactly one ``HtmlRun`` (see ``schemas.records``): copied source text, one
character reference, one collapsed run of whitespace, or a separator the parser
inserted (an empty source range at the tag that caused it).

Positions come from ``ingest.formats.html.tokens``; this module is the tree builder: a
stack of open elements with the implicit closes of the HTML standard that
decide what is hidden and where blocks end, feeding ``ingest.formats.html.text.TextBuilder``.
"""

from __future__ import annotations

import re
from collections import Counter
from html import unescape

from ingest.formats.encoding import decode_source
from ingest.formats.headings import headings_in
from ingest.formats.html.meta import canonical_url, published_date
from ingest.formats.html.tags import (
    BREAKOUT,
    BUTTON_SCOPE,
    CLOSES_P,
    DROPS_FIRST_NEWLINE,
    FORMATTING,
    HEADINGS,
    HIDDEN,
    IN_HEAD,
    LIST_SCOPE,
    PREFORMATTED,
    ROW_GROUPS,
    SCOPE,
    SEPARATOR,
    SKIPPED_RAW,
    SPECIAL,
    STRUCTURAL,
    TABLE_SCOPE,
    VOID,
)
from ingest.formats.html.text import LINE, PARAGRAPH, TAB, TextBuilder, charref
from ingest.formats.html.tokens import END, START, TEXT, Tokenizer, parse_attrs
from ingest.formats.html.visibility import ROOT_STYLE, InlineStyles, hidden_runs
from schemas.records import MediaType, ParsedDocument, RunKind

# Whitespace that is not a lone space, character references, NUL.
_FLOW_SPLIT = re.compile(r"[\t\n\r\f][ \t\n\r\f]*| [ \t\n\r\f]+|[&\x00]")
_PRE_SPLIT = re.compile(r"\r\n?|[&\x00]")
_NOT_SPACE = re.compile(r"[^ \t\n\r\f]")
_SPACES = re.compile(r"[ \t\n\r\f]+")
# A cheap test before the attributes are parsed: a bare "hidden", or CSS that hides.
_MAYBE_HIDING = re.compile(
    r"(?:^|[\t\n\f\r /\"'])hidden(?:[\t\n\f\r /=>]|$)|display\s*:\s*none|visibility\s*:\s*hidden"
    r"|&",  # a character reference could spell either
    re.I,
)
_CSS_HIDDEN = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_ASCII_WHITESPACE = frozenset(" \t\n\r\f")


def parse_html(source: bytes, doc_id: str) -> ParsedDocument:
    """Decode an HTML file and extract its visible text, mapped back to the source.

    >>> doc = parse_html(b"<title>T</title><p>Fish &amp; chips</p><p>Tea", "menu.html")
    >>> doc.text, doc.title
    ('Fish & chips\\n\\nTea', 'T')
    >>> run = doc.html_runs[1]
    >>> doc.text[run.start:run.end], doc.decoded_source[run.src_start:run.src_end], run.kind
    ('&', '&amp;', <RunKind.ENTITY: 'entity'>)
    """
    decoded = decode_source(source, doc_id, html=True)
    return parse_html_text(decoded.text, doc_id, encoding=decoded.encoding,
                           warnings=decoded.warnings)


def parse_html_text(
    decoded_source: str,
    doc_id: str,
    *,
    encoding: str | None = None,
    warnings: tuple[str, ...] = (),
) -> ParsedDocument:
    """Like ``parse_html``, for HTML already decoded to ``str``.

    >>> parse_html_text("<pre>\\n a  b</pre>x <b> y</b>", "p.html").text
    ' a  b\\n\\nx y'
    """
    builder = _TreeBuilder(decoded_source)
    builder.run()
    builder.close_headings()
    text, runs = builder.out.result()
    return ParsedDocument(
        headings=headings_in(text, builder.headings),
        hidden_runs=hidden_runs(text, builder.out.hidden),
        doc_id=doc_id,
        media_type=MediaType.HTML,
        text=text,
        title=builder.title,
        encoding=encoding,
        html_runs=runs,
        decoded_source=decoded_source,
        warnings=warnings,
        source_url=canonical_url(decoded_source),
        created=published_date(decoded_source),
    )


class _TreeBuilder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.out = TextBuilder(source)
        self.tokens = Tokenizer(source)
        self.title = ""
        self.has_title = False
        self.open_headings: list[list] = []  # the h1-h6 elements open, each [entry, text length at its start]
        self.headings: list[tuple[int, int, int]] = []  # (start, end, level) in the text, of visible headings
        # Open elements: [name, hidden, preformatted, foreign, separator, cells, style, reason]
        # (style: what its inline styles pass on; reason: why the text in it is hidden, or None)
        self.stack: list[list] = []
        self.styles = InlineStyles(source)
        self.starting: tuple[str, int, int] | None = None  # the start tag being handled
        self.open_names: Counter[str] = Counter()
        self.hidden = 0  # open elements that hide their content
        self.pre = 0
        self.foreign = 0
        self.head: list | None = None
        self.head_done = False
        self.first_newline_at = -1  # a newline here (just after <pre>) is dropped
        self.references: dict[str, tuple[int, str]] = {}  # source spelling -> (length, text)

    def run(self) -> None:
        tokens, on_text, on_start, on_end = self.tokens, self._text, self._start, self._end
        for token in tokens:
            kind = token[0]
            if kind == TEXT:
                on_text(token[1], token[2])
            elif kind == START:
                on_start(*token[1:])
                tokens.foreign = self.foreign > 0
            elif kind == END:
                on_end(token[3], token[1])
                tokens.foreign = self.foreign > 0
            else:  # RAW: the content of a raw-text element
                self._raw(token[1], token[2], token[3])

    # -- text

    def _text(self, start: int, end: int) -> None:
        if self.head is not None and self.stack[-1] is self.head:
            if _NOT_SPACE.search(self.source, start, end) is None:
                return
            self._close_head(start)
        if self.hidden:
            return
        if self.pre:
            self._pre_text(start, end, refs=True)
        else:
            self._flow_text(start, end)

    def _flow_text(self, start: int, end: int) -> None:
        source, out = self.source, self.out
        # Whitespace at the ends of the token depends on what surrounds it; inside,
        # a lone space between characters is kept as it is (and stays in the TEXT run).
        pos = start
        lead = _SPACES.match(source, pos, end)
        if lead is not None:
            out.whitespace(pos, lead.end())
            pos = lead.end()
        stop = end
        while stop > pos and source[stop - 1] in _ASCII_WHITESPACE:
            stop -= 1
        while pos < stop:
            m = _FLOW_SPLIT.search(source, pos, stop)
            if m is None:
                out.text(pos, stop)
                break
            at = m.start()
            if at > pos:
                out.text(pos, at)
            found = source[at]
            if found == "&":
                pos = self._reference(at, stop)
            elif found == "\x00":  # browsers drop NUL from text
                pos = at + 1
            else:
                out.whitespace(at, m.end())
                pos = m.end()
        if stop < end and pos <= stop:
            out.whitespace(stop, end)

    def _pre_text(self, start: int, end: int, *, refs: bool) -> None:
        source, out = self.source, self.out
        pos = start
        if start == self.first_newline_at and source[start] in "\r\n":
            pos = start + (2 if source.startswith("\r\n", start) else 1)
        while pos < end:
            m = _PRE_SPLIT.search(source, pos, end)
            if m is None:
                out.text(pos, end)
                return
            at = m.start()
            if at > pos:
                out.text(pos, at)
            found = source[at]
            if found == "&":
                if refs:
                    pos = self._reference(at, end)
                else:
                    out.text(at, at + 1)
                    pos = at + 1
            elif found == "\x00":
                pos = at + 1
            else:  # CR or CRLF: the browser reads a newline
                out.emit("\n", at, m.end(), RunKind.WHITESPACE)
                pos = m.end()

    def _reference(self, amp: int, end: int) -> int:
        """Emit the character reference at ``amp`` (or a literal "&"); where to go on."""
        found = charref(self.source, amp, end, self.references)
        if found is None:
            self.out.text(amp, amp + 1)
            return amp + 1
        ref_end, value = found
        if not value:
            return ref_end  # a reference to a noncharacter: html.unescape drops it
        if not self.pre and all(c in _ASCII_WHITESPACE for c in value):
            if value == " ":
                self.out.whitespace(amp, ref_end, RunKind.ENTITY)
            else:  # collapses to a space that no source character spells
                self.out.whitespace(amp, amp, RunKind.SYNTHETIC)
            return ref_end
        self.out.emit(value, amp, ref_end, RunKind.ENTITY)
        return ref_end

    def _raw(self, start: int, end: int, name: str) -> None:
        if name == "title":
            if not self.has_title:
                self.has_title = True
                self.title = _SPACES.sub(" ", unescape(self.source[start:end])).strip(" ")
        elif self.hidden or name not in ("textarea", "xmp", "plaintext", "#cdata"):
            return
        elif name == "#cdata" and not self.pre:
            # literal text, no references: split on whitespace only
            pos = start
            for m in _SPACES.finditer(self.source, start, end):
                if m.start() > pos:
                    self.out.text(pos, m.start())
                self.out.whitespace(m.start(), m.end())
                pos = m.end()
            if pos < end:
                self.out.text(pos, end)
        else:
            self._pre_text(start, end, refs=name == "textarea")

    # -- tags

    def _start(self, start: int, end: int, name: str, self_closing: bool, attrs_at: int) -> None:
        self.starting = (name, attrs_at, end)
        if self.foreign and not self._foreign_start(start, end, name, self_closing, attrs_at):
            return
        if self.head is not None and name not in IN_HEAD and self.stack[-1] is self.head:
            self._close_head(start)
        if not self.head_done and name not in IN_HEAD and name != "html":
            self.head_done = True  # a <head> after body content is ignored
        if name in STRUCTURAL and not self._implicit_closes(start, name, self_closing):
            return
        if name in VOID or name in SKIPPED_RAW:
            if name in ("br", "hr") and not self.hidden:
                if not self._is_hidden(name, attrs_at, end):
                    if name == "br":
                        self.out.line_break(start)
                    else:
                        self.out.separator(PARAGRAPH, start)
            return
        sep = SEPARATOR.get(name, 0)
        self._push(name, self._is_hidden(name, attrs_at, end), name in PREFORMATTED,
                   name in ("svg", "math"), sep)
        if sep and not self.hidden:
            self.out.separator(sep, start)
        if name in ("td", "th") and not self.hidden:
            row = self._innermost("tr")
            if row[5]:
                self.out.separator(TAB, start)
            row[5] += 1
        elif name in DROPS_FIRST_NEWLINE:
            self.first_newline_at = end

    def _foreign_start(
        self, start: int, end: int, name: str, self_closing: bool, attrs_at: int
    ) -> bool:
        """A start tag inside SVG or MathML; True if it leaves foreign content."""
        if name not in BREAKOUT:
            if not self_closing:
                self._push(name, self._is_hidden(name, attrs_at, end), False, True, 0)
            return False
        while self.stack and self.stack[-1][3]:
            self._pop(start)
        return True

    def _implicit_closes(self, start: int, name: str, self_closing: bool) -> bool:
        """Close what a start tag closes; False if the tag opens nothing itself."""
        if name in ("html", "body", "head"):
            if name == "head" and not self.head_done:
                self.head = self._push("head", True, False, False, 0)
            elif name == "body" and self.head is not None:
                self._close_head(start)
            self.head_done = name != "html" or self.head_done
            return False
        if name in CLOSES_P and self.open_names["p"]:
            self._close_in_scope("p", BUTTON_SCOPE, start)
        if name == "li" and self.open_names["li"]:
            self._close_list_item(("li",), start)
        elif name in ("dd", "dt") and (self.open_names["dd"] or self.open_names["dt"]):
            self._close_list_item(("dd", "dt"), start)
        elif name in HEADINGS and self.stack and self.stack[-1][0] in HEADINGS:
            self._pop(start)
        elif name in ("td", "th"):
            return self._start_cell(start)
        elif name == "tr" or name in ROW_GROUPS:
            if not self.open_names["table"]:
                return False
            if self.open_names["tr"]:
                self._close_in_scope("tr", TABLE_SCOPE, start)
            return name == "tr"
        elif name == "option" and self.stack and self.stack[-1][0] == "option":
            self._pop(start)
        elif name == "optgroup":
            while self.stack and self.stack[-1][0] in ("option", "optgroup"):
                self._pop(start)
        elif name in ("svg", "math"):
            return not self_closing  # foreign elements honour "/>"
        return True

    def _end(self, name: str, start: int) -> None:
        if name in ("html", "body"):
            return
        if name == "head":
            if self.head is not None:
                self._close_head(start)
            return
        if name == "br":  # </br> is read as <br>
            if not self.hidden:
                self.out.line_break(start)
            return
        stack = self.stack
        if stack and stack[-1][0] == name:  # the usual case: it closes the current element
            self._pop(start)
            return
        if not self.open_names[name]:
            if name == "p" and not self.hidden:  # </p> alone makes an empty paragraph
                self.out.separator(PARAGRAPH, start)
            return
        if self.foreign:  # SVG and MathML end tags close the element of that name
            for i in range(len(stack) - 1, -1, -1):
                if not stack[i][3]:
                    break
                if stack[i][0] == name:
                    while len(stack) > i:
                        self._pop(start)
                    return
        if name in FORMATTING:
            scope = SCOPE
        elif name in SPECIAL:
            scope = (TABLE_SCOPE if name in ("table", "tr", "td", "th", "caption")
                     else LIST_SCOPE if name == "li"
                     else BUTTON_SCOPE if name == "p" else SCOPE)
        else:  # any other end tag stops at the first special element
            scope = SPECIAL
        for i in range(len(stack) - 1, -1, -1):
            open_name = stack[i][0]
            if open_name == name:
                break
            if open_name in scope:
                if name == "p" and not self.hidden:
                    self.out.separator(PARAGRAPH, start)
                return
        else:
            return
        if name in FORMATTING:
            # Close it and the inline elements inside it, but leave open the blocks
            # that started inside it (what the adoption agency amounts to here).
            for j in range(i + 1, len(stack)):
                if stack[j][0] in SPECIAL:
                    for _ in range(j - i):
                        self._remove(i, start)
                    return
        while len(stack) > i:
            self._pop(start)

    def _start_cell(self, start: int) -> bool:
        """Close the open cell, open a row if there is none; False if outside any table."""
        if not self.open_names["table"]:
            return False
        if self.open_names["td"] or self.open_names["th"]:
            for i in range(len(self.stack) - 1, -1, -1):
                open_name = self.stack[i][0]
                if open_name in ("td", "th"):
                    while len(self.stack) > i:
                        self._pop(start)
                    break
                if open_name in TABLE_SCOPE:
                    break
        for entry in reversed(self.stack):
            if entry[0] == "tr":
                return True
            if entry[0] in TABLE_SCOPE:
                break
        self._push("tr", False, False, False, LINE)
        if not self.hidden:
            self.out.separator(LINE, start)
        return True

    def _close_in_scope(self, name: str, scope: frozenset[str], at: int) -> None:
        stack = self.stack
        for i in range(len(stack) - 1, -1, -1):
            open_name = stack[i][0]
            if open_name == name:
                while len(stack) > i:
                    self._pop(at)
                return
            if open_name in scope:
                return

    def _close_list_item(self, names: tuple[str, ...], at: int) -> None:
        stack = self.stack
        for i in range(len(stack) - 1, -1, -1):
            open_name = stack[i][0]
            if open_name in names:
                while len(stack) > i:
                    self._pop(at)
                return
            if open_name in SPECIAL and open_name not in ("address", "div", "p"):
                return

    def _close_head(self, at: int) -> None:
        while self.head is not None and self.stack:
            if self._pop(at) is self.head:
                self.head = None

    def _innermost(self, name: str) -> list:
        for entry in reversed(self.stack):
            if entry[0] == name:
                return entry
        raise AssertionError(name)

    def _is_hidden(self, name: str, attrs_at: int, end: int) -> bool:
        if name in HIDDEN:
            return True
        if name == "dialog":
            return "open" not in parse_attrs(self.source, attrs_at, end - 1)
        if _MAYBE_HIDING.search(self.source, attrs_at, end) is None:
            return False
        attrs = parse_attrs(self.source, attrs_at, end - 1)
        if "hidden" in attrs:
            return True
        style = attrs.get("style")
        return style is not None and _CSS_HIDDEN.search(unescape(style)) is not None

    def _push(self, name: str, hidden: bool, pre: bool, foreign: bool, sep: int) -> list:
        foreign = foreign or self.foreign > 0
        style = self.stack[-1][6] if self.stack else ROOT_STYLE
        starting = self.starting
        if starting is not None and starting[0] == name:  # the element of the tag, not one it implies
            self.starting = None
            style = self.styles.child(style, starting[1], starting[2])
        reason = self.styles.reason(style)
        entry = [name, hidden, pre, foreign, sep, 0, style, reason]
        self.out.reason = reason
        self.stack.append(entry)
        if name in HEADINGS and not foreign:
            self.open_headings.append([entry, self.out.length])
        self.open_names[name] += 1
        self.hidden += hidden
        self.pre += pre
        self.foreign += foreign
        return entry

    def _close_heading(self) -> None:
        entry, start = self.open_headings.pop()
        if not self.hidden and entry[7] is None:  # a heading a reader sees (text hidden by CSS is no heading)
            self.headings.append((start, self.out.length, int(entry[0][1])))

    def close_headings(self) -> None:
        """The headings still open where the source ends (``<h1>Title`` and nothing after)."""
        while self.open_headings:
            self._close_heading()

    def _pop(self, at: int) -> list:
        return self._remove(len(self.stack) - 1, at)

    def _remove(self, index: int, at: int) -> list:
        entry = self.stack.pop(index)
        name, hidden, pre, foreign, sep = entry[:5]
        if self.open_headings and self.open_headings[-1][0] is entry:
            self._close_heading()
        if sep and not self.hidden:
            self.out.separator(sep, at)
        self.out.reason = self.stack[-1][7] if self.stack else None
        self.open_names[name] -= 1
        self.hidden -= hidden
        self.pre -= pre
        self.foreign -= foreign
        return entry
