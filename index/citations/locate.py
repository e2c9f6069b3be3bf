"""From document offsets to where the reader sees them: page rectangles, HTML source ranges.

Maps are loaded per document as numpy arrays from the Arrow tables, so that
locating a span costs a binary search and a slice, not a scan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from schemas.records import RUN_KINDS, OfficeCell, OfficePage, OfficeRuns, Rect, RunKind


@dataclass(frozen=True, slots=True, eq=False)
class PdfCharMap:
    """Glyph boxes of one document, by character offset."""

    run_starts: np.ndarray
    run_ends: np.ndarray
    run_pages: np.ndarray
    run_lines: np.ndarray  # runs on one visual line (split only by synthetic spaces) share a number
    box_offsets: np.ndarray  # run i's boxes are boxes[box_offsets[i]:box_offsets[i+1]]
    boxes: np.ndarray  # (n_real_chars, 4)
    # Per real character, like boxes: its OCR word confidence, NOT_OCR for text-layer characters;
    # None when no page of the document was read by OCR.
    confidence: np.ndarray | None = None

    NOT_OCR = 255

    @classmethod
    def from_table(cls, table: pa.Table, doc_text: str) -> "PdfCharMap":
        boxes_column = table.column("boxes").combine_chunks()
        flat = boxes_column.values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        boxes = flat.reshape(-1, 4)
        starts, ends = table.column("start").to_numpy(), table.column("end").to_numpy()
        pages = table.column("page").to_numpy()
        box_offsets = boxes_column.offsets.to_numpy() // 4
        lines = _line_numbers(doc_text, starts, ends, pages, boxes, box_offsets)
        return cls(starts, ends, pages, lines, box_offsets, boxes, _confidences(table, box_offsets, len(boxes)))

    def rects(self, doc_text: str, start: int, end: int) -> list[Rect]:
        """One rectangle per line of ``[start, end)``, merged from its glyph boxes.

        A span crossing a page break gives rectangles on both pages.
        """
        first = int(np.searchsorted(self.run_ends, start, side="right"))
        last = int(np.searchsorted(self.run_starts, end, side="left"))
        if first >= last:
            return []
        a = np.maximum(start, self.run_starts[first:last])
        b = np.minimum(end, self.run_ends[first:last])
        keep = a < b
        if not keep.any():
            return []
        runs = np.flatnonzero(keep) + first
        a, b = a[keep], b[keep]
        # Boxes of consecutive runs are stored back to back: one slice, reduced per line.
        lo = self.box_offsets[runs] - self.run_starts[runs] + a
        hi = lo + (b - a)
        boxes = self.boxes[lo[0] : hi[-1]]
        lines = self.run_lines[runs]
        line_first_run = np.concatenate(([0], np.flatnonzero(lines[1:] != lines[:-1]) + 1))
        segments = (lo - lo[0])[line_first_run]
        x0 = np.minimum.reduceat(boxes[:, 0], segments)
        y0 = np.minimum.reduceat(boxes[:, 1], segments)
        x1 = np.maximum.reduceat(boxes[:, 2], segments)
        y1 = np.maximum.reduceat(boxes[:, 3], segments)
        pages = self.run_pages[runs][line_first_run]
        return [Rect(int(p), float(l), float(t), float(r), float(bt)) for p, l, t, r, bt in zip(pages, x0, y0, x1, y1)]

    def ocr_confidence(self, start: int, end: int) -> int | None:
        """The lowest OCR word confidence (0-100) among the characters of ``[start, end)``; None
        when none of them was read by OCR."""
        if self.confidence is None:
            return None
        first = int(np.searchsorted(self.run_ends, start, side="right"))
        last = int(np.searchsorted(self.run_starts, end, side="left"))
        lowest = self.NOT_OCR
        for run in range(first, last):
            a, b = max(start, int(self.run_starts[run])), min(end, int(self.run_ends[run]))
            if a < b:
                offset = int(self.box_offsets[run]) - int(self.run_starts[run])
                lowest = min(lowest, int(self.confidence[offset + a : offset + b].min()))
        return None if lowest == self.NOT_OCR else lowest

    def page_of(self, offset: int) -> int | None:
        i = int(np.searchsorted(self.run_ends, offset, side="right"))
        if i < len(self.run_pages):
            return int(self.run_pages[i])
        return int(self.run_pages[-1]) if len(self.run_pages) else None


def _confidences(table: pa.Table, box_offsets: np.ndarray, n_chars: int) -> np.ndarray | None:
    """Each real character's OCR word confidence (NOT_OCR where a text layer gave it)."""
    if "ocr_confidence" not in table.column_names:
        return None
    column = table.column("ocr_confidence").combine_chunks()
    if column.null_count == len(column):
        return None
    confidence = np.full(n_chars, PdfCharMap.NOT_OCR, dtype=np.uint8)
    values = column.values.to_numpy(zero_copy_only=False)
    offsets = column.offsets.to_numpy()
    for run in np.flatnonzero(column.is_valid().to_numpy(zero_copy_only=False)).tolist():
        confidence[box_offsets[run] : box_offsets[run + 1]] = values[offsets[run] : offsets[run + 1]]
    return confidence


