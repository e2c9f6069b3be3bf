"""Markdown and plain text: the decoded file is the document text; the map is the identity.

A Markdown file's headings are its ATX lines (``## Install``) and its one-line setext headings
(a line underlined by ``===`` or ``---``), outside fenced code blocks.
"""

from __future__ import annotations

import re

from ingest.formats.encoding import decode_source
from ingest.formats.headings import headings_in
from schemas.records import Heading, MediaType, ParsedDocument

# CommonMark: up to 3 spaces, 1-6 "#", then the content, an optional closing run of "#" dropped.
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


def parse_text(source: bytes, doc_id: str, media_type: MediaType = MediaType.TEXT) -> ParsedDocument:
    """Decode a text or Markdown file; nothing is stripped or rewritten.

    >>> parse_text("caf\\u00e9\\r\\n".encode(), "a.txt").text
    'café\\r\\n'
    """
    decoded = decode_source(source, doc_id, html=False)
    return ParsedDocument(
        doc_id=doc_id,
        media_type=media_type,
        text=decoded.text,
        title=_title(decoded.text, media_type),
        encoding=decoded.encoding,
        warnings=decoded.warnings,
        headings=markdown_headings(decoded.text) if media_type is MediaType.MARKDOWN else (),
    )


def markdown_headings(text: str) -> tuple[Heading, ...]:
    """The ATX and one-line setext headings of Markdown ``text``, outside fenced code.

    >>> [(h.level, h.text) for h in markdown_headings("# Guide\\n\\n## Install ##\\n```\\n# not\\n```\\nUse\\n---\\n")]
    [(1, 'Guide'), (2, 'Install'), (2, 'Use')]
    """
    spans: list[tuple[int, int, int]] = []
    fence = ""  # the open fence's marker
    previous: tuple[int, int] | None = None  # the line before, where it may be a setext heading's text
    blank_before = True
    for match in _LINE.finditer(text):
        start, line = match.start(), match.group().rstrip("\r\n")
        if not match.group():
            break
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) and not line[opening.end():].strip():
                fence = ""
            previous, blank_before = None, True
            continue
        if opening:
            fence, previous, blank_before = opening.group(1), None, True
            continue
        atx = _ATX.match(line)
        setext = _SETEXT.match(line)
        if atx:
            content = atx.group(2) or ""
            at = start + (atx.start(2) if atx.group(2) is not None else atx.end(1))
            spans.append((at, at + len(content), len(atx.group(1))))
            previous, blank_before = None, True
        elif setext and previous is not None:
            spans.append((*previous, 1 if setext.group(1)[0] == "=" else 2))
            previous, blank_before = None, True
        elif not line.strip():
            previous, blank_before = None, True
        else:  # a paragraph's line: a heading's text only where it is the paragraph's first and only line
            previous = (start, start + len(line)) if blank_before and not line.startswith("    ") else None
            blank_before = False
    return headings_in(text, spans)


def _title(text: str, media_type: MediaType) -> str:
    """The first Markdown heading, or the first non-empty line of a text file."""
    for line in text.splitlines()[:50]:
        stripped = line.strip()
        if media_type is MediaType.MARKDOWN:
            if stripped.startswith("# "):
                return stripped[2:].strip()
        elif stripped:
            return stripped[:200]
    return ""
