"""From document offsets to where the reader sees them: page rectangles, HTML source ranges.

Maps are loaded per document as numpy arrays from the Arrow tables, so that
locating a span costs a binary search and a slice, not a scan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from schemas.records import Rect, RunKind


@dataclass(frozen=True, slots=True, eq=False)
class PdfCharMap:
    """Glyph boxes of one document, by character offset."""

    run_starts: np.ndarray
    run_ends: np.ndarray
    run_pages: np.ndarray
    box_offsets: np.ndarray  # run i's boxes are boxes[box_offsets[i]:box_offsets[i+1]]
    boxes: np.ndarray  # (n_real_chars, 4)

    @classmethod
    def from_table(cls, table: pa.Table) -> "PdfCharMap":
        boxes = table.column("boxes").combine_chunks()
        flat = boxes.values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        return cls(
            run_starts=table.column("start").to_numpy(),
            run_ends=table.column("end").to_numpy(),
            run_pages=table.column("page").to_numpy(),
            box_offsets=boxes.offsets.to_numpy() // 4,
            boxes=flat.reshape(-1, 4),
        )

    def rects(self, doc_text: str, start: int, end: int) -> list[Rect]:
        """One rectangle per line of ``[start, end)``, merged from its glyph boxes.

        A span crossing a page break gives rectangles on both pages.
        """
        first = max(0, int(np.searchsorted(self.run_ends, start, side="right")))
        last = int(np.searchsorted(self.run_starts, end, side="left"))
        rects: list[Rect] = []
        previous_end = None
        for i in range(first, last):
            a = max(start, int(self.run_starts[i]))
            b = min(end, int(self.run_ends[i]))
            if a >= b:
                continue
            offset = int(self.box_offsets[i]) - int(self.run_starts[i])
            glyphs = self.boxes[offset + a : offset + b]
            rect = Rect(
                int(self.run_pages[i]),
                float(glyphs[:, 0].min()),
                float(glyphs[:, 1].min()),
                float(glyphs[:, 2].max()),
                float(glyphs[:, 3].max()),
            )
            if rects and previous_end is not None and _same_line(rects[-1], rect, doc_text[previous_end:a]):
                last_rect = rects[-1]
                rect = Rect(
                    rect.page,
                    min(last_rect.x0, rect.x0),
                    min(last_rect.y0, rect.y0),
                    max(last_rect.x1, rect.x1),
                    max(last_rect.y1, rect.y1),
                )
                rects[-1] = rect
            else:
                rects.append(rect)
            previous_end = b
        return rects

    def page_of(self, offset: int) -> int | None:
        i = int(np.searchsorted(self.run_ends, offset, side="right"))
        if i < len(self.run_pages):
            return int(self.run_pages[i])
        return int(self.run_pages[-1]) if len(self.run_pages) else None


def _same_line(a: Rect, b: Rect, gap_text: str) -> bool:
    """Runs split by synthetic spaces on one visual line merge into one rectangle."""
    if a.page != b.page or "\n" in gap_text or "\f" in gap_text:
        return False
    overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return overlap > 0.5 * min(a.y1 - a.y0, b.y1 - b.y0)


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
