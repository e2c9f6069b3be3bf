"""An XML part as a small element tree whose every element and piece of text knows its place in
the part's text (decoded as UTF-8, code points).

Expat reports each event's byte index (``CurrentByteIndex``); a cursor turns byte indices into
code-point indices as the events arrive (they only move forward). Character data is aligned
with the source it came from, so that ``&amp;`` becomes one character over five source
characters (an entity piece), CRLF one newline over two (a whitespace piece), and everything
else text pieces where source and text are the same string.

A DOCTYPE is refused outright: OOXML parts never have one, and refusing it keeps every
external entity, DTD and entity-expansion attack out (no resolver is ever installed).
"""

from __future__ import annotations

import xml.parsers.expat as expat
from collections.abc import Iterator
from dataclasses import dataclass, field

from schemas.errors import CorruptDocumentError
from schemas.records import RunKind

# Namespaces by the short prefix this package names them with; Transitional and Strict OOXML
# spell the same vocabulary with different URIs.
NAMESPACES = {
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main": "w",
    "http://purl.oclc.org/ooxml/wordprocessingml/main": "w",
    "http://schemas.openxmlformats.org/drawingml/2006/main": "a",
    "http://purl.oclc.org/ooxml/drawingml/main": "a",
    "http://schemas.openxmlformats.org/presentationml/2006/main": "p",
    "http://purl.oclc.org/ooxml/presentationml/main": "p",
    "http://schemas.openxmlformats.org/spreadsheetml/2006/main": "s",
    "http://purl.oclc.org/ooxml/spreadsheetml/main": "s",
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships": "r",
    "http://purl.oclc.org/ooxml/officeDocument/relationships": "r",
    "http://schemas.openxmlformats.org/officeDocument/2006/math": "m",
    "http://purl.oclc.org/ooxml/officeDocument/math": "m",
    "http://schemas.openxmlformats.org/markup-compatibility/2006": "mc",
    "http://schemas.openxmlformats.org/package/2006/relationships": "",
}


@dataclass(frozen=True, slots=True)
class Piece:
    """Character data: ``text`` came from the part's text [src_start:src_end]."""

    text: str
    src_start: int
    src_end: int
    kind: RunKind  # TEXT (source == text), ENTITY (a character reference), WHITESPACE (CRLF)


@dataclass(slots=True, eq=False)
class Element:
    """One element: ``name`` is "w:p" for a known namespace, the bare local name otherwise."""

    name: str
    attrs: dict[str, str]
    src_start: int  # the "<" of its start tag
    src_end: int = -1  # just past its end tag (or its empty-element tag)
    children: list[Element | Piece] = field(default_factory=list)

    def elements(self) -> Iterator[Element]:
        return (c for c in self.children if isinstance(c, Element))

    def children_named(self, name: str) -> Iterator[Element]:
        return (c for c in self.children if isinstance(c, Element) and c.name == name)

    def child(self, name: str) -> Element | None:
        return next(self.children_named(name), None)

    def find(self, *path: str) -> Element | None:
        """The first element down ``path`` of child names."""
        node: Element | None = self
        for name in path:
            node = node.child(name) if node is not None else None
        return node

    def iter(self, name: str) -> Iterator[Element]:
        """Every descendant (and self) named ``name``, in document order."""
        stack = [self]
        while stack:
            node = stack.pop()
            if node.name == name:
                yield node
            stack.extend(reversed([c for c in node.children if isinstance(c, Element)]))

    def pieces(self) -> list[Piece]:
        return [c for c in self.children if isinstance(c, Piece)]

    def text(self) -> str:
        """All character data below, concatenated (for values such as a number's ``<v>``)."""
        out: list[str] = []
        stack: list[Element | Piece] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, Piece):
                out.append(node.text)
            else:
                stack.extend(reversed(node.children))
        return "".join(out)


def parse_xml(data: bytes, part: str, doc_id: str) -> tuple[Element, str]:
    """Parse one part; the root element and the part's text that every position indexes.

    >>> root, source = parse_xml(b'<a>x&amp;<b/></a>', "p.xml", "d")
    >>> [(p.text, source[p.src_start:p.src_end]) for p in root.pieces()]
    [('x', 'x'), ('&', '&amp;')]
    >>> b = root.child("b"); source[b.src_start:b.src_end]
    '<b/>'
    """
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptDocumentError(f"part {part} is not UTF-8 XML", doc_id=doc_id) from exc
    walker = _Walker(data, source, part, doc_id)
    try:
        walker.run()
    except expat.ExpatError as exc:
        raise CorruptDocumentError(f"part {part} is not well-formed XML: {exc}", doc_id=doc_id) from exc
    if walker.root is None:
        raise CorruptDocumentError(f"part {part} has no root element", doc_id=doc_id)
    return walker.root, source


