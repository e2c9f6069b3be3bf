"""URL fragments that open a source at a span, quote context, and offset units.

HTML gets a W3C/WICG text fragment (``#:~:text=``), PDF a ``#page=N`` open
parameter. Offsets inside spanindex are code points; browsers count UTF-16
code units and many APIs count UTF-8 bytes, so conversions are provided.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import quote as percent_encode

CONTEXT_CHARS = 32
_TERM_WORDS = 5  # words kept at each end of a long quote (textStart,textEnd form)
_CONTEXT_WORDS = 3
_BLOCK_BREAK = re.compile(r"\s*[\n\f\t]\s*")


def context(doc_text: str, start: int, end: int, width: int = CONTEXT_CHARS) -> tuple[str, str]:
    """Up to ``width`` characters of document text before and after ``[start, end)``."""
    return doc_text[max(0, start - width) : start], doc_text[end : end + width]


def pdf_locator(page: int | None) -> str:
    return f"#page={page}" if page else ""


def text_fragment(doc_text: str, start: int, end: int) -> str:
    """A text fragment directive that scrolls a browser to ``doc_text[start:end]``.

    Long quotes, and quotes crossing a block boundary (which a single term cannot
    match), use the ``textStart,textEnd`` form; a quote that is not unique in the
    page gets a prefix and suffix so the browser finds the right occurrence.

    >>> text_fragment("Plans & prices - see below. Plans & prices", 0, 14)
    '#:~:text=Plans%20%26%20prices,-%2D%20see%20below.'
    """
    quote = doc_text[start:end]
    lines = [line for line in _BLOCK_BREAK.split(quote) if line.strip()]
    if not lines:
        return ""
    first, last = lines[0].split(), lines[-1].split()
    if len(lines) == 1 and len(first) <= 2 * _TERM_WORDS:
        terms = [" ".join(first)]
    else:
        terms = [" ".join(first[:_TERM_WORDS]), " ".join(last[-_TERM_WORDS:])]
    directive = ",".join(_encode(t) for t in terms)
    if _occurrences(doc_text, quote) > 1:
        before = _BLOCK_BREAK.split(doc_text[max(0, start - 200) : start])[-1].split()[-_CONTEXT_WORDS:]
        after = _BLOCK_BREAK.split(doc_text[end : end + 200])[0].split()[:_CONTEXT_WORDS]
        if before:
            directive = f"{_encode(' '.join(before))}-,{directive}"
        if after:
            directive = f"{directive},-{_encode(' '.join(after))}"
    return "#:~:text=" + directive


def _encode(term: str) -> str:
    # The spec reserves '-', ',' and '&' inside terms; urllib leaves '-' alone.
    return percent_encode(term, safe="").replace("-", "%2D")


def _occurrences(doc_text: str, quote: str) -> int:
    """Occurrences as a browser would count them: case-insensitive, whitespace collapsed."""
    needle = " ".join(quote.split()).casefold()
    if not needle:
        return 0
    return _as_browser_searches(doc_text).count(needle)


@functools.lru_cache(maxsize=16)
def _as_browser_searches(doc_text: str) -> str:
    return " ".join(doc_text.split()).casefold()


def utf16_offset(text: str, codepoint_offset: int) -> int:
    """Code-point offset -> UTF-16 code units (what JavaScript strings count).

    >>> utf16_offset("a\\U0001F600b", 2)
    3
    """
    prefix = text[:codepoint_offset]
    return len(prefix) + sum(1 for c in prefix if ord(c) > 0xFFFF)


def utf8_offset(text: str, codepoint_offset: int) -> int:
    """Code-point offset -> UTF-8 bytes.

    >>> utf8_offset("caf\\u00e9!", 5)
    6
    """
    return len(text[:codepoint_offset].encode("utf-8"))


def codepoint_offset_from_utf16(text: str, utf16: int) -> int:
    units = 0
    for i, c in enumerate(text):
        if units >= utf16:
            return i
        units += 2 if ord(c) > 0xFFFF else 1
    return len(text)


def codepoint_offset_from_utf8(text: str, utf8: int) -> int:
    return len(text.encode("utf-8")[:utf8].decode("utf-8", errors="ignore"))
