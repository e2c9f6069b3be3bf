"""Which pages of a PDF are read by OCR, and the text they get from it.

``--ocr auto`` reads the pages whose text layer is missing or is not text (see
``ingest.formats.pdf.text_layer``); ``force`` reads every page. OCR text goes through the
same page text as a text layer: lines, a synthetic space between words, a run
of real characters per word group with a box per character, plus each
character's word confidence. A garbled or unmapped layer is replaced only when
the OCR text passes the same test; otherwise the layer stays and a warning
says to set the OCR languages. A page with no text and nothing drawn on it is
not read (there is nothing to read).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pymupdf

from ingest.formats.pdf.page import PageText
from ingest.formats.pdf.tesseract import OcrPage, find_tesseract, ocr_page
from ingest.formats.pdf.text_layer import (
    SPARSE_CHARS,
    SPARSE_IMAGE_SHARE,
    LayerVerdict,
    is_better_than,
    judge_layers,
    layer_stats,
)
from schemas.errors import OcrError
from schemas.records import OcrMode, OcrSettings

__all__ = ["OcrOutcome", "OcrSettings", "page_text_of", "read_pages"]
_MUPDF_ERRORS = (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase)
_MAX_LISTED_PAGES = 20
_MAX_FAILURES_LISTED = 5


@dataclass(slots=True)
class OcrOutcome:
    pages: list[PageText | None]  # the page texts, OCR's where it was used
    read: list[int] = field(default_factory=list)  # 1-based pages whose text is OCR's
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0  # spent reading pages


def read_pages(doc: pymupdf.Document, texts: list[PageText | None], settings: OcrSettings) -> OcrOutcome:
    """The page texts with the pages ``settings`` asks for read by OCR (``None``: a page that failed)."""
    outcome = OcrOutcome(list(texts))
    if settings.mode is OcrMode.OFF:
        return outcome
    try:
        tesseract = find_tesseract(settings.languages)
    except OcrError as exc:
        outcome.warnings.append(f"OCR skipped: {exc.message}")
        return outcome
    stats = [layer_stats(t.text) if t is not None else None for t in texts]
    verdicts = judge_layers([s or layer_stats("") for s in stats])
    why: dict[LayerVerdict | str, list[int]] = {}
    kept: list[int] = []
    failures: list[str] = []
    lowered: list[str] = []
    for index, (text, verdict) in enumerate(zip(texts, verdicts)):
        if text is None:
            continue
        number = index + 1
        try:
            page = doc.load_page(index)
            if verdict is LayerVerdict.USABLE and stats[index].visible_chars < SPARSE_CHARS and _mostly_image(page):
                verdict = LayerVerdict.SPARSE
            if settings.mode is OcrMode.AUTO and verdict is LayerVerdict.USABLE:
                continue
            if verdict is LayerVerdict.NO_TEXT and _is_blank(page):
                continue
            read = ocr_page(page, tesseract, settings.dpi)
        except (OcrError, *_MUPDF_ERRORS) as exc:
            failures.append(f"page {number}: {getattr(exc, 'message', exc)}")
            continue
        outcome.seconds += read.seconds
        if read.dpi < settings.dpi:
            lowered.append(f"{number} at {read.dpi} dpi")
        ocr_text = page_text_of(read)
        if settings.mode is OcrMode.AUTO and not is_better_than(layer_stats(ocr_text.text), stats[index], verdict):
            if verdict in (LayerVerdict.GARBLED, LayerVerdict.UNMAPPED):
                kept.append(number)
            continue
        outcome.pages[index] = ocr_text
        outcome.read.append(number)
        why.setdefault("force" if settings.mode is OcrMode.FORCE else verdict, []).append(number)
    engine = f"tesseract {tesseract.version}, {tesseract.languages}, {settings.dpi} dpi"
    if outcome.read:
        reasons = "; ".join(f"{_REASON_TEXT[k]}: {_page_list(v)}" for k, v in why.items())
        pages = "1 page" if len(outcome.read) == 1 else f"{len(outcome.read)} pages"
        outcome.warnings.append(f"{pages} read by OCR ({engine}): {reasons}")
    if kept:
        outcome.warnings.append(
            f"text layer not usable on pages {_page_list(kept)} and OCR ({engine}) read no better: "
            "the layer is kept (--ocr-lang should name the pages' language)"
        )
    if lowered:
        outcome.warnings.append(f"large pages read at a lower resolution: {', '.join(lowered[:_MAX_LISTED_PAGES])}")
    if failures:
        listed = "; ".join(failures[:_MAX_FAILURES_LISTED])
        more = f"; ... and {len(failures) - _MAX_FAILURES_LISTED} more" if len(failures) > _MAX_FAILURES_LISTED else ""
        outcome.warnings.append(f"OCR failed on {len(failures)} pages: {listed}{more}")
    return outcome


_REASON_TEXT = {
    LayerVerdict.NO_TEXT: "no text layer",
    LayerVerdict.UNMAPPED: "text layer without Unicode (U+FFFD, private use)",
    LayerVerdict.GARBLED: "text layer garbled (its words are not words)",
    LayerVerdict.SPARSE: "a few words over a page-sized image",
    "force": "--ocr force",
}


def page_text_of(read: OcrPage) -> PageText:
    """OCR's lines as a page text: a run per stretch of real characters, each with its word confidence."""
    text = read.text
    runs: list[tuple[int, int, np.ndarray]] = []
    confidences: list[np.ndarray] = []
    offset = 0
    for previous, line in zip((None, *read.lines), read.lines):
        if previous is not None:
            offset += 2 if line.paragraph != previous.paragraph else 1
        real = ~line.synthetic
        edges = np.flatnonzero(np.diff(np.concatenate(([0], real.view(np.int8), [0]))))
        for start, stop in zip(edges[0::2].tolist(), edges[1::2].tolist()):
            runs.append((offset + start, offset + stop, line.boxes[start:stop]))
            confidences.append(line.confidence[start:stop])
        offset += len(line.text)
    assert offset == len(text), "OCR runs and text disagree"
    return PageText(text, runs, has_text=bool(text.strip()), confidences=confidences)


def _mostly_image(page: pymupdf.Page) -> bool:
    """Images cover at least SPARSE_IMAGE_SHARE of the page (a scan, whatever text lies over it)."""
    page_rect = pymupdf.Rect(0, 0, page.cropbox.width, page.cropbox.height)  # unrotated, like image boxes
    area = page_rect.width * page_rect.height
    if area <= 0:
        return False
    covered = 0.0
    for info in page.get_image_info():
        box = pymupdf.Rect(info["bbox"]) & page_rect
        covered += max(box.width, 0) * max(box.height, 0)
    return covered >= SPARSE_IMAGE_SHARE * area


def _is_blank(page: pymupdf.Page) -> bool:
    """Nothing is drawn on the page: no content, no annotation (a blank page has nothing to read)."""
    return not page.get_bboxlog() and not page.annot_xrefs()



def _page_list(numbers: list[int]) -> str:
    listed = ", ".join(str(n) for n in numbers[:_MAX_LISTED_PAGES])
    if len(numbers) > _MAX_LISTED_PAGES:
        listed += f", ... ({len(numbers) - _MAX_LISTED_PAGES} more)"
    return listed
