"""PDF parser: the document text of a PDF and the glyph box of every real character.

The document text is what MuPDF's structured text holds, in its block order:
ligatures stay one character (U+FB01), hyphens at line ends stay, whitespace
glyphs the PDF really draws stay. The parser inserts *synthetic* separators,
which have no glyph box and never belong to a ``PdfCharRun``:

- MuPDF's own synthetic spaces (a gap between glyphs that the PDF positions
  apart; ``rawdict`` marks them ``synthetic``),
- ``"\\n"`` between the lines of a block, ``"\\n\\n"`` between blocks,
- ``"\\f"`` between pages (a page without text still gets its separator, so
  ``text.count("\\f") == n_pages - 1``).

Glyph boxes are in points, top-left origin of the page *as displayed*: MuPDF
reports text in unrotated page space relative to the cropbox's top-left, and
``page.rotation_matrix`` maps that onto the rendered page, so a viewer places a
box on ``page.get_pixmap()`` by scaling alone. Characters whose box lies wholly
outside the visible page are left out; boxes that stick out are clipped to it.

Characters the text layer yields are kept as they are (control characters,
private-use code points, U+FFFD for glyphs without a Unicode mapping), with two
exceptions that would break the contract, each replaced 1:1 by U+FFFD with a
warning: U+000C (it is the page separator) and lone surrogates (not encodable
as UTF-8, so no ``doc_version`` and no Parquet string).
"""

from __future__ import annotations

import bisect
import dataclasses
import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain, compress
from operator import itemgetter

import numpy as np
import pymupdf

from ingest.formats.dates import iso_date
from ingest.formats.pdf.headings import pdf_headings
from ingest.formats.pdf.passwords import PasswordLine
from ingest.formats.pdf.ocr import OcrSettings, read_pages
from ingest.formats.pdf.page import BLOCK_SEPARATOR, EMPTY_PAGE, LINE_SEPARATOR, PAGE_SEPARATOR, PageText, to_displayed
from ingest.formats.pdf.visibility import hidden_codes, hidden_runs, styles_of_spans
from schemas.errors import CorruptDocumentError, DocumentTooLargeError, EncryptedDocumentError
from schemas.records import HiddenRun, MediaType, ParsedDocument, PdfCharRun, PdfPage

__all__ = ["BLOCK_SEPARATOR", "LINE_SEPARATOR", "PAGE_SEPARATOR", "TEXT_FLAGS", "OcrSettings", "parse_pdf"]

# No TEXT_DEHYPHENATE, no TEXT_USE_CID_FOR_UNKNOWN_UNICODE (a CID is a font-internal
# number, not text: glyphs without a mapping come out as U+FFFD), no images.
# TEXT_CLIP (formerly TEXT_MEDIABOX_CLIP) drops glyphs wholly outside the page or clip path.
TEXT_FLAGS = (
    pymupdf.TEXT_PRESERVE_LIGATURES
    | pymupdf.TEXT_PRESERVE_WHITESPACE
    | getattr(pymupdf, "TEXT_CLIP", pymupdf.TEXT_MEDIABOX_CLIP)
)
# The same text without the clip: the difference in characters is what TEXT_CLIP left out.
_UNCLIPPED_FLAGS = TEXT_FLAGS & ~getattr(pymupdf, "TEXT_CLIP", pymupdf.TEXT_MEDIABOX_CLIP)
_WHITESPACE = re.compile(r"\s")

# Errors MuPDF surfaces through PyMuPDF while opening or reading a damaged file.
_MUPDF_ERRORS = (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase)

_MAX_MUPDF_MESSAGES = 20
_MAX_MESSAGE_CHARS = 200
_MAX_LISTED_PAGES = 20

_UNSAFE_CHARS = re.compile("[\f\ud800-\udfff]")
_REPEATED = re.compile(r"\.\.\. repeated \d+ times\.\.\.(; |\n)?")
_SURROGATES = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"

_char_text = itemgetter("c")
_char_bbox = itemgetter("bbox")
_char_is_synthetic = itemgetter("synthetic")


