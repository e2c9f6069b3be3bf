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
import unicodedata
from dataclasses import dataclass

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from ingest.text import NormalizedText, is_no_space_script, normalize, normalize_with_map
from schemas.citations import CitationStatus

DEFAULT_MIN_QUOTE_CHARS = 12
FUZZY_THRESHOLD = 0.9

# A number as a reader would check it: optional currency sign, digits with their
# separators, an optional percent sign.
_NUMBER = re.compile(r"[$€£¥]?\s?\d+(?:[.,]\d+)*\s?%?")


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
    # Normalising shortens a quote by folding whitespace, dropping invisibles and composing
    # accents (at most halving what remains): a quote with twice the minimum of visible
    # characters skips the work.
    if len("".join(quote.split())) < 2 * min_chars and _weight(normalize(quote)) < min_chars:
        return QuoteMatch(CitationStatus.QUOTE_TOO_SHORT)
    at = chunk_text.find(quote)
    if at >= 0:
        return QuoteMatch(CitationStatus.EXACT, at, at + len(quote), 1.0, _count(chunk_text, quote))
    norm_quote = normalize(quote)
    if _weight(norm_quote) < min_chars:
        return QuoteMatch(CitationStatus.QUOTE_TOO_SHORT)
    norm_chunk = _normalized(chunk_text)
    at = norm_chunk.text.find(norm_quote)
    if at >= 0:
        start, end = norm_chunk.original_span(at, at + len(norm_quote))
        return QuoteMatch(CitationStatus.NORMALIZED, start, end, 1.0, _count(norm_chunk.text, norm_quote))
    return _fuzzy(norm_chunk, norm_quote)


def _weight(norm_quote: str) -> int:
    """A quote's length for the minimum: a CJK character says as much as two Latin ones.

    >>> _weight("overage fee"), _weight("\u65e5\u672c\u8a9e\u306e\u672c")
    (11, 10)
    """
    return len(norm_quote) + sum(map(is_no_space_script, norm_quote))


def _fuzzy(norm_chunk: NormalizedText, norm_quote: str) -> QuoteMatch:
    text = norm_chunk.text
    if not text:
        return QuoteMatch(CitationStatus.QUOTE_NOT_FOUND)
    cutoff = FUZZY_THRESHOLD * 100
    alignment = fuzz.partial_ratio_alignment(norm_quote, text, score_cutoff=cutoff)
    if alignment is None:
        return QuoteMatch(CitationStatus.QUOTE_NOT_FOUND)
    start, end, score = best_window(text, norm_quote, alignment.dest_start, alignment.dest_end)
    if score < cutoff or not numbers_kept(norm_quote, text[start:end]):
        return QuoteMatch(CitationStatus.QUOTE_NOT_FOUND, score=score / 100)
    original_start, original_end = norm_chunk.original_span(start, end)
    return QuoteMatch(CitationStatus.FUZZY, original_start, original_end, round(score / 100, 4), 1)


def best_window(text: str, quote: str, start: int, end: int) -> tuple[int, int, float]:
    """The span of ``text`` that the quote corresponds to, around an aligned window.

    partial_ratio aligns a window exactly as long as the quote, which cuts words when
    the text inserted or dropped some. The quote is aligned again (LCS opcodes) over the
    window with some slack; its first and last solid matching blocks, extended by what
    the quote has beyond them, give the span, widened to whole words. (Scoring windows
    by ratio alone would prefer "billing" to "billing department" for "billing team".)
    """
    slack = max(3, len(quote) // 8)
    lo, hi = max(0, start - slack), min(len(text), end + slack)
    blocks = [b for b in Indel.opcodes(quote, text[lo:hi]) if b.tag == "equal" and b.src_end - b.src_start >= _SOLID]
    if blocks:
        first, last = blocks[0], blocks[-1]
        start = max(lo, lo + first.dest_start - first.src_start)
        end = min(hi, lo + last.dest_end + (len(quote) - last.src_end))
    start, end = _widen_to_words(text, start, end)
    if end < len(text) and quote[-1:] in _TRAILING_PUNCTUATION and text[end] == quote[-1]:
        end += 1
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end, fuzz.ratio(quote, text[start:end])


_SOLID = 3  # shorter matching blocks at the ends are stray letters, not alignment
_TRAILING_PUNCTUATION = frozenset(".,;:!?)\"'")


def _widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    while 0 < start < len(text) and _inside_word(text[start - 1], text[start]):
        start -= 1
    while 0 < end < len(text) and _inside_word(text[end - 1], text[end]):
        end += 1
    return start, end


def _inside_word(before: str, after: str) -> bool:
    # Chinese and Japanese have no spaces to find words by: every character is its own
    # unit there, so alignment works per character instead of widening to a whole sentence.
    return before.isalnum() and after.isalnum() and not (is_no_space_script(before) or is_no_space_script(after))


def numbers_kept(quote: str, span: str) -> bool:
    """Every number of the quote occurs in the span, digit for digit, as often.

    >>> numbers_kept("$0.12 per 1,000", "billed $0.12 per 1,000 calls"), numbers_kept("$0.21", "$0.12")
    (True, False)
    >>> numbers_kept("40-40 KB", "30-40 KB")
    False
    >>> numbers_kept("\uff12\uff10\uff11\uff18\u5e74", "2018\u5e74"), numbers_kept("\uff12\uff10\uff11\uff19", "2018")
    (True, False)
    """
    quoted = collections.Counter(_plain_number(m.group()) for m in _NUMBER.finditer(quote))
    found = collections.Counter(_plain_number(m.group()) for m in _NUMBER.finditer(span))
    return not quoted - found


def _plain_number(number: str) -> str:
    # Digits compare by value, whatever their script (full-width ２ is 2, Arabic-Indic ٢ too).
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in unicodedata.normalize("NFKC", number) if c != " ")


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
