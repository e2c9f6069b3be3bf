"""The work done for one file, in a worker process: read, hash, parse, chunk, store text.

Workers never load torch: they need PyMuPDF, the HTML parser and the model's
tokenizer only. What they return is compact (Arrow tables, not Python
objects per glyph) so that shipping it to the embedding process is cheap; a
table of one document over a row group (a 50 MB page's source map) goes
through a spill file in the generation instead (``ingest.store.spill``).

A worker on this machine reads the file and writes its text and source into
the index folder itself. A worker with no index folder (``index_root=None``,
on another machine) is handed the bytes and returns the files in its result,
for the process that writes the segment to store (``store_document``); a Ray
task returns its summary and its rows apart (``split_rows``), so that the rows
go to that process without passing through the driver.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import os
import re
import stat
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pyarrow as pa

from ingest.text import chunk_languages, chunk_spans, make_chunks, preload_identifier
from ingest.corpus import ListedObject, NotReadable, StoreFailure, read_source_bytes
from ingest.embed import ModelInfo, load_tokenizer
from ingest.formats import RENDERED_TYPES, parse_document
from ingest.formats import Passwords
from ingest.store import write_once
from ingest.store import spill_path, write_spill
from ingest.store import ROW_GROUP_ROWS
from schemas.errors import IndexWriteError
from schemas.layout import IndexPaths, converted_suffix
from schemas.limits import MAX_DOC_CHARS, MAX_PDF_PAGES, DocumentLimits
from schemas.records import (
    ChunkerSettings,
    DocStatus,
    DocumentRecord,
    HtmlRuns,
    MediaType,
    OcrSettings,
    OfficeRuns,
    ParsedDocument,
    PdfCharRun,
)
from schemas.tables import (
    chunks_table,
    hidden_text_table,
    html_boxes_table,
    html_map_table,
    office_cells_table,
    office_map_table,
    office_pages_table,
    office_shapes_table,
    pdf_chars_table,
    pdf_pages_table,
)

if TYPE_CHECKING:
    from ingest.formats import HtmlLayout, LayoutStats
    from ingest.formats import OfficeLayout, OfficeLayoutStats


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    model: ModelInfo
    chunker: ChunkerSettings
    index_root: Path | None  # None: the result carries the files to store (a worker with no index folder)
    max_file_bytes: int
    max_pages: int = MAX_PDF_PAGES
    max_chars: int = MAX_DOC_CHARS
    html_layout: bool = False  # lay HTML pages out in a browser (boxes, hidden text)
    office_layout: str = ""  # the LibreOffice that renders office documents (pages, glyph boxes); "": none
    ocr: OcrSettings = OcrSettings()  # resolved by the build: OFF where Tesseract is missing
    corpus_root: str | None = None  # resolved; a file must lie inside it (None: --follow-symlinks)
    passwords: Passwords = Passwords()  # --passwords: tried on encrypted PDFs whose doc_id they match
    spill_dir: Path | None = None  # where tables over a row group go (None: always with the result)


@dataclass(frozen=True, slots=True)
class FileJob:
    path: Path | None  # None for an object in a store (``url``)
    doc_id: str
    media_type: MediaType
    live_sha256: str | None  # the file's hash in the live generation, if it is there
    id_note: str = ""  # why doc_id is not the file's name as it is (ingest.corpus.safe_doc_id)
    live_stat: tuple[int, int, str] | None = None  # its (size, mtime_ns, etag) in the live generation, when trusted
    read_mtime_ns: int = 0  # its mtime taken just before it was read (read_mtime), for its record
    url: str = ""  # an object in a store: its URL (ingest.corpus.store), read through the store's driver
    listed: ListedObject | None = None  # what the store's listing said of it (size, mtime, ETag)

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.url).suffix if self.url else self.path.suffix


@dataclass(frozen=True, slots=True, eq=False)
class DocumentFiles:
    """What one document adds to the index's texts/ and sources/ (content-addressed, written once)."""

    text: str  # the document text (stored as UTF-8)
    source_suffix: str
    decoded_source: str | None = None  # HTML: the decoded source its map indexes (stored as UTF-8)
    decrypted_source: bytes | None = None  # a PDF opened with --passwords, without its encryption
    converted_source: bytes | None = None  # a legacy .doc/.ppt/.xls: the OOXML copy its map points into
    rendered: bytes | None = None  # an office document as LibreOffice rendered it (PDF)
    office_layout: str = ""  # the LibreOffice that rendered it


