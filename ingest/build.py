"""Build a generation: discover files, parse and chunk in workers, embed, write, publish.

Documents stream through: workers parse and chunk while this process embeds
and writes, and at most a few documents per worker are in flight, so memory is
bounded by the batch rather than the corpus. Where the workers and the
embedder run is the executor's business (``ingest.run.executors``: this machine's
process pool, or a Ray cluster); this process alone writes the index. Against a live generation the
build is incremental: an unchanged file is carried over without parsing, and a
chunk whose normalised text was embedded before is never embedded again.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ingest.corpus import CorpusFile, Discovery, SkippedFile, discover, is_store_url, local_path_of
from ingest.embed import Embedder
from ingest.run import Executor, LocalExecutor
from ingest.store import build_vector_index, check_factory, expected_template, plan_index
from ingest.formats import LayoutError, LayoutStats, close_shared_browser, layout_engine
from ingest.formats import OfficeLayoutStats, office_renderer_engine, office_renderer_unavailable
from ingest.store import BuildLock
from ingest.embed import ModelInfo, resolve_model
from ingest.formats import describe, resolve_ocr
from ingest.text import LANGUAGE_VERSION, NORMALIZER_VERSION
from ingest.formats import PARSER_VERSION, RENDERED_TYPES, media_type_of
from ingest.formats import Passwords
from ingest.store import fsync_dir, publish, write_failure
from ingest.store import collect_garbage, remove_unreferenced_segments, retire_generations
from ingest.store import LiveGeneration
from ingest.store import BucketState, IndexBucket
from ingest.store import carried_rows, masked_refs, plan_merge
from ingest.user_metadata import NO_METADATA, user_metadata
from ingest.run import DocResult, FileJob, SegmentSink, SegmentTarget, WorkerSettings, mtimes_trusted_before, stat_unchanged
from ingest.store import deleted_table, system_memory_pool, write_generation
from schemas.ann import AUTO_FACTORY, AnnParams
from schemas.embedding import Device, EmbedBackend
from schemas.errors import CorpusError, IndexWriteError
from schemas.layout import IndexPaths, read_current
from schemas.limits import MAX_DOC_CHARS, MAX_FILE_MB, MAX_PDF_PAGES
from schemas.records import ChunkerSettings, DocStatus, DocumentRecord, Manifest, MediaType, OcrSettings
from schemas.segments import Deletions, open_segments
from schemas.tables import FORMAT_VERSION, document_records, documents_table


@dataclass(frozen=True, slots=True)
class BuildSettings:
    chunker: ChunkerSettings = ChunkerSettings()
    model: str | None = None  # a local sentence-transformers folder; None: the packaged MiniLM
    embed_backend: EmbedBackend = EmbedBackend.TORCH  # what runs the model (see ingest.embed.backends)
    device: Device = Device.AUTO  # where: CUDA when torch sees a GPU, else the CPU
    faiss_factory: str = AUTO_FACTORY  # exact search up to 50k vectors, an inverted file above
    workers: int = 0  # the local executor's: 0: one per core; 1: everything in this process
    full: bool = False  # ignore the live generation
    keep_generations: int = 3
    keep_texts: bool = False
    max_file_mb: int = MAX_FILE_MB  # over these limits (schemas.limits) a file is an error row
    max_pages: int = MAX_PDF_PAGES
    max_chars: int = MAX_DOC_CHARS
    doc_timeout_s: float = 600.0  # per file, counted from when its parsing starts; 0: none
    wait_for_lock: bool = False
    embed_batch: int = 256
    html_layout: bool = False  # lay HTML pages out in headless Chromium: boxes and hidden text
    office_layout: bool = True  # render DOCX, PPTX, ODT, ODP with LibreOffice where installed: pages and boxes
    ocr: OcrSettings | None = None  # None: --ocr auto where Tesseract is installed, else none
    follow_symlinks: bool = False  # follow links whose target lies outside the corpus folder
    passwords: Passwords = Passwords()  # for encrypted PDFs, by doc_id pattern (never stored, never shown)
    merge_all: bool = False  # merge every segment into one (spanindex compact); else the tiered policy


@dataclass(frozen=True, slots=True)
class Progress:
    """One step of a build, for a progress bar: ``done`` of ``total`` files."""

    done: int
    total: int
    doc_id: str
    status: str  # a DocStatus value, "unchanged", or "metadata" (its user metadata alone changed)


@dataclass(slots=True)
class BuildReport:
    generation: str
    executor: str = ""  # where the work ran
    n_files: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # doc_id, status, reason
    internal_errors: list[tuple[str, str]] = field(default_factory=list)  # doc_id, traceback
    skipped: list[SkippedFile] = field(default_factory=list)  # files that are not documents, and why
    warned: list[tuple[str, str]] = field(default_factory=list)  # doc_id, what was recovered from
    hidden: list[tuple[str, int]] = field(default_factory=list)  # doc_id, characters a reader cannot see
    added: int = 0
    changed: int = 0
    metadata_changed: int = 0  # documents whose user metadata alone changed: rows carried, nothing parsed or embedded
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    full_reason: str = ""  # why the build did not reuse the live generation
    ann_factory: str = ""  # the FAISS index built
    ann_updated: bool = False  # the live index was updated in place rather than built anew
    ann_reason: str = ""  # why it was built anew, where there was a live one
    ann_seconds: float = 0.0
    segments: int = 0  # segments the generation reads
    merged: int = 0  # segments this build merged into one
    ocr: str = "off"  # the OCR this build did, as the manifest records it
    ocr_pages: int = 0  # PDF pages of changed documents whose text OCR read
    seconds: float = 0.0
    parse_seconds: float = 0.0  # summed over workers
    worker_peak_rss_mb: float = 0.0  # the largest parsing process's peak memory
    embed_seconds: float = 0.0
    lexical_seconds: float = 0.0  # building the BM25 table of every chunk
    warnings: list[str] = field(default_factory=list)
    html_layout: str = ""  # the engine that laid HTML pages out; "" where the stage did not run
    layout: LayoutStats = LayoutStats()  # over the HTML pages this build laid out
    office_layout: str = ""  # the LibreOffice that rendered office documents; "" where none did
    office: OfficeLayoutStats = OfficeLayoutStats()  # over the office documents this build rendered


def build_index(
    corpus: str | Path,
    index_dir: str | Path,
    settings: BuildSettings = BuildSettings(),
    *,
    embedder: Embedder | None = None,
    progress: Callable[[Progress], None] | None = None,
    executor: Executor | None = None,
    index_cache: str | Path | None = None,
) -> BuildReport:
    """Build (or incrementally rebuild) the index of ``corpus`` in ``index_dir``.

    ``corpus``: a folder, or the URL of a prefix in an object store (``s3://bucket/corpus``,
    ``ingest.corpus.store``), whose objects are read only where their listing shows a change.

    ``index_dir``: a folder, or the URL of a prefix in an object store (``s3://bucket/index``,
    ``ingest.store.bucket``): the build runs in a local copy of it (``index_cache``, default
    ``$XDG_CACHE_HOME/spanindex/<hash of the URL>``), brought up to the bucket's live generation first,
    and publishes to the bucket before the copy.

    ``executor`` runs the parsing and the embedding (default: a ``LocalExecutor`` of
    ``settings.workers`` processes, made and stopped here); ``embedder``, when given,
    is run by it instead of the model.

    >>> report = build_index("sample_corpus", "build/sample-index")   # doctest: +SKIP
    >>> report.by_status["ok"] > 0                                     # doctest: +SKIP
    True
    """
    started = time.perf_counter()
    bucket = IndexBucket(str(index_dir), index_cache, error=IndexWriteError) if is_store_url(index_dir) else None
    paths = bucket.paths if bucket else IndexPaths(Path(index_dir))
    listed = None
    if is_store_url(corpus):  # listed before the index is touched: a wrong bucket or credentials write nothing
        listed = discover(corpus)
    else:
        corpus = Path(local_path_of(corpus))
        if not corpus.is_dir():  # before the index is touched: a mistyped corpus must not publish an empty index
            raise CorpusError(f"{corpus}: {'not a folder' if corpus.exists() else 'no such folder'}")
    with writing_index(paths):
        paths.root.mkdir(parents=True, exist_ok=True)
    model = resolve_model(settings.model)
    with contextlib.ExitStack() as held:
        held.enter_context(system_memory_pool())
        with writing_index(paths):
            held.enter_context(BuildLock(paths.lock, wait=settings.wait_for_lock))
            remove_debris(paths)
            bucket_state = bucket.bring_up_to_date(every_generation=True) if bucket else None
        executor = executor or held.enter_context(LocalExecutor(settings.workers))
        embedder = held.enter_context(
            executor.embedding(model, embedder, settings.embed_backend, settings.device))
        check_factory(settings.faiss_factory, embedder.dim)
        ocr, ocr_skipped = resolve_ocr(settings.ocr)  # once per build, not per file
        settings = dataclasses.replace(settings, ocr=ocr)
        with writing_index(paths):
            try:
                report = _build_locked(listed or corpus, paths, settings, model, executor, embedder, ocr_skipped,
                                       progress, bucket and (bucket, bucket_state))
            finally:
                close_shared_browser()  # one that laid pages out in this process (--workers 1)
    report.seconds = time.perf_counter() - started
    return report


def _build_locked(corpus, paths, settings, model, executor, embedder, ocr_skipped, progress,
                  bucket: tuple[IndexBucket, BucketState] | None = None) -> BuildReport:
    """Write a generation beside the live one, publish it, retire old ones (the lock is held).
    ``bucket``: the object store the index lives in, as the build found it: published to first."""
    live, full_reason = LiveGeneration.open_compatible(paths, settings, embedder, NORMALIZER_VERSION)
    name = next_generation_name(paths, above=bucket[1].highest_name() if bucket else "")
    report = BuildReport(generation=name, executor=executor.describe(), full_reason=full_reason)
    if settings.html_layout:
        try:
            report.html_layout = layout_engine()
        except LayoutError as exc:  # said once; everything else is built as without the stage
            report.warnings.append(f"HTML layout skipped: {exc.message}")
    office_skipped = ""
    if settings.office_layout:
        office_skipped = office_renderer_unavailable() or ""
        report.office_layout = "" if office_skipped else office_renderer_engine()
    report.ocr = describe(settings.ocr)
    if ocr_skipped:
        report.warnings.append(ocr_skipped)
    generation_tmp = paths.generations / f".{name}.tmp-{os.getpid()}"
    target = SegmentTarget(paths, name, embedder.model_id, embedder.dim, settings.embed_batch,
                           live.generation.manifest.next_vector_id if live else 0,
                           mtimes_trusted_before(time.time_ns()))  # taken before any file is read
    if bucket:  # the name is this build's before anything is written under it, here or by writers elsewhere
        bucket[0].claim(name, bucket[1])
        target = dataclasses.replace(target, bucket_url=bucket[0].url,
                                     shard_template=_expected_template(paths, live, settings, embedder.dim))
    sink = executor.segment_sink(target, embedder, live)
    try:
        manifest = _write_generation(corpus, paths, settings, model, executor, embedder, live, sink, report,
                                     progress, office_skipped, generation_tmp, bucket and bucket[0])
        os.rename(generation_tmp, paths.generation(name))
        fsync_dir(paths.generations)
        if bucket:
            bucket[0].publish(name, bucket[1])
        publish(paths, name)
    except BaseException:
        sink.abort()
        shutil.rmtree(generation_tmp, ignore_errors=True)
        if read_current(paths) != name:  # written but not published: it takes space and will never serve
            shutil.rmtree(paths.generation(name), ignore_errors=True)
            _give_back_space(paths, settings)
        raise
    report.warnings.extend(manifest.warnings)
    if bucket:  # first: what the retiring generations alone held is read from the copy's manifests of them
        try:
            bucket[0].collect_garbage(bucket[1], settings.keep_generations, settings.keep_texts)
        except OSError as exc:
            report.warnings.append(f"old generations not removed from {bucket[0].url}: {exc.strerror or exc}")
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
def writing_index(paths: IndexPaths) -> Iterator[None]:
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


def _expected_template(paths: IndexPaths, live, settings: BuildSettings, dim: int) -> tuple[str, bytes] | None:
    """The vector template this build's new segments' shards will most likely be copies of (``expected_template``)."""
    from schemas.manifest import ann_params

    manifest = live.generation.manifest if live else None
    planned = plan_index(manifest.n_chunks if manifest else 0, settings.faiss_factory)
    return expected_template(paths, ann_params(manifest) if manifest else None, planned, dim)


def _write_generation(corpus, paths, settings, model, executor, embedder, live, sink: SegmentSink, report, progress,
                      office_skipped: str = "", generation_tmp: Path | None = None,
                      bucket: IndexBucket | None = None) -> Manifest:
    found = corpus if isinstance(corpus, Discovery) else discover(
        corpus, follow_symlinks=settings.follow_symlinks, index_folder=paths.root)
    files, report.skipped = found.files, found.skipped
    fields, metadata_warnings = user_metadata(found, None if settings.follow_symlinks else found.root)
    report.warnings.extend(metadata_warnings)
    if office_skipped and any(media_type_of(f.doc_id) in RENDERED_TYPES for f in files):  # said once
        report.warnings.append(f"office layout skipped ({office_skipped}): office documents are indexed "
                               "with their part ranges, without pages or boxes")
    report.n_files = len(files)
    live_files = live.files if live else {}
    # A file whose live row is an error is carried over unchanged, unless a password may open it now.
    retry = {f.doc_id for f in files if live and f.doc_id in live.failed and settings.passwords.for_doc(f.doc_id)}
    reusable = {doc_id: sha for doc_id, sha in live_files.items() if doc_id not in retry}
    if live and live.generation.manifest.html_layout != report.html_layout:
        # laid out by another engine, or not at all: HTML pages are parsed and laid out again
        reusable = {d: sha for d, sha in reusable.items() if media_type_of(d) is not MediaType.HTML}
    if live and live.generation.manifest.office_layout != report.office_layout:
        # rendered by another LibreOffice, or not at all: office documents are parsed and rendered again
        reusable = {d: sha for d, sha in reusable.items() if media_type_of(d) not in RENDERED_TYPES}
    files_sha: dict[str, str] = {}
    masked: Deletions = {name: dict(docs) for name, docs in live.generation.deleted.items()} if live else {}
    n_live_chunks = live.generation.manifest.n_chunks if live else 0
    corpus_root = None if settings.follow_symlinks else found.root
    # Closed on the way out: a build that stops (a full disk) does not wait for the files in flight.
    results = _process_all(executor, files, corpus_root, sink.spill_dir, paths, settings, model, reusable,
                           bool(report.html_layout), report.office_layout, live.stats if live else {})

    def mask(doc_id: str) -> None:  # the live rows of a changed or removed document stop being live
        nonlocal n_live_chunks
        old = live.masked_document(doc_id)
        if old is not None:
            masked.setdefault(old.segment, {})[doc_id] = old
            n_live_chunks -= old.n_vectors

    unchanged: list[str] = []  # counted after the loop, from the live documents table's columns
    written: list[DocumentRecord] = []

    def writer_added(record: DocumentRecord, status: str) -> None:  # a document row this segment holds
        nonlocal n_live_chunks
        n_live_chunks += record.n_chunks
        files_sha[record.doc_id] = record.source_sha256
        written.append(record)
        if progress:
            progress(Progress(done, len(files), record.doc_id, status))

    metadata_changed = live.metadata_changed(fields, NO_METADATA) if live else set()
    with contextlib.closing(results):
        for done, result in enumerate(results, start=1):
            if result.unchanged and result.doc_id in metadata_changed:
                # the user's metadata alone changed: a new row, the rest carried over as it is
                record = dataclasses.replace(document_records(live.documents([result.doc_id]))[0],
                                             metadata=fields.get(result.doc_id, NO_METADATA))
                mask(result.doc_id)
                chunks, maps = carried_rows(live.generation.live, result.doc_id)
                # embed_texts None: every chunk's vector is a stored one, which remember() makes known
                sink.add(DocResult(result.doc_id, record, chunks=chunks, embed_texts=None, tables=maps),
                         live.remember(result.doc_id, record.source_sha256))
                report.metadata_changed += 1
                writer_added(record, "metadata")
                continue
            if result.unchanged:
                unchanged.append(result.doc_id)
                if progress:
                    progress(Progress(done, len(files), result.doc_id, "unchanged"))
                continue
            if result.write_error:
                raise write_failure(paths, result.write_error, read_current(paths))
            if result.store_error:  # nothing is published: the live generation keeps serving
                raise CorpusError(result.store_error)
            record = dataclasses.replace(result.record, metadata=fields.get(result.doc_id, NO_METADATA))
            if result.doc_id in live_files:
                report.changed += 1
                mask(result.doc_id)
            else:
                report.added += 1
            sink.add(dataclasses.replace(result, record=record),
                     live.remember(result.doc_id, record.source_sha256) if live else [])
            if result.internal_error:
                report.internal_errors.append((result.doc_id, result.internal_error))
            report.parse_seconds += result.seconds
            if result.layout is not None:
                report.layout += result.layout
            if result.office_layout is not None:
                report.office += result.office_layout
            report.worker_peak_rss_mb = max(report.worker_peak_rss_mb, result.peak_rss_kb / 1024)
            writer_added(record, record.status.value)
    written_segments = sink.finish()
    if bucket:  # what writers on the cluster uploaded themselves: the copy reads it from the bucket
        bucket.learn(written_segments.uploaded)
    _tally(report, documents_table(written))
    if unchanged:
        kept = live.documents(unchanged)
        files_sha.update(zip(kept.column("doc_id").to_pylist(), kept.column("source_sha256").to_pylist()))
        report.unchanged = kept.num_rows
        report.chunks_reused += _tally(report, kept)
    for listed in (report.failures, report.warned, report.hidden):
        listed.sort()  # in file (doc_id) order, as the results came
    removed = set(live_files) - set(files_sha)
    for doc_id in sorted(removed):
        mask(doc_id)
    report.removed = len(removed)
    report.chunks_embedded = written_segments.chunks_embedded
    report.chunks_reused += written_segments.chunks_reused
    report.embed_seconds = written_segments.embed_seconds
    report.lexical_seconds += written_segments.lexical_seconds
    report.ocr_pages += written_segments.ocr_pages

    # The new segments (none when nothing changed), then at most one merge.
    refs = masked_refs([*live.generation.manifest.segments] if live else [], masked)
    refs.extend(written_segments.segments)
    # A segment every document of which is masked is dropped, not merged (that wrote an empty segment).
    emptied = {r.name for r in refs if r.n_documents and r.n_deleted == r.n_documents}
    refs = [r for r in refs if r.name not in emptied]
    masked = {k: v for k, v in masked.items() if k not in emptied}
    next_id = written_segments.next_vector_id
    final = open_segments(paths.segments, refs, embedder.dim, masked, paths.files)
    to_merge = plan_merge(refs, everything=settings.merge_all)
    if to_merge:
        merged, uploaded = sink.merge(final, to_merge, next_id)
        if bucket:
            bucket.learn(uploaded)
        next_id += merged.n_vectors
        report.merged = len(to_merge)
        refs = [r for r in refs if r.name not in to_merge] + [merged]
        masked = {k: v for k, v in masked.items() if k not in to_merge}
        final = open_segments(paths.segments, refs, embedder.dim, masked, paths.files)
    report.segments = len(refs)
    ann, faiss_warning = vector_index(paths, final, settings.faiss_factory,
                                      live.generation.manifest if live else None, n_live_chunks, report)
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        generation=report.generation,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        model_id=embedder.model_id,
        model_dim=embedder.dim,
        model_path=str(model.path) if model.model_id.startswith("local:") else "",
        chunker=settings.chunker,
        normalizer_version=NORMALIZER_VERSION,
        language_version=LANGUAGE_VERSION,
        parser_version=PARSER_VERSION,
        faiss_factory=ann.factory,
        ann=ann,
        embed_backend=str(embedder.backend),
        embed_device=str(getattr(embedder, "device", "")),
        ocr=describe(settings.ocr),
        n_documents=len(files_sha),
        n_chunks=n_live_chunks,
        documents_by_status=dict(sorted(report.by_status.items())),
        warnings=tuple(w for w in [faiss_warning] if w),
        html_layout=report.html_layout,
        office_layout=report.office_layout,
        segments=tuple(refs),
        next_vector_id=next_id,
    )
    return write_generation(generation_tmp, manifest, deleted_table(m for docs in masked.values() for m in docs.values()))


def _tally(report: BuildReport, documents: pa.Table) -> int:
    """Count the rows of a documents table into the report (by status, failures, warnings,
    hidden text, chunks), column by column; their chunks."""
    statuses = documents.column("status")
    counts = pc.value_counts(statuses)
    report.by_status.update(dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist())))
    failed = documents.filter(pc.not_equal(statuses, DocStatus.OK.value))
    report.failures.extend(zip(*(failed.column(c).to_pylist() for c in ("doc_id", "status", "error"))))
    warned = documents.filter(pc.and_(pc.equal(statuses, DocStatus.OK.value), pc.not_equal(documents.column("warning"), "")))
    report.warned.extend(zip(*(warned.column(c).to_pylist() for c in ("doc_id", "warning"))))
    hidden = documents.filter(pc.greater(documents.column("n_hidden_chars"), 0))
    report.hidden.extend(zip(*(hidden.column(c).to_pylist() for c in ("doc_id", "n_hidden_chars"))))
    chunks = int(pc.sum(documents.column("n_chunks")).as_py() or 0)
    report.chunks += chunks
    return chunks


def vector_index(paths: IndexPaths, final, factory: str, live_manifest: Manifest | None, n_live: int,
                 report: BuildReport) -> tuple[AnnParams, str]:
    """The shards of the new generation's vector index (``ingest.store.ann_shards``): its new
    segments' only, while the live template serves. Returns (its parameters, a warning)."""
    from schemas.manifest import ann_params

    started = time.perf_counter()
    planned = plan_index(n_live, factory)
    live = ann_params(live_manifest) if live_manifest is not None else None
    ann, reason, warning, written = build_vector_index(paths, final, live, planned, report.chunks_embedded,
                                                      final.segments[0].dim if final.segments else 0)
    report.ann_factory, report.ann_updated, report.ann_reason = ann.factory, not reason, reason
    report.ann_seconds = time.perf_counter() - started
    return ann, warning


