"""Chinese and Japanese: a sentence that wraps in the source verifies when quoted without the break.

A line break inside a CJK sentence is not a space; a model quotes the sentence whole.
Every such sentence of the shared corpus's Japanese and Chinese documents (HTML pages,
horizontal and vertical PDFs) must verify, land on the whole sentence, and be highlighted
over all of its characters: every glyph box inside a rectangle (PDF), the whole source
range (HTML).
"""

from __future__ import annotations

import bisect
import re

import pytest

import index
from index.citations.verify import Verifier
from ingest.text.normalize import is_no_space_script
from schemas.citations import Support
from schemas.records import MediaType, RunKind

from conftest import STATUS_COUNTS

CJK_DOCUMENTS = [
    "html/chardet__chuo-u-x-sjis.html",
    "html/readability__qq-gb2312-label.html",
    "html/newspaper__chinese_article.html",
    "pdf/pdfjs__vertical.pdf",
    "pdf/pdfminer__jo.pdf",
    "pdf/pdfplumber__issue-71-duplicate-chars.pdf",
    "vertical-tiers.pdf",  # the generated corpus below
    "wrapped.html",
]
_SENTENCE_END = re.compile(r"(?<=[。！？])[」』）]*")
# Natsume Soseki, "I Am a Cat" (1905), public domain: running Japanese prose.
SOSEKI = (
    "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で"
    "ニャーニャー泣いていた事だけは記憶している。吾輩はここで始めて人間というものを見た。しかもあとで"
    "聞くとそれは書生という人間中で一番獰悪な種族であったそうだ。この書生というのは時々我々を捕えて"
    "煮て食うという話である。しかしその当時は何という考もなかったから別段恐しいとも思わなかった。"
    "ただ彼の掌に載せられてスーと持ち上げられた時何だかフワフワした感じがあったばかりである。"
)


def vertical_pdf(text: str, per_column: int = 20, columns_per_tier: int = 7) -> bytes:
    """A page of vertical (wmode 1) Japanese: columns right to left, in two tiers.

    PyMuPDF writes the text with its Japanese CJK font horizontally; switching the
    font's CMap from UniJIS-UTF16-H to its vertical twin -V makes every glyph advance
    downward, as a vertically typeset book does.
    """
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=420, height=595)
    columns = [text[i : i + per_column] for i in range(0, len(text), per_column)]
    for n, column in enumerate(columns):
        tier, position = divmod(n, columns_per_tier)
        page.insert_text((390 - 18 * position, 40 + 280 * tier), column, fontname="japan", fontsize=12)
    font_xref = page.get_fonts()[0][0]
    doc.xref_set_key(font_xref, "Encoding", "/UniJIS-UTF16-V")
    return doc.tobytes()


