"""`make bench`: the figures the issues ask for, each measured in one run on this machine.

Ratios are taken within one run (the machine is shared and noisy); absolute
times vary from run to run. Uses ../shared/corpus when present.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpus import ROOT, SAMPLE, SHARED

RESULTS: dict[str, object] = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-model", action="store_true", help="use the test embedder (no model figures)")
    parser.add_argument("-o", "--output", default="build/bench.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    work = Path(tempfile.mkdtemp(prefix="spanindex-bench-"))
    try:
        from ingest.embed.embedder import SentenceTransformerEmbedder

        corpus = SHARED if SHARED.is_dir() else SAMPLE
        embedder = _test_embedder() if args.skip_model else SentenceTransformerEmbedder()
        bench_parse(corpus)
        bench_parse_html(corpus)
        from benchmarks import office

        print("== office parsing")
        RESULTS["office"] = office.run(corpus / "office")
        index_dir, full_seconds = bench_build(corpus, work, embedder)
        if corpus == SHARED and not args.skip_model:
            from benchmarks.retrieval import bench_retrieval

            RESULTS["retrieval"] = bench_retrieval(index_dir)
        bench_verify(index_dir, work)
        from benchmarks import reader_cost

        print("== the first resolve of a PDF quote in a fresh reader, by corpus size")
        RESULTS["reader_cost"] = reader_cost.run([int(n) for n in os.environ.get("BENCH_READER_COPIES", "1,8").split(",")])
        bench_reindex(corpus, index_dir, full_seconds, work, embedder)
        from benchmarks import reindex_cost

        print("== a one-file reindex and the first citation, by corpus size (segments)")
        RESULTS["reindex_cost"] = reindex_cost.run()
        from benchmarks import search_p50

        print("== search p50 at 1 and 64 copies, reindexed (segments, masked documents)")
        RESULTS["search_p50"] = search_p50.run()
        from benchmarks import language

        print("== language identification, and a full build against BENCH_BASELINE")
        RESULTS["language"] = language.run()
        from benchmarks import many_docs

        print(f"== {int(os.environ.get('BENCH_MANY_DOCS', '100000')):,} small documents: build, reindexes, compaction, first citation")
        RESULTS["many_docs"] = many_docs.run()
        bench_chunk_stability()
        bench_large_text(work)
        bench_throughput(args.skip_model)
        bench_ocr()
        from benchmarks.executors import bench_executors

        bench_executors(corpus, work, args.skip_model, report)
        from benchmarks import corpus_in_a_bucket

        print("== the corpus in a bucket (moto's S3 server) against the folder")
        RESULTS["corpus_in_a_bucket"] = corpus_in_a_bucket.run([corpus])
        from benchmarks import index_in_a_bucket

        print("== the index in a bucket: what builds upload and what a reader's opens fetch")
        RESULTS["index_in_a_bucket"] = index_in_a_bucket.run([corpus])
        from benchmarks import ray_driver

        print("== a Ray build's driver memory, by corpus size (segments written by actors)")
        RESULTS["ray_driver"] = ray_driver.run([int(n) for n in os.environ.get("BENCH_RAY_COPIES", "1,8").split(",")])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(RESULTS, indent=2) + "\n")
    print(f"\nwritten to {args.output}")


def bench_throughput(skip_model: bool) -> None:
    """Issue 13's figures: the chunker against the tokenizer, embedding backends side by side,
    approximate search (sizes from BENCH_ANN_SIZES, default 100000; 100000,1000000 for the full
    table), build memory from 1x to 10x the corpus and with a 50 MB
    one-line page and a 30 MB one-line text, and build time against embedding alone."""
    from benchmarks import ann, chunker_speed, embedding, scaling

    print("== the chunker against one tokenizer pass (real documents)")
    speed = chunker_speed.measure()
    report("chunker", speed, f"  {speed['documents']} documents, {speed['mb']} MB: chunker {speed['chunker_mb_per_s']} MB/s, "
           f"tokenizer {speed['tokenizer_mb_per_s']} MB/s: {speed['chunker_vs_tokenizer']}x (the tokenizer in the "
           f"chunker's calls of ~2,000 characters: {speed['tokenizer_in_pieces_vs_one_call']}x the time of one call a text); "
           f"exact slices {speed['exact_slices']:.0%}, chunks over the limit {speed['chunks_over_limit']}")
    if not skip_model:
        RESULTS.update(embedding.run())
    sizes = [int(n) for n in os.environ.get("BENCH_ANN_SIZES", "100000").split(",") if n.strip()]
    RESULTS.update(ann.run(sizes))
    work = Path(tempfile.mkdtemp(prefix="spanindex-scaling-"))
    try:
        scaling.bench_memory(work)
        scaling.bench_large_documents(work)
        if not skip_model:
            scaling.bench_overlap(work, os.environ.get("BENCH_OVERLAP_BACKENDS", "torch,onnx").split(","))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.update(scaling.RESULTS)


def _test_embedder():
    """The tests' deterministic stand-in for the model (tests/doubles.py)."""
    from benchmarks.embedders import HashingEmbedder

    return HashingEmbedder()


