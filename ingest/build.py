"""Build a generation: discover files, parse and chunk in workers, embed, write, publish.

Documents stream through: workers parse and chunk while this process embeds
and writes, and at most a few documents per worker are in flight, so memory is
bounded by the batch rather than the corpus. Against a live generation the
build is incremental: an unchanged file is carried over without parsing, and a
chunk whose normalised text was embedded before is never embedded again.
"""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ingest.corpus import CorpusFile, SkippedFile, discover
from ingest.embed import Embedder, VectorQueue
from ingest.faiss_index import build_faiss, check_factory
from ingest.lock import BuildLock
from ingest.model import ModelInfo, resolve_model
from ingest.normalize import NORMALIZER_VERSION
from ingest.parse import PARSER_VERSION, media_type_of
from ingest.passwords import Passwords
from ingest.pool import process_in_workers
from ingest.publish import fsync_dir, publish, write_failure
from ingest.retention import collect_garbage, retire_generations
from ingest.reuse import LiveGeneration, carry_over
from ingest.spill import SPILL_FOLDER, read_spill
from ingest.worker import EMBED_TEXT, DocResult, FileJob, WorkerSettings
from ingest.write import GenerationWriter
from schemas.errors import CorpusError
from schemas.layout import IndexPaths, read_current
from schemas.records import ChunkerSettings, DocStatus, Manifest
from schemas.tables import FORMAT_VERSION


@dataclass(frozen=True, slots=True)
class BuildSettings:
    chunker: ChunkerSettings = ChunkerSettings()
    model: str | None = None  # a local sentence-transformers folder; None: the packaged MiniLM
    faiss_factory: str = "Flat"
    workers: int = 0  # 0: one per core; 1: everything in this process
    full: bool = False  # ignore the live generation
    keep_generations: int = 3
    keep_texts: bool = False
    max_file_mb: int = 512
    doc_timeout_s: float = 600.0  # per file, in worker processes; 0: none
    wait_for_lock: bool = False
    embed_batch: int = 256
    follow_symlinks: bool = False  # follow links whose target lies outside the corpus folder
    passwords: Passwords = Passwords()  # for encrypted PDFs, by doc_id pattern (never stored, never shown)


@dataclass(frozen=True, slots=True)
class Progress:
    """One step of a build, for a progress bar: ``done`` of ``total`` files."""

    done: int
    total: int
    doc_id: str
    status: str  # a DocStatus value, or "unchanged"


@dataclass(slots=True)
class BuildReport:
    generation: str
    n_files: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # doc_id, status, reason
    internal_errors: list[tuple[str, str]] = field(default_factory=list)  # doc_id, traceback
    skipped: list[SkippedFile] = field(default_factory=list)  # files that are not documents, and why
    warned: list[tuple[str, str]] = field(default_factory=list)  # doc_id, what was recovered from
    hidden: list[tuple[str, int]] = field(default_factory=list)  # doc_id, characters a reader cannot see
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    full_reason: str = ""  # why the build did not reuse the live generation
    seconds: float = 0.0
    parse_seconds: float = 0.0  # summed over workers
    worker_peak_rss_mb: float = 0.0  # the largest parsing process's peak memory
    embed_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