@dataclass(slots=True, eq=False)
class DocResult:
    doc_id: str
    record: DocumentRecord | None  # None when unchanged: the build carries the old rows over
    chunks: pa.Table | None = None  # vector_id holds seq until the build assigns real ids
    embed_texts: list[str] = field(default_factory=list)
    tables: dict[str, pa.Table] = field(default_factory=dict)
    spilled: dict[str, Path] = field(default_factory=dict)  # table -> Arrow IPC file of its rows (ingest.store.spill)
    seconds: float = 0.0
    peak_rss_kb: int = 0  # the worker process's peak resident memory so far (0 where unknown)
    internal_error: str = ""  # traceback of an unexpected failure (a bug, not bad input)
    layout: LayoutStats | None = None  # HTML laid out by the browser (--html-layout)
    office_layout: OfficeLayoutStats | None = None  # an office document rendered by LibreOffice
    files: DocumentFiles | None = None  # to store, when the worker had no index folder
    write_error: str = ""  # the index could not be written (disk full, read-only): the build must stop
    store_error: str = ""  # the corpus's object store failed (not this object): the build must stop
    remote: RemoteRows | None = None  # rows left on a Ray cluster, for a writer there (not in this process)

    @property
    def unchanged(self) -> bool:
        return self.record is None


@dataclass(slots=True, eq=False)
class DocRows:
    """What a result adds to a segment and to texts/ and sources/: its rows, not its summary."""

    chunks: pa.Table | None
    embed_texts: list[str] | None  # None: every chunk's vector is a known one (a document carried over)
    tables: dict[str, pa.Table]
    files: DocumentFiles | None


@dataclass(frozen=True, slots=True)
class RemoteRows:
    """Where a Ray task left a result's rows and the file's bytes: object references that a
    writer on the cluster resolves, so that the driver never receives them."""

    rows: object
    source: object


def split_rows(result: DocResult) -> tuple[DocResult, DocRows]:
    """A result without its rows (what a build's driver needs: the record and the counts), and the rows.

    >>> summary, rows = split_rows(DocResult("a.md", None, embed_texts=["x"]))
    >>> summary.embed_texts, rows.embed_texts
    ([], ['x'])
    """
    rows = DocRows(result.chunks, result.embed_texts, result.tables, result.files)
    summary = dataclasses.replace(result, chunks=None, embed_texts=[], tables={}, files=None)
    return summary, rows


def joined_rows(summary: DocResult, rows: DocRows) -> DocResult:
    """``split_rows`` undone."""
    return dataclasses.replace(summary, chunks=rows.chunks, embed_texts=rows.embed_texts, tables=rows.tables,
                               files=rows.files, remote=None)


_settings: WorkerSettings | None = None
_tokenizer = None


def init_worker(settings: WorkerSettings) -> None:
    global _settings, _tokenizer
    _settings = settings
    preload_identifier()  # every document's chunks are identified: loaded while the tokenizer is
    _tokenizer = load_tokenizer(settings.model)


def process_file(job: FileJob) -> DocResult:
    """Everything about one file that does not need the model, as one result."""
    return _guarded(job, lambda settings: _process(job, settings))


def process_source(job: FileJob, source: bytes) -> DocResult:
    """``process_file`` for bytes read by another process, perhaps on another machine."""
    return _guarded(job, lambda settings: _process_source(job, [source], settings))


def _guarded(job: FileJob, work) -> DocResult:
    assert _settings is not None, "init_worker was not called"
    started = time.perf_counter()
    try:
        result = _with_id_note(work(_settings), job)
    except IndexWriteError as exc:  # not this file's fault: the whole build stops
        result = DocResult(job.doc_id, _error_record(job, "not stored"), write_error=str(exc))
    except Exception as exc:  # a parser bug must not end the batch; the traceback is kept
        record = _error_record(job, f"internal error while parsing: {type(exc).__name__}: {exc}")
        result = DocResult(job.doc_id, record, internal_error=traceback.format_exc())
    result.seconds = time.perf_counter() - started
    result.peak_rss_kb = _peak_rss_kb()
    return result


