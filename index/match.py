"""Find a model's quote in the text of the chunk it cites.

In order: verbatim; after normalising both sides (mapped back to exact offsets
of the unnormalised text); fuzzily, with rapidfuzz's alignment, only when the
score is at least 0.9 *and* every number in the quote appears unchanged in
the matched span ("$0.21" never verifies against "$0.12").
"""

from __future__ import annotations

import collections
import functools
import re
from dataclasses import dataclass

from rapidfuzz import fuzz

from ingest.normalize import NormalizedText, normalize, normalize_with_map
from schemas.citations import CitationStatus

DEFAULT_MIN_QUOTE_CHARS = 12
FUZZY_THRESHOLD = 0.9

# A number as a reader would check it: optional currency sign, digits with their
# separators, an optional percent sign.
_NUMBER = re.compile(r"[$€£¥]?\s?\d+(?:[.,]\d+)*\s?%?")
_WORD_EDGE = re.compile(r"\b|(?<=\s)|(?=\s)")


@dataclass(frozen=True, slots=True)
class QuoteMatch:
    status: CitationStatus
    char_start: int = 0  # chunk-relative, half-open, in the unnormalised chunk text
    char_end: int = 0
    score: float = 0.0
    occurrences: int = 0  # times the quote occurs in the chunk (exact/normalised)


def match_quote(chunk_text: str, quote: str, min_chars: int = DEFAULT_MIN_QUOTE_CHARS) -> QuoteMatch:
    """Where ``quote`` is in ``chunk_text``, and how sure we are.

    >>> match_quote("Overage is billed at $0.12 per 1,000 calls.", "billed at $0.12 per 1,000 calls")
    QuoteMatch(status=<CitationStatus.EXACT: 'exact'>, char_start=11, char_end=42, score=1.0, occurrences=1)
    >>> match_quote("Overage is billed at $0.12 per 1,000 calls.", "billed at $0.21 per 1,000 calls").status
    <CitationStatus.QUOTE_NOT_FOUND: 'quote_not_found'>
    """
    norm_quote = normalize(quote)
    if len(norm_quote) < min_chars:
        return QuoteMatch(CitationStatus.QUOTE_TOO_SHORT)
    at = chunk_text.find(quote)
    if at >= 0:
        return QuoteMatch(CitationStatus.EXACT, at, at + len(quote), 1.0, _count(chunk_text, quote))
    norm_chunk = _normalized(chunk_text)
    at = norm_chunk.text.find(norm_quote)
    if at >= 0:
        start, end = norm_chunk.original_span(at, at + len(norm_quote))
        return QuoteMatch(CitationStatus.NORMALIZED, start, end, 1.0, _count(norm_chunk.text, norm_quote))
    return _fuzzy(norm_chunk, norm_quote)


def _fuzzy(norm_chunk: NormalizedText, norm_quote: str) -> QuoteMatch:
    text = norm_chunk.text
    if not text:
        return QuoteMatch(CitationStatus.QUOTE_NOT_FOUND)
    cutoff = FUZZY_THRESHOLD * 100
    alignment = fuzz.partial_ratio_alignment(norm_quote, text, score_cutoff=cutoff)
    if alignment is None:
        return QuoteMatch(CitationStatus.QUOTE_NOT_FOUND)
    start, end, score = _best_window(text, norm_quote, alignment.dest_start, alignment.dest_end)
    if score < cutoff or not numbers_kept(norm_quote, text[start:end]):
        return QuoteMatch(CitationStatus.QUOTE_NOT_FOUND, score=score / 100)
    original_start, original_end = norm_chunk.original_span(start, end)
    return QuoteMatch(CitationStatus.FUZZY, original_start, original_end, round(score / 100, 4), 1)


def _best_window(text: str, quote: str, start: int, end: int) -> tuple[int, int, float]:
    """Widen or narrow the aligned window to word edges, keeping the best full-ratio score.

    partial_ratio aligns a window as long as the quote; a quote with an inserted or
    dropped word matches a slightly longer or shorter span.
    """
    slack = max(3, len(quote) // 8)
    edges = [m.start() for m in _WORD_EDGE.finditer(text, max(0, start - slack), min(len(text), end + slack) + 1)]
    edges = sorted(set(edges) | {start, end})
    starts = [e for e in edges if e <= start + slack and e < end]
    ends = [e for e in edges if e >= end - slack and e > start]
    best = (start, end, fuzz.ratio(quote, text[start:end]))
    for s in starts:
        for e in ends:
            if e <= s:
                continue
            score = fuzz.ratio(quote, text[s:e], score_cutoff=best[2])
            if score > best[2]:
                best = (s, e, score)
    s, e, score = best
    while s < e and text[s] == " ":
        s += 1
    while e > s and text[e - 1] == " ":
        e -= 1
    return s, e, score


def numbers_kept(quote: str, span: str) -> bool:
    """Every number of the quote occurs in the span, digit for digit, as often.

    >>> numbers_kept("$0.12 per 1,000", "billed $0.12 per 1,000 calls"), numbers_kept("$0.21", "$0.12")
    (True, False)
    >>> numbers_kept("40-40 KB", "30-40 KB")
    False
    """
    quoted = collections.Counter(_plain_number(m.group()) for m in _NUMBER.finditer(quote))
    found = collections.Counter(_plain_number(m.group()) for m in _NUMBER.finditer(span))
    return not quoted - found


def _plain_number(number: str) -> str:
    return number.replace(" ", "")


def _count(haystack: str, needle: str) -> int:
    count, at = 0, haystack.find(needle)
    while at >= 0:
        count += 1
        at = haystack.find(needle, at + 1)
    return count


@functools.lru_cache(maxsize=2048)
def _normalized(chunk_text: str) -> NormalizedText:
    return normalize_with_map(chunk_text)


def find_in_document(doc_text: str, quote: str) -> int | None:
    """First document offset where the quote occurs verbatim or normalised (a diagnostic)."""
    at = doc_text.find(quote)
    if at >= 0:
        return at
    norm_quote = normalize(quote)
    if not norm_quote:
        return None
    norm_doc = _normalized(doc_text)
    at = norm_doc.text.find(norm_quote)
    return None if at < 0 else norm_doc.original_span(at, at + len(norm_quote))[0]