def bench_ocr() -> None:
    """Born-digital pages rendered to image-only PDFs, read back by OCR: accuracy, placement, speed."""
    from benchmarks.ocr import run
    from ingest.formats.pdf.tesseract import find_tesseract
    from schemas.errors import OcrError

    print("== OCR (pages rendered at 200 dpi, read back by Tesseract)")
    try:
        find_tesseract("eng")
    except OcrError as exc:
        report("ocr_skipped", exc.message, f"  skipped: {exc.message}")
        return
    totals = run(progress=print)["totals"]
    report("ocr_pages", totals["pages"], f"  {totals['pages']} pages of running English text")
    report("ocr_word_recall", round(totals["word_recall"], 4),
           f"  words found: {totals['word_recall']:.1%} (lowest page {totals['min_page_recall']:.1%}); "
           f"characters {totals['char_accuracy']:.1%}")
    report("ocr_words_placed", round(totals["placed"], 4),
           f"  matched words on the original word: {totals['placed']:.1%} (lowest page {totals['min_page_placed']:.1%})")
    report("ocr_sentences_verified", round(totals["verified"], 4),
           f"  quoted sentences verified: {totals['verified']:.1%}, on the right lines {totals['landed']:.1%} "
           f"of {totals['sentences']}")
    report("ocr_pages_per_s", round(totals["ocr_pages_per_s"], 3),
           f"  OCR: {totals['ocr_pages_per_s']:.2f} pages/s in one process (rendering included)")


def report(key: str, value, text: str) -> None:
    RESULTS[key] = value
    print(f"{text}")


def bench_parse(corpus: Path) -> None:
    """Our PDF parser against PyMuPDF's plain rawdict extraction of the same pages."""
    import pymupdf

    from ingest.formats.pdf.parser import parse_pdf

    print("== parsing")
    pdfs = sorted((corpus).rglob("*.pdf"))
    readable = []
    for path in pdfs:
        try:
            with pymupdf.open(path) as doc:
                if not doc.needs_pass and doc.page_count:
                    readable.append(path.read_bytes())
        except Exception:  # noqa: BLE001 - unreadable files are not part of the comparison
            continue
    pages = 0
    started = time.perf_counter()
    for data in readable:
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            for page in doc:
                page.get_text("rawdict")
                pages += 1
    raw_seconds = time.perf_counter() - started
    from ingest.formats.pdf.parser import TEXT_FLAGS

    started = time.perf_counter()
    for data in readable:
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            for page in doc:
                page.get_text("rawdict", flags=TEXT_FLAGS)
    same_flags_seconds = time.perf_counter() - started
    gc.collect()
    started = time.perf_counter()
    for i, data in enumerate(readable):
        parse_pdf(data, f"doc{i}.pdf")
    ours_seconds = time.perf_counter() - started
    report("parse_pdf_pages", pages, f"{pages} PDF pages from {len(readable)} files")
    report("rawdict_pages_per_s", round(pages / raw_seconds, 1), f"  PyMuPDF get_text('rawdict'): {raw_seconds:.2f} s, {pages / raw_seconds:.0f} pages/s")
    report("parse_pdf_pages_per_s", round(pages / ours_seconds, 1), f"  spanindex parse_pdf (text + every glyph box): {ours_seconds:.2f} s, {pages / ours_seconds:.0f} pages/s")
    report("rawdict_same_flags_pages_per_s", round(pages / same_flags_seconds, 1),
           f"  PyMuPDF get_text('rawdict') with the parser's flags (no images): {same_flags_seconds:.2f} s, {pages / same_flags_seconds:.0f} pages/s")
    report("parse_vs_rawdict", round(ours_seconds / raw_seconds, 2), f"  parse_pdf / rawdict time: {ours_seconds / raw_seconds:.2f}x "
           f"(default flags), {ours_seconds / same_flags_seconds:.2f}x (same flags)")