def build_index(
    corpus: str | Path,
    index_dir: str | Path,
    settings: BuildSettings = BuildSettings(),
    *,
    embedder: Embedder | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> BuildReport:
    """Build (or incrementally rebuild) the index of ``corpus`` in ``index_dir``.

    >>> report = build_index("sample_corpus", "build/sample-index")   # doctest: +SKIP
    >>> report.by_status["ok"] > 0                                     # doctest: +SKIP
    True
    """
    started = time.perf_counter()
    corpus, paths = Path(corpus), IndexPaths(Path(index_dir))
    if not corpus.is_dir():  # before the index is touched: a mistyped corpus must not publish an empty index
        raise CorpusError(f"{corpus}: {'not a folder' if corpus.exists() else 'no such folder'}")
    with _writing(paths):
        paths.root.mkdir(parents=True, exist_ok=True)
    model = resolve_model(settings.model)
    with contextlib.ExitStack() as held:
        with _writing(paths):
            held.enter_context(BuildLock(paths.lock, wait=settings.wait_for_lock))
            _remove_debris(paths)
        if embedder is None:
            from ingest.embed import SentenceTransformerEmbedder

            embedder = SentenceTransformerEmbedder(model)
        check_factory(settings.faiss_factory, embedder.dim)
        with _writing(paths):
            report = _build_locked(corpus, paths, settings, model, embedder, progress)
    report.seconds = time.perf_counter() - started
    return report


def _build_locked(corpus, paths, settings, model, embedder, progress) -> BuildReport:
    """Write a generation beside the live one, publish it, retire old ones (the lock is held)."""
    live, full_reason = LiveGeneration.open_compatible(paths, settings, embedder, NORMALIZER_VERSION)
    name = _next_generation_name(paths)
    report = BuildReport(generation=name, full_reason=full_reason)
    tmp_dir = paths.generations / f".{name}.tmp-{os.getpid()}"
    writer = GenerationWriter(tmp_dir, embedder.model_id, embedder.dim)
    try:
        manifest = _write_generation(corpus, paths, settings, model, embedder, live, writer, report, progress)
        os.rename(tmp_dir, paths.generation(name))
        fsync_dir(paths.generations)
        publish(paths, name)
    except BaseException:
        writer.abort()
        shutil.rmtree(tmp_dir, ignore_errors=True)
        if read_current(paths) != name:  # written but not published: it takes space and will never serve
            shutil.rmtree(paths.generation(name), ignore_errors=True)
            _give_back_space(paths, settings)
        raise
    report.warnings.extend(manifest.warnings)
    try:
        retire_generations(paths, keep=settings.keep_generations, keep_texts=settings.keep_texts)
    except OSError as exc:  # published: the next build retires what this one could not
        report.warnings.append(f"old generations not retired: {exc.strerror or exc}")
    return report


def _give_back_space(paths: IndexPaths, settings: BuildSettings) -> None:
    """Texts and sources this build stored for a generation that will never serve (a full disk needs them gone)."""
    try:
        collect_garbage(paths, keep_texts=settings.keep_texts)
    except OSError:
        pass  # the next build collects them


@contextlib.contextmanager
def _writing(paths: IndexPaths) -> Iterator[None]:
    """An OS error while the index is written is the index's: one clear error, naming what still serves."""
    try:
        yield
    except OSError as exc:
        try:
            live = read_current(paths)
        except OSError:
            live = None
        raise write_failure(paths, _os_reason(exc, paths.root), live) from None


def _os_reason(exc: OSError, root: Path) -> str:
    """'No space left on device (writing texts/ab12….txt)': the file relative to the index where it lies in it."""
    if not exc.filename:
        return exc.strerror or str(exc)
    where = Path(os.fsdecode(exc.filename))
    if where.is_relative_to(root) and where != root:
        return f"{exc.strerror or exc} (writing {where.relative_to(root)})"
    return f"{exc.strerror or exc} ({where})"


def _write_generation(corpus, paths, settings, model, embedder, live, writer, report, progress) -> Manifest:
    found = discover(corpus, follow_symlinks=settings.follow_symlinks, index_folder=paths.root)
    files, report.skipped = found.files, found.skipped
    report.n_files = len(files)
    live_files = live.files if live else {}
    # A file whose live row is an error is carried over unchanged, unless a password may open it now.
    retry = {f.doc_id for f in files if live and f.doc_id in live.failed and settings.passwords.for_doc(f.doc_id)}
    vectors = VectorQueue(
        embedder,
        writer.add_vectors,
        settings.embed_batch,
        known=live.embed_cache if live else None,
        known_vectors=live.vectors if live else None,
    )
    files_sha: dict[str, str] = {}
    corpus_root = None if settings.follow_symlinks else found.root
    # Closed on the way out: a build that stops (a full disk) does not wait for the files in flight.
    carried = {doc_id: sha for doc_id, sha in live_files.items() if doc_id not in retry}
    spill_dir = writer.gen_dir / SPILL_FOLDER
    spill_dir.mkdir()
    with contextlib.closing(_process_all(files, corpus_root, spill_dir, paths, settings, model, carried)) as results:
        for done, result in enumerate(results, start=1):
            if result.unchanged:
                record = carry_over(live, result.doc_id, writer, vectors)
                report.unchanged += 1
            else:
                if result.write_error:
                    raise write_failure(paths, result.write_error, read_current(paths))
                record = result.record
                if result.doc_id in live_files:
                    report.changed += 1
                else:
                    report.added += 1
                for table_name, rows in result.tables.items():
                    writer.add_rows(table_name, rows)
                for table_name, path in result.spilled.items():
                    _copy_spilled(table_name, path, writer, vectors)
                if result.chunks is not None:
                    writer.add_rows("chunks", vectors.assign(result.chunks, result.embed_texts))
                if result.internal_error:
                    report.internal_errors.append((result.doc_id, result.internal_error))
                report.parse_seconds += result.seconds
                report.worker_peak_rss_mb = max(report.worker_peak_rss_mb, result.peak_rss_kb / 1024)
            writer.add_document(record)
            files_sha[record.doc_id] = record.source_sha256
            report.by_status[record.status.value] += 1
            report.chunks += record.n_chunks
            if record.status is not DocStatus.OK:
                report.failures.append((record.doc_id, record.status.value, record.error))
            elif record.warning:
                report.warned.append((record.doc_id, record.warning))
            if record.n_hidden_chars:
                report.hidden.append((record.doc_id, record.n_hidden_chars))
            if progress:
                progress(Progress(done, len(files), result.doc_id, "unchanged" if result.unchanged else record.status.value))
    vectors.flush()
    shutil.rmtree(writer.gen_dir / SPILL_FOLDER, ignore_errors=True)  # what results never consumed left there
    report.removed = len(set(live_files) - set(files_sha))
    report.chunks_embedded, report.chunks_reused = vectors.embedded, vectors.reused
    report.embed_seconds = vectors.seconds

    faiss_index, factory_used, faiss_warning = build_faiss(writer.vectors_written(), settings.faiss_factory)
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        generation=report.generation,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        model_id=embedder.model_id,
        model_dim=embedder.dim,
        model_path=str(model.path) if model.model_id.startswith("local:") else "",
        chunker=settings.chunker,
        normalizer_version=NORMALIZER_VERSION,
        parser_version=PARSER_VERSION,
        faiss_factory=factory_used,
        n_documents=len(files_sha),
        n_chunks=writer.n_rows["chunks"],
        documents_by_status=dict(sorted(report.by_status.items())),
        files=dict(sorted(files_sha.items())),
        warnings=tuple(w for w in [faiss_warning] if w),
    )
    return writer.finish(manifest, faiss_index)


