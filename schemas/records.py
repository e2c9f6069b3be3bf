"""Typed records that flow through the pipeline and land in the index.

Offsets are Unicode code points (Python ``str`` indices) into the document
text, half-open, unless a field's name says otherwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from schemas.ann import AnnParams


class MediaType(StrEnum):
    PDF = "application/pdf"
    HTML = "text/html"
    MARKDOWN = "text/markdown"
    TEXT = "text/plain"
    DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    EPUB = "application/epub+zip"
    ODT = "application/vnd.oasis.opendocument.text"
    ODP = "application/vnd.oasis.opendocument.presentation"
    ODS = "application/vnd.oasis.opendocument.spreadsheet"
    DOC = "application/msword"  # legacy binary formats: read through LibreOffice's OOXML conversion
    PPT = "application/vnd.ms-powerpoint"
    XLS = "application/vnd.ms-excel"


# Zip packages of XML (or XHTML) parts whose text is mapped into the parts: office_map's documents.
OFFICE_TYPES = frozenset({MediaType.DOCX, MediaType.PPTX, MediaType.XLSX, MediaType.EPUB, MediaType.ODT,
                          MediaType.ODP, MediaType.ODS, MediaType.DOC, MediaType.PPT, MediaType.XLS})


class DocStatus(StrEnum):
    OK = "ok"
    EMPTY = "empty"  # the file holds no text at all (zero bytes, or only markup/whitespace)
    NO_TEXT = "no_text"  # a PDF none of whose pages has a text layer (scanned, image-only)
    ERROR = "error"  # could not be parsed; `error` says why


class SkipReason(StrEnum):
    """Why a file in the corpus folder is not a document of the index (the build summary says which)."""

    UNKNOWN_TYPE = "unknown_type"  # a suffix no parser reads
    SYMLINK_OUTSIDE = "symlink_outside"  # a link whose target lies outside the corpus (--follow-symlinks follows it)
    SYMLINK_LOOP = "symlink_loop"  # a link that resolves to itself or to a folder above it
    SYMLINK_BROKEN = "symlink_broken"  # a link to nothing
    FOLDER_IN_CORPUS = "folder_in_corpus"  # a link to a folder already indexed under its own path
    FIFO = "fifo"  # a named pipe: reading it would wait for a writer
    SOCKET = "socket"
    DEVICE = "device"  # a character or block device
    NOT_A_FILE = "not_a_file"  # any other kind of node
    UNREADABLE = "unreadable"  # a folder that cannot be listed, or a node that cannot be looked at
    ID_TAKEN = "id_taken"  # a non-UTF-8 name whose safe id is the name of another file
    INDEX_FOLDER = "index_folder"  # the index being built, inside its own corpus


class RunKind(StrEnum):
    """How a run of document text relates to the HTML source it came from."""

    TEXT = "text"  # source[src_start:src_end] == text[start:end]
    ENTITY = "entity"  # a character reference: source range unescapes to the text
    WHITESPACE = "whitespace"  # one space/newline standing for a run of source whitespace (collapsed, CRLF)
    SYNTHETIC = "synthetic"  # a separator the parser inserted: empty source range


class OcrMode(StrEnum):
    """Which pages of a PDF are read by OCR."""

    OFF = "off"
    AUTO = "auto"  # pages with no usable text layer (none, or one that is not text)
    FORCE = "force"  # every page, its text layer set aside


class HiddenReason(StrEnum):
    """Why a reader cannot see a run of document text (it stays in the text, out of embeddings)."""

    INVISIBLE_RENDER_MODE = "invisible_render_mode"  # PDF render mode 3, over nothing that shows it
    BACKGROUND_COLOR = "background_color"  # drawn in the colour of what lies under it
    TRANSPARENT = "transparent"  # opacity or alpha 0
    TINY = "tiny"  # font size below 1 pt (PDF) or 1 CSS px (HTML)
    CLIPPED = "clipped"  # clipped away (a clip path, overflow hidden)
    COVERED = "covered"  # painted over by an opaque box or image that shows nothing of it (PDF)
    OFF_PAGE = "off_page"  # outside the page or positioned off the screen
    CSS_HIDDEN = "css_hidden"  # display:none or visibility:hidden (through a style sheet or inline)
    ARIA_HIDDEN = "aria_hidden"  # in an aria-hidden subtree with no visible box
    ZERO_SIZE = "zero_size"  # laid out with no area
    NOT_LAID_OUT = "not_laid_out"  # the browser built no box for it
    HIDDEN_FORMATTING = "hidden_formatting"  # DOCX hidden text (w:vanish, w:specVanish), directly or by style
    HIDDEN_SLIDE = "hidden_slide"  # PPTX: a slide left out of the show (show="0")
    HIDDEN_SHEET = "hidden_sheet"  # XLSX: a sheet whose state is hidden or veryHidden
    HIDDEN_ROW = "hidden_row"  # XLSX: a hidden row (or one of zero height)
    HIDDEN_COLUMN = "hidden_column"  # XLSX: a cell of a hidden column


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def doc_version_of(doc_text: str) -> str:
    """The version of a document is the hash of its text.

    >>> doc_version_of("")[:15]
    'sha256:e3b0c442'
    """
    return "sha256:" + sha256_hex(doc_text.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class PdfPage:
    """One physical page: its slice of the document text and its displayed size."""

    page: int  # 1-based
    start: int  # the page's text is doc_text[start:end] (page separators excluded)
    end: int
    width: float  # points, as displayed (rotation applied, cropbox)
    height: float
    rotation: int
    label: str  # printed page label, "" where the PDF defines none
    has_text: bool
    ocr: bool = False  # its text was read by OCR from the rendered page


@dataclass(frozen=True, slots=True, eq=False)
class PdfCharRun:
    """Real characters [start, end) on one line of one page, each with its glyph box.

    ``glyph_boxes`` has shape (end - start, 4): x0, y0, x1, y1 in points, top-left
    origin of the displayed page (rotation applied). The boxes of an HTML page's browser
    layout (``html_boxes``) have this shape too, in CSS px of their page of the layout.
    A run read by OCR has
    ``ocr_confidence``: for each character, the confidence (0-100) Tesseract gave
    its word; ``None`` for characters of a text layer.
    """

    page: int
    start: int
    end: int
    glyph_boxes: np.ndarray
    ocr_confidence: np.ndarray | None = None  # uint8 (end - start,)


@dataclass(frozen=True, slots=True)
class HtmlRun:
    """doc_text[start:end] came from decoded_source[src_start:src_end]."""

    start: int
    end: int
    src_start: int
    src_end: int
    kind: RunKind


RUN_KINDS = tuple(RunKind)  # kind codes of HtmlRuns: the index into this tuple


class _RunColumns(Sequence):
    """A sequence of run records kept as numpy columns (``start`` among them), each record made
    on demand by ``_row``: what HtmlRuns and OfficeRuns share."""

    __slots__ = ()

    def _row(self, i: int):
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.start)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._row(i)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != len(self):
            return NotImplemented if not isinstance(other, Sequence) else False
        return all(a == b for a, b in zip(self, other))

    __hash__ = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} runs)"


class HtmlRuns(_RunColumns):
    """The runs of one HTML document as columns: a sequence of ``HtmlRun`` made on demand.

    A 50 MB page has over a million runs; as objects they take ~200 bytes each, as
    columns 33 (four int64 and a kind code). The table is made from the columns.

    >>> runs = HtmlRuns.from_records([HtmlRun(0, 3, 5, 8, RunKind.TEXT)])
    >>> runs[0], len(runs), runs == (HtmlRun(0, 3, 5, 8, RunKind.TEXT),)
    (HtmlRun(start=0, end=3, src_start=5, src_end=8, kind=<RunKind.TEXT: 'text'>), 1, True)
    """

    __slots__ = ("start", "end", "src_start", "src_end", "kind")

    def __init__(self, start: np.ndarray, end: np.ndarray, src_start: np.ndarray, src_end: np.ndarray,
                 kind: np.ndarray) -> None:
        self.start, self.end, self.src_start, self.src_end = start, end, src_start, src_end
        self.kind = kind  # int8 codes into RUN_KINDS

    @classmethod
    def from_records(cls, runs: Sequence[HtmlRun]) -> HtmlRuns:
        columns = [np.array([getattr(r, f) for r in runs], dtype=np.int64) for f in ("start", "end", "src_start", "src_end")]
        return cls(*columns, np.array([RUN_KINDS.index(r.kind) for r in runs], dtype=np.int8))

    def rows(self, first: int, stop: int) -> HtmlRuns:
        """Runs [first, stop), sharing the columns."""
        return HtmlRuns(self.start[first:stop], self.end[first:stop], self.src_start[first:stop],
                        self.src_end[first:stop], self.kind[first:stop])

    def _row(self, i: int) -> HtmlRun:
        return HtmlRun(int(self.start[i]), int(self.end[i]), int(self.src_start[i]), int(self.src_end[i]),
                       RUN_KINDS[self.kind[i]])

    def __iter__(self):
        kinds = [RUN_KINDS[k] for k in self.kind.tolist()]
        for row in zip(self.start.tolist(), self.end.tolist(), self.src_start.tolist(), self.src_end.tolist(), kinds):
            yield HtmlRun(*row)


@dataclass(frozen=True, slots=True)
class HiddenRun:
    """doc_text[start:end] is text a reader cannot see, for ``reason``."""

    start: int
    end: int
    reason: HiddenReason


@dataclass(frozen=True, slots=True)
class OfficeRun:
    """doc_text[start:end] came from ``part``'s XML, decoded as UTF-8, [src_start:src_end].

    ``kind`` as for HTML: text (the source is the text), entity (a character reference such as
    ``&amp;``, or an element standing for one character such as ``<w:tab/>``), synthetic (a
    separator, title or numbering label the parser generated: ``part`` is "" and the range empty).
    """

    start: int
    end: int
    part: str  # the zip member, e.g. "word/document.xml"
    src_start: int
    src_end: int
    kind: RunKind


class OfficeRuns(_RunColumns):
    """The runs of one office document as columns (see ``HtmlRuns``), the part as a code into ``parts``.

    >>> runs = OfficeRuns.from_records([OfficeRun(0, 2, "word/document.xml", 9, 11, RunKind.TEXT)])
    >>> runs[0].part, len(runs), runs.parts
    ('word/document.xml', 1, ('', 'word/document.xml'))
    """

    __slots__ = ("start", "end", "part_code", "src_start", "src_end", "kind", "parts")

    def __init__(self, start: np.ndarray, end: np.ndarray, part_code: np.ndarray, src_start: np.ndarray,
                 src_end: np.ndarray, kind: np.ndarray, parts: tuple[str, ...]) -> None:
        self.start, self.end, self.src_start, self.src_end = start, end, src_start, src_end
        self.part_code = part_code  # int32 codes into ``parts``; parts[0] == "" (synthetic runs)
        self.kind = kind  # int8 codes into RUN_KINDS
        self.parts = parts

    @classmethod
    def from_records(cls, runs: Sequence[OfficeRun]) -> OfficeRuns:
        parts = ("",) + tuple(sorted({r.part for r in runs} - {""}))
        code = {p: i for i, p in enumerate(parts)}
        columns = [np.array([getattr(r, f) for r in runs], dtype=np.int64) for f in ("start", "end")]
        sources = [np.array([getattr(r, f) for r in runs], dtype=np.int64) for f in ("src_start", "src_end")]
        return cls(*columns, np.array([code[r.part] for r in runs], dtype=np.int32), *sources,
                   np.array([RUN_KINDS.index(r.kind) for r in runs], dtype=np.int8), parts)

    def rows(self, first: int, stop: int) -> OfficeRuns:
        """Runs [first, stop), sharing the columns."""
        return OfficeRuns(self.start[first:stop], self.end[first:stop], self.part_code[first:stop],
                          self.src_start[first:stop], self.src_end[first:stop], self.kind[first:stop], self.parts)

    def _row(self, i: int) -> OfficeRun:
        return OfficeRun(int(self.start[i]), int(self.end[i]), self.parts[self.part_code[i]], int(self.src_start[i]),
                         int(self.src_end[i]), RUN_KINDS[self.kind[i]])

    def __iter__(self):
        parts = [self.parts[c] for c in self.part_code.tolist()]
        kinds = [RUN_KINDS[k] for k in self.kind.tolist()]
        for row in zip(self.start.tolist(), self.end.tolist(), parts, self.src_start.tolist(),
                       self.src_end.tolist(), kinds):
            yield OfficeRun(*row)


@dataclass(frozen=True, slots=True)
class OfficePage:
    """A PPTX slide or an XLSX sheet: its slice of the document text."""

    page: int  # 1-based: the slide's number, the sheet's place in the workbook
    start: int
    end: int
    name: str  # the sheet's name; the slide's part ("ppt/slides/slide3.xml")
    hidden: bool = False  # a hidden slide or sheet


@dataclass(frozen=True, slots=True)
class OfficeCell:
    """doc_text[start:end] is the text of one XLSX cell, as Excel displays it."""

    start: int
    end: int
    ref: str  # "Sheet1!B7"; a sheet name that needs it is quoted: "'Q1 sales'!B7"


@dataclass(frozen=True, slots=True)
class OfficeShape:
    """doc_text[start:end] is the text of one PPTX shape, drawn in this frame on slide ``page``.

    The frame is the slide's own geometry (placeholders inherit theirs from the layout and the
    master, group transforms applied), in points from the slide's top left corner.
    """

    start: int
    end: int
    page: int  # the slide's number
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading of the document: ``text`` is ``doc_text[start:start + len(text)]`` (real text,
    never made up; a PDF outline entry whose words are not on its page is the one exception: it
    stands at the page's start with the outline's words). ``level`` 1 is the outermost."""

    start: int
    level: int
    text: str