def _with_id_note(result: DocResult, job: FileJob) -> DocResult:
    if job.id_note and result.record is not None and job.id_note not in result.record.warning:
        warning = "; ".join(w for w in (job.id_note, result.record.warning) if w)
        result.record = dataclasses.replace(result.record, warning=warning)
    return result


def _peak_rss_kb() -> int:
    # VmHWM, not ru_maxrss: a spawned worker's ru_maxrss starts at its parent's peak.
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def crashed_result(job: FileJob) -> DocResult:
    """The row of a file whose parser took its process down with it."""
    return DocResult(job.doc_id, _error_record(job, "the parser crashed on this file (its worker process died)"))


def timed_out_result(job: FileJob, seconds: float) -> DocResult:
    """The row of a file whose parsing did not finish in time (its worker was killed)."""
    reason = f"parsing did not finish within {seconds:g} s (--doc-timeout); its worker process was stopped"
    return DocResult(job.doc_id, _error_record(job, reason))


def _error_record(job: FileJob, reason: str) -> DocumentRecord:
    return DocumentRecord(
        warning=job.id_note,
        doc_id=job.doc_id,
        doc_version="",
        source_sha256="",
        media_type=job.media_type,
        n_chars=0,
        n_pages=0,
        title="",
        encoding=None,
        status=DocStatus.ERROR,
        error=reason,
        source_url=job.url,
    )


RACY_SECONDS = 2  # a file written this recently when read may be written again without its mtime changing