def wrapped_html(text: str, width: int = 23) -> bytes:
    """Japanese HTML as editors save it: the source hard-wrapped inside sentences."""
    lines = "\n".join(text[i : i + width] for i in range(0, len(text), width))
    return f"<html><head><meta charset=utf-8><title>猫</title></head><body><p>\n{lines}\n</p></body></html>".encode()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    from ingest.build import BuildSettings, build_index
    from doubles import HashingEmbedder

    corpus = tmp_path_factory.mktemp("cjk-corpus")
    (corpus / "vertical-tiers.pdf").write_bytes(vertical_pdf(SOSEKI))
    (corpus / "wrapped.html").write_bytes(wrapped_html(SOSEKI))
    index_dir = tmp_path_factory.mktemp("cjk-index")
    build_index(corpus, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    return index.open(index_dir)


def _breaks(text: str, decoded_source: str | None, runs) -> list[tuple[int, int]]:
    """Whitespace between two CJK characters that stands for a line break.

    In a PDF that is a line (or column) break of the text; in HTML a newline of the
    source, which the browser's whitespace collapsing turned into a space.
    """
    found = []
    starts = [r.start for r in runs]
    for m in re.finditer(r"\s+", text):
        a, b = m.span()
        if not (0 < a and b < len(text) and is_no_space_script(text[a - 1]) and is_no_space_script(text[b])):
            continue
        if "\n" in m.group():
            found.append((a, b))
        elif runs:
            run = runs[bisect.bisect_right(starts, a) - 1]
            if re.search(r"[\r\n]", decoded_source[run.src_start : run.src_end]):
                found.append((a, b))
    return found


def _sentences_across_a_break(text: str, breaks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[start, end) of each sentence (within a paragraph) that holds one of ``breaks``."""
    found = []
    break_starts = [a for a, _ in breaks]
    for paragraph in re.finditer(r"[^\f]+?(?=\n[^\S\n]*\n|\f|$)", text):
        start = paragraph.start()
        ends = [m.end() for m in _SENTENCE_END.finditer(text, start, paragraph.end())]
        for end in ends + [paragraph.end()]:
            a, b = start, end
            start = end
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if bisect.bisect_left(break_starts, a) < bisect.bisect_left(break_starts, b):
                found.append((a, b))
    return found


def _as_quoted(text: str, start: int, end: int, breaks: list[tuple[int, int]]) -> str:
    """The sentence as a reader copies it: the breaks dropped, other whitespace one space."""
    pieces, at = [], start
    for a, b in breaks:
        if start <= a and b <= end:
            pieces.append(text[at:a])
            at = b
    pieces.append(text[at:end])
    return re.sub(r"\s+", " ", "".join(pieces))


def _chunk_holding(idx, doc_id: str, start: int, end: int):
    for chunk in idx.chunks_of(doc_id):
        if chunk.start <= start and end <= chunk.end:
            return chunk
    return None


def _source_positions(runs, offset: int) -> tuple[int, int]:
    starts = [r.start for r in runs]
    run = runs[bisect.bisect_right(starts, offset) - 1]
    if run.kind is RunKind.TEXT:
        at = run.src_start + offset - run.start
        return at, at + 1
    return run.src_start, run.src_end


def _check_every_wrapped_sentence(idx) -> int:
    verifier = Verifier(idx)
    checked = 0
    for doc_id in CJK_DOCUMENTS:
        doc = idx.document(doc_id)
        if doc is None:
            continue
        text = idx.doc_text(doc.doc_version)
        html = doc.media_type is MediaType.HTML
        runs = idx.html_runs(doc_id) if html else []
        char_runs = idx.pdf_char_runs(doc_id) if doc.media_type is MediaType.PDF else []
        breaks = _breaks(text, idx.decoded_source(doc_id) if html else None, runs)
        for start, end in _sentences_across_a_break(text, breaks):
            chunk = _chunk_holding(idx, doc_id, start, end)
            if chunk is None:
                continue  # cut by the chunker: the sentence is in no single chunk
            quote = _as_quoted(text, start, end, breaks)
            citation = verifier.cite(Support(chunk.chunk_id, quote))
            STATUS_COUNTS[citation.status.value] += 1
            if citation.status.value == "quote_too_short":
                continue
            assert citation.status.verified, (doc_id, quote, citation.status)
            assert (citation.doc_start, citation.doc_end) == (start, end), (doc_id, quote, citation.quote)
            if runs:
                first, last = _source_positions(runs, start), _source_positions(runs, end - 1)
                assert citation.src_start <= first[0] and last[1] <= citation.src_end, (doc_id, quote)
            for run in char_runs:
                for i in range(max(run.start, start), min(run.end, end)):
                    x0, y0, x1, y1 = run.glyph_boxes[i - run.start]
                    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
                    assert any(r.page == run.page and r.x0 <= cx <= r.x1 and r.y0 <= cy <= r.y1 for r in citation.rects), \
                        (doc_id, quote, text[i])
            checked += 1
    return checked


def test_every_wrapped_cjk_sentence_of_the_shared_corpus_verifies_and_is_highlighted_whole(built):
    idx, root = built
    if idx.document("pdf/pdfminer__jo.pdf") is None:
        pytest.skip("no CJK documents in this corpus")
    assert _check_every_wrapped_sentence(idx) >= 5


def test_every_wrapped_sentence_of_vertical_columns_and_hard_wrapped_html_verifies(generated):
    assert _check_every_wrapped_sentence(generated) >= 10


def test_vertical_columns_are_read_top_to_bottom_right_to_left_tier_by_tier(generated):
    doc = generated.document("vertical-tiers.pdf")
    text = generated.doc_text(doc.doc_version)
    assert text.replace("\n", "") == SOSEKI  # nothing lost, nothing reordered
    n_columns = -(-len(SOSEKI) // 20)
    assert text.count("\n\n") == 1 and text.count("\n") == n_columns  # a line per column, a blank line between tiers
    runs = generated.pdf_char_runs("vertical-tiers.pdf")
    assert len(runs) == n_columns  # one run per column, every glyph its own box
    for previous, run in zip(runs, runs[1:]):
        boxes = run.glyph_boxes
        assert (boxes[1:, 1] > boxes[:-1, 1]).all(), "a column goes down"
        assert run.glyph_boxes[0, 0] < previous.glyph_boxes[0, 0] or run.glyph_boxes[0, 1] > previous.glyph_boxes[-1, 1]


def test_pdfjs_vertical_reads_as_its_two_columns():
    from conftest import SHARED_CORPUS
    from ingest.formats.pdf.parser import parse_pdf

    path = SHARED_CORPUS / "pdf" / "pdfjs__vertical.pdf"
    if not path.is_file():
        pytest.skip("../shared/corpus is absent")
    parsed = parse_pdf(path.read_bytes(), "vertical.pdf")
    assert parsed.text.split("\f")[0] == "あいうえお\n日本語"
    for run in parsed.char_runs:
        boxes = run.glyph_boxes
        assert (boxes[1:, 1] > boxes[:-1, 1]).all() and (boxes[:, 0] == boxes[0, 0]).all()
