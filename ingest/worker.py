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
from schemas.errors import IndexWriteError
from schemas.layout import IndexPaths
from schemas.records import ChunkerSettings, DocStatus, DocumentRecord, MediaType, ParsedDocument
from schemas.tables import chunks_table, hidden_text_table, html_map_table, pdf_chars_table, pdf_pages_table


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    model: ModelInfo
    chunker: ChunkerSettings
    index_root: Path
    max_file_bytes: int
    corpus_root: str | None = None  # resolved; a file must lie inside it (None: --follow-symlinks)
    passwords: Passwords = Passwords()  # --passwords: tried on encrypted PDFs whose doc_id they match


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
    tables = _map_tables(parsed)
    if record.status is not DocStatus.OK:
        return DocResult(job.doc_id, record, tables=tables)

    spans = chunk_spans(parsed.text, _tokenizer, settings.chunker, parsed.hidden_runs)
    chunks = make_chunks(parsed, spans)
    _store(settings.index_root, job, source, record, parsed)
    n_hidden = sum(run.end - run.start for run in parsed.hidden_runs)
    record = dataclasses.replace(record, n_chunks=len(chunks), n_hidden_chars=n_hidden)
    return DocResult(
        job.doc_id,
        record,
        chunks=chunks_table(chunks),
        embed_texts=[s.embed_text for s in spans],
        tables=tables,
    )


def _map_tables(parsed: ParsedDocument) -> dict[str, pa.Table]:
    doc_id, version = parsed.doc_id, parsed.doc_version
    tables = {}
    if parsed.pages:
        tables["pdf_pages"] = pdf_pages_table(doc_id, version, parsed.pages)
        tables["pdf_chars"] = pdf_chars_table(doc_id, version, parsed.char_runs)
    if parsed.html_runs:
        tables["html_map"] = html_map_table(doc_id, version, parsed.html_runs)
    if parsed.hidden_runs:
        tables["hidden_text"] = hidden_text_table(doc_id, version, parsed.hidden_runs)
    return tables


def _store(root: Path, job: FileJob, source: bytes, record: DocumentRecord, parsed: ParsedDocument) -> None:
    """Texts and sources are content-addressed and shared by generations: write once."""
    paths = IndexPaths(root)
    files = [(paths.text(record.doc_version), parsed.text.encode("utf-8")),
             (paths.source(record.source_sha256, job.path.suffix), source)]
    if parsed.decoded_source is not None:
        files.append((paths.decoded_source(record.source_sha256), parsed.decoded_source.encode("utf-8")))
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