def stat_unchanged(job: FileJob) -> bool:
    """Whether the file is a regular file of the size and modification time its live version was
    read at: unchanged without reading it (a link is always read: its target may change alone).
    An object in a store is unchanged when its listing gives the size, modification time and
    ETag its live version was read at (nothing is asked of the store for it)."""
    if job.live_stat is None or job.live_sha256 is None:
        return False
    if job.url:
        return job.listed is not None and (job.listed.size, job.listed.mtime_ns, job.listed.etag) == job.live_stat
    try:
        st = os.lstat(job.path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and (st.st_size, st.st_mtime_ns, "") == job.live_stat


def read_mtime(job: FileJob) -> int:
    """The mtime to record for a file about to be read: the file's (``regular_mtime``), or an
    object's modification time as its listing gave it (taken before the read, as a file's is)."""
    if job.url:
        return job.listed.mtime_ns if job.listed is not None else 0
    return regular_mtime(job.path)


def regular_mtime(path: Path) -> int:
    """The file's mtime in ns; 0 for anything but a regular file (a link is always read)."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return st.st_mtime_ns if stat.S_ISREG(st.st_mode) else 0


def mtimes_trusted_before(build_started_ns: int) -> int:
    """The mtime under which a file read by a build that started at ``build_started_ns`` is vouched
    for: one written later may be written again within the clock's step, keeping mtime and size."""
    return build_started_ns - RACY_SECONDS * 10**9


def read_source(job: FileJob, settings: WorkerSettings) -> bytes | DocResult:
    """The file's bytes; or its result when they need no parsing (too large, not a regular file
    inside the corpus, unreadable, unchanged)."""
    try:
        source = read_source_bytes(job.path, settings.corpus_root, settings.max_file_bytes, job.url, job.listed)
    except NotReadable as exc:
        return DocResult(job.doc_id, _error_record(job, str(exc)))
    except StoreFailure as exc:  # not this document's fault: the whole build stops
        return DocResult(job.doc_id, _error_record(job, "not read"), store_error=str(exc))
    except OSError as exc:
        what = "object" if job.url else "file"
        return DocResult(job.doc_id, _error_record(job, f"cannot read the {what}: {exc.strerror or exc}"))
    if job.live_sha256 is not None and hashlib.sha256(source).hexdigest() == job.live_sha256:
        return DocResult(job.doc_id, None)
    return source


def _process(job: FileJob, settings: WorkerSettings) -> DocResult:
    job = dataclasses.replace(job, read_mtime_ns=read_mtime(job))  # before reading: a write after shows
    source = read_source(job, settings)
    if isinstance(source, DocResult):
        return source
    held = [source]
    del source  # held only by _process_source, which lets go of it once it is stored
    return _process_source(job, held, settings)


def _process_source(job: FileJob, held: list[bytes], settings: WorkerSettings) -> DocResult:
    """The work on one file's bytes, ``held[0]``: taken out of ``held`` once stored, so that a
    large file does not stay in memory while its text is chunked."""
    limits = DocumentLimits(settings.max_file_bytes, settings.max_pages, settings.max_chars)
    passwords = settings.passwords.for_doc(job.doc_id) if job.media_type is MediaType.PDF else ()
    outcome = parse_document(held[0], job.doc_id, job.media_type, limits, settings.ocr, passwords=passwords)
    record, parsed = outcome.record, outcome.parsed
    if record.source_sha256:  # the row is of these bytes, whatever their parsing gave: what vouches for them
        record = dataclasses.replace(record, source_mtime_ns=job.read_mtime_ns,
                                     source_etag=job.listed.etag if job.listed else "")
    if job.url and not record.source_url:  # an object in a store: its URL, where the page names no address of its own
        record = dataclasses.replace(record, source_url=job.url)
    if parsed is None:
        return DocResult(job.doc_id, record)
    parsed = _encodable(parsed)
    if record.status is not DocStatus.OK:
        tables, spilled = _map_tables(parsed, settings)
        return DocResult(job.doc_id, record, tables=tables, spilled=spilled)

    layout = stats = None
    if settings.html_layout and parsed.media_type is MediaType.HTML:
        from ingest.formats import LayoutError, LayoutStats, shared_browser  # only where it runs

        try:
            layout = shared_browser().layout(parsed)
        except LayoutError as exc:  # the document is indexed all the same, without boxes
            record = _warn(record, f"HTML layout failed: {exc.message}")
            stats = LayoutStats(failed=1)
        else:
            parsed = dataclasses.replace(parsed, hidden_runs=layout.hidden_runs)  # the browser's verdicts
            stats = LayoutStats.of(layout)
    office_layout = office_stats = None
    if settings.office_layout and parsed.media_type in RENDERED_TYPES:
        office_layout, office_stats, record = _render_office(parsed, held[0], job.suffix, record)
    # Texts are str: written as UTF-8 in pieces (ingest.store.publish), never as a whole UTF-8 copy.
    files = DocumentFiles(parsed.text, job.suffix, parsed.decoded_source, parsed.decrypted_source,
                          parsed.converted_source, office_layout.pdf if office_layout else None,
                          settings.office_layout)
    if settings.index_root is not None:
        store_document(settings.index_root, record, held.pop(), files)
        files = None
    tables, spilled = _map_tables(parsed, settings, layout, office_layout)
    # Chunking needs the text, its pages and hidden runs; the maps are on their way already.
    parsed = dataclasses.replace(parsed, char_runs=(), html_runs=(), office_runs=(), office_cells=(), office_shapes=(),
                                 decoded_source=None, decrypted_source=None, converted_source=None)

    spans = chunk_spans(parsed.text, _tokenizer, settings.chunker, parsed.hidden_runs)
    chunks = make_chunks(parsed, spans)
    if layout is not None:
        chunks = _layout_pages(chunks, layout.char_runs)
    if office_layout is not None and not parsed.office_pages:  # DOCX, ODT: pages as rendered (slides are pages)
        chunks = _layout_pages(chunks, office_layout.char_runs)
    languages, language = chunk_languages([c.text for c in chunks], parsed.text)
    chunks = [dataclasses.replace(c, language=code) for c, code in zip(chunks, languages)]
    n_hidden = sum(run.end - run.start for run in parsed.hidden_runs)
    record = dataclasses.replace(record, n_chunks=len(chunks), n_hidden_chars=n_hidden, language=language)
    # A spilled chunk table carries the texts to embed as a column of its own.
    if _spills(settings) and len(chunks) > SPILL_ROWS["chunks"]:
        step = _piece_rows("chunks")
        pieces = (chunks_table(chunks[a : a + step]).append_column(
                  EMBED_TEXT, pa.array([s.embed_text for s in spans[a : a + step]], pa.string()))
                  for a in range(0, len(chunks), step))
        spilled["chunks"] = _spill(settings, job.doc_id, "chunks", pieces)
        return DocResult(job.doc_id, record, tables=tables, spilled=spilled, layout=stats,
                         office_layout=office_stats, files=files)
    return DocResult(
        job.doc_id,
        record,
        chunks=chunks_table(chunks),
        embed_texts=[s.embed_text for s in spans],
        tables=tables,
        spilled=spilled,
        layout=stats,
        office_layout=office_stats,
        files=files,
    )


def _warn(record: DocumentRecord, warning: str) -> DocumentRecord:
    return dataclasses.replace(record, warning="; ".join(w for w in (record.warning, warning) if w))


def _render_office(parsed: ParsedDocument, source: bytes, suffix: str, record: DocumentRecord):
    """The document as LibreOffice renders it, with its stats and record; on failure no layout, a warning."""
    from ingest.formats import OfficeLayoutStats, RenderError, layout_office

    if parsed.converted_source is not None:  # a legacy file: the converted copy is what the map points into
        source, suffix = parsed.converted_source, converted_suffix(suffix) or suffix
    try:
        layout = layout_office(parsed, source, suffix)
    except RenderError as exc:  # indexed all the same, with part ranges and no boxes
        return None, OfficeLayoutStats(failed=1), _warn(record, f"office layout failed: {exc.message}")
    if not parsed.office_pages:  # a text document's pages are its rendered ones (slides are their own)
        record = dataclasses.replace(record, n_pages=layout.n_pages)
    return layout, OfficeLayoutStats.of(layout), record


def _layout_pages(chunks: list, char_runs: Sequence[PdfCharRun]) -> list:
    """Chunks with the first and last page their boxes are on (an HTML page's layout, a rendered office file)."""
    if not char_runs:
        return chunks
    starts = [r.start for r in char_runs]
    ends = [r.end for r in char_runs]
    out = []
    for chunk in chunks:
        first = bisect.bisect_right(ends, chunk.start)
        last = bisect.bisect_left(starts, chunk.end)
        pages = [char_runs[i].page for i in range(first, last)]
        if pages:
            chunk = dataclasses.replace(chunk, page_start=min(pages), page_end=max(pages))
        out.append(chunk)
    return out


EMBED_TEXT = "embed_text"  # a column of spilled chunk tables only: what the model embeds
# A document's table spills (ingest.store.spill) when it has more rows than this: more than one row
# group of the generation's table. Tests lower it to make small documents spill.
SPILL_ROWS = dict(ROW_GROUP_ROWS)


def _spills(settings: WorkerSettings) -> bool:
    """Whether large tables go through spill files: only for a worker that writes the index."""
    return settings.spill_dir is not None and settings.index_root is not None


def _piece_rows(table_name: str) -> int:
    """Rows per record batch of a spilled table: a row group, or fewer where SPILL_ROWS is lower."""
    return max(1, min(SPILL_ROWS[table_name], ROW_GROUP_ROWS[table_name]))


def _map_tables(parsed: ParsedDocument, settings: WorkerSettings, layout: HtmlLayout | None = None,
                office_layout: OfficeLayout | None = None) -> tuple[dict[str, pa.Table], dict[str, Path]]:
    """The offset-map rows of a document: with the result, or spilled to disk when over a row group."""
    doc_id, version = parsed.doc_id, parsed.doc_version
    tables: dict[str, pa.Table] = {}
    spilled: dict[str, Path] = {}

    def add(name: str, n_rows: int, rows_table) -> None:
        if _spills(settings) and n_rows > SPILL_ROWS[name]:
            step = _piece_rows(name)
            pieces = (rows_table(a, min(a + step, n_rows)) for a in range(0, n_rows, step))
            spilled[name] = _spill(settings, doc_id, name, pieces)
        else:
            tables[name] = rows_table(0, n_rows)

    if parsed.pages:
        add("pdf_pages", len(parsed.pages), lambda a, b: pdf_pages_table(doc_id, version, parsed.pages[a:b]))
        add("pdf_chars", len(parsed.char_runs), lambda a, b: pdf_chars_table(doc_id, version, parsed.char_runs[a:b]))
    if parsed.html_runs:
        runs = parsed.html_runs if isinstance(parsed.html_runs, HtmlRuns) else HtmlRuns.from_records(parsed.html_runs)
        add("html_map", len(runs), lambda a, b: html_map_table(doc_id, version, runs.rows(a, b)))
    if parsed.office_runs:
        office = parsed.office_runs
        office = office if isinstance(office, OfficeRuns) else OfficeRuns.from_records(office)
        add("office_map", len(office), lambda a, b: office_map_table(doc_id, version, office.rows(a, b)))
        add("office_pages", len(parsed.office_pages),
            lambda a, b: office_pages_table(doc_id, version, parsed.office_pages[a:b]))
        add("office_cells", len(parsed.office_cells),
            lambda a, b: office_cells_table(doc_id, version, parsed.office_cells[a:b]))
    if parsed.hidden_runs:
        add("hidden_text", len(parsed.hidden_runs),
            lambda a, b: hidden_text_table(doc_id, version, parsed.hidden_runs[a:b]))
    if layout is not None:
        add("html_boxes", len(layout.char_runs),
            lambda a, b: html_boxes_table(doc_id, version, layout.char_runs[a:b]))
    if parsed.office_shapes:
        add("office_shapes", len(parsed.office_shapes),
            lambda a, b: office_shapes_table(doc_id, version, parsed.office_shapes[a:b]))
    if office_layout is not None:
        add("office_boxes", len(office_layout.char_runs),
            lambda a, b: pdf_chars_table(doc_id, version, office_layout.char_runs[a:b]))
        add("office_render_pages", len(office_layout.pages),
            lambda a, b: pdf_pages_table(doc_id, version, office_layout.pages[a:b]))
    return tables, spilled


def _spill(settings: WorkerSettings, doc_id: str, table_name: str, pieces) -> Path:
    path = spill_path(settings.spill_dir, doc_id, table_name)
    try:
        write_spill(path, pieces)
    except OSError as exc:
        raise IndexWriteError(f"{exc.strerror or exc} (writing {path.relative_to(settings.index_root)})") from None
    return path


def store_document(root: Path, record: DocumentRecord, source: bytes, files: DocumentFiles) -> None:
    """Texts and sources are content-addressed and shared by generations: write once."""
    paths = IndexPaths(root)
    written = [(paths.text(record.doc_version), files.text),
               (paths.source(record.source_sha256, files.source_suffix), source)]
    if files.decoded_source is not None:
        written.append((paths.decoded_source(record.source_sha256), files.decoded_source))
    if files.decrypted_source is not None:
        written.append((paths.decrypted_source(record.source_sha256), files.decrypted_source))
    if files.converted_source is not None:
        suffix = converted_suffix(files.source_suffix) or files.source_suffix
        written.append((paths.converted_source(record.source_sha256, suffix), files.converted_source))
    if files.rendered is not None:
        written.append((paths.rendered_source(record.source_sha256, files.office_layout), files.rendered))
    for path, data in written:
        try:
            write_once(path, data)
        except OSError as exc:
            raise IndexWriteError(f"{exc.strerror or exc} (writing {path.relative_to(root)})") from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(parsed: ParsedDocument) -> ParsedDocument:
    """A lone surrogate (a broken text layer) cannot be stored as UTF-8: U+FFFD keeps the offsets."""
    if not _SURROGATE.search(parsed.text):
        return parsed
    count = len(_SURROGATE.findall(parsed.text))
    return dataclasses.replace(
        parsed,
        text=_SURROGATE.sub("\ufffd", parsed.text),
        warnings=(*parsed.warnings, f"{count} unpaired surrogate code points replaced by U+FFFD"),
    )