def _process_all(executor: Executor, files: list[CorpusFile], corpus_root: str | None, spill_dir: Path, paths,
                 settings: BuildSettings, model: ModelInfo, live_files, html_layout: bool,
                 office_layout: str = "", live_stats: dict[str, tuple[int, int, str]] | None = None) -> Iterator[DocResult]:
    """Results in file order; parsing (and the layout of HTML pages) runs ahead, where the executor runs it."""
    worker_settings = WorkerSettings(
        model=model,
        chunker=settings.chunker,
        index_root=paths.root,
        max_file_bytes=settings.max_file_mb * 1024 * 1024,
        max_pages=settings.max_pages,
        max_chars=settings.max_chars,
        html_layout=html_layout,
        office_layout=office_layout,
        ocr=settings.ocr,
        corpus_root=corpus_root,
        passwords=settings.passwords,
        spill_dir=spill_dir,
    )
    jobs = [FileJob(f.path, f.doc_id, media_type_of(f.doc_id), live_files.get(f.doc_id), f.id_note,
                    (live_stats or {}).get(f.doc_id) if f.doc_id in live_files else None, url=f.url, listed=f.listed)
            for f in files]
    # A file its size and mtime vouch for is unchanged here, without a trip to a worker.
    same = [stat_unchanged(job) for job in jobs]
    results = executor.process([j for j, s in zip(jobs, same) if not s], worker_settings, settings.doc_timeout_s or None)
    return _in_file_order(jobs, same, results)


