"""The one error hierarchy of spanindex.

Every error carries what is known of where it happened (document, page,
offset) so a batch can report failures together and a CLI can map them to
exit codes without parsing messages.
"""

from __future__ import annotations


class SpanindexError(Exception):
    """Root of every error spanindex raises on purpose.

    >>> str(SpanindexError("bad thing", doc_id="a.pdf", page=3))
    'a.pdf (page 3): bad thing'
    """

    def __init__(
        self,
        message: str,
        *,
        doc_id: str | None = None,
        page: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.doc_id = doc_id
        self.page = page
        self.offset = offset

    def __str__(self) -> str:
        where = []
        if self.page is not None:
            where.append(f"page {self.page}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        head = self.doc_id or ""
        if where:
            head = f"{head} ({', '.join(where)})".strip()
        return f"{head}: {self.message}" if head else self.message


class DocumentError(SpanindexError):
    """A document could not be turned into text; the batch carries on."""


class CorruptDocumentError(DocumentError):
    """The file is damaged or is not what its extension says."""


class EncryptedDocumentError(DocumentError):
    """The file needs a password."""


class DocumentTooLargeError(DocumentError):
    """The document is over one of the limits of ``schemas.limits`` (pages, characters)."""


class EncodingError(DocumentError):
    """The bytes cannot be decoded as text in any plausible encoding."""


class IndexFormatError(SpanindexError):
    """An index (or one of its tables) is missing, damaged or of a format we do not know."""


class PasswordFileError(SpanindexError):
    """The --passwords file cannot be used (it never quotes a line: a line may hold a password)."""


class CorpusError(SpanindexError):
    """The corpus folder cannot be read at all (missing, not a folder, not listable)."""


class IndexWriteError(SpanindexError):
    """The index folder cannot be written (disk full, read-only, permission lost); the live generation is unchanged."""


class PublishRaceError(IndexWriteError):
    """Another build published to the index (in an object store) since this build started: its generation is not live."""


class IndexLockedError(SpanindexError):
    """Another build holds the index lock."""


class ChunkerError(SpanindexError):
    """Chunker settings cannot be honoured (e.g. a limit above the model's)."""


class FilterError(SpanindexError):
    """A search filter (``--where``) is not an expression spanindex accepts: one line says what."""


class ModelError(SpanindexError):
    """The embedding model cannot be loaded offline or does not fit the index."""


class AnswerFormatError(SpanindexError):
    """An answer or citation file is not in a shape we accept."""


class OcrError(SpanindexError):
    """Tesseract is missing, cannot read the asked languages, or failed on a page."""


class ClusterError(SpanindexError):
    """A cluster cannot run the build: Ray is missing, or a node runs other code or another model."""