def parse_pdf(
    source: bytes, doc_id: str, ocr: OcrSettings | None = None, *, max_pages: int | None = None,
    passwords: Sequence[PasswordLine] = (),
) -> ParsedDocument:
    """Parse PDF bytes into the document text, its pages and the glyph boxes of its characters.

    ``passwords`` are tried in order when the file needs a user password; one that
    opens it also gives ``decrypted_source``, the file without encryption (the viewer
    renders its pages: the password is never stored).

    Raises ``EncryptedDocumentError`` when a user password is needed (and none given opens it) and
    ``CorruptDocumentError`` when MuPDF cannot open the file, it has no pages, or
    no page can be read, and ``DocumentTooLargeError`` when it has more than ``max_pages``
    (before any page is read). Pages without a text layer are not an error: they have
    ``has_text=False`` and a warning names them. With ``ocr`` (see
    ``ingest.formats.pdf.ocr``), Tesseract reads the pages it selects, and their text
    and boxes come from OCR (``PdfPage.ocr``, ``PdfCharRun.ocr_confidence``).
    Text a reader cannot see is in ``hidden_runs`` (see ``ingest.formats.pdf.visibility``).

    >>> doc = pymupdf.open()
    >>> _ = doc.new_page().insert_text((72, 72), "Hi there")
    >>> _ = doc.new_page()  # a blank page still gets its separator
    >>> parsed = parse_pdf(doc.tobytes(), "hi.pdf")
    >>> parsed.text, [(r.start, r.end) for r in parsed.char_runs], parsed.pages_without_text
    ('Hi there\\x0c', [(0, 8)], 1)
    """
    decrypted = None
    with _quiet_mupdf():
        doc, unlocked = _open_pdf(bytes(source), doc_id, passwords)
        try:
            if max_pages is not None and doc.page_count > max_pages:
                raise DocumentTooLargeError(
                    f"{doc.page_count:,} pages, over the limit of {max_pages:,} (--max-pages)", doc_id=doc_id
                )
            parsed = _parse_open_document(doc, doc_id, ocr or OcrSettings())
            if unlocked:
                decrypted = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_NONE)
        finally:
            doc.close()
            # MuPDF's store keeps what it decoded (fonts, images, rendered glyphs) past the
            # document's close, up to 256 MB: a worker that parses document after document
            # would grow with them (largest worker 345 -> 553 MB over ten copies of the
            # shared corpus). No later document can use them: empty it.
            pymupdf.TOOLS.store_shrink(100)
        mupdf_messages = _drain_mupdf_messages()
    if decrypted is not None:
        parsed = dataclasses.replace(parsed, decrypted_source=decrypted)
    if not mupdf_messages:
        return parsed
    return dataclasses.replace(parsed, warnings=parsed.warnings + mupdf_messages)


@contextmanager
def _quiet_mupdf() -> Iterator[None]:
    """MuPDF prints nothing while we parse; its messages are collected, and gc pauses.

    The collector is paused because extraction allocates many small dicts that
    hold no cycles (FACTS: 1.3x faster); both settings are restored afterwards.
    """
    tools = pymupdf.TOOLS
    show_errors = tools.mupdf_display_errors()
    show_warnings = tools.mupdf_display_warnings()
    gc_was_enabled = gc.isenabled()
    tools.mupdf_display_errors(False)
    tools.mupdf_display_warnings(False)
    tools.reset_mupdf_warnings()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_enabled:
            gc.enable()
        tools.mupdf_display_errors(show_errors)
        tools.mupdf_display_warnings(show_warnings)


def _drain_mupdf_messages() -> tuple[str, ...]:
    """MuPDF's warnings and errors since the last drain: deduplicated, truncated, prefixed."""
    seen: dict[str, None] = {}
    for line in pymupdf.TOOLS.mupdf_warnings(reset=True).splitlines():
        line = _truncate(line.strip())
        if line:
            seen.setdefault(line, None)
    messages = [f"mupdf: {m}" for m in seen]
    if len(messages) > _MAX_MUPDF_MESSAGES:
        more = len(messages) - _MAX_MUPDF_MESSAGES
        messages = messages[:_MAX_MUPDF_MESSAGES] + [f"mupdf: ... and {more} more messages"]
    return tuple(messages)