@dataclass(frozen=True, slots=True, eq=False)
class ParsedDocument:
    """What a parser produces: the document text and its map back to the artefact."""

    doc_id: str
    media_type: MediaType
    text: str
    title: str = ""
    encoding: str | None = None  # of the source bytes, for text formats
    pages: tuple[PdfPage, ...] = ()
    char_runs: tuple[PdfCharRun, ...] = ()
    html_runs: Sequence[HtmlRun] = ()  # HtmlRuns from the parser
    decoded_source: str | None = None  # HTML only: the source the runs index
    decrypted_source: bytes | None = None  # a PDF opened with a password: the same file unencrypted, for the viewer
    warnings: tuple[str, ...] = ()
    source_url: str = ""  # HTML: the page's own absolute address (canonical link or og:url)
    created: str | None = None  # its own date, ISO 8601: PDF CreationDate, HTML published time, office core created
    hidden_runs: tuple[HiddenRun, ...] = ()  # sorted, non-overlapping
    office_runs: Sequence[OfficeRun] = ()  # DOCX, PPTX, XLSX: OfficeRuns from the parser
    office_pages: tuple[OfficePage, ...] = ()  # PPTX slides, XLSX sheets, in order
    office_cells: tuple[OfficeCell, ...] = ()  # XLSX: the text of each cell and its reference
    office_shapes: tuple[OfficeShape, ...] = ()  # PPTX: each text shape's frame on its slide
    converted_source: bytes | None = None  # a legacy .doc/.ppt/.xls: the OOXML copy its map points into
    headings: tuple[Heading, ...] = ()  # in document order (sorted by start): the sections chunks lie in

    @property
    def doc_version(self) -> str:
        return doc_version_of(self.text)

    @property
    def n_pages(self) -> int:
        return len(self.pages) or len(self.office_pages)  # PDF pages, or PPTX slides and XLSX sheets

    @property
    def pages_without_text(self) -> int:
        return sum(1 for p in self.pages if not p.has_text)


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One row of documents.parquet: every file the build saw, indexed or not."""

    doc_id: str
    doc_version: str  # "" when no text could be read
    source_sha256: str
    media_type: MediaType
    n_chars: int
    n_pages: int
    title: str
    encoding: str | None
    status: DocStatus
    error: str  # why the status is not ok; "" when ok
    pages_without_text: int = 0
    n_chunks: int = 0
    source_bytes: int = 0
    # The file's modification time (ns) taken before it was read; 0 for a link. A build trusts it only
    # under its segment's mtimes_trusted_before_ns (a file written just before its read may change
    # again within the clock's step): the row is the file's, whenever it is read.
    source_mtime_ns: int = 0
    # An object in a store (ingest.corpus.store): its ETag as the listing gave it before it was read;
    # with its size and mtime it vouches for the object, at any age. "" for a file on disk.
    source_etag: str = ""
    warning: str = ""  # recovered problems (charset lie, pages without text)
    source_url: str = ""  # where the page lives on the web, as it says itself (HTML), else the object's URL
    # in a store (s3://bucket/key); "" unknown
    n_hidden_chars: int = 0  # characters of its text that a reader cannot see (HiddenRun)
    metadata: str = "{}"  # the user's own fields, a JSON object (sidecar NAME.meta.json, metadata.jsonl)
    created: str | None = None  # the document's own date, ISO 8601 (ingest.formats.dates); None: it has none
    language: str = ""  # the main language of its text, ISO 639-1 (ingest.text.language); "" undetermined


@dataclass(frozen=True, slots=True)
class Chunk:
    """One row of chunks.parquet. ``text == doc_text[start:end]`` always."""

    chunk_id: str  # f"{doc_id}#tok:{token_start}"
    doc_id: str
    doc_version: str
    seq: int  # position of the chunk within its document
    start: int
    end: int
    text: str
    text_sha256: str
    token_start: int  # index of the first token in the document's token stream
    n_tokens: int  # tokens the model sees for this chunk, special tokens included
    page_start: int | None
    page_end: int | None
    vector_id: int
    embed_sha256: str  # hash of the normalised string that was embedded
    n_hidden: int = 0  # characters of the chunk a reader cannot see: left out of what is embedded
    title: str = ""  # the document's title (its own, else its first heading; ingest.text.sections)
    headings: tuple[str, ...] = ()  # the headings above the chunk's start, outermost first
    language: str = ""  # ISO 639-1 (ingest.text.language): its own where it is clear, else its document's


@dataclass(frozen=True, slots=True)
class ChunkerSettings:
    max_tokens: int = 256
    overlap: int = 32
    version: int = 2  # bump when boundaries would change for the same text (2: chunks open on sentences)


@dataclass(frozen=True, slots=True)
class OcrSettings:
    """Which PDF pages a build reads by OCR, in which languages, at which resolution."""

    mode: OcrMode = OcrMode.OFF
    languages: str = "eng"  # Tesseract's syntax: "eng+deu+jpn"
    dpi: int = 200


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """A segment a generation reads: its folder's name and the vector ids its rows hold,
    ``vector_base`` to ``vector_base + n_vectors - 1`` (row i of its vectors is id base + i)."""

    name: str
    vector_base: int
    n_vectors: int
    n_documents: int  # rows of its documents table, masked ones included
    n_deleted: int = 0  # of those, documents this generation masks (changed or removed since)
    n_deleted_vectors: int = 0  # the chunks of those documents
    n_tokens: int = 0  # BM25 tokens in all its chunks (masked ones included): the mean chunk length's share
    # Its documents' source_mtime_ns below this were read long enough after the write to vouch for the
    # file (worker.mtimes_trusted_before of the build's start; a merge keeps the least of its inputs').
    mtimes_trusted_before_ns: int = 0

    @property
    def n_live_vectors(self) -> int:
        return self.n_vectors - self.n_deleted_vectors


@dataclass(frozen=True, slots=True)
class MaskedDocument:
    """A row of deleted.parquet: a document's rows in a segment that a generation no longer serves."""

    segment: str
    doc_id: str
    first_vector_id: int  # its chunks' vector ids: first_vector_id .. + n_vectors - 1
    n_vectors: int
    n_tokens: int  # their BM25 lengths summed