def _line_numbers(doc_text, starts, ends, pages, boxes, box_offsets) -> np.ndarray:
    """Number the visual lines: a run continues the line of the run before it when only
    synthetic spaces separate them (no line break in the text between) on the same page,
    and their boxes overlap vertically by more than half."""
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64)
    # Every run holds at least one character, so its boxes are a non-empty segment.
    y0 = np.minimum.reduceat(boxes[:, 1], box_offsets[:-1])
    y1 = np.maximum.reduceat(boxes[:, 3], box_offsets[:-1])
    overlap = np.minimum(y1[1:], y1[:-1]) - np.maximum(y0[1:], y0[:-1])
    shorter = np.minimum(y1[1:] - y0[1:], y1[:-1] - y0[:-1])
    continues = (pages[1:] == pages[:-1]) & (overlap > 0.5 * shorter)
    for i in np.flatnonzero(continues):
        gap = doc_text[ends[i] : starts[i + 1]]
        if "\n" in gap or "\f" in gap:
            continues[i] = False
    return np.concatenate(([0], np.cumsum(~continues)))


@dataclass(frozen=True, slots=True, eq=False)
class HtmlSourceMap:
    """Source positions of one HTML document's text, by character offset."""

    starts: np.ndarray
    ends: np.ndarray
    src_starts: np.ndarray
    src_ends: np.ndarray
    is_text: np.ndarray  # kind TEXT: one source character per text character

    @classmethod
    def from_table(cls, table: pa.Table) -> "HtmlSourceMap":
        kinds = table.column("kind").to_pylist()
        return cls(
            starts=table.column("start").to_numpy(),
            ends=table.column("end").to_numpy(),
            src_starts=table.column("src_start").to_numpy(),
            src_ends=table.column("src_end").to_numpy(),
            is_text=np.array([k == RunKind.TEXT.value for k in kinds], dtype=bool),
        )

    def source_range(self, start: int, end: int) -> tuple[int, int]:
        """``[src_start, src_end)`` of the decoded source that produced text ``[start, end)``."""
        first = int(np.searchsorted(self.ends, start, side="right"))
        last = int(np.searchsorted(self.ends, end - 1, side="right"))
        if first >= len(self.starts) or last >= len(self.starts):
            raise IndexError(f"offsets {start}..{end} are outside the source map")
        if self.is_text[first]:
            src_start = int(self.src_starts[first]) + (start - int(self.starts[first]))
        else:
            src_start = int(self.src_starts[first])
        if self.is_text[last]:
            src_end = int(self.src_starts[last]) + (end - int(self.starts[last]))
        else:
            src_end = int(self.src_ends[last])
        return src_start, max(src_start, src_end)

    def data_position(self, src_pos: int) -> int | None:
        """The first position at or after ``src_pos`` where the decoded source is character data
        (inside the source of a text run), where an HTML tokenizer may start; None when no text
        follows. The viewer starts a window of a large page there.

        Runs are in source order; synthetic runs (separators) have empty ranges and are no text.
        """
        i = int(np.searchsorted(self.src_ends, src_pos, side="right"))  # the first run ending after src_pos
        while i < len(self.starts):
            if self.is_text[i]:
                return max(src_pos, int(self.src_starts[i]))
            if int(self.src_starts[i]) >= src_pos and self.src_ends[i] > self.src_starts[i]:
                return int(self.src_starts[i])  # an entity or collapsed whitespace: it begins in text
            i += 1
        return None

    def source_ranges(self, start: int, end: int) -> list[tuple[int, int]]:
        """The decoded-source ranges that text ``[start, end)`` came from, merged where they touch.

        Unlike ``source_range`` (one range from the first to the last source character),
        text the parser left out between two runs (a hidden element, a comment) is in no range.
        """
        first = int(np.searchsorted(self.ends, start, side="right"))
        last = int(np.searchsorted(self.starts, end, side="left"))
        ranges: list[tuple[int, int]] = []
        for i in range(first, last):
            a, b = max(start, int(self.starts[i])), min(end, int(self.ends[i]))
            if a >= b:
                continue
            if self.is_text[i]:  # one source character per text character
                offset = int(self.src_starts[i]) - int(self.starts[i])
                src_a, src_b = a + offset, b + offset
            else:  # an entity or collapsed whitespace: its whole source; synthetic: nothing
                src_a, src_b = int(self.src_starts[i]), int(self.src_ends[i])
            if src_a >= src_b:
                continue
            if ranges and src_a <= ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], max(ranges[-1][1], src_b))
            else:
                ranges.append((src_a, src_b))
        return ranges