def _truncate(message: str) -> str:
    """A message fit for a table cell: valid UTF-8 (MuPDF quotes raw bytes) and short, and the
    document's own: MuPDF's count of a warning repeated before it (global state, left by earlier
    documents in the process) is dropped.

    >>> _truncate("Failed to open stream (... repeated 6 times...; format error: no xref)")
    'Failed to open stream (format error: no xref)'
    """
    message = _REPEATED.sub("", message)
    message = _SURROGATES.sub(_REPLACEMENT, message)
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[: _MAX_MESSAGE_CHARS - 3] + "..."
    return message


def _open_pdf(source: bytes, doc_id: str, passwords: Sequence[PasswordLine] = ()) -> tuple[pymupdf.Document, bool]:
    """The open document, and whether a password of ``passwords`` opened it."""
    if not source:
        raise CorruptDocumentError("cannot open: the file is empty", doc_id=doc_id)
    try:
        doc = pymupdf.open(stream=source, filetype="pdf")
    except _MUPDF_ERRORS as exc:
        raise CorruptDocumentError(
            _with_mupdf_detail(f"cannot open: {_truncate(str(exc))}"), doc_id=doc_id
        ) from exc
    if not doc.is_pdf:  # MuPDF sniffs the content and may open HTML, images, ... instead
        kind = (doc.metadata or {}).get("format") or "another format"
        doc.close()
        raise CorruptDocumentError(f"not a PDF: MuPDF reads it as {kind}", doc_id=doc_id)
    if not doc.needs_pass or doc.authenticate(""):
        return doc, False
    if any(doc.authenticate(entry.password) for entry in passwords):
        return doc, True
    doc.close()
    if passwords:  # named by line: a message never holds a password
        lines = ", ".join(str(entry.line) for entry in passwords)
        raise EncryptedDocumentError(
            f"encrypted: no password given for it opens it (--passwords line{'s' if len(passwords) > 1 else ''} {lines})",
            doc_id=doc_id,
        )
    raise EncryptedDocumentError("encrypted: a password is needed to open it", doc_id=doc_id)


def _with_mupdf_detail(message: str) -> str:
    detail = "; ".join(m.removeprefix("mupdf: ") for m in _drain_mupdf_messages())
    return f"{message} ({detail})" if detail else message


