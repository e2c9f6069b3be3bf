"""Subcommands about the index itself: build it, search it, summarise it, show a chunk, check it."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys

from index.cli.arguments import index_argument, json_option, open_index
from index.cli.registry import EXIT_FAILURES, EXIT_OK, command, print_json
from schemas.limits import MAX_DOC_CHARS, MAX_FILE_MB, MAX_PDF_PAGES

# onnx-int8 is not offered: its top-10 retrieval agreement with torch was 0.91 (< 0.95) on the
# shared corpus (benchmarks/embedding.py); the README gives the figures.
OFFERED_BACKENDS = ["torch", "onnx"]


@command("build", "Build or update the index of a corpus folder, on this machine or a Ray cluster.",
         "spanindex build sample_corpus --index build/sample-index")
def _build(p: argparse.ArgumentParser) -> None:
    p.add_argument("corpus", help="folder of PDF, HTML, Markdown and text files, or a bucket's prefix: "
                                  "s3://bucket/prefix (AWS_ENDPOINT_URL names a store other than AWS; "
                                  "pip install 'spanindex[s3]'), or any fsspec URL whose driver is installed")
    p.add_argument("--index", required=True, help="index folder (created if missing), or a bucket's prefix: "
                                                  "s3://bucket/prefix, published to with a conditional write of CURRENT")
    p.add_argument("--index-cache", metavar="DIR",
                   help="the local copy a build in a bucket works in (default: $XDG_CACHE_HOME/spanindex/<hash of the URL>)")
    p.add_argument("--model", help="local sentence-transformers folder (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--max-tokens", type=int, default=256, help="tokens per chunk, special tokens included (default 256)")
    p.add_argument("--overlap", type=int, default=32, help="tokens shared by neighbouring chunks (default 32)")
    p.add_argument("--embed-backend", choices=OFFERED_BACKENDS, default="torch",
                   help="what runs the model: torch (default) or onnx, the same network exported to ONNX "
                        "(same vectors; changing it embeds everything again)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="where the model runs (default auto: CUDA where torch sees a GPU)")
    p.add_argument("--faiss-factory", default="auto",
                   help="vector index: auto (default: exact up to 50k chunks, IVF{n},SQ8 above), "
                        "or a FAISS index_factory string such as Flat, IVF1024,Flat or HNSW32")
    p.add_argument("--workers", type=int, default=0, help="local parser processes (default: one per core)")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="where files are parsed and embedded: this machine's processes (default), or Ray")
    p.add_argument("--ray-address", metavar="ADDRESS",
                   help="the Ray cluster to join: auto, HOST:PORT or ray://HOST:PORT "
                        "(default: start Ray on this machine for the build and stop it after)")
    p.add_argument("--embed-actors", type=int, default=0, metavar="N",
                   help="Ray actors that embed, each loading the model once "
                        "(default: one per GPU of the cluster, or one on a CPU)")
    p.add_argument("--ray-shared-index", action="store_true",
                   help="the index folder is at the same path on every Ray node (a shared file system): "
                        "segments are written on any node (default: on the driver's node)")
    p.add_argument("--full", action="store_true", help="rebuild from scratch instead of reusing unchanged documents")
    p.add_argument("--keep", type=int, default=3, help="generations to keep (default 3)")
    p.add_argument("--keep-texts", action="store_true", help="keep every document text ever indexed")
    p.add_argument("--max-file-mb", type=int, default=MAX_FILE_MB,
                   help=f"a larger file is an error row, never read (default {MAX_FILE_MB})")
    p.add_argument("--max-pages", type=int, default=MAX_PDF_PAGES,
                   help=f"a PDF with more pages is an error row (default {MAX_PDF_PAGES:,})")
    p.add_argument("--max-chars", type=int, default=MAX_DOC_CHARS,
                   help=f"a document with more characters of text is an error row (default {MAX_DOC_CHARS:,})")
    p.add_argument("--doc-timeout", type=float, default=600, metavar="SECONDS",
                   help="record a file whose parsing takes longer as an error and go on (default 600; 0: no limit)")
    p.add_argument("--html-layout", action="store_true",
                   help="lay HTML pages out in headless Chromium (/usr/bin/chromium): a box per character, "
                        "pages for citations, hidden text found through style sheets")
    p.add_argument("--no-office-layout", dest="office_layout", action="store_false",
                   help="do not render DOCX, PPTX, ODT and ODP with LibreOffice (by default, where it is installed, "
                        "they get pages and a glyph box per character)")
    p.add_argument("--ocr", choices=["auto", "off", "force"],
                   help="read PDF pages by OCR (Tesseract): auto reads pages without a usable text layer, "
                        "force every page (default: auto where tesseract is installed, else off)")
    p.add_argument("--ocr-lang", default="eng", metavar="LANGS",
                   help="Tesseract languages, e.g. eng+deu+jpn (default eng; each needs its tesseract-ocr-LANG pack)")
    p.add_argument("--ocr-dpi", type=int, default=200, metavar="DPI", help="resolution pages are read at (default 200)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="follow symlinks whose target lies outside the corpus folder (default: skip them)")
    p.add_argument("--passwords", metavar="FILE",
                   help="passwords for encrypted PDFs: lines of GLOB<TAB>PASSWORD, GLOB matched against the doc_id "
                        "(never logged or stored)")
    p.add_argument("--wait", action="store_true", help="wait for another build on this index instead of refusing")
    p.add_argument("--strict", action="store_true", help="exit 1 when any document failed")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--verbose", action="store_true", help="print tracebacks of internal errors")
    p.set_defaults(run=run_build)


def run_build(args) -> int:
    from tqdm import tqdm

    from ingest.build import BuildSettings, build_index
    from ingest.formats import Passwords
    from schemas.embedding import Device, EmbedBackend
    from schemas.records import ChunkerSettings, OcrMode, OcrSettings, SkipReason

    settings = BuildSettings(
        chunker=ChunkerSettings(max_tokens=args.max_tokens, overlap=args.overlap),
        model=args.model,
        faiss_factory=args.faiss_factory,
        embed_backend=EmbedBackend(args.embed_backend),
        device=Device(args.device),
        workers=args.workers,
        full=args.full,
        keep_generations=args.keep,
        keep_texts=args.keep_texts,
        max_file_mb=args.max_file_mb,
        max_pages=args.max_pages,
        max_chars=args.max_chars,
        doc_timeout_s=args.doc_timeout,
        wait_for_lock=args.wait,
        html_layout=args.html_layout,
        office_layout=args.office_layout,
        # No --ocr: auto where Tesseract is installed; languages and dpi apply either way.
        ocr=OcrSettings(OcrMode(args.ocr or "auto"), args.ocr_lang, args.ocr_dpi),
        follow_symlinks=args.follow_symlinks,
        passwords=Passwords.read(args.passwords) if args.passwords else Passwords(),
    )
    bar = None

    def progress(event) -> None:
        nonlocal bar
        if args.quiet:
            return
        if bar is None:
            bar = tqdm(total=event.total, unit="doc", file=sys.stderr, dynamic_ncols=True)
        bar.set_postfix_str(event.doc_id[-40:], refresh=False)
        bar.update(1)

    with _executor(args) as executor:
        report = build_index(args.corpus, args.index, settings, progress=progress, embedder=args.embedder,
                             executor=executor, index_cache=args.index_cache)
    if bar is not None:
        bar.close()
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(report.by_status.items()))
    print(f"generation {report.generation}: {report.n_files} documents ({statuses}) in {report.seconds:.1f} s")
    print(
        f"  documents: {report.added} added, {report.changed} changed, {report.removed} removed, "
        f"{report.unchanged} unchanged" + (f", {report.metadata_changed} with new metadata only"
                                           if report.metadata_changed else "")
    )
    print(f"  chunks: {report.chunks} ({report.chunks_embedded} embedded, {report.chunks_reused} reused)")
    if args.executor != "local":
        print(f"  ran on {report.executor}")
    if report.full_reason and report.full_reason != "new index":
        print(f"  full build: {report.full_reason}")
    if report.ann_updated:
        print(f"  vector index: {report.ann_factory} updated in place ({report.ann_seconds:.2f} s)")
    elif report.ann_factory != "Flat":
        print(f"  vector index: {report.ann_factory} built in {report.ann_seconds:.1f} s ({report.ann_reason})")
    if report.html_layout:
        lay = report.layout
        print(f"  HTML layout ({report.html_layout}): {lay.documents} page(s) laid out in {lay.seconds:.1f} s, "
              f"{lay.boxed} of {lay.source_chars} characters boxed, {lay.hidden} hidden, {lay.not_laid_out} not laid out, "
              f"{lay.unmatched} unmatched" + (f"; {lay.failed} failed (indexed without boxes)" if lay.failed else ""))
    if report.office_layout and (report.office.documents or report.office.failed):
        office = report.office
        print(f"  office layout ({report.office_layout}): {office.documents} document(s), {office.pages} page(s) "
              f"rendered in {office.seconds:.1f} s, {office.boxed} of {office.source_chars} characters boxed"
              + (f"; {office.failed} failed (indexed without boxes)" if office.failed else ""))
    if report.ocr != "off":
        pages = "1 PDF page" if report.ocr_pages == 1 else f"{report.ocr_pages} PDF pages"
        print(f"  OCR ({report.ocr}): {pages} read")
    unknown = [shown(s.doc_id) for s in report.skipped if s.reason is SkipReason.UNKNOWN_TYPE]
    if unknown:
        print(f"  skipped {len(unknown)} file(s) of unknown type: {', '.join(unknown[:5])}"
              + (" ..." if len(unknown) > 5 else ""))
    left_out = [s for s in report.skipped if s.reason is not SkipReason.UNKNOWN_TYPE]
    if left_out:
        print(f"  skipped {len(left_out)} file(s) that are not documents of the corpus:")
        width = max(len(shown(s.doc_id)) for s in left_out)
        for skipped in _listed(left_out, args.verbose, 20):
            print(f"    {shown(skipped.doc_id):<{width}}  {shown(str(skipped))}")
    for warning in report.warnings:
        print(f"  warning: {warning}")
    if report.failures:
        print(f"  {len(report.failures)} document(s) not indexed:")
        width = max(len(shown(d)) for d, _, _ in report.failures)
        for doc_id, status, reason in report.failures:
            print(f"    {shown(doc_id):<{width}}  {status:<8} {shown(reason)}")
    if report.warned:
        print(f"  {len(report.warned)} document(s) indexed with warnings:")
        for doc_id, warning in _listed(report.warned, args.verbose, 10):
            print(f"    {shown(doc_id)}: {shown(warning if args.verbose or len(warning) <= 160 else warning[:157] + '...')}")
    if report.hidden:
        print(f"  {len(report.hidden)} document(s) hold text a reader cannot see (kept out of embeddings):")
        for doc_id, n_hidden in _listed(report.hidden, args.verbose, 10):
            print(f"    {shown(doc_id)}: {n_hidden} hidden characters")
    if args.verbose:
        for doc_id, trace in report.internal_errors:
            print(f"--- internal error in {doc_id}:\n{trace}", file=sys.stderr)
    return EXIT_FAILURES if args.strict and report.failures else EXIT_OK


def _executor(args):
    from ingest.run import LocalExecutor
    from schemas.errors import SpanindexError

    if args.executor == "local":
        if args.ray_address or args.embed_actors or args.ray_shared_index:
            raise SpanindexError("--ray-address, --embed-actors and --ray-shared-index need --executor ray")
        return LocalExecutor(args.workers)
    from ingest.run import RayExecutor, RaySettings

    return RayExecutor(RaySettings(address=args.ray_address, embed_actors=args.embed_actors,
                                   shared_index=args.ray_shared_index))


def _listed(items: list, verbose: bool, limit: int):
    """The items a summary lists (all with --verbose, else the first ``limit``), then a line for the rest."""
    yield from items if verbose else items[:limit]
    if len(items) > limit and not verbose:
        print(f"    ... and {len(items) - limit} more (--verbose lists them all)")


def shown(text: str) -> str:
    """A file name or message as one line of the terminal: control characters escaped (a name may hold any)."""
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in text)


@command("search", "Retrieve the chunks that best match a query, with their exact spans.",
         'spanindex search build/sample-index "overage price per API call" -k 5 --mode hybrid '
         '--where "media_type = \'application/pdf\'"')
def _search(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=5, help="number of hits (default 5)")
    p.add_argument("--where", metavar="EXPR",
                   help="search only the documents this SQL condition keeps, before ranking: "
                        "\"doc_id LIKE 'contracts/%%' AND modified >= '2025-01-01'\"; columns doc_id, media_type, "
                        "title, pages, modified, ocr, n_hidden_chars, ... and meta['key'] (README: Filtering search)")
    p.add_argument("--mode", choices=["dense", "lexical", "hybrid"],
                   help="dense: embeddings; lexical: BM25 (names, numbers, exact phrases); hybrid: both, "
                        "each weighed by how far it is trusted for the query (default lexical; dense for an index built before it)")
    json_option(p, "the hits (one array)")
    p.add_argument("--format", choices=["anthropic"],
                   help="anthropic: the hits as Claude Messages API search_result blocks (one JSON array)")
    p.set_defaults(run=run_search)


def run_search(args) -> int:
    idx = open_index(args)
    hits = idx.search(args.query, args.k, mode=args.mode, where=args.where)
    if args.format == "anthropic":
        from index.citations.anthropic_format import search_result_blocks

        print_json(search_result_blocks(idx, hits))
        return EXIT_OK
    if args.json:
        print_json([dataclasses.asdict(h) for h in hits])
        return EXIT_OK
    for hit in hits:
        pages = ""
        if hit.page_start is not None:
            pages = f" p.{hit.page_start}" + (f"-{hit.page_end}" if hit.page_end != hit.page_start else "")
        print(f"{hit.rank}. {hit.score:.3f}  {hit.chunk_id}  [{hit.start}:{hit.end}]{pages}")
        section = " > ".join(" ".join(line.split()) for line in (hit.title, *hit.headings) if line.strip())
        if section:
            print(f"   in: {section[:200]}")
        snippet = " ".join(hit.text.split())
        print(f"   {snippet[:200]}{'...' if len(snippet) > 200 else ''}")
    return EXIT_OK


@command("stats", "Summarise an index: documents by status and type, pages, characters, chunks.", "spanindex stats build/sample-index")
def _stats(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    json_option(p)
    p.set_defaults(run=run_stats)


def run_stats(args) -> int:

    idx = open_index(args)
    docs = idx.documents()
    stats = {
        "generation": idx.generation.name,
        "created_at": idx.manifest.created_at,
        "model": f"{idx.manifest.model_id} ({idx.manifest.model_dim}-d)",
        "faiss": idx.manifest.faiss_factory,
        "embed_backend": idx.manifest.embed_backend,
        "documents": len(docs),
        "by_status": dict(collections.Counter(d.status.value for d in docs)),
        "by_media_type": dict(collections.Counter(d.media_type.value for d in docs)),
        "pages": sum(d.n_pages for d in docs),
        "pages_without_text": sum(d.pages_without_text for d in docs),
        "ocr": idx.manifest.ocr,
        "pages_read_by_ocr": _pages_read_by_ocr(idx),
        "characters": sum(d.n_chars for d in docs),
        "chunks": idx.n_chunks,
        "failures": {d.doc_id: d.error for d in docs if d.error},
        "hidden_text": {d.doc_id: _hidden_summary(idx, d.doc_id) for d in docs if d.n_hidden_chars},
    }
    if args.json:
        print_json(stats)
        return EXIT_OK
    for key, value in stats.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k, v in sorted(value.items()):
                print(f"  {k}: {v}")
        else:
            print(f"{key}: {value}")
    return EXIT_OK


def _pages_read_by_ocr(idx) -> int:
    import pyarrow.compute as pc

    return int(pc.sum(idx.generation.table("pdf_pages", ["ocr"]).column("ocr")).as_py() or 0)


def _hidden_summary(idx, doc_id: str) -> str:
    """'412 characters: 400 css_hidden, 12 tiny' for one document."""
    by_reason = collections.Counter()
    for run in idx.hidden_text(doc_id).runs:
        by_reason[run.reason.value] += run.end - run.start
    detail = ", ".join(f"{n} {reason}" for reason, n in by_reason.most_common())
    return f"{sum(by_reason.values())} characters: {detail}"


@command("show", "Show one chunk: its text, offsets, pages and glyph boxes or HTML source range.", 'spanindex show build/sample-index "pricing/rate-card.pdf#tok:0"')
def _show(p: argparse.ArgumentParser) -> None:
    index_argument(p)
    p.add_argument("chunk_id")
    p.add_argument("--boxes", action="store_true", help="every glyph box, not one rectangle per line")
    json_option(p)
    p.set_defaults(run=run_show)


def run_show(args) -> int:
    from index.inspect import inspect_chunk

    description = dataclasses.asdict(inspect_chunk(open_index(args), args.chunk_id, glyph_boxes=args.boxes))
    if args.json:
        print_json(description)
        return EXIT_OK
    for key, value in description.items():
        if key == "text":
            continue
        if isinstance(value, list):
            print(f"{key}: ({len(value)})")
            for item in value:
                print(f"  {item}")
        else:
            print(f"{key}: {value}")
    print("text:")
    print(description["text"])
    return EXIT_OK


@command("fsck", "Check the live generation: checksums, counts, ids, every chunk and offset run.",
         "spanindex fsck build/sample-index")
def _fsck(p: argparse.ArgumentParser) -> None:
    index_argument(p, reads_rows=False)
    p.add_argument("--generation", help="check this generation instead of the live one")
    p.set_defaults(run=run_fsck)


def run_fsck(args) -> int:
    from index.fsck import fsck

    faults = fsck(args.index, args.generation)
    for fault in faults:
        print(f"FAULT {fault}")
    if faults:
        print(f"{len(faults)} fault(s)")
        return EXIT_FAILURES
    print("ok")
    return EXIT_OK


@command("compact", "Merge every segment of the live generation into one, dropping the rows of changed and removed "
         "documents; the same answers, fewer files.", "spanindex compact build/sample-index")
def _compact(p: argparse.ArgumentParser) -> None:
    index_argument(p, reads_rows=False)
    p.add_argument("--keep", type=int, default=3, help="generations to keep (default 3)")
    p.add_argument("--wait", action="store_true", help="wait for a running build instead of failing")
    p.set_defaults(run=run_compact)


def run_compact(args) -> int:
    from ingest.compact import compact_index

    report = compact_index(args.index, keep_generations=args.keep, wait_for_lock=args.wait)
    if not report.generation:
        print(f"nothing to merge: {report.segments_before} segment, no masked rows")
        return EXIT_OK
    print(f"generation {report.generation}: {report.segments_before} segments merged into {report.segments_after}, "
          f"rows of {report.rows_dropped} masked documents dropped ({report.seconds:.1f} s)")
    return EXIT_OK
