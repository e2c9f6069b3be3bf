"""EPUB (2 and 3): the chapters in reading order, each read by the HTML parser and mapped into its part.

``META-INF/container.xml`` names the package document (the OPF), whose spine lists the chapters
in reading order. Chapters the spine marks ``linear="no"`` (notes, answers, pop-ups a reader
reaches by links) come after all the others, in spine order: they are content, only not in the
main flow. Each (X)HTML chapter is read by the HTML parser, whose runs index the chapter decoded
as UTF-8; they become office runs whose part is the chapter's zip path. Chapters are separated by
a blank line; ``office_pages`` gives each chapter's range, its page its place in reading order and
its name its part. The title is the OPF's first ``dc:title``.

What the map needs of a chapter, and what is done where it is not so:

- UTF-8, the encoding every part's range is counted in. A byte order mark is skipped (runs index
  past it); a chapter in another encoding (EPUB allows UTF-16) is a CorruptDocumentError.
- The HTML parser reads XHTML's empty-element tags as start tags, so that ``<title/>`` or
  ``<script src="a.js"/>`` would swallow the rest of the chapter as raw text and a hidden
  ``<span hidden=""/>`` would hide it. Such tags are blanked to a bogus comment of the same
  length before the parse (what XML reads: an empty element); every other position stays put.
- A character the HTML parser reads otherwise than the readback rule (``&#146;`` is U+0092 to
  XML, "’" to HTML) keeps its text and loses its source range (a synthetic run), and a warning
  counts them.

The container and the OPF go through the positional XML walker (no DTD, no entity, nothing
fetched); a DOCTYPE without an internal subset, which EPUB 2 tools write now and then, is blanked
first. A spine item that is not (X)HTML and has no (X)HTML fallback (an SVG page, an image) or is
missing from the zip is left out with a warning; a chapter that ``META-INF/encryption.xml`` lists
(DRM) makes the book an EncryptedDocumentError. The zip is read within ``package``'s limits.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from html import unescape
from urllib.parse import unquote

from ingest.formats.html.parser import parse_html_text
from ingest.formats.html.tags import HIDDEN, VOID
from ingest.formats.html.tokens import RAW_TEXT_ELEMENTS, START, Tokenizer, parse_attrs
from ingest.formats.html.visibility import ROOT_STYLE, InlineStyles
from ingest.formats.office.builder import TextBuilder
from ingest.formats.office.package import OfficePackage, within_depth
from ingest.formats.office.readback import reads_back
from ingest.formats.office.xml_positions import Element, parse_xml
from schemas.errors import CorruptDocumentError, EncryptedDocumentError
from schemas.records import RUN_KINDS, Heading, HiddenRun, MediaType, OfficePage, ParsedDocument, RunKind

CONTAINER = "META-INF/container.xml"
ENCRYPTION = "META-INF/encryption.xml"
CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html", "text/x-oeb1-document"})
_MAX_FALLBACKS = 8
_DOCTYPE = re.compile(rb"<!DOCTYPE[^>\[]*>", re.I)
_SWALLOWS = RAW_TEXT_ELEMENTS | HIDDEN | {"plaintext", "dialog"}
_CSS_HIDES = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


@within_depth
def parse_epub(source: bytes, doc_id: str) -> ParsedDocument:
    """Parse EPUB bytes into the text of its chapters in reading order; ``office_pages`` gives
    each chapter's range and part.

    Example::

        doc = parse_epub(Path("book.epub").read_bytes(), "book.epub")
        page = doc.office_pages[2]                  # the third chapter
        page.name, doc.text[page.start:page.end]    # ('OEBPS/chapter2.xhtml', 'Chapter 2\\n\\n...')
    """
    package = OfficePackage(source, doc_id)
    if not package.has(CONTAINER):
        raise CorruptDocumentError(f"not an EPUB: no {CONTAINER}", doc_id=doc_id)
    opf_part = _rootfile(_xml(package, CONTAINER), doc_id)
    opf = _xml(package, opf_part)
    chapters, warnings = _reading_order(package, opf, opf_part)
    encrypted = _encrypted(package)
    builder = TextBuilder()
    pages: list[OfficePage] = []
    hidden: list[HiddenRun] = []
    headings: list[Heading] = []  # each chapter's h1-h6, as the HTML parser finds them
    unmapped = 0
    for part in chapters:
        if part.lower() in encrypted:
            raise EncryptedDocumentError(f"the EPUB is encrypted (DRM): {part} cannot be read", doc_id=doc_id)
        number = len(pages) + 1
        start, chapter_hidden, chapter_unmapped, chapter_headings = _chapter(builder, package, part, doc_id, number)
        hidden += chapter_hidden
        headings += chapter_headings
        unmapped += chapter_unmapped
        pages.append(OfficePage(number, start, builder.length, part))
    if unmapped:
        warnings.append(f"{unmapped} characters that the HTML parser reads otherwise than XML have no source range")
    built = builder.result()
    title = next(opf.iter("title"), None) or next(opf.iter("Title"), None)  # dc:title (OEB 1: dc:Title)
    return ParsedDocument(doc_id=doc_id, media_type=MediaType.EPUB, text=built.text,
                          title=" ".join(title.text().split()) if title is not None else "",
                          office_runs=built.runs, hidden_runs=tuple(hidden), office_pages=tuple(pages),
                          warnings=tuple(warnings), headings=tuple(headings))


def _chapter(builder: TextBuilder, package: OfficePackage, part: str, doc_id: str,
             number: int) -> tuple[int, list[HiddenRun], int, list[Heading]]:
    """Write one chapter; where it starts, its hidden runs, its characters left without a source
    and its headings."""
    try:
        source = package.read(part).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptDocumentError(f"chapter {part} is not UTF-8 (UTF-16 chapters are not supported)",
                                   doc_id=doc_id, page=number) from exc
    skip = 1 if source.startswith("\ufeff") else 0  # the BOM: runs index past it
    chapter = parse_html_text(xhtml_empty_elements(source[skip:]), doc_id)
    if not chapter.text:
        return builder.length, [], 0, []
    builder.separate("\n\n")
    builder.flush()
    start = builder.length
    runs = chapter.html_runs
    text = chapter.text
    unmapped = 0
    for begin, end, src_start, src_end, code in zip(runs.start.tolist(), runs.end.tolist(), runs.src_start.tolist(),
                                                    runs.src_end.tolist(), runs.kind.tolist()):
        kind, piece = RUN_KINDS[code], text[begin:end]
        src_start, src_end = src_start + skip, src_end + skip
        if kind is RunKind.SYNTHETIC:
            builder.synthetic(piece)
            continue
        fragment = source[src_start:src_end]
        if (kind is not RunKind.TEXT or fragment == piece) and reads_back(fragment, piece, kind):
            builder.source(piece, part, src_start, src_end, kind)
        else:
            builder.synthetic(piece)
            unmapped += len(piece)
    assert builder.length - start == len(text), part  # nothing is written between a chapter's runs
    hidden = [HiddenRun(h.start + start, h.end + start, h.reason) for h in chapter.hidden_runs]
    return start, hidden, unmapped, [dataclasses.replace(h, start=h.start + start) for h in chapter.headings]


def xhtml_empty_elements(source: str) -> str:
    """``source`` with the XHTML empty-element tags the HTML parser would misread (raw-text and
    hidden elements, elements whose attributes hide) blanked to bogus comments of the same length.

    >>> xhtml_empty_elements('<head><title/></head><p>Text<br/><span hidden=""/> more</p>')
    '<head><?-----></head><p>Text<br/><?--------------> more</p>'
    """
    styles = InlineStyles(source)
    out: list[str] = []
    done = position = 0
    while True:
        restart = None
        for token in Tokenizer(source, position):
            if token[0] != START or not token[4] or token[3] in VOID:
                continue
            _, lt, end, name, _, attrs_at = token
            if name not in _SWALLOWS and not _hides(source, styles, attrs_at, end):
                continue
            out += [source[done:lt], "<?" + "-" * (end - lt - 3) + ">"]
            done = end
            if name in RAW_TEXT_ELEMENTS or name == "plaintext":  # the tokenizer read on as raw text
                restart = end
                break
        if restart is None:
            break
        position = restart
    out.append(source[done:])
    return "".join(out)


def _hides(source: str, styles: InlineStyles, attrs_at: int, end: int) -> bool:
    attrs = parse_attrs(source, attrs_at, end - 1)
    if "hidden" in attrs or _CSS_HIDES.search(unescape(attrs.get("style", ""))):
        return True
    return styles.reason(styles.child(ROOT_STYLE, attrs_at, end)) is not None


def _xml(package: OfficePackage, part: str) -> Element:
    data = package.read(part)
    doctype = _DOCTYPE.search(data, 0, 4096)
    if doctype is not None:  # blanked in place: no DTD is read, and positions do not matter here
        data = data[:doctype.start()] + b" " * (doctype.end() - doctype.start()) + data[doctype.end():]
    try:
        return parse_xml(data, part, package.doc_id)[0]
    except LookupError as exc:  # expat: an encoding the XML declaration names and Python has no codec for
        raise CorruptDocumentError(f"part {part} declares an unknown encoding: {exc}", doc_id=package.doc_id) from exc


def _rootfile(container: Element, doc_id: str) -> str:
    rootfiles = list(container.iter("rootfile"))
    rootfiles.sort(key=lambda r: r.attrs.get("media-type") != "application/oebps-package+xml")
    for rootfile in rootfiles:
        path = rootfile.attrs.get("full-path", "")
        if path:
            return path
    raise CorruptDocumentError(f"{CONTAINER} names no package document", doc_id=doc_id)


def _reading_order(package: OfficePackage, opf: Element, opf_part: str) -> tuple[list[str], list[str]]:
    """The chapters' parts: the linear spine items, then those marked linear="no"; and warnings."""
    folder = posixpath.dirname(opf_part)
    manifest = {item.attrs.get("id", ""): item for item in opf.iter("item")}
    linear: list[str] = []
    auxiliary: list[str] = []
    warnings: list[str] = []
    for itemref in opf.iter("itemref"):
        item = manifest.get(itemref.attrs.get("idref", ""))
        for _ in range(_MAX_FALLBACKS):  # a foreign spine item names an (X)HTML fallback
            if item is None or item.attrs.get("media-type", "").lower() in CHAPTER_TYPES:
                break
            item = manifest.get(item.attrs.get("fallback", ""))
        if item is None or item.attrs.get("media-type", "").lower() not in CHAPTER_TYPES:
            warnings.append(f"spine item {itemref.attrs.get('idref', '')!r} is no (X)HTML chapter: left out")
            continue
        href = unquote(item.attrs.get("href", "").split("#", 1)[0])
        part = package.member(posixpath.normpath(posixpath.join(folder, href))) if href else ""
        if not part:
            warnings.append(f"chapter {href!r} is missing from the EPUB: left out")
            continue
        (auxiliary if itemref.attrs.get("linear", "yes").strip().lower() == "no" else linear).append(part)
    return list(dict.fromkeys(linear + auxiliary)), warnings


def _encrypted(package: OfficePackage) -> set[str]:
    """The parts (lower case) ``META-INF/encryption.xml`` lists: fonts obfuscated, or DRM."""
    if not package.has(ENCRYPTION):
        return set()
    return {posixpath.normpath(unquote(ref.attrs.get("URI", ""))).lower()
            for ref in _xml(package, ENCRYPTION).iter("CipherReference")}