def _parse_open_document(doc: pymupdf.Document, doc_id: str, ocr: OcrSettings) -> ParsedDocument:
    try:
        n_pages = doc.page_count
        metadata = doc.metadata or {}
        has_labels = bool(doc.get_page_labels())
    except _MUPDF_ERRORS as exc:
        raise CorruptDocumentError(
            _with_mupdf_detail(f"cannot read: {_truncate(str(exc))}"), doc_id=doc_id
        ) from exc
    if n_pages == 0:
        raise CorruptDocumentError(_with_mupdf_detail("the document has no pages"), doc_id=doc_id)

    # Every page's text layer first: OCR decides which pages to read from all of them.
    sizes: list[tuple[float, float, int, str]] = []  # width, height, rotation, label
    extracted: list[PageText | None] = []  # None: the page could not be read
    failures: list[tuple[int, Exception]] = []
    warnings: list[str] = []
    for number in range(1, n_pages + 1):
        width = height = 0.0
        rotation, label = 0, ""
        try:
            page = doc.load_page(number - 1)
            width, height, rotation = page.rect.width, page.rect.height, page.rotation
            label = _SURROGATES.sub(_REPLACEMENT, page.get_label()) if has_labels else ""
            extracted.append(_extract_page(page))
        except _MUPDF_ERRORS as exc:
            failures.append((number, exc))
            if len(failures) <= _MAX_LISTED_PAGES:
                warnings.append(_truncate(f"page {number}: could not extract text: {exc}"))
            extracted.append(None)
        sizes.append((width, height, rotation, label))
    if len(failures) == n_pages:
        number, exc = failures[0]
        raise CorruptDocumentError(
            _with_mupdf_detail(f"could not extract text from any page: {_truncate(str(exc))}"),
            doc_id=doc_id,
            page=number,
        ) from exc
    if len(failures) > _MAX_LISTED_PAGES:
        more = len(failures) - _MAX_LISTED_PAGES
        warnings.append(f"... and {more} more pages could not be extracted")
    read = read_pages(doc, extracted, ocr)

    page_texts: list[str] = []
    pages: list[PdfPage] = []
    char_runs: list[PdfCharRun] = []
    hidden: list[HiddenRun] = []
    no_text_layer: list[int] = []
    replaced: list[int] = []
    unmapped: dict[int, int] = {}
    dropped: dict[int, int] = {}
    lines: list[tuple[int, int, float]] = []  # every line of a text layer: [start, end) and font size
    offset = 0
    for number, (width, height, rotation, label), text in zip(range(1, n_pages + 1), sizes, read.pages):
        by_ocr = number in read.read
        text = text or EMPTY_PAGE
        end = offset + len(text.text)
        pages.append(PdfPage(number, offset, end, width, height, rotation, label, text.has_text, by_ocr))
        confidences = text.confidences or [None] * len(text.runs)
        char_runs.extend(
            PdfCharRun(number, offset + start, offset + stop, boxes, confidence)
            for (start, stop, boxes), confidence in zip(text.runs, confidences)
        )
        hidden.extend(HiddenRun(offset + r.start, offset + r.end, r.reason) for r in text.hidden)
        lines.extend((offset + start, offset + stop, size) for start, stop, size in text.lines)
        page_texts.append(text.text)
        if not text.has_text:
            no_text_layer.append(number)
        if text.n_replaced:
            replaced.append(number)
        if text.n_unmapped:
            unmapped[number] = text.n_unmapped
        if text.n_dropped:
            dropped[number] = text.n_dropped
        offset = end + len(PAGE_SEPARATOR)

    if no_text_layer:
        listed = _page_list(no_text_layer)
        warnings.append(f"{len(no_text_layer)} of {n_pages} pages have no text layer: {listed}")
    warnings.extend(read.warnings)
    if unmapped:
        warnings.append(
            f"{sum(unmapped.values())} characters have no Unicode mapping (U+FFFD) "
            f"on pages {_page_list(list(unmapped))}"
        )
    if replaced:
        warnings.append(
            "form feeds or lone surrogates in the text layer replaced by U+FFFD "
            f"on pages {_page_list(replaced)}"
        )
    if dropped:
        warnings.append(
            f"{sum(dropped.values())} glyphs outside the crop box or a clip path left out "
            f"on pages {_page_list(list(dropped))}"
        )
    if hidden:
        warnings.append(_hidden_summary(hidden, pages))
    title = metadata.get("title") or ""
    doc_text = PAGE_SEPARATOR.join(page_texts)
    return ParsedDocument(
        doc_id=doc_id,
        media_type=MediaType.PDF,
        text=doc_text,
        headings=pdf_headings(doc, doc_text, pages, lines, hidden),
        title=_SURROGATES.sub(_REPLACEMENT, title).strip(),
        created=iso_date(metadata.get("creationDate")),
        pages=tuple(pages),
        char_runs=tuple(char_runs),
        warnings=tuple(warnings),
        hidden_runs=tuple(hidden),
    )


def _hidden_summary(hidden: list[HiddenRun], pages: list[PdfPage]) -> str:
    """One warning: how many hidden characters, for which reasons, on which pages."""
    by_reason: dict[str, int] = {}
    on_pages: set[int] = set()
    starts = [p.start for p in pages]
    for run in hidden:
        by_reason[run.reason.value] = by_reason.get(run.reason.value, 0) + run.end - run.start
        on_pages.add(bisect.bisect_right(starts, run.start))
    reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(by_reason.items()))
    return f"hidden text: {sum(by_reason.values())} characters ({reasons}) on pages {_page_list(sorted(on_pages))}"