def bench_parse_html(corpus: Path) -> None:
    """The HTML parser's throughput, and its time on the largest page (a timed unit test would
    fail on a busy machine; a quadratic step shows here as a large page's rate falling)."""
    from ingest.formats.html.parser import parse_html

    print("== parsing HTML")
    pages = [(path.name, path.read_bytes()) for path in sorted(corpus.rglob("*.htm*"))]
    if not pages:
        return
    seconds = {}
    for name, source in pages:
        started = time.perf_counter()
        parse_html(source, name)
        seconds[name] = time.perf_counter() - started
    total_mb = sum(len(source) for _, source in pages) / 1e6
    largest, source = max(pages, key=lambda page: len(page[1]))
    report("parse_html_mb_per_s", round(total_mb / sum(seconds.values()), 2),
           f"  parse_html: {len(pages)} pages, {total_mb:.1f} MB in {sum(seconds.values()):.2f} s, "
           f"{total_mb / sum(seconds.values()):.1f} MB/s")
    report("parse_html_largest_page_s", round(seconds[largest], 3),
           f"  the largest page ({largest}, {len(source) / 1e6:.1f} MB): {seconds[largest]:.2f} s, "
           f"{len(source) / 1e6 / seconds[largest]:.1f} MB/s")


def bench_build(corpus: Path, work: Path, embedder) -> tuple[Path, float]:
    from ingest.build import BuildSettings, build_index

    print(f"== full build of {corpus.relative_to(ROOT.parent) if corpus == SHARED else corpus.name}")
    index_dir = work / "index"
    started = time.perf_counter()
    result = build_index(corpus, index_dir, BuildSettings(), embedder=embedder)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    statuses = dict(sorted(result.by_status.items()))
    report("build_documents", statuses, f"  documents: {statuses} ({result.n_files} files)")
    report("build_chunks", result.chunks, f"  chunks: {result.chunks}")
    report("build_seconds", round(seconds, 1), f"  build: {seconds:.1f} s (parse {result.parse_seconds:.1f} s summed over workers, embed {result.embed_seconds:.1f} s)")
    if result.embed_seconds:
        report("embed_chunks_per_s", round(result.chunks_embedded / result.embed_seconds, 1),
               f"  embedding: {result.chunks_embedded / result.embed_seconds:.1f} chunks/s on {getattr(embedder, 'device', 'cpu')}")
    report("build_peak_rss_mb", round(peak_mb), f"  peak RSS: {peak_mb:.0f} MB (embedding process), {result.worker_peak_rss_mb:.0f} MB (largest worker)")
    report("lexical_build_seconds", round(result.lexical_seconds, 2),
           f"  lexical index: {result.lexical_seconds:.2f} s for {result.chunks} chunks ({result.lexical_seconds / seconds:.1%} of the build)")
    return index_dir, seconds


