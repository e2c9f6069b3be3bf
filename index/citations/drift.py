"""Sweep stored citations after a reindex: ok, moved (repaired), changed, gone, ambiguous.

A citation names a span of one version of a document. After the document
changes, the quote is looked for again in the new text: at the stored
position, then with its stored prefix and suffix, then alone where it is
unique. A quote found verbatim is re-located (chunk, offsets, page,
rectangles, source range) against the live generation; a quote that only
matches fuzzily is reported with what the text says now; a quote that occurs
several times without context to decide is ambiguous, never silently moved
to the first occurrence.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from rapidfuzz import fuzz

from index.citations.match import FUZZY_THRESHOLD, best_window, numbers_kept
from index.citations.verify import Verifier
from index.reader import Index, on_one_generation
from schemas.citations import Citation, CitationStatus, ClaimRecord, DriftStatus
from schemas.records import Chunk, DocStatus

_FUZZY_WINDOW = 4000  # characters around the stored position searched first


@dataclass(frozen=True, slots=True)
class DriftSummary:
    by_drift: dict[DriftStatus, int]  # every status, in the vocabulary's order
    unchecked: int  # citations that were never verified, so there is nothing to check

    @property
    def failed(self) -> int:
        """Citations that no longer stand (neither ok nor moved)."""
        return sum(n for drift, n in self.by_drift.items() if not drift.holds)


class DriftChecker:
    """Classifies and repairs stored citations against the live generation."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.verifier = Verifier(index)
        self._chunk_starts: dict[tuple[str, str], tuple[list[int], list[Chunk]]] = {}  # by (generation, doc_id)

    @on_one_generation
    def check(self, citation: Citation) -> Citation:
        if citation.status not in (CitationStatus.EXACT, CitationStatus.NORMALIZED, CitationStatus.FUZZY):
            return citation
        if len(citation.quote) != citation.char_end - citation.char_start or len(citation.quote) != citation.doc_end - citation.doc_start:
            return _mark(citation, DriftStatus.CORRUPT_RECORD, "len(quote) does not match its offsets")
        doc = self.index.document(citation.doc_id)
        if doc is None:
            return _mark(citation, DriftStatus.GONE, "the document was removed from the corpus")
        if doc.status is not DocStatus.OK:
            return _mark(citation, DriftStatus.GONE, f"the document is now {doc.status.value}: {doc.error}")
        if doc.doc_version == citation.doc_version and self.index.chunk(citation.chunk_id) is not None:
            return _mark(citation, DriftStatus.OK, "")
        text = self.index.doc_text(doc.doc_version)
        if text[citation.doc_start : citation.doc_end] == citation.quote:
            return self._relocate(citation, citation.doc_start, DriftStatus.OK, "")
        found = _find_again(text, citation)
        if len(found) == 1:
            [at] = found
            return self._relocate(citation, at, DriftStatus.MOVED, f"moved from {citation.doc_start} to {at}")
        if found:
            return _mark(citation, DriftStatus.AMBIGUOUS, "the quote occurs more than once and its context does not decide where")
        fuzzy = _fuzzy_find(text, citation)
        if fuzzy is None:
            return _mark(citation, DriftStatus.GONE, "the quote is no longer in the document")
        start, end, score = fuzzy
        changed = self._relocate(citation, start, DriftStatus.CHANGED, f"the text now reads: {text[start:end]!r}", end=end)
        return dataclasses.replace(changed, status=CitationStatus.FUZZY, match_score=round(score, 4))

    def _relocate(self, citation: Citation, doc_start: int, drift: DriftStatus, detail: str, end: int | None = None) -> Citation:
        doc_end = end if end is not None else doc_start + len(citation.quote)
        doc = self.index.document(citation.doc_id)
        chunk = self._chunk_containing(citation.doc_id, doc_start, doc_end)
        if chunk is None:
            return _mark(citation, DriftStatus.GONE, "found, but no chunk of the new version holds the whole quote")
        located = self.verifier.locate(
            dataclasses.replace(citation, doc_version=doc.doc_version), chunk, doc_start - chunk.start, doc_end - chunk.start
        )
        return _mark(located, drift, detail)

    def _chunk_containing(self, doc_id: str, start: int, end: int) -> Chunk | None:
        key = (self.index.generation.name, doc_id)
        if key not in self._chunk_starts:
            chunks = self.index.chunks_of(doc_id)
            self._chunk_starts[key] = ([c.start for c in chunks], chunks)
        starts, chunks = self._chunk_starts[key]
        for i in range(bisect.bisect_right(starts, start) - 1, -1, -1):
            if chunks[i].end >= end:
                return chunks[i]
            if chunks[i].end < start:
                break
        return None


def _find_again(text: str, citation: Citation) -> tuple[int, ...]:
    """Where the quote is now, verbatim: one offset (found), two (ambiguous), or none (gone).

    The quote with its stored context is tried first, then with the prefix or the suffix
    alone, then bare; a context that occurs exactly once decides.
    """
    quote = citation.quote
    with_context = citation.prefix + quote + citation.suffix
    candidates = _occurrences(text, with_context)
    if len(candidates) == 1:
        return (candidates[0] + len(citation.prefix),)
    for context, shift in ((citation.prefix + quote, len(citation.prefix)), (quote + citation.suffix, 0)):
        if context != quote:
            candidates = _occurrences(text, context)
            if len(candidates) == 1:
                return (candidates[0] + shift,)
    return tuple(_occurrences(text, quote))


def _occurrences(text: str, needle: str, limit: int = 2) -> list[int]:
    found, at = [], text.find(needle)
    while at >= 0 and len(found) < limit:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _fuzzy_find(text: str, citation: Citation) -> tuple[int, int, float] | None:
    """The best fuzzy match of the quote (score >= 0.9, numbers unchanged), near its old place first."""
    cutoff = FUZZY_THRESHOLD * 100
    lo = max(0, citation.doc_start - _FUZZY_WINDOW)
    for start in (lo, 0):
        window = text[start : citation.doc_end + _FUZZY_WINDOW] if start else text
        alignment = fuzz.partial_ratio_alignment(citation.quote, window, score_cutoff=cutoff)
        if alignment is not None:
            a, b, score = best_window(window, citation.quote, alignment.dest_start, alignment.dest_end)
            if score >= cutoff and numbers_kept(citation.quote, window[a:b]):
                return start + a, start + b, score / 100
        if start == 0:
            break
    return None


def _mark(citation: Citation, drift: DriftStatus, detail: str) -> Citation:
    return dataclasses.replace(citation, drift=drift, drift_detail=detail)


def check_records(index: Index, records: Iterable[ClaimRecord]) -> Iterator[ClaimRecord]:
    """Each record with every verified citation checked (and repaired where it moved)."""
    checker = DriftChecker(index)
    for record in records:
        with index.request():  # one record's citations on one generation
            checked = tuple(checker.check(c) for c in record.citations)
        yield dataclasses.replace(record, citations=checked)


def summarize_drift(records: Iterable[ClaimRecord]) -> DriftSummary:
    counts: collections.Counter[DriftStatus] = collections.Counter()
    unchecked = 0
    for record in records:
        for citation in record.citations:
            if citation.drift is None:
                unchecked += 1
            else:
                counts[citation.drift] += 1
    return DriftSummary({d: counts[d] for d in DriftStatus}, unchecked)