def _page_list(numbers: list[int]) -> str:
    listed = ", ".join(str(n) for n in numbers[:_MAX_LISTED_PAGES])
    if len(numbers) > _MAX_LISTED_PAGES:
        listed += f", ... ({len(numbers) - _MAX_LISTED_PAGES} more)"
    return listed


def _extract_page(page: pymupdf.Page) -> PageText:
    """One page: its text (no page separator), its runs of real characters, its hidden text."""
    rect = page.rect
    rotation_matrix = page.rotation_matrix
    raw = page.get_text("rawdict", flags=TEXT_FLAGS)

    # Flatten the characters of every non-empty line, remembering where lines end and their block.
    chars: list[dict] = []
    spans: list[dict] = []  # in the order their characters are in `chars`
    line_ends: list[int] = []
    line_blocks: list[int] = []
    line_sizes: list[float] = []  # the size most of a line's characters have
    column = _Column()
    for block_number, block in enumerate(raw["blocks"]):
        if block["type"] != 0:
            continue
        for line in block["lines"]:
            n_before = len(chars)
            for span in line["spans"]:
                if span["chars"]:
                    chars.extend(span["chars"])
                    spans.append(span)
            if len(chars) == n_before:
                continue
            joins, same_block = column.follow(line, block_number)
            if joins:
                line_ends[-1] = len(chars)
            else:
                line_ends.append(len(chars))
                line_blocks.append(line_blocks[-1] if same_block else block_number)
                # a line not written left to right (a rotated margin stamp, vertical text) is never a heading
                horizontal = abs(line["dir"][1]) < 0.1
                line_sizes.append(max(line["spans"], key=lambda span: len(span["chars"]))["size"] if horizontal else 0.0)
    if not chars:
        return dataclasses.replace(EMPTY_PAGE, n_dropped=_dropped_glyphs(page, ""))

    all_text = "".join(map(_char_text, chars))
    if len(all_text) != len(chars):
        raise ValueError("MuPDF returned a character that is not one code point")
    synthetic = np.fromiter(map(_char_is_synthetic, chars), dtype=bool, count=len(chars))
    boxes = np.fromiter(chain.from_iterable(map(_char_bbox, chars)), dtype=np.float64)
    boxes = to_displayed(boxes.reshape(-1, 4), rotation_matrix)
    width, height = rect.width, rect.height
    visible = (
        (boxes[:, 2] >= 0) & (boxes[:, 0] <= width) & (boxes[:, 3] >= 0) & (boxes[:, 1] <= height)
    )
    codes = hidden_codes(page, all_text, boxes, synthetic, styles_of_spans(spans))
    np.clip(boxes[:, 0::2], 0.0, width, out=boxes[:, 0::2])
    np.clip(boxes[:, 1::2], 0.0, height, out=boxes[:, 1::2])
    ends = np.array(line_ends)
    blocks = np.array(line_blocks)
    sizes = np.array(line_sizes)

    # Keep visible characters on lines that still hold a real one; drop everything else.
    real = visible & ~synthetic
    line_lengths = np.diff(ends, prepend=0)
    line_of_char = np.repeat(np.arange(len(ends)), line_lengths)
    starts = ends - line_lengths
    keep_line = np.add.reduceat(real, starts) > 0
    keep = visible & keep_line[line_of_char]
    if not keep.all():
        if not keep.any():
            return dataclasses.replace(EMPTY_PAGE, n_dropped=_dropped_glyphs(page, ""))
        all_text = "".join(compress(all_text, keep.tolist()))
        real, boxes, line_of_char, codes = real[keep], boxes[keep], line_of_char[keep], codes[keep]
        line_lengths = np.bincount(line_of_char, minlength=len(ends))[keep_line]
        blocks = blocks[keep_line]
        sizes = sizes[keep_line]
        line_of_char = np.repeat(np.arange(len(blocks)), line_lengths)
        ends = np.cumsum(line_lengths)
        starts = ends - line_lengths

    # "\n" before a line of the same block, "\n\n" before a new block's first line.
    new_block = blocks[1:] != blocks[:-1]
    separators = np.where(new_block, len(BLOCK_SEPARATOR), len(LINE_SEPARATOR))
    shift = np.concatenate(([0], np.cumsum(separators)))  # per line: separator chars before it
    char_offset = np.arange(len(real)) + shift[line_of_char]

    # A run starts at a real character whose predecessor on the line is not real; likewise ends.
    before = np.concatenate(([False], real[:-1]))
    before[starts] = False
    after = np.concatenate((real[1:], [False]))
    after[ends - 1] = False
    first = np.flatnonzero(real & ~before)
    last = np.flatnonzero(real & ~after)
    rank = np.cumsum(real) - 1  # index of each real character among the page's real characters
    real_boxes = np.ascontiguousarray(boxes[real], dtype=np.float32)

    pieces = [all_text[: ends[0]]]
    for separator_is_block, start, end in zip(
        new_block.tolist(), starts[1:].tolist(), ends[1:].tolist()
    ):
        pieces.append(BLOCK_SEPARATOR if separator_is_block else LINE_SEPARATOR)
        pieces.append(all_text[start:end])
    text, n_replaced = _UNSAFE_CHARS.subn(_REPLACEMENT, "".join(pieces))

    runs: list[tuple[int, int, np.ndarray]] = []
    has_text = False
    for start, stop, box_start, box_stop in zip(
        char_offset[first].tolist(),
        (char_offset[last] + 1).tolist(),
        rank[first].tolist(),
        (rank[last] + 1).tolist(),
    ):
        runs.append((start, stop, real_boxes[box_start:box_stop]))
        if not has_text and not text[start:stop].isspace():
            has_text = True
    n_unmapped = text.count(_REPLACEMENT) - n_replaced
    n_dropped = _dropped_glyphs(page, text)
    hidden = hidden_runs(codes, char_offset, text) if codes.any() else []
    lines = list(zip((starts + shift).tolist(), (ends + shift).tolist(), sizes.tolist()))
    return PageText(text, runs, has_text, n_replaced, n_unmapped, hidden, n_dropped, lines=lines)