class _Offsets:
    """Byte index -> code-point index, for indices that only grow (expat's events)."""

    def __init__(self, data: bytes, source: str) -> None:
        self._data = data
        self._ascii = len(data) == len(source)
        self._byte = self._char = 0

    def __call__(self, byte: int) -> int:
        if self._ascii:
            return byte
        if byte < self._byte:
            self._byte = self._char = 0
        self._char += len(self._data[self._byte:byte].decode("utf-8"))
        self._byte = byte
        return self._char


class _Walker:
    def __init__(self, data: bytes, source: str, part: str, doc_id: str) -> None:
        self.data, self.source, self.part, self.doc_id = data, source, part, doc_id
        self.root: Element | None = None
        self._stack: list[Element] = []
        self._offsets = _Offsets(data, source)
        self._last_start: Element | None = None  # the element whose start was the last event
        self._in_cdata = False  # inside <![CDATA[...]]> everything is literal, "&" included

    def run(self) -> None:
        parser = expat.ParserCreate(namespace_separator=" ")
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._refuse_doctype
        parser.EntityDeclHandler = self._refuse_doctype
        parser.StartElementHandler = lambda name, attrs: self._start(parser, name, attrs)
        parser.EndElementHandler = lambda name: self._end(parser)
        parser.CharacterDataHandler = lambda data: self._characters(parser, data)
        parser.StartCdataSectionHandler = lambda: setattr(self, "_in_cdata", True)
        parser.EndCdataSectionHandler = lambda: setattr(self, "_in_cdata", False)
        parser.Parse(self.data, True)

    def _refuse_doctype(self, *args) -> None:
        raise CorruptDocumentError(f"part {self.part} has a DOCTYPE (refused: OOXML has none)", doc_id=self.doc_id)

    def _start(self, parser, name: str, attrs: dict[str, str]) -> None:
        element = Element(_short(name), {_short(k): v for k, v in attrs.items()}, self._offsets(parser.CurrentByteIndex))
        if self._stack:
            self._stack[-1].children.append(element)
        else:
            self.root = element
        self._stack.append(element)
        self._last_start = element

    def _end(self, parser) -> None:
        element = self._stack.pop()
        at = self._offsets(parser.CurrentByteIndex)
        # Expat reports an empty element's end just past "/>", an end tag's at its "</".
        if element is self._last_start and self.source.startswith("/>", at - 2):
            element.src_end = at
        else:
            element.src_end = self.source.index(">", at) + 1
        self._last_start = None

    def _characters(self, parser, data: str) -> None:
        self._last_start = None
        if not self._stack:
            return
        children = self._stack[-1].children
        at = self._offsets(parser.CurrentByteIndex)
        if self._in_cdata and self.source.startswith(data, at):
            pieces = [Piece(data, at, at + len(data), RunKind.TEXT)]
        else:
            pieces = _align(data, self.source, at, self.part, self.doc_id)
        for piece in pieces:
            last = children[-1] if children else None
            if (isinstance(last, Piece) and last.kind is RunKind.TEXT and piece.kind is RunKind.TEXT
                    and last.src_end == piece.src_start):
                children[-1] = Piece(last.text + piece.text, last.src_start, piece.src_end, RunKind.TEXT)
            else:
                children.append(piece)


def _short(name: str) -> str:
    uri, _, local = name.rpartition(" ")
    prefix = NAMESPACES.get(uri) if uri else ""
    return f"{prefix}:{local}" if prefix else local


def _align(data: str, source: str, at: int, part: str, doc_id: str) -> list[Piece]:
    """The pieces of source from ``at`` that expat decoded into ``data``."""
    if "&" not in data and source.startswith(data, at):  # by far the most common case: literal text
        return [Piece(data, at, at + len(data), RunKind.TEXT)]
    pieces: list[Piece] = []
    i, j = 0, at
    while i < len(data):
        literal = _common_prefix(data, i, source, j)
        if literal:
            pieces.append(Piece(data[i:i + literal], j, j + literal, RunKind.TEXT))
            i, j = i + literal, j + literal
        elif source.startswith("&", j):
            end = source.index(";", j) + 1
            pieces.append(Piece(data[i], j, end, RunKind.ENTITY))
            i, j = i + 1, end
        elif source.startswith("\r", j) and data[i] == "\n":  # XML turns CRLF and CR into LF
            end = j + (2 if source.startswith("\r\n", j) else 1)
            pieces.append(Piece("\n", j, end, RunKind.WHITESPACE))
            i, j = i + 1, end
        elif source.startswith("<![CDATA[", j):
            j += len("<![CDATA[")
        elif source.startswith("]]>", j):
            j += len("]]>")
        else:
            raise CorruptDocumentError(f"part {part}: cannot place text {data[i:i + 20]!r} at {j}", doc_id=doc_id)
    return pieces


def _common_prefix(data: str, i: int, source: str, j: int) -> int:
    n = 0
    limit = min(len(data) - i, len(source) - j)
    while n < limit and data[i + n] == source[j + n] and source[j + n] not in "&\r<":
        if source.startswith("]]>", j + n):  # the end of a CDATA section
            break
        n += 1
    return n
