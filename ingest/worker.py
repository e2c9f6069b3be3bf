"""The work done for one file, in a worker process: read, hash, parse, chunk, store text.

Workers never load torch: they need PyMuPDF, the HTML parser and the model's
tokenizer only. What they return is compact (Arrow tables, not Python
objects per glyph) so that shipping it to the embedding process is cheap.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ingest.chunker import chunk_spans, make_chunks
from ingest.corpus import NotReadable, read_corpus_file
from ingest.model import ModelInfo, load_tokenizer
from ingest.parse import parse_document
from ingest.passwords import Passwords
from ingest.publish import write_once
from ingest.spill import spill_path, write_spill
from ingest.write import ROW_GROUP_ROWS
from schemas.errors import IndexWriteError
from schemas.layout import IndexPaths
from schemas.records import ChunkerSettings, DocStatus, DocumentRecord, HtmlRuns, MediaType, ParsedDocument
from schemas.tables import chunks_table, hidden_text_table, html_map_table, pdf_chars_table, pdf_pages_table


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    model: ModelInfo
    chunker: ChunkerSettings
    index_root: Path
    max_file_bytes: int
    corpus_root: str | None = None  # resolved; a file must lie inside it (None: --follow-symlinks)
    passwords: Passwords = Passwords()  # --passwords: tried on encrypted PDFs whose doc_id they match
    spill_dir: Path | None = None  # where tables over a row group go (None: always with the result)


@dataclass(frozen=True, slots=True)
class FileJob:
    path: Path
    doc_id: str
    media_type: MediaType
    live_sha256: str | None  # the file's hash in the live generation, if it is there
    id_note: str = ""  # why doc_id is not the file's name as it is (ingest.corpus.safe_doc_id)


@dataclass(slots=True, eq=False)
class DocResult:
    doc_id: str
    record: DocumentRecord | None  # None when unchanged: the build carries the old rows over
    chunks: pa.Table | None = None  # vector_id holds seq until the build assigns real ids
    embed_texts: list[str] = field(default_factory=list)
    tables: dict[str, pa.Table] = field(default_factory=dict)
    spilled: dict[str, Path] = field(default_factory=dict)  # table -> Arrow IPC file of its rows (ingest.spill)
    seconds: float = 0.0
    peak_rss_kb: int = 0  # the worker process's peak resident memory so far (0 where unknown)
    internal_error: str = ""  # traceback of an unexpected failure (a bug, not bad input)
    write_error: str = ""  # the index could not be written (disk full, read-only): the build must stop

    @property
    def unchanged(self) -> bool:
        return self.record is None


_settings: WorkerSettings | None = None
_tokenizer = None


def init_worker(settings: WorkerSettings) -> None:
    global _settings, _tokenizer
    _settings = settings
    _tokenizer = load_tokenizer(settings.model)


def process_file(job: FileJob) -> DocResult:
    """Everything about one file that does not need the model, as one result."""
    assert _settings is not None, "init_worker was not called"
    started = time.perf_counter()
    try:
        result = _with_id_note(_process(job, _settings), job)
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
    )


def _process(job: FileJob, settings: WorkerSettings) -> DocResult:
    try:
        source = read_corpus_file(job.path, settings.corpus_root, settings.max_file_bytes)
    except NotReadable as exc:
        return DocResult(job.doc_id, _error_record(job, str(exc)))
    except OSError as exc:
        return DocResult(job.doc_id, _error_record(job, f"cannot read the file: {exc.strerror or exc}"))
    if job.live_sha256 is not None and hashlib.sha256(source).hexdigest() == job.live_sha256:
        return DocResult(job.doc_id, None)

    passwords = settings.passwords.for_doc(job.doc_id) if job.media_type is MediaType.PDF else ()
    outcome = parse_document(source, job.doc_id, job.media_type, settings.max_file_bytes, passwords=passwords)
    record, parsed = outcome.record, outcome.parsed
    if parsed is None:
        return DocResult(job.doc_id, record)
    parsed = _encodable(parsed)
    if record.status is DocStatus.OK:
        _store(settings.index_root, job, source, record, parsed)
    del source  # from here on, memory holds the text and its maps, not the file
    tables, spilled = _map_tables(parsed, settings)
    if record.status is not DocStatus.OK:
        return DocResult(job.doc_id, record, tables=tables, spilled=spilled)
    # Chunking needs the text, its pages and hidden runs; the maps are on their way already.
    parsed = dataclasses.replace(parsed, char_runs=(), html_runs=(), decoded_source=None, decrypted_source=None)

    spans = chunk_spans(parsed.text, _tokenizer, settings.chunker, parsed.hidden_runs)
    chunks = make_chunks(parsed, spans)
    n_hidden = sum(run.end - run.start for run in parsed.hidden_runs)
    record = dataclasses.replace(record, n_chunks=len(chunks), n_hidden_chars=n_hidden)
    # A spilled chunk table carries the texts to embed as a column of its own.
    if settings.spill_dir is not None and len(chunks) > SPILL_ROWS["chunks"]:
        step = _piece_rows("chunks")
        pieces = (chunks_table(chunks[a : a + step]).append_column(
                  EMBED_TEXT, pa.array([s.embed_text for s in spans[a : a + step]], pa.string()))
                  for a in range(0, len(chunks), step))
        spilled["chunks"] = _spill(settings, job.doc_id, "chunks", pieces)
        return DocResult(job.doc_id, record, tables=tables, spilled=spilled)
    return DocResult(
        job.doc_id,
        record,
        chunks=chunks_table(chunks),
        embed_texts=[s.embed_text for s in spans],
        tables=tables,
        spilled=spilled,
    )


EMBED_TEXT = "embed_text"  # a column of spilled chunk tables only: what the model embeds
# A document's table spills (ingest.spill) when it has more rows than this: more than one row
# group of the generation's table. Tests lower it to make small documents spill.
SPILL_ROWS = dict(ROW_GROUP_ROWS)


def _piece_rows(table_name: str) -> int:
    """Rows per record batch of a spilled table: a row group, or fewer where SPILL_ROWS is lower."""
    return max(1, min(SPILL_ROWS[table_name], ROW_GROUP_ROWS[table_name]))


def _map_tables(parsed: ParsedDocument, settings: WorkerSettings) -> tuple[dict[str, pa.Table], dict[str, Path]]:
    """The offset-map rows of a document: with the result, or spilled to disk when over a row group."""
    doc_id, version = parsed.doc_id, parsed.doc_version
    tables: dict[str, pa.Table] = {}
    spilled: dict[str, Path] = {}

    def add(name: str, n_rows: int, rows_table) -> None:
        if settings.spill_dir is not None and n_rows > SPILL_ROWS[name]:
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
    if parsed.hidden_runs:
        add("hidden_text", len(parsed.hidden_runs),
            lambda a, b: hidden_text_table(doc_id, version, parsed.hidden_runs[a:b]))
    return tables, spilled


def _spill(settings: WorkerSettings, doc_id: str, table_name: str, pieces) -> Path:
    path = spill_path(settings.spill_dir, doc_id, table_name)
    try:
        write_spill(path, pieces)
    except OSError as exc:
        raise IndexWriteError(f"{exc.strerror or exc} (writing {path.relative_to(settings.index_root)})") from None
    return path


def _store(root: Path, job: FileJob, source: bytes, record: DocumentRecord, parsed: ParsedDocument) -> None:
    """Texts and sources are content-addressed and shared by generations: write once."""
    paths = IndexPaths(root)
    files = [(paths.text(record.doc_version), parsed.text),  # text is written in pieces: no UTF-8 copy of it
             (paths.source(record.source_sha256, job.path.suffix), source)]
    if parsed.decoded_source is not None:
        files.append((paths.decoded_source(record.source_sha256), parsed.decoded_source))
    if parsed.decrypted_source is not None:
        files.append((paths.decrypted_source(record.source_sha256), parsed.decrypted_source))
    for path, data in files:
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
