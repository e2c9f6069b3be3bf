"""OCR against ground truth: born-digital pages rendered to image-only PDFs at 200 dpi, read back by OCR.

Per page: word recall (the original's words found in the OCR text, as a
multiset), character accuracy, placement of matched words (the OCR box on the
original word), median IoU; sentences quoted from the original page that
verify against the OCR document's chunks (exact, normalized or fuzzy) and
whose highlight lands on the original lines; OCR pages per second.

    python -m benchmarks.ocr [--dpi 200] [--lang eng] [-o build/ocr.json]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pymupdf
from rapidfuzz import fuzz

from benchmarks.corpus import SAMPLE, SHARED  # SHARED follows SPANINDEX_SHARED_CORPUS
from benchmarks.ocr_truth import (
    PageScore,
    char_boxes,
    image_only_pdf,
    line_rects,
    lands_on_lines,
    page_words,
    score_page,
    sentences_of,
)

# Clean English pages of running text (1-based page numbers), and where they live.
CLEAN_ENGLISH = [
    (SAMPLE / "handbook" / "two-column.pdf", [1, 2, 3]),
    (SAMPLE / "pricing" / "rate-card.pdf", [2, 3, 4]),
    (SAMPLE / "reports" / "rotated-and-scanned.pdf", [1, 2, 4]),  # page 2 is /Rotate 90
    (SHARED / "pdf" / "unstructured__dpr-multi-column.pdf", [1, 2, 4, 8, 9, 10, 11, 12, 13]),
]


@dataclass(frozen=True, slots=True)
class PageReport:
    document: str
    score: PageScore
    sentences: int
    verified: int  # exact, normalized or fuzzy against the OCR chunks
    landed: int  # verified, and every line of the highlight on a line of the original sentence


def evaluate(path: Path, pages: list[int], tokenizer, dpi: int = 200, languages: str = "eng") -> tuple[list[PageReport], float]:
    """Reports for ``pages`` of ``path``, and the seconds OCR took for them (rendering included)."""
    from index.citations.match import match_quote
    from ingest.text.chunker import chunk_spans
    from ingest.formats.pdf.parser import OcrSettings, parse_pdf
    from schemas.citations import CitationStatus
    from schemas.records import ChunkerSettings, OcrMode

    source = path.read_bytes()
    original = parse_pdf(source, path.name)
    with pymupdf.open(stream=source, filetype="pdf") as doc:
        scan = image_only_pdf(doc, [p - 1 for p in pages], dpi)
    started = time.perf_counter()
    read = parse_pdf(scan, path.name, OcrSettings(OcrMode.AUTO, languages, dpi))
    seconds = time.perf_counter() - started
    assert all(page.ocr for page in read.pages), f"{path.name}: not every page was read by OCR"
    original_boxes, read_boxes = char_boxes(original), char_boxes(read)
    chunks = chunk_spans(read.text, tokenizer, ChunkerSettings())
    verified_statuses = {CitationStatus.EXACT, CitationStatus.NORMALIZED, CitationStatus.FUZZY}
    reports = []
    for i, number in enumerate(pages):
        score = score_page(number, page_words(original, original_boxes, number - 1), page_words(read, read_boxes, i))
        page, read_page = original.pages[number - 1], read.pages[i]
        on_page = [c for c in chunks if c.start < read_page.end and read_page.start < c.end]
        sentences = sentences_of(original.text, page.start, page.end)
        verified = landed = 0
        for start, end in sentences:
            quote = " ".join(original.text[start:end].split())
            chunk = max(on_page, key=lambda c: fuzz.partial_ratio(quote, read.text[c.start : c.end]))
            match = match_quote(read.text[chunk.start : chunk.end], quote)
            if match.status not in verified_statuses:
                continue
            verified += 1
            ocr_lines = line_rects(read_boxes, chunk.start + match.char_start, chunk.start + match.char_end)
            landed += lands_on_lines(ocr_lines, line_rects(original_boxes, start, end))
        reports.append(PageReport(path.name, score, len(sentences), verified, landed))
    return reports, seconds


def run(dpi: int = 200, languages: str = "eng", progress=print) -> dict:
    """Every clean English page that exists here: per-page reports and the totals."""
    from ingest.embed.model import load_tokenizer, resolve_model

    tokenizer = load_tokenizer(resolve_model())
    reports: list[PageReport] = []
    seconds = 0.0
    for path, pages in CLEAN_ENGLISH:
        if not path.is_file():
            continue
        page_reports, took = evaluate(path, pages, tokenizer, dpi, languages)
        reports += page_reports
        seconds += took
        for r in page_reports:
            s = r.score
            progress(f"  {r.document} p{s.page}: words {s.words}, recall {s.recall:.1%}, chars {s.char_accuracy:.1%}, "
                     f"placed {s.placed:.1%} of {s.matched}, IoU {s.iou:.2f}; "
                     f"sentences verified {r.verified}/{r.sentences}, on the right lines {r.landed}")
    words = sum(r.score.words for r in reports)
    matched = sum(r.score.matched for r in reports)
    sentences = sum(r.sentences for r in reports)
    totals = {
        "pages": len(reports),
        "word_recall": sum(r.score.recall * r.score.words for r in reports) / max(words, 1),
        "char_accuracy": sum(r.score.char_accuracy * r.score.words for r in reports) / max(words, 1),
        "placed": sum(r.score.placed * r.score.matched for r in reports) / max(matched, 1),
        "min_page_recall": min((r.score.recall for r in reports), default=0.0),
        "min_page_placed": min((r.score.placed for r in reports), default=0.0),
        "sentences": sentences,
        "verified": sum(r.verified for r in reports) / max(sentences, 1),
        "landed": sum(r.landed for r in reports) / max(sentences, 1),
        "ocr_pages_per_s": len(reports) / seconds if seconds else 0.0,
    }
    return {"totals": totals, "pages": [asdict(r) for r in reports]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpi", type=int, default=200)
    parser.add_argument("--lang", default="eng")
    parser.add_argument("-o", "--output", default="build/ocr.json")
    args = parser.parse_args()
    result = run(args.dpi, args.lang)
    t = result["totals"]
    print(f"{t['pages']} pages: word recall {t['word_recall']:.1%} (lowest page {t['min_page_recall']:.1%}), "
          f"characters {t['char_accuracy']:.1%}, placed {t['placed']:.1%} (lowest page {t['min_page_placed']:.1%}), "
          f"sentences verified {t['verified']:.1%} and on the right lines {t['landed']:.1%} of {t['sentences']}, "
          f"{t['ocr_pages_per_s']:.2f} OCR pages/s")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