@dataclass(frozen=True, slots=True, eq=False)
class OfficeSourceMap:
    """Where the text of a DOCX, PPTX or XLSX came from: each run's part and range in that part's
    XML (decoded as UTF-8), the slides or sheets, and the XLSX cells, by character offset."""

    runs: OfficeRuns
    pages: tuple[OfficePage, ...]
    cells: tuple[OfficeCell, ...]

    def source_range(self, start: int, end: int) -> tuple[str, int, int] | None:
        """``(part, src_start, src_end)``: the part of the first real character of text
        ``[start, end)`` and its range there, up to the last real character from the same part;
        None when the span holds only generated text (separators, titles, list labels)."""
        runs = self.runs
        first = int(np.searchsorted(runs.end, start, side="right"))
        last = int(np.searchsorted(runs.start, end, side="left"))
        real = [i for i in range(first, last) if runs.parts[runs.part_code[i]] and runs.src_end[i] > runs.src_start[i]]
        if not real:
            return None
        part = int(runs.part_code[real[0]])
        same = [i for i in real if runs.part_code[i] == part]
        a, b = same[0], same[-1]
        text = RUN_KINDS.index(RunKind.TEXT)  # one source character per text character; else the whole run
        src_start = int(runs.src_start[a]) + (max(start, int(runs.start[a])) - int(runs.start[a]) if runs.kind[a] == text else 0)
        src_end = (int(runs.src_start[b]) + min(end, int(runs.end[b])) - int(runs.start[b]) if runs.kind[b] == text
                   else int(runs.src_end[b]))
        return runs.parts[part], src_start, max(src_start, src_end)

    def page_of(self, offset: int) -> int | None:
        """The slide or sheet (1-based) the character at ``offset`` is on; None for a DOCX."""
        return next((p.page for p in self.pages if p.start <= offset < p.end), None)

    def cells_of(self, start: int, end: int) -> tuple[str, ...]:
        """The XLSX cells whose text overlaps ``[start, end)``, in order."""
        return tuple(c.ref for c in self.cells if c.start < end and start < c.end)