def bench_verify(index_dir: Path, work: Path) -> None:
    import index
    from index.citations.verify import Verifier
    from schemas.citations import Support

    print("== verification")
    idx = index.open(index_dir)
    rng = random.Random(0)
    supports = []
    for doc in idx.documents():
        if doc.n_chunks:
            for chunk in rng.sample(idx.chunks_of(doc.doc_id), min(20, doc.n_chunks)):
                a = rng.randrange(0, max(1, len(chunk.text) - 80))
                supports.append(Support(chunk.chunk_id, chunk.text[a : a + 80]))
    verifier = Verifier(idx)
    for support in supports:
        verifier.cite(support)  # warm: maps and texts loaded
    started, done = time.perf_counter(), 0
    while time.perf_counter() - started < 3:
        for support in supports:
            verifier.cite(support)
        done += len(supports)
    rate = done / (time.perf_counter() - started)
    report("verify_citations_per_s", round(rate), f"  warm index: {rate:,.0f} citations/s ({len(supports)} distinct exact quotes, PDF and HTML)")

    answer = work / "answer50.json"
    claims = [{"claim_id": f"c{i}", "text": "claim", "support": [{"chunk_id": s.chunk_id, "quote": s.quote}]}
              for i, s in enumerate(supports[:50])]
    answer.write_text(json.dumps({"answer_id": "bench", "claims": claims}))
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "index", "verify", str(index_dir), str(answer), "-o", str(work / "r.jsonl")],
                       cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    cold = sorted(times)[len(times) // 2]
    report("verify_50_claims_cold_s", round(cold, 3), f"  `spanindex verify` of a 50-claim answer, cold process: {cold:.2f} s (median of 5)")


def bench_reindex(corpus: Path, index_dir: Path, full_seconds: float, work: Path, embedder) -> None:
    """The same corpus with one document edited, built into the index of the full build."""
    from ingest.build import BuildSettings, build_index

    print("== reindex after changing one document")
    copy = shutil.copytree(corpus, work / "edited-corpus")
    edited = next(p for p in sorted(copy.rglob("*")) if p.suffix in (".html", ".md"))
    data = edited.read_bytes()
    at = data.find(b"<body")
    at = data.find(b">", at) + 1 if at >= 0 else 0
    edited.write_bytes(data[:at] + b"<p>A paragraph inserted for the benchmark, about nothing in particular.</p>\n" + data[at:])
    started = time.perf_counter()
    result = build_index(copy, index_dir, BuildSettings(), embedder=embedder)
    seconds = time.perf_counter() - started
    report("reindex_one_changed_s", round(seconds, 2),
           f"  {edited.relative_to(copy)} edited: {seconds:.2f} s against {full_seconds:.1f} s for the full build "
           f"({seconds / full_seconds:.1%}); {result.changed} changed, {result.unchanged} unchanged; "
           f"{result.chunks_embedded} chunks embedded, {result.chunks_reused} reused")


def bench_chunk_stability() -> None:
    """Insert one paragraph near the start of a 50-page document: how many chunks keep their text."""
    from ingest.embed.model import load_tokenizer, resolve_model
    from ingest.formats.pdf.parser import parse_pdf
    from ingest.text.chunker import chunk_spans
    from schemas.records import ChunkerSettings

    print("== chunk stability")
    source = SHARED / "pdf" / "GeoTopo-komprimiert.pdf"
    if source.is_file():
        parsed = parse_pdf(source.read_bytes(), "geotopo.pdf")
        text = parsed.text[: parsed.pages[49].end]  # the first 50 pages
        what = "first 50 pages of GeoTopo (shared corpus)"
    else:
        text = (SAMPLE / "docs" / "long-policy.md").read_text() * 4
        what = "long-policy.md x4 (shared corpus absent)"
    tokenizer = load_tokenizer(resolve_model())
    settings = ChunkerSettings()
    cut = text.index("\n\n", len(text) // 50) + 2
    edited = text[:cut] + "An inserted paragraph, two sentences long. It was not there before.\n\n" + text[cut:]
    started = time.perf_counter()
    before = [text[s.start : s.end] for s in chunk_spans(text, tokenizer, settings)]
    seconds = time.perf_counter() - started
    after = {edited[s.start : s.end] for s in chunk_spans(edited, tokenizer, settings)}
    kept = sum(t in after for t in before) / len(before)
    report("chunks_kept_after_insert", round(kept, 4),
           f"  {what}: {len(before)} chunks, {kept:.1%} keep identical text after a paragraph inserted at 2% "
           f"(chunking {len(text) / seconds / 1e6:.2f} MB/s)")



# Peak memory as VmHWM: ru_maxrss survives exec, so a child of a large process would report its parent's.
_CHUNK_ONE_FILE = """
import re, sys, time
from pathlib import Path
from ingest.text.chunker import chunk_spans
from ingest.embed.model import load_tokenizer, resolve_model
from schemas.records import ChunkerSettings
def peak_kb():
    return int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1))
text = Path(sys.argv[1]).read_text()
tokenizer = load_tokenizer(resolve_model())
before = peak_kb()
started = time.perf_counter()
spans = chunk_spans(text, tokenizer, ChunkerSettings())
seconds = time.perf_counter() - started
print(len(text), len(spans), seconds, before, peak_kb())
"""


def bench_large_text(work: Path) -> None:
    """One 20 MB text file: chunking time and the peak memory of the process that does it."""
    print("== a large document")
    rng = random.Random(1)
    words = "invoice overage plan growth scale starter seats storage egress audit logs retention webhook".split()
    paragraphs = (" ".join(rng.choice(words) for _ in range(50)).capitalize() + "." for _ in range(56_000))
    path = work / "large.txt"
    path.write_text("\n\n".join(paragraphs))
    run = subprocess.run([sys.executable, "-c", _CHUNK_ONE_FILE, str(path)], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    chars, chunks, seconds, rss_before, rss_peak = (float(x) for x in run.stdout.split())
    report("large_text_chunk_mb_per_s", round(chars / seconds / 1e6, 2),
           f"  {chars / 1e6:.1f}M characters, {chunks:.0f} chunks: chunked in {seconds:.1f} s "
           f"({chars / seconds / 1e6:.2f} MB/s), peak RSS {rss_peak / 1024:.0f} MB "
           f"({(rss_peak - rss_before) / 1024:.0f} MB over the loaded tokenizer)")


if __name__ == "__main__":
    main()
