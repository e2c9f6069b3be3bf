"""Untrusted HTML made inert: nothing in it can run, and nothing in it can load.

The page is rebuilt token by token from the decoded source (``ingest.formats.html.tokens``,
the tokenizer whose offsets the source map counts), so that every text token is
copied verbatim and can be found again by its source range. On the way, whatever
could run or reach out is left out: ``<script>`` and other active elements, ``on*``
attributes, ``javascript:``/``vbscript:``/``data:`` URLs, ``<base>``, ``<meta>``,
``<link>``, comments, the URLs the page would fetch by itself (``src``, ``poster``,
``href`` outside links...; inline ``data:image`` kept), and what its CSS would fetch:
``url()``, ``image-set()`` and the like in style sheets, ``style`` attributes and SVG
presentation attributes become ``none`` (same-document ``url(#id)`` stays), and
``@import`` rules are removed. Tags are re-serialised from their parsed attributes,
never copied, so malformed markup cannot smuggle anything through.

Two users: the viewer shows the result (with marks) in a sandboxed frame under a
restrictive CSP, the second wall; the layout stage (``ingest.formats.html.layout``) has a
headless browser lay it out, every request blocked as well.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence

from ingest.formats.html.tags import BREAKOUT
from ingest.formats.html.tokens import END, RAW, START, TEXT, Tokenizer, parse_attrs

# Elements dropped with their tags; those the tokenizer reads as raw text lose their content too.
DROPPED = frozenset({
    "script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "meta",
    "link", "noscript", "portal", "fencedframe", "animate", "animatemotion",
    "animatetransform", "set", "handler", "listener",
})
_URL_ATTRS = frozenset({"href", "action", "formaction", "xlink:href", "cite", "longdesc", "ping", "manifest", "icon", "usemap"})
# Elements whose href is a link to follow, not something the page fetches by itself.
_LINKS = frozenset({"a", "area"})
_HREF_ATTRS = frozenset({"href", "xlink:href"})
# URLs the page would fetch by itself: the stored copy cannot load them (no network, and a
# relative one would point at the viewer), so only inline images are kept.
_SUBRESOURCE_ATTRS = frozenset({"src", "poster", "background", "data", "codebase", "lowsrc", "dynsrc"})
_DROPPED_ATTRS = frozenset({"srcset", "srcdoc", "http-equiv", "autofocus", "imagesrcset"})
_SAFE_ATTR_NAME = re.compile(r"[a-z_][a-z0-9_.:-]*\Z")
_SAFE_DATA_URL = re.compile(r"data:image/(?:png|jpeg|gif|webp);", re.IGNORECASE)
_ACTIVE_SCHEME = re.compile(r"(?:javascript|vbscript|data|livescript):", re.IGNORECASE)
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")  # browsers strip these from URLs before parsing
_DOCTYPE = re.compile(r"\s*<!doctype", re.IGNORECASE)
_FOREIGN = frozenset({"svg", "math"})
# Start tags after which the browser drops one newline at the start of the content.
_DROPS_NEWLINE = frozenset({"pre", "listing"})

# -- CSS

_CSS_ESCAPE = r"\\(?:[0-9a-fA-F]{1,6}[ \t\n\r\f]?|[^\n\r\f0-9a-fA-F])"
_IDENT = rf"(?:[-\w\u0080-\U0010ffff]|{_CSS_ESCAPE})+"
# What the scanner stops at: a comment, a string, a function name, an at-keyword.
_CSS_TOKEN = re.compile(
    r"/\*[\s\S]*?(?:\*/|\Z)"
    r"|\"(?:[^\"\\\n]|\\(?:.|\n))*\"?|'(?:[^'\\\n]|\\(?:.|\n))*'?"
    rf"|(?<![-\w\u0080-\U0010ffff\\])(?P<function>{_IDENT})\(|@(?P<at>{_IDENT})",
)
_ESCAPE = re.compile(_CSS_ESCAPE)
# CSS functions that fetch what they name (image-set takes bare strings as URLs).
_LOADING_FUNCTIONS = frozenset({
    "url", "src", "image", "image-set", "-webkit-image-set", "cross-fade", "-webkit-cross-fade",
    "element", "-moz-element",
})
_STRING_OR_PAREN = re.compile(r"\"(?:[^\"\\\n]|\\(?:.|\n))*\"?|'(?:[^'\\\n]|\\(?:.|\n))*'?|\\(?:.|\n)|[()]")
_STATEMENT_END = re.compile(r"\"(?:[^\"\\\n]|\\(?:.|\n))*\"?|'(?:[^'\\\n]|\\(?:.|\n))*'?|\\(?:.|\n)|[;{]")


def neutralise_css(css: str) -> str:
    """CSS with everything that would fetch a resource taken out.

    Loading functions become ``none`` (a ``url(#id)`` into the same document stays,
    it fetches nothing), ``@import`` rules go; escapes in names are read as the
    browser reads them, and strings and comments are skipped, not searched.

    >>> neutralise_css('@import "a.css"; p{background:url(x.png) no-repeat;fill:url(#g)}')
    ' p{background:none no-repeat;fill:url(#g)}'
    >>> neutralise_css('b{content:"url(kept)";background:\\\\75 rl(y.png);cursor:-webkit-image-set("c.png" 1x)}')
    'b{content:"url(kept)";background:none;cursor:none}'
    """
    if "(" not in css and "@" not in css:
        return css
    out: list[str] = []
    pos = scan = 0
    while (m := _CSS_TOKEN.search(css, scan)) is not None:
        scan = max(m.end(), scan + 1)
        name = m.group("function")
        if name is not None:
            name = _css_name(name)
            if name in _LOADING_FUNCTIONS:
                end = _function_end(css, m.end())
                scan = end
                if name == "url" and _same_document(css[m.end():end]):
                    continue
                out += [css[pos:m.start()], "none"]
                pos = end
            continue
        at = m.group("at")
        if at is not None and _css_name(at) == "import":
            end = scan = _statement_end(css, m.end())
            out.append(css[pos:m.start()])
            pos = end
    out.append(css[pos:])
    return "".join(out)


def _css_name(name: str) -> str:
    if "\\" in name:
        name = _ESCAPE.sub(_unescape_css, name)
    return name.lower()


def _unescape_css(m: re.Match) -> str:
    body = m.group()[1:].rstrip(" \t\n\r\f")
    if body and all(c in "0123456789abcdefABCDEF" for c in body):
        code = int(body, 16)
        return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"
    return body


def _function_end(css: str, pos: int) -> int:
    """Just after the ")" that closes a function whose arguments start at ``pos``."""
    depth = 1
    for m in _STRING_OR_PAREN.finditer(css, pos):
        token = m.group()
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                return m.end()
    return len(css)


def _statement_end(css: str, pos: int) -> int:
    """Just after the ";" that ends an at-rule statement (or before a stray block)."""
    for m in _STATEMENT_END.finditer(css, pos):
        if m.group() == ";":
            return m.end()
        if m.group() == "{":
            return m.start()
    return len(css)


def _same_document(arguments: str) -> bool:
    """``url(#id)``: a reference into the page itself, which fetches nothing."""
    inner = arguments[:-1] if arguments.endswith(")") else arguments
    inner = _ESCAPE.sub(_unescape_css, inner).strip(" \t\n\r\f")
    if inner[:1] in ("'", '"'):
        inner = inner[1:-1] if len(inner) > 1 and inner[-1] == inner[0] else inner[1:]
    return inner.startswith("#")


def _style_sheet(css: str) -> str:
    """The content of a <style> element, inert however the browser reads it."""
    css = neutralise_css(css)
    # Read as markup (a <style> the browser places in SVG), its text is entity-decoded.
    if "&" in css:
        decoded = html.unescape(css)
        if neutralise_css(decoded) != decoded:
            css = css.replace("&", "")
    # "<" never starts markup inside a style sheet, whichever way it is read.
    return css.replace("<", "\\3c ")


# -- HTML


class Defuser:
    """Rebuilds decoded HTML without anything active; subclasses annotate the text.

    >>> Defuser('<p onclick="x()" style="background:url(a.png)">Hi<script>evil()</script>').html()
    '<p style="background:none">Hi'
    """

    def __init__(self, decoded_source: str) -> None:
        self.source = decoded_source

    def text(self, start: int, end: int) -> str:
        """What a text token ``source[start:end]`` becomes (the viewer marks spans here)."""
        return self.source[start:end]

    def html(self, head: str = "") -> str:
        """The defused page; ``head`` is written first (after the doctype, if the page has one)."""
        return "".join(self.pieces(head))

    def pieces(
        self,
        head: str = "",
        *,
        windows: Sequence[tuple[int, int]] | None = None,
        gap: str = "",
        max_attribute: int | None = None,
        max_tag: int | None = None,
    ) -> Iterator[str]:
        """The defused page in pieces, as they are made (what a server streams). With ``windows``
        (sorted, disjoint ``[start, end)`` ranges of the source, each starting in character data)
        only those parts, ``gap`` between two; an attribute value over ``max_attribute``
        characters is left out, and a tag over ``max_tag`` is its name alone."""
        if _DOCTYPE.match(self.source):
            yield "<!DOCTYPE html>"
        yield head
        for n, (lo, hi) in enumerate(windows if windows is not None else [(0, len(self.source))]):
            if n:
                yield gap
            yield from self._window(lo, hi, max_attribute, max_tag)

    def _window(self, lo: int, hi: int, max_attribute: int | None, max_tag: int | None) -> Iterator[str]:
        source = self.source
        tokens = Tokenizer(source, lo)
        foreign = 0  # open <svg>/<math> elements, as far as the browser would still count them
        skipping: str | None = None  # inside a dropped element whose content is raw text
        styles = 0  # open <style> elements read as markup (in SVG): their text is CSS
        drops_newline_at = -1
        for token in tokens:
            kind, start = token[0], token[1]
            if start >= hi:
                return
            if kind == TEXT:
                end = min(token[2], hi)
                if styles:
                    yield html.escape(_style_sheet(html.unescape(source[start:end])), quote=False)
                    continue
                if start == drops_newline_at and source[start] in "\r\n":
                    newline = 2 if source.startswith("\r\n", start) else 1
                    yield source[start:start + newline]
                    start += newline
                    if start >= end:
                        continue
                yield self.text(start, end)
            elif kind == START:
                _, start, end, name, self_closing, attrs_at = token
                if name in _FOREIGN and not self_closing:
                    foreign += 1
                elif foreign and name in BREAKOUT:
                    foreign = 0
                tokens.foreign = foreign > 0
                if name in DROPPED:
                    skipping = name
                    continue
                skipping = None
                if name == "style" and foreign:
                    styles += not self_closing
                tag = _start_tag(name, parse_attrs(source, attrs_at, end - 1), self_closing, max_attribute)
                yield tag if max_tag is None or len(tag) <= max_tag else f"<{name}>"
                drops_newline_at = end if name in _DROPS_NEWLINE else -1
            elif kind == END:
                name = token[3]
                if name in _FOREIGN and foreign:
                    foreign -= 1
                    tokens.foreign = foreign > 0
                elif name == "style" and styles:
                    styles -= 1
                if name not in DROPPED:
                    yield f"</{name}>"
            else:  # RAW
                _, start, end, name = token
                if skipping == name or name in DROPPED:
                    continue
                clipped = end > hi
                end = min(end, hi)
                close = f"</{name}>" if clipped else ""  # a raw-text element cut by the window is closed here
                if name in ("#cdata", "plaintext"):
                    yield html.escape(source[start:end], quote=False)
                elif name == "style":
                    yield _style_sheet(source[start:end]) + close
                else:  # title, textarea, xmp...: the same raw-text context it came from
                    yield source[start:end] + close


def defused_html(decoded_source: str) -> str:
    """The decoded HTML source with nothing active and nothing that loads.

    >>> defused_html('<img src="http://t.example/p.gif" alt="x"><a href="javascript:x()">y</a>')
    '<img alt="x"><a>y</a>'
    """
    return Defuser(decoded_source).html()


def _start_tag(name: str, attrs: dict[str, str], self_closing: bool, max_attribute: int | None = None) -> str:
    parts = [name]
    for attr, raw_value in attrs.items():
        if attr.startswith("on") or attr in _DROPPED_ATTRS or not _SAFE_ATTR_NAME.match(attr):
            continue
        if max_attribute is not None and len(raw_value) > max_attribute:
            continue
        value = html.unescape(raw_value)  # what the browser would see, entities decoded
        if attr in _URL_ATTRS and not _safe_url(value):
            continue
        if attr in _HREF_ATTRS and name not in _LINKS and not _fetches_nothing(value):
            continue  # <image href>, <use href>, <feImage href> fetch what they name
        if attr in _SUBRESOURCE_ATTRS and not _SAFE_DATA_URL.match(_URL_NOISE.sub("", value)):
            continue
        if "(" in value or "@" in value:  # style="", and SVG's fill="url(...)", mask=...
            value = neutralise_css(value)
        parts.append(f'{attr}="{html.escape(value, quote=True)}"')
    return "<" + " ".join(parts) + ("/>" if self_closing else ">")


def _safe_url(value: str) -> bool:
    squeezed = _URL_NOISE.sub("", value)
    return not _ACTIVE_SCHEME.match(squeezed) or bool(_SAFE_DATA_URL.match(squeezed))


def _fetches_nothing(value: str) -> bool:
    squeezed = _URL_NOISE.sub("", value)
    return squeezed.startswith("#") or bool(_SAFE_DATA_URL.match(squeezed))