def _copy_spilled(table_name: str, path, writer: GenerationWriter, vectors: VectorQueue) -> None:
    """A table a worker spilled, copied into the generation one row group at a time."""
    for rows in read_spill(path):
        if table_name == "chunks":
            texts = rows.column(EMBED_TEXT).to_pylist()
            writer.add_rows("chunks", vectors.assign(rows.drop_columns([EMBED_TEXT]), texts))
        else:
            writer.add_rows(table_name, rows)


def _process_all(files: list[CorpusFile], corpus_root: str | None, spill_dir, paths, settings: BuildSettings,
                 model: ModelInfo, live_files) -> Iterator[DocResult]:
    """Results in file order; parsing runs ahead in worker processes."""
    worker_settings = WorkerSettings(
        model=model,
        chunker=settings.chunker,
        index_root=paths.root,
        max_file_bytes=settings.max_file_mb * 1024 * 1024,
        corpus_root=corpus_root,
        passwords=settings.passwords,
        spill_dir=spill_dir,
    )
    jobs = [FileJob(f.path, f.doc_id, media_type_of(f.doc_id), live_files.get(f.doc_id), f.id_note) for f in files]
    workers = settings.workers or os.cpu_count() or 1
    return process_in_workers(jobs, worker_settings, workers, timeout_s=settings.doc_timeout_s or None)


def _next_generation_name(paths: IndexPaths) -> str:
    existing = [int(p.name) for p in paths.generations.glob("[0-9]*") if p.name.isdigit()]
    return f"{max(existing, default=0) + 1:06d}"


def _remove_debris(paths: IndexPaths) -> None:
    """Folders of builds that died before publishing (we hold the lock: none is running)."""
    paths.generations.mkdir(parents=True, exist_ok=True)
    for debris in paths.generations.glob(".*.tmp-*"):
        shutil.rmtree(debris, ignore_errors=True)
    # A generation renamed into place but never published (killed before CURRENT moved).
    live = read_current(paths)
    for generation in paths.generations.iterdir():
        if generation.name.isdigit() and (live is None or generation.name > live):
            shutil.rmtree(generation, ignore_errors=True)
    for debris in paths.root.glob(".*.tmp-*"):
        debris.unlink(missing_ok=True)
    for folder in (paths.texts, paths.sources):
        for debris in folder.glob(".*.tmp-*"):
            debris.unlink(missing_ok=True)
