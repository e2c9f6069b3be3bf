"""Every limit spanindex enforces on what it is given, in one place: the build, the CLI and the
server read them here, and the README's table of limits says the same.

Each default is one a user would expect never to meet with real documents and answers; the
option named beside it raises it where a batch job needs more. Going over a limit is never a
crash: a document becomes an error row with the reason, an answer is refused in one line (or
with 413/422 by the server), a citation gets the status ``invalid`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024

# --- documents (spanindex build): over a limit, the file is an error row and the batch goes on
MAX_FILE_MB = 512  # --max-file-mb: checked before the file is read
MAX_PDF_PAGES = 10_000  # --max-pages: checked when the PDF is opened, before any page is read
MAX_DOC_CHARS = 64_000_000  # --max-chars: the document's text, checked before it is chunked

# --- answers (spanindex verify, POST /api/verify, the verify page)
MAX_ANSWER_MB = 2.0  # --max-answer-mb: the answer file; the server caps every request body at this (413)
MAX_CLAIMS = 1_000  # --max-claims: claims in one answer; more and the answer is refused
MAX_QUOTE_CHARS = 10_000  # --max-quote-chars: a longer quote is an invalid citation, never matched

# --- a reader of an index in a bucket (index.open, search, resolve, serve, mcp)
READER_CACHE_MB = 2048  # --cache-mb: what its local cache keeps of what it read; least recently used out first

# --- any JSON spanindex reads (answers, citation records): a deeper or larger value is refused
MAX_JSON_DEPTH = 64  # nesting of arrays and objects (an answer needs 4, a record 4)
MAX_INT_DIGITS = 20  # digits of one integer (an offset or a rank fits in 19)

# --- what the viewer renders (the server's pages and `spanindex render`)
VIEW_SOURCE_CHARS = 100_000  # an HTML source view: the whole page up to this many characters of
#                              decoded source, else a window of about this size around the span
VIEW_TEXT_CHARS = 6_000  # a text view: characters of document text shown on each side of the span
VIEW_CHUNK_CHARS = 20_000  # a chunk's or hit's text on a page: longer texts are cut, with a note
VIEW_SIBLINGS = 20  # the chunk inspector lists this many neighbouring chunks on each side
VIEW_ATTRIBUTE_CHARS = 10_000  # an attribute value (an inline image) in a windowed HTML view


@dataclass(frozen=True, slots=True)
class AnswerLimits:
    """What one answer may hold.

    >>> AnswerLimits().max_bytes
    2097152
    """

    max_bytes: int = int(MAX_ANSWER_MB * MIB)
    max_claims: int = MAX_CLAIMS
    max_quote_chars: int = MAX_QUOTE_CHARS


@dataclass(frozen=True, slots=True)
class DocumentLimits:
    """What one document may hold before the build refuses it (as an error row).

    >>> DocumentLimits().max_file_bytes // MIB
    512
    """

    max_file_bytes: int = MAX_FILE_MB * MIB
    max_pages: int = MAX_PDF_PAGES
    max_chars: int = MAX_DOC_CHARS