def _in_file_order(jobs: list[FileJob], same: list[bool], results: Iterator[DocResult]) -> Iterator[DocResult]:
    with contextlib.closing(results):
        for job, unchanged in zip(jobs, same):
            yield DocResult(job.doc_id, None) if unchanged else next(results)


def next_generation_name(paths: IndexPaths, above: str = "") -> str:
    """The name after every generation in ``paths`` and after ``above`` (a name taken elsewhere)."""
    existing = [int(p.name) for p in paths.generations.glob("[0-9]*") if p.name.isdigit()]
    return f"{max([*existing, int(above or 0)], default=0) + 1:06d}"


def remove_debris(paths: IndexPaths) -> None:
    """Folders of builds that died before publishing (we hold the lock: none is running)."""
    paths.generations.mkdir(parents=True, exist_ok=True)
    for debris in paths.generations.glob(".*.tmp-*"):
        shutil.rmtree(debris, ignore_errors=True)
    # A generation renamed into place but never published (killed before CURRENT moved).
    live = read_current(paths)
    for generation in paths.generations.iterdir():
        if generation.name.isdigit() and (live is None or generation.name > live):
            shutil.rmtree(generation, ignore_errors=True)
    for debris in paths.segments.glob(".*.tmp-*"):
        shutil.rmtree(debris, ignore_errors=True)
    remove_unreferenced_segments(paths)  # written by a build that never published
    for debris in paths.root.glob(".*.tmp-*"):
        debris.unlink(missing_ok=True)
    for folder in (paths.texts, paths.sources):  # (scandir: a glob of 100,000 names cost a build 0.13 s each)
        with contextlib.suppress(FileNotFoundError), os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(".") and ".tmp-" in entry.name:
                    Path(entry.path).unlink(missing_ok=True)
