"""Build a generation: discover files, parse and chunk in workers, embed, write, publish.

Documents stream through: workers parse and chunk while this process embeds
and writes, and at most a few documents per worker are in flight, so memory is
bounded by the batch rather than the corpus. Where the workers and the
embedder run is the executor's business (``ingest.executors``: this machine's
process pool, or a Ray cluster); this process alone writes the index. Against a live generation the
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

from ingest.embed import Embedder, VectorQueue
from ingest.executors import Executor, LocalExecutor
from ingest.faiss_index import build_faiss, check_factory
from ingest.lock import BuildLock
from ingest.model import ModelInfo, resolve_model
from ingest.normalize import NORMALIZER_VERSION
from ingest.parse import PARSER_VERSION, media_type_of
from ingest.publish import fsync_dir, publish
from ingest.retention import retire_generations
from ingest.reuse import LiveGeneration, carry_over
from ingest.worker import DocResult, FileJob, WorkerSettings
from ingest.write import GenerationWriter
from schemas.layout import IndexPaths, read_current
from schemas.records import ChunkerSettings, DocStatus, Manifest
from schemas.tables import FORMAT_VERSION


@dataclass(frozen=True, slots=True)
class BuildSettings:
    chunker: ChunkerSettings = ChunkerSettings()
    model: str | None = None  # a local sentence-transformers folder; None: the packaged MiniLM
    faiss_factory: str = "Flat"
    workers: int = 0  # the local executor's: 0: one per core; 1: everything in this process
    full: bool = False  # ignore the live generation
    keep_generations: int = 3
    keep_texts: bool = False
    max_file_mb: int = 512
    doc_timeout_s: float = 600.0  # per file, counted from when its parsing starts; 0: none
    wait_for_lock: bool = False
    embed_batch: int = 256


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
    executor: str = ""  # where the work ran
    n_files: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # doc_id, status, reason
    internal_errors: list[tuple[str, str]] = field(default_factory=list)  # doc_id, traceback
    skipped: list[str] = field(default_factory=list)  # files of unknown type
    warned: list[tuple[str, str]] = field(default_factory=list)  # doc_id, what was recovered from
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


def discover(corpus: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(doc_id, path) of every supported file, sorted; and the doc ids of the others.

    doc_id is the POSIX path relative to the corpus root. Hidden files and folders
    (names starting with '.') are not part of the corpus.
    """
    found, skipped = [], []
    for dirpath, dirnames, filenames in os.walk(corpus):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            doc_id = path.relative_to(corpus).as_posix()
            (found if media_type_of(doc_id) else skipped).append((doc_id, path))
    return sorted(found), sorted(d for d, _ in skipped)


def build_index(
    corpus: str | Path,
    index_dir: str | Path,
    settings: BuildSettings = BuildSettings(),
    *,
    embedder: Embedder | None = None,
    progress: Callable[[Progress], None] | None = None,
    executor: Executor | None = None,
) -> BuildReport:
    """Build (or incrementally rebuild) the index of ``corpus`` in ``index_dir``.

    ``executor`` runs the parsing and the embedding (default: a ``LocalExecutor`` of
    ``settings.workers`` processes, made and stopped here); ``embedder``, when given,
    is run by it instead of the model.

    >>> report = build_index("sample_corpus", "build/sample-index")   # doctest: +SKIP
    >>> report.by_status["ok"] > 0                                     # doctest: +SKIP
    True
    """
    started = time.perf_counter()
    corpus, paths = Path(corpus), IndexPaths(Path(index_dir))
    paths.root.mkdir(parents=True, exist_ok=True)
    model = resolve_model(settings.model)
    with BuildLock(paths.lock, wait=settings.wait_for_lock), contextlib.ExitStack() as stack:
        _remove_debris(paths)
        executor = executor or stack.enter_context(LocalExecutor(settings.workers))
        embedder = stack.enter_context(executor.embedding(model, embedder))
        check_factory(settings.faiss_factory, embedder.dim)
        live, full_reason = LiveGeneration.open_compatible(paths, settings, embedder, NORMALIZER_VERSION)
        name = _next_generation_name(paths)
        report = BuildReport(generation=name, executor=executor.describe(), full_reason=full_reason)
        tmp_dir = paths.generations / f".{name}.tmp-{os.getpid()}"
        writer = GenerationWriter(tmp_dir, embedder.model_id, embedder.dim)
        try:
            manifest = _write_generation(corpus, paths, settings, model, executor, embedder, live, writer, report,
                                         progress)
        except BaseException:
            writer.abort()
            shutil.rmtree(tmp_dir, ignore_errors=True)
            raise
        os.rename(tmp_dir, paths.generation(name))
        fsync_dir(paths.generations)
        publish(paths, name)
        retire_generations(paths, keep=settings.keep_generations, keep_texts=settings.keep_texts)
        report.warnings.extend(manifest.warnings)
    report.seconds = time.perf_counter() - started
    return report


def _write_generation(corpus, paths, settings, model, executor, embedder, live, writer, report, progress) -> Manifest:
    files, report.skipped = discover(corpus)
    report.n_files = len(files)
    live_files = live.files if live else {}
    vectors = VectorQueue(
        embedder,
        writer.add_vectors,
        settings.embed_batch,
        known=live.embed_cache if live else None,
        known_vectors=live.vectors if live else None,
    )
    files_sha: dict[str, str] = {}
    for done, result in enumerate(_process_all(executor, files, paths, settings, model, live_files), start=1):
        if result.unchanged:
            record = carry_over(live, result.doc_id, writer, vectors)
            report.unchanged += 1
        else:
            record = result.record
            if result.doc_id in live_files:
                report.changed += 1
            else:
                report.added += 1
            for table_name, rows in result.tables.items():
                writer.add_rows(table_name, rows)
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
        if progress:
            progress(Progress(done, len(files), result.doc_id, "unchanged" if result.unchanged else record.status.value))
    vectors.flush()
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


def _process_all(executor: Executor, files, paths, settings: BuildSettings, model: ModelInfo, live_files) -> Iterator[DocResult]:
    """Results in file order; parsing runs ahead, where the executor runs it."""
    worker_settings = WorkerSettings(
        model=model,
        chunker=settings.chunker,
        index_root=paths.root,
        max_file_bytes=settings.max_file_mb * 1024 * 1024,
    )
    jobs = [FileJob(path, doc_id, media_type_of(doc_id), live_files.get(doc_id)) for doc_id, path in files]
    return executor.process(jobs, worker_settings, settings.doc_timeout_s or None)


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
