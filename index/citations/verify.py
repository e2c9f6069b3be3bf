"""Verify a model's citations and locate them in their sources.

Each support ``{chunk_id, quote}`` becomes a Citation: the quote matched in
the chunk it names (index.citations.match), then placed in the document: absolute
offsets, page, page label and line rectangles for PDF, decoded-source range
and a text fragment for HTML, prefix and suffix for later repair.

This path never imports torch or loads the embedding model.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable

from index.citations.fragments import context, pdf_locator, text_fragment
from index.citations.match import DEFAULT_MIN_QUOTE_CHARS, find_in_document, match_quote
from index.reader import Index, on_one_generation
from schemas.citations import (
    Answer,
    Citation,
    CitationStatus,
    Claim,
    ClaimRecord,
    ClaimVerdict,
    Placement,
    Policy,
    Support,
    VerifySummary,
)
from schemas.records import OFFICE_TYPES, Chunk, DocumentRecord, MediaType, Rect


class Verifier:
    """Checks supports against one index generation (whose offset maps are built once per document).

    >>> v = Verifier(index.open("build/sample-index"))                           # doctest: +SKIP
    >>> v.cite(Support("pricing/rate-card.pdf#tok:0", "billed at $0.12")).status  # doctest: +SKIP
    <CitationStatus.EXACT: 'exact'>
    """

    def __init__(
        self, index: Index, *, min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS, hidden_supports: bool = True
    ) -> None:
        self.index = index
        self.min_quote_chars = min_quote_chars
        # False: a quote of text a reader cannot see supports nothing (--policy refuse).
        self.hidden_supports = hidden_supports
        self._documents: dict[tuple[str, str], DocumentRecord] = {}  # by (generation, doc_id)

    @on_one_generation
    def cite(self, support: Support) -> Citation:
        """One support, checked and located."""
        base = Citation(
            chunk_id=support.chunk_id,
            model_quote=support.quote,
            status=CitationStatus.INVALID,
            retrieved_rank=support.retrieved_rank,
            retrieved_score=support.retrieved_score,
        )
        if support.error:
            return dataclasses.replace(base, error=support.error)
        chunk = self.index.chunk(support.chunk_id)
        if chunk is None:
            return dataclasses.replace(
                base,
                status=CitationStatus.UNKNOWN_CHUNK,
                error=f"no chunk {support.chunk_id!r} in this index (generation {self.index.generation.name})",
            )
        found = match_quote(chunk.text, support.quote, self.min_quote_chars)
        checked = dataclasses.replace(
            base, status=found.status, media_type=self._media_type(chunk.doc_id), match_score=found.score
        )
        if found.status.verified:
            return checked.placed(self.place(chunk, found.char_start, found.char_end, found.occurrences))
        found_elsewhere = None
        ocr: dict = {}
        if found.status is CitationStatus.QUOTE_NOT_FOUND:
            found_elsewhere = find_in_document(self.index.doc_text(chunk.doc_version), support.quote)
            ocr = self._ocr_diagnostic(chunk)
        return dataclasses.replace(
            checked,
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            doc_version=chunk.doc_version,
            found_elsewhere=found_elsewhere,
            **ocr,
        )

    def _ocr_diagnostic(self, chunk: Chunk) -> dict:
        """A quote not found in text that OCR read: say so (the page may say what OCR misread)."""
        if self._media_type(chunk.doc_id) is not MediaType.PDF:
            return {}
        confidence = self.index.pdf_char_map(chunk.doc_id).ocr_confidence(chunk.start, chunk.end)
        if confidence is None:
            return {}
        return dict(
            ocr=True,
            ocr_confidence=confidence,
            error=(
                f"quote not found in text read by OCR (lowest word confidence in the chunk: {confidence}): "
                "OCR may have misread the page; compare the quote with the page image"
            ),
        )

    @on_one_generation
    def locate(self, citation: Citation, chunk: Chunk, char_start: int, char_end: int, *, occurrences: int = 1) -> Citation:
        """``citation`` placed at ``chunk.text[char_start:char_end]``: offsets, page, rectangles, source."""
        return citation.placed(self.place(chunk, char_start, char_end, occurrences))

    @on_one_generation
    def place(self, chunk: Chunk, char_start: int, char_end: int, occurrences: int = 1) -> Placement:
        """Where ``chunk.text[char_start:char_end]`` lies: document offsets, context, and for a PDF
        the page and line rectangles, for HTML the decoded-source range and a text fragment, for an
        office file the part and its range (and the slide or sheet, and the cells of a sheet)."""
        doc_text = self.index.doc_text(chunk.doc_version)
        doc_start, doc_end = chunk.start + char_start, chunk.start + char_end
        prefix, suffix = context(doc_text, doc_start, doc_end)
        span = Placement(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            doc_version=chunk.doc_version,
            char_start=char_start,
            char_end=char_end,
            doc_start=doc_start,
            doc_end=doc_end,
            quote=doc_text[doc_start:doc_end],
            occurrences=occurrences,
            prefix=prefix,
            suffix=suffix,
        )
        hidden = self.index.hidden_text(chunk.doc_id).overlapping(doc_start, doc_end)
        if hidden:
            span = dataclasses.replace(
                span,
                hidden_chars=sum(min(doc_end, r.end) - max(doc_start, r.start) for r in hidden),
                hidden_reasons=tuple(sorted({r.reason for r in hidden})),
            )
        media_type = self._media_type(chunk.doc_id)
        if media_type is MediaType.PDF:
            char_map = self.index.pdf_char_map(chunk.doc_id)
            rects = tuple(char_map.rects(doc_text, doc_start, doc_end))
            page = rects[0].page if rects else char_map.page_of(doc_start)
            label = self.index.page_labels(chunk.doc_id).get(page, "") if page else ""
            confidence = char_map.ocr_confidence(doc_start, doc_end)
            return dataclasses.replace(
                span, page=page, page_label=label, rects=rects, locator=pdf_locator(page),
                ocr=confidence is not None, ocr_confidence=confidence,
            )
        if media_type is MediaType.HTML:
            src_start, src_end = self.index.html_source_map(chunk.doc_id).source_range(doc_start, doc_end)
            locator = text_fragment(doc_text, doc_start, doc_end)
            page_url = self._document(chunk.doc_id).source_url  # the live page, when it names itself
            span = dataclasses.replace(
                span, src_start=src_start, src_end=src_end, locator=locator, url=page_url + locator if page_url else ""
            )
            box_map = self.index.html_box_map(chunk.doc_id)  # laid out by a browser: pages and lines as a PDF
            if box_map is not None:
                rects = tuple(box_map.rects(doc_text, doc_start, doc_end))
                span = dataclasses.replace(span, page=rects[0].page if rects else None, rects=rects)
            return span
        if media_type in OFFICE_TYPES:
            office = self.index.office_source_map(chunk.doc_id)
            source = office.source_range(doc_start, doc_end)
            part, src_start, src_end = source if source else ("", None, None)
            span = dataclasses.replace(span, part=part, src_start=src_start, src_end=src_end,
                                       page=office.page_of(doc_start), cells=office.cells_of(doc_start, doc_end))
            return dataclasses.replace(span, **self._office_rects(chunk.doc_id, doc_text, doc_start, doc_end, span.page))
        return span

    def _office_rects(self, doc_id: str, doc_text: str, doc_start: int, doc_end: int, page: int | None) -> dict:
        """Glyph rectangles on the pages LibreOffice rendered; else, for a PPTX, the frames of the
        shapes the span lies in (on their slides); else none."""
        box_map = self.index.office_box_map(doc_id)
        if box_map is not None:
            rects = tuple(box_map.rects(doc_text, doc_start, doc_end))
            if rects:
                return {"rects": rects, "page": rects[0].page}
        shapes = [s for s in self.index.office_shapes(doc_id) if s.start < doc_end and doc_start < s.end]
        rects = tuple(Rect(s.page, s.x0, s.y0, s.x1, s.y1) for s in shapes)
        return {"rects": rects, "page": rects[0].page if rects else page}

    @on_one_generation
    def verify_claim(self, answer_id: str, claim: Claim) -> ClaimRecord:
        if claim.error:
            return ClaimRecord(answer_id, claim.claim_id, claim.text, ClaimVerdict.INVALID, error=claim.error)
        if not claim.support:
            return ClaimRecord(answer_id, claim.claim_id, claim.text, ClaimVerdict.UNSUPPORTED)
        citations = tuple(self.cite(s) for s in claim.support)
        supported = any(c.status.verified and (self.hidden_supports or not c.hidden_chars) for c in citations)
        verdict = ClaimVerdict.VERIFIED if supported else ClaimVerdict.UNVERIFIED
        return ClaimRecord(answer_id, claim.claim_id, claim.text, verdict, citations)

    def _document(self, doc_id: str) -> DocumentRecord:
        key = (self.index.generation.name, doc_id)
        if key not in self._documents:
            self._documents[key] = self.index.document(doc_id)
        return self._documents[key]

    def _media_type(self, doc_id: str) -> MediaType:
        return self._document(doc_id).media_type


def verify_answer(
    index: Index,
    answer: Answer,
    *,
    policy: Policy = Policy.MARK,
    min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS,
) -> tuple[list[ClaimRecord], VerifySummary]:
    """Every claim of ``answer``, checked (all on one generation); the policy decides what happens to failed ones."""
    # Under refuse, a quote of text a reader cannot see supports nothing (issue 14): the claim fails.
    verifier = Verifier(index, min_quote_chars=min_quote_chars, hidden_supports=policy is not Policy.REFUSE)
    with index.request():
        records = [verifier.verify_claim(answer.answer_id, claim) for claim in answer.claims]
    summary = summarize(records)
    if policy is Policy.DROP:
        records = [
            dataclasses.replace(r, dropped=True) if r.verdict is not ClaimVerdict.VERIFIED else r for r in records
        ]
    elif policy is Policy.REFUSE:
        failed = summary.unverified + summary.invalid
        summary = dataclasses.replace(summary, refused=failed > 0)
    return records, summary


def summarize(records: Iterable[ClaimRecord]) -> VerifySummary:
    records = list(records)
    verdicts = collections.Counter(r.verdict for r in records)
    statuses = collections.Counter(c.status.value for r in records for c in r.citations)
    n_citations = sum(statuses.values())
    return VerifySummary(
        claims=len(records),
        verified=verdicts[ClaimVerdict.VERIFIED],
        unverified=verdicts[ClaimVerdict.UNVERIFIED],
        unsupported=verdicts[ClaimVerdict.UNSUPPORTED],
        invalid=verdicts[ClaimVerdict.INVALID],
        citations=n_citations,
        by_status=dict(sorted(statuses.items())),
        unknown_chunk_rate=statuses[CitationStatus.UNKNOWN_CHUNK.value] / n_citations if n_citations else 0.0,
        quote_not_found_rate=statuses[CitationStatus.QUOTE_NOT_FOUND.value] / n_citations if n_citations else 0.0,
    )


def resolve(index: Index, chunk_id: str, quote: str, *, min_quote_chars: int = DEFAULT_MIN_QUOTE_CHARS) -> Citation:
    """One quote against one chunk: the citation record.

    >>> resolve(index.open("build/sample-index"), "web/faq.html#tok:0", "a quote").status  # doctest: +SKIP
    """
    return Verifier(index, min_quote_chars=min_quote_chars).cite(Support(chunk_id, quote))