def _dropped_glyphs(page: pymupdf.Page, kept_text: str) -> int:
    """Glyphs left out of the page's text: outside the crop box, or wholly outside the clip path (TEXT_CLIP)."""
    everything = page.get_text("text", flags=_UNCLIPPED_FLAGS, clip=pymupdf.INFINITE_RECT())
    return max(0, _glyphs(everything) - _glyphs(kept_text))


def _glyphs(text: str) -> int:
    """Characters of ``text`` that are not whitespace."""
    return len(text) - len(_WHITESPACE.findall(text))


class _Column:
    """Joins the glyphs of vertical (wmode 1) text into columns, read as lines.

    MuPDF reports each glyph of a vertical line as a line of its own, and often each
    column as a block of its own. A glyph directly below the previous one in the same
    column continues its line (top to bottom); the column right next to the previous
    one, on its left, is the next line of the same block (columns right to left), so a
    sentence that wraps from one column to the next is split by a line break, not a
    paragraph break. A column after a wider gap keeps MuPDF's block.
    """

    __slots__ = ("bbox",)

    def __init__(self) -> None:
        self.bbox: tuple[float, float, float, float] | None = None  # the vertical line so far

    def follow(self, line: dict, block_number: int) -> tuple[bool, bool]:
        """(the line continues the previous one, it is the next column of its block)."""
        previous, self.bbox = self.bbox, None
        if line["wmode"] != 1:
            return False, False
        x0, y0, x1, y1 = line["bbox"]
        self.bbox = (x0, y0, x1, y1)
        if previous is None:
            return False, False
        px0, py0, px1, py1 = previous
        height = max(y1 - y0, 1e-3)
        overlap = min(x1, px1) - max(x0, px0)
        if overlap >= 0.5 * min(x1 - x0, px1 - px0) and py0 - 0.25 * height <= y0 <= py1 + height:
            self.bbox = (min(x0, px0), py0, max(x1, px1), max(y1, py1))
            return True, True
        width = max(x1 - x0, px1 - px0, 1e-3)
        next_column = x1 <= px0 + 0.25 * width and px0 - x1 <= width and min(y1, py1) > max(y0, py0)
        return False, next_column