@dataclass(frozen=True, slots=True)
class Manifest:
    """manifest.json of one generation."""

    format_version: int
    generation: str
    created_at: str  # ISO 8601, UTC
    model_id: str
    model_dim: int
    chunker: ChunkerSettings
    normalizer_version: int
    faiss_factory: str
    n_documents: int
    n_chunks: int
    documents_by_status: dict[str, int] = field(default_factory=dict)
    table_sha256: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    parser_version: int = 1
    model_path: str = ""  # where the model was loaded from (a local folder; never a hub)
    ocr: str = "off"  # the OCR the PDFs were read with ("auto eng 200 dpi"); a change reparses them
    warnings: tuple[str, ...] = ()
    # What ran the model (an EmbedBackend value; "torch" for indexes older than the field):
    # every vector of a generation comes from it, and a build with another one embeds anew.
    embed_backend: str = "torch"
    embed_device: str = ""  # where it ran (cpu, cuda): the same vectors, recorded for the reader
    ann: AnnParams | None = None  # the FAISS index and its search parameters (None: older, Flat)

    html_layout: str = ""  # the browser that laid HTML pages out (html_boxes), "" where none did
    office_layout: str = ""  # the LibreOffice that rendered office documents (office_boxes), "" where none did
    lexical_tokenizer_version: int = 0  # of lexical.parquet; 0: the generation has none (built before it)
    language_version: int = 0  # of the chunks' languages (ingest.text.language); 0: built before them
    segments: tuple[SegmentRef, ...] = ()  # oldest first; a document's live rows are in one of them
    next_vector_id: int = 0  # the base of the next segment written: vector ids are never reused


class SearchMode(StrEnum):
    """How a query is matched against chunks (``Index.search``, the CLI, the API, MCP)."""

    DENSE = "dense"  # nearest vectors: cosine similarity of the embeddings
    LEXICAL = "lexical"  # BM25 over the chunks' tokens
    HYBRID = "hybrid"  # both rankings fused by their standardised scores, trust-weighted


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One retrieved chunk: where it is, and its exact text."""

    rank: int  # 1-based
    score: float  # dense: cosine similarity; lexical: BM25 score; hybrid: the fused score (index.search.fusion)
    chunk_id: str
    doc_id: str
    doc_version: str
    start: int
    end: int
    page_start: int | None
    page_end: int | None
    text: str
    title: str = ""  # the document's title
    headings: tuple[str, ...] = ()  # the section the chunk starts in: its headings, outermost first


@dataclass(frozen=True, slots=True)
class Rect:
    """A highlight rectangle on a displayed page, top-left origin: points (PDF), or CSS px of the
    browser layout (HTML, its pages cut every ``schemas.tables.HTML_PAGE_HEIGHT`` px)."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float
