"""Parse one file of any supported type into a document record and its text.

The one place that turns parser errors into document rows: a failure is a
row with ``status=error`` and a reason, never an exception out of the batch.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ingest.formats.pdf.passwords import PasswordLine
from schemas.errors import CorruptDocumentError, DocumentError
from schemas.limits import DocumentLimits
from schemas.records import DocStatus, DocumentRecord, MediaType, OcrMode, OcrSettings, ParsedDocument

# Bump when a parser would give other text or maps for the same bytes (2: HTML source_url;
# 3: PDF hidden-text runs, OCR of pages without a usable text layer; 4: DOCX text in its
# background's colour or under 1 pt hidden, PPTX charts and SmartArt, XLSX comments;
# 5: the document's own date (created); headings: PDF outline or font sizes, HTML and EPUB h1-h6,
# Markdown, DOCX outline levels, ODT text:h, slide titles, sheet names).
PARSER_VERSION = 5

SUFFIXES = {
    ".pdf": MediaType.PDF,
    ".html": MediaType.HTML,
    ".htm": MediaType.HTML,
    ".xhtml": MediaType.HTML,
    ".md": MediaType.MARKDOWN,
    ".markdown": MediaType.MARKDOWN,
    ".txt": MediaType.TEXT,
    ".text": MediaType.TEXT,
    ".docx": MediaType.DOCX,
    ".docm": MediaType.DOCX,  # macros are data: never read, never run
    ".pptx": MediaType.PPTX,
    ".xlsx": MediaType.XLSX,
    ".xlsm": MediaType.XLSX,
    ".epub": MediaType.EPUB,
    ".odt": MediaType.ODT,
    ".odp": MediaType.ODP,
    ".ods": MediaType.ODS,
    ".doc": MediaType.DOC,  # legacy binary formats: converted by LibreOffice where it is installed
    ".ppt": MediaType.PPT,
    ".xls": MediaType.XLS,
}
OFFICE_PARSERS = {MediaType.DOCX: "parse_docx", MediaType.PPTX: "parse_pptx", MediaType.XLSX: "parse_xlsx",
                  MediaType.EPUB: "parse_epub", MediaType.ODT: "parse_odt", MediaType.ODP: "parse_odp",
                  MediaType.ODS: "parse_ods"}
# Office documents LibreOffice renders for pages and glyph boxes (not spreadsheets: their pages
# would not be their sheets, and narrow cells print "###"; not EPUB: reflowable).
RENDERED_TYPES = frozenset({MediaType.DOCX, MediaType.PPTX, MediaType.ODT, MediaType.ODP, MediaType.DOC, MediaType.PPT})
# A legacy binary file is read as the OOXML file LibreOffice converts it to.
LEGACY_TYPES = {MediaType.DOC: MediaType.DOCX, MediaType.PPT: MediaType.PPTX, MediaType.XLS: MediaType.XLSX}


def media_type_of(doc_id: str) -> MediaType | None:
    """The media type a file's name promises, or None for types we do not index.

    >>> media_type_of("docs/Guide.MD")
    <MediaType.MARKDOWN: 'text/markdown'>
    """
    return SUFFIXES.get(posixpath.splitext(doc_id)[1].lower())  # PurePosixPath's suffix, at a tenth of the cost


@dataclass(frozen=True, slots=True, eq=False)
class ParseOutcome:
    record: DocumentRecord
    parsed: ParsedDocument | None  # None when the document could not be read


def parse_document(
    source: bytes,
    doc_id: str,
    media_type: MediaType,
    limits: DocumentLimits = DocumentLimits(),
    ocr: OcrSettings = OcrSettings(),
    *,
    passwords: Sequence[PasswordLine] = (),
) -> ParseOutcome:
    """Parse one file's bytes; every outcome, failures included, is a document record.

    Over one of ``limits`` (bytes, pages, characters of text) the record is an error with the reason.
    ``ocr`` says which PDF pages are read by OCR (``ingest.formats.pdf.ocr``); ``passwords``: the
    --passwords lines that match this document (PDF only).
    """
    base = dict(
        doc_id=doc_id,
        source_sha256=hashlib.sha256(source).hexdigest(),
        media_type=media_type,
        source_bytes=len(source),
    )
    if not source:
        return ParseOutcome(_failed(base, DocStatus.EMPTY, "empty file (0 bytes)"), None)
    if len(source) > limits.max_file_bytes:
        reason = f"file too large: {len(source):,} bytes, the limit is {limits.max_file_bytes:,} (--max-file-mb)"
        return ParseOutcome(_failed(base, DocStatus.ERROR, reason), None)
    try:
        parsed = _parser(media_type, limits, ocr, passwords)(source, doc_id)
    except DocumentError as exc:
        return ParseOutcome(_failed(base, DocStatus.ERROR, exc.message), None)
    if len(parsed.text) > limits.max_chars:
        reason = f"{len(parsed.text):,} characters of text, over the limit of {limits.max_chars:,} (--max-chars)"
        return ParseOutcome(_failed(base, DocStatus.ERROR, reason), None)
    return ParseOutcome(_parsed_record(base, parsed, ocr), parsed)


def _parser(media_type: MediaType, limits: DocumentLimits, ocr: OcrSettings, passwords: Sequence[PasswordLine] = ()):
    # Imported on use: a worker parsing only text files never loads PyMuPDF.
    if media_type is MediaType.PDF:
        from ingest.formats.pdf.parser import parse_pdf

        return lambda source, doc_id: parse_pdf(source, doc_id, ocr, max_pages=limits.max_pages, passwords=passwords)
    if media_type is MediaType.HTML:
        from ingest.formats.html.parser import parse_html

        return parse_html
    if media_type in OFFICE_PARSERS:
        from ingest.formats import office

        return getattr(office, OFFICE_PARSERS[media_type])
    if media_type in LEGACY_TYPES:
        return functools.partial(_converted, media_type=media_type)
    from ingest.formats.text import parse_text

    return lambda source, doc_id: parse_text(source, doc_id, media_type)


def _converted(source: bytes, doc_id: str, media_type: MediaType) -> ParsedDocument:
    """A legacy .doc/.ppt/.xls read through the OOXML copy LibreOffice converts it to (kept with the
    document: its map points into that copy); an error row where LibreOffice is not installed."""
    from ingest.formats import office

    suffix = PurePosixPath(doc_id).suffix.lower()
    why = office.office_renderer_unavailable()
    if why is not None:
        raise CorruptDocumentError(f"a legacy binary {suffix} file: LibreOffice converts it where it is installed "
                                   f"({why})", doc_id=doc_id)
    converted, converted_to = office.convert_legacy(source, suffix)
    modern = LEGACY_TYPES[media_type]
    parsed = getattr(office, OFFICE_PARSERS[modern])(converted, doc_id)
    note = f"converted from {suffix} to {converted_to} by {office.office_renderer_engine()}"
    return dataclasses.replace(parsed, media_type=media_type, converted_source=converted,
                               warnings=(*parsed.warnings, note))


def _failed(base: dict, status: DocStatus, reason: str) -> DocumentRecord:
    return DocumentRecord(
        **base,
        doc_version="",
        n_chars=0,
        n_pages=0,
        title="",
        encoding=None,
        status=status,
        error=reason,
    )


def _parsed_record(base: dict, parsed: ParsedDocument, ocr: OcrSettings) -> DocumentRecord:
    status, error = DocStatus.OK, ""
    if parsed.pages and parsed.pages_without_text == parsed.n_pages:
        status = DocStatus.NO_TEXT
        how = "OCR found no text either" if ocr.mode is not OcrMode.OFF else "build with --ocr to read it"
        error = f"no text layer on any of its {parsed.n_pages} pages (scanned or image-only; {how})"
    elif not parsed.text.strip():
        status, error = DocStatus.EMPTY, "no text"
    return DocumentRecord(
        **base,
        doc_version=parsed.doc_version,
        n_chars=len(parsed.text),
        n_pages=parsed.n_pages,
        title=parsed.title,
        encoding=parsed.encoding,
        status=status,
        error=error,
        pages_without_text=parsed.pages_without_text,
        warning="; ".join(parsed.warnings),
        source_url=parsed.source_url,
        created=parsed.created,
    )
