"""Answers from a model, and the citation records spanindex makes of them.

Offsets in a citation are Unicode code points into the document text
(``offset_unit`` says so); ``char_*`` are relative to the chunk,
``doc_*`` to the document, both half-open.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum

from schemas.records import HiddenReason, MediaType, Rect

OFFSET_UNIT = "codepoint"


class CitationStatus(StrEnum):
    EXACT = "exact"
    NORMALIZED = "normalized"
    FUZZY = "fuzzy"
    QUOTE_NOT_FOUND = "quote_not_found"
    QUOTE_TOO_SHORT = "quote_too_short"
    UNKNOWN_CHUNK = "unknown_chunk"
    INVALID = "invalid"  # the support itself is malformed (no chunk id, quote not a string)

    @property
    def verified(self) -> bool:
        return self in (CitationStatus.EXACT, CitationStatus.NORMALIZED, CitationStatus.FUZZY)


class ClaimVerdict(StrEnum):
    VERIFIED = "verified"  # at least one citation verified
    UNVERIFIED = "unverified"  # support was given, none of it verified
    UNSUPPORTED = "unsupported"  # no support given: an honest abstention, not an error
    INVALID = "invalid"  # the claim itself is malformed


class DriftStatus(StrEnum):
    """What a reindex did to a stored citation (``spanindex check``)."""

    OK = "ok"  # same text, or the stored offsets still hold the quote
    MOVED = "moved"  # found again verbatim elsewhere; offsets rewritten
    CHANGED = "changed"  # only a fuzzy match remains (numbers unchanged): the text now differs
    GONE = "gone"  # not found, or the document was removed
    AMBIGUOUS = "ambiguous"  # occurs more than once and its prefix/suffix do not decide where
    CORRUPT_RECORD = "corrupt_record"  # len(quote) != char_end - char_start: the record itself is broken

    @property
    def holds(self) -> bool:
        """The citation still stands: as stored, or repaired where the quote moved."""
        return self in (DriftStatus.OK, DriftStatus.MOVED)


class Policy(StrEnum):
    MARK = "mark"  # keep failed claims, flagged
    DROP = "drop"  # remove failed and unsupported claims from the answer
    REFUSE = "refuse"  # reject the whole answer when any claim fails


@dataclass(frozen=True, slots=True)
class Support:
    chunk_id: str
    quote: str
    retrieved_rank: int | None = None
    retrieved_score: float | None = None
    error: str = ""  # why this support could not be read (then it is never verified)


@dataclass(frozen=True, slots=True)
class Claim:
    claim_id: str
    text: str
    support: tuple[Support, ...] = ()
    error: str = ""  # why the claim (or one of its supports) could not be read


@dataclass(frozen=True, slots=True)
class Answer:
    answer_id: str
    claims: tuple[Claim, ...]
    text: str = ""  # the answer's full text, when the model gave one


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a verified quote lies: its span in the chunk and the document, and how to show it."""

    chunk_id: str
    doc_id: str
    doc_version: str
    char_start: int  # chunk-relative
    char_end: int
    doc_start: int  # document-absolute
    doc_end: int
    quote: str  # document text at [doc_start, doc_end)
    occurrences: int  # times the quote occurs in the chunk
    prefix: str  # up to 32 characters of document text before the quote
    suffix: str
    page: int | None = None  # PDF, and HTML laid out by a browser (build --html-layout)
    page_label: str = ""
    rects: tuple[Rect, ...] = ()
    src_start: int | None = None  # HTML: decoded-source range; DOCX, PPTX, XLSX: range in ``part``
    src_end: int | None = None
    part: str = ""  # DOCX, PPTX, XLSX: the zip member src_start/src_end index, decoded as UTF-8
    cells: tuple[str, ...] = ()  # XLSX: the cells the span covers ("Sheet1!B7")
    locator: str = ""
    url: str = ""
    hidden_chars: int = 0  # characters of the quote a reader cannot see in the source
    hidden_reasons: tuple[HiddenReason, ...] = ()  # why (sorted, distinct)
    ocr: bool = False  # PDF: some of the span was read by OCR from the page image
    ocr_confidence: int | None = None  # then: the lowest word confidence (0-100) in the span


@dataclass(frozen=True, slots=True)
class Citation:
    """One support of one claim, checked and located."""

    chunk_id: str
    model_quote: str  # what the model wrote
    status: CitationStatus
    doc_id: str = ""
    doc_version: str = ""
    media_type: MediaType | None = None  # of the cited document; None when it is unknown
    char_start: int = 0  # chunk-relative
    char_end: int = 0
    doc_start: int = 0  # document-absolute
    doc_end: int = 0
    quote: str = ""  # document text at [doc_start, doc_end): len(quote) == char_end - char_start
    match_score: float = 0.0
    occurrences: int = 0  # times the quote occurs in the chunk
    page: int | None = None
    page_label: str = ""
    rects: tuple[Rect, ...] = ()
    src_start: int | None = None  # HTML: decoded-source range; DOCX, PPTX, XLSX: range in ``part``
    src_end: int | None = None
    part: str = ""  # DOCX, PPTX, XLSX: the zip member src_start/src_end index, decoded as UTF-8
    cells: tuple[str, ...] = ()  # XLSX: the cells the span covers ("Sheet1!B7")
    locator: str = ""  # URL fragment that opens the source at the span
    url: str = ""  # the live page at the span (its own address + locator); "" when the document names none
    prefix: str = ""  # up to 32 characters of document text before the quote
    suffix: str = ""
    retrieved_rank: int | None = None
    retrieved_score: float | None = None
    found_elsewhere: int | None = None  # quote not in the chunk but verbatim at this doc offset
    ocr: bool = False  # PDF: the quoted span (or, unverified, the cited chunk) was read by OCR
    ocr_confidence: int | None = None  # then: the lowest Tesseract word confidence (0-100) in it
    offset_unit: str = OFFSET_UNIT
    error: str = ""
    drift: DriftStatus | None = None  # once a sweep has checked this citation
    drift_detail: str = ""  # what the sweep found (the new text of a changed quote, why it is gone)
    hidden_chars: int = 0  # characters of the quote a reader cannot see in the source: a warning
    hidden_reasons: tuple[HiddenReason, ...] = ()  # why they are hidden (sorted, distinct)

    def placed(self, placement: Placement) -> Citation:
        """This citation at ``placement``: every field the placement has, replaced."""
        return dataclasses.replace(self, **{f.name: getattr(placement, f.name) for f in _PLACEMENT_FIELDS})


_PLACEMENT_FIELDS = dataclasses.fields(Placement)


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    """One line of a verify output: a claim and its citations."""

    answer_id: str
    claim_id: str
    text: str
    verdict: ClaimVerdict
    citations: tuple[Citation, ...] = ()
    dropped: bool = False  # removed from the answer by policy
    error: str = ""


@dataclass(frozen=True, slots=True)
class VerifySummary:
    claims: int
    verified: int
    unverified: int
    unsupported: int
    invalid: int
    citations: int
    by_status: dict[str, int] = field(default_factory=dict)
    unknown_chunk_rate: float = 0.0
    quote_not_found_rate: float = 0.0
    refused: bool = False
