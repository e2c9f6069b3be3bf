"""Markdown and plain text: the decoded file is the document text; the map is the identity."""

from __future__ import annotations

from ingest.formats.encoding import decode_source
from schemas.records import MediaType, ParsedDocument


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
    )


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
