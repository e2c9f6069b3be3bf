"""HTML laid out by headless Chromium: a box for each character, checked by the browser's own hit test.

One browser for the module (skipped without /usr/bin/chromium or playwright). Each page
is the *defused* source; the boxes are checked against `caretRangeFromPoint` on the same
layout. Run with -s to see the figures per shared-corpus page.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.formats.html.parser import parse_html, parse_html_text
from ingest.formats.html.layout import PAGE_HEIGHT, PAGE_WIDTH, HtmlLayout, browser_unavailable, layout_source
from schemas.records import RunKind

from conftest import SHARED_CORPUS, examples

pytestmark = pytest.mark.browser

SHARED_PAGES = sorted((SHARED_CORPUS / "html").glob("*.html"))


@pytest.fixture(scope="module")
def browser():
    reason = browser_unavailable()
    if reason is not None:
        pytest.skip(f"HTML layout needs a browser: {reason}")
    from ingest.formats.html.layout import LayoutBrowser

    with LayoutBrowser() as chromium:
        yield chromium


def assert_valid_layout(doc, layout: HtmlLayout) -> None:
    """Boxes only for characters that come from the source, on a page, in order, one line per run."""
    synthetic = np.zeros(len(doc.text), dtype=bool)
    for run in doc.html_runs:
        if run.kind is RunKind.SYNTHETIC:
            synthetic[run.start:run.end] = True
    last_end = 0
    for run in layout.char_runs:
        assert last_end <= run.start < run.end <= len(doc.text)
        last_end = run.end
        assert not synthetic[run.start:run.end].any()
        assert 1 <= run.page <= layout.n_pages
        boxes = run.glyph_boxes
        assert boxes.shape == (run.end - run.start, 4)
        centre_y = (boxes[:, 1] + boxes[:, 3]) / 2
        assert ((centre_y >= 0) & (centre_y < PAGE_HEIGHT)).all()
        assert (boxes[:, 3] > boxes[:, 1]).all()
        # one line: every box overlaps the run's first box vertically
        assert (np.minimum(boxes[:, 3], boxes[0, 3]) > np.maximum(boxes[:, 1], boxes[0, 1])).all()
    last_end = 0
    for hidden in layout.hidden_runs:
        assert last_end <= hidden.start < hidden.end <= len(doc.text)
        last_end = hidden.end
    boxed = sum(r.end - r.start for r in layout.char_runs)
    assert boxed == layout.boxed <= layout.source_chars


def test_every_character_of_a_plain_page_gets_its_box(browser):
    doc = parse_html_text("<h1>Title</h1><p>One short paragraph, with <b>bold</b> words.</p>", "p.html")
    layout = browser.layout(doc, hit_test_sample=100)
    assert_valid_layout(doc, layout)
    assert layout.unmatched == layout.not_laid_out == 0 and layout.hidden_runs == ()
    spaces = sum(1 for c in doc.text if c == "\n")
    assert layout.boxed == len(doc.text) - spaces  # every character but the separators
    assert layout.hit_agreed == layout.hit_tried > 20
    assert layout.n_pages == 1 and layout.width == PAGE_WIDTH


def test_boxes_follow_the_text_left_to_right_on_one_line(browser):
    doc = parse_html_text("<p>abcdefghij</p>", "p.html")
    (run,) = browser.layout(doc).char_runs
    x0 = run.glyph_boxes[:, 0]
    assert (np.diff(x0) > 0).all()
    assert np.allclose(run.glyph_boxes[1:, 0], run.glyph_boxes[:-1, 2], atol=1 / 32)  # glyphs abut (layout units: 1/64 px)


def test_a_tall_page_is_cut_into_pages_with_boxes_relative_to_their_page(browser):
    paragraphs = "".join(f"<p style='height:300px;margin:0'>Paragraph number {i}.</p>" for i in range(20))
    doc = parse_html_text(f"<body style='margin:0'>{paragraphs}</body>", "tall.html")
    layout = browser.layout(doc, hit_test_sample=60)
    assert_valid_layout(doc, layout)
    assert layout.n_pages == -(-20 * 300 // PAGE_HEIGHT)
    for run in layout.char_runs:
        number = int(doc.text[run.start:run.end].split()[-1].rstrip("."))
        top = number * 300  # the paragraph's top in the whole layout
        assert run.page == top // PAGE_HEIGHT + 1
        assert run.glyph_boxes[0, 1] == pytest.approx(top - (run.page - 1) * PAGE_HEIGHT, abs=1)
    assert layout.hit_agreed == layout.hit_tried


MISNESTED = {
    # text the browser moves out of a table (foster parenting), next to text that stays
    "foster": "<table><tr><td>cell one</td></tr>stray words<tr><td>cell two</td></tr></table>after",
    # formatting elements the adoption agency splits
    "adoption": "<p><b>bold <i>both</b> italic</i> plain</p><b>x<p>block</b>y</p>",
    # text that opens the body itself, after the head
    "implicit body": "<title>t</title>Loose text first<p>then a paragraph",
    # text after </body> and </html> is moved into the body
    "after body": "<body><p>inside</p></body> trailing words</html> and more",
    # the newline after <pre> is dropped, CR LF read as LF, references decoded
    "pre and references": "<pre>\r\nline one\r\nline &amp; two &#x1F600; &eacute;t&eacute;</pre>",
    "nul and astral": "<p>a\x00b \U0001F600 c\U00010348d</p>",
    "lists and headings": "<ul><li>one<li>two<h2>head<h3>sub</h2>rest</ul>",
    "svg text": "<p>before<svg width=200 height=30><text x=0 y=20>drawn text</text></svg>after</p>",
}


@pytest.mark.parametrize("markup", MISNESTED.values(), ids=MISNESTED.keys())
def test_text_the_browser_repairs_differently_is_found_or_left_unboxed(browser, markup):
    doc = parse_html_text(markup, "m.html")
    layout = browser.layout(doc, hit_test_sample=200)
    assert_valid_layout(doc, layout)
    assert layout.unmatched == 0
    assert layout.hit_agreed == layout.hit_tried > 0


def test_a_marker_is_written_before_each_text_token_and_nothing_active_remains():
    source = "<p onclick=x()>Hi <b>there</b></p><script>evil()</script><pre>\nkept</pre>"
    marked = layout_source(source)
    kept = source.index("kept")
    assert marked == f'<p><!--15:18-->Hi <b><!--21:26-->there</b></p><pre>\n<!--{kept}:{kept + 4}-->kept</pre>'
    assert source[15:18] == "Hi " and source[21:26] == "there"


_TAGS = ["p", "div", "span", "b", "i", "pre", "li", "ul", "table", "tr", "td", "h2", "a", "em",
         "blockquote", "center", "font", "small", "sup"]
_words = st.lists(st.sampled_from(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]),
                  min_size=1, max_size=4).map(" ".join)
_fragment = st.one_of(
    _words,
    st.sampled_from(_TAGS).map(lambda t: f"<{t}>"),
    st.sampled_from(_TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(["&amp;", "&lt;", "&nbsp;", "&#8217;", "&eacute;", "<br>", "<hr>", "\r\n",
                     "  ", "<!-- c -->", "\U0001F600", "</body>", "<body>", "</html>", "<title>t</title>"]),
)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])
@given(st.lists(_fragment, min_size=1, max_size=40).map("".join))
def test_every_box_of_random_markup_is_where_the_browser_hit_test_finds_its_character(browser, markup):
    doc = parse_html_text(markup, "random.html")
    layout = browser.layout(doc, hit_test_sample=400)
    assert_valid_layout(doc, layout)
    assert layout.unmatched == 0
    assert layout.hit_agreed + layout.hit_covered == layout.hit_tried


# -- the shared corpus --------------------------------------------------------------------------


def test_shared_corpus_boxes_agree_with_the_browser_hit_test(browser):
    """For each page, 400 letters and digits spread over its boxes: the hit test at each box's
    centre must land on its character, unless another element lies on top of it there."""
    if not SHARED_PAGES:
        pytest.skip("../shared/corpus is absent")
    tried = agreed = covered = 0
    rows = []
    for path in SHARED_PAGES:
        started = time.perf_counter()
        doc = parse_html(path.read_bytes(), path.name)
        parse_s = time.perf_counter() - started
        layout = browser.layout(doc, hit_test_sample=400)
        assert_valid_layout(doc, layout)
        assert layout.blocked_requests == 0  # the defused page loads nothing
        assert layout.unmatched <= 0.001 * layout.source_chars
        tried, agreed, covered = tried + layout.hit_tried, agreed + layout.hit_agreed, covered + layout.hit_covered
        rows.append(f"{path.name[:44]:44s} pages {layout.n_pages:3d}  chars {layout.source_chars:6d}  "
                    f"boxed {layout.boxed:6d}  not laid out {layout.not_laid_out:5d}  unmatched {layout.unmatched}  "
                    f"hit {layout.hit_agreed}/{layout.hit_tried} (covered {layout.hit_covered})  "
                    f"parse {parse_s:.2f} s  layout {layout.seconds:.2f} s")
        uncovered = layout.hit_tried - layout.hit_covered
        assert layout.hit_agreed >= 0.97 * uncovered, rows[-1]
    print("\n" + "\n".join(rows))
    print(f"hit test: {agreed}/{tried} = {agreed / tried:.2%} of sampled characters; "
          f"{agreed}/{tried - covered} = {agreed / (tried - covered):.2%} of those not under another element")
    assert agreed >= 0.99 * (tried - covered)


def test_boxes_land_on_the_ink_of_the_page_screenshot(browser):
    """Each page's screenshot shows the text where its boxes say: fixed elements where they are
    at the top of the page, a 100vh block the height of a page, paragraphs across page breaks."""
    import pymupdf

    paragraphs = "".join(f"<p style='margin:0;height:250px'>Paragraph {i} says hello.</p>" for i in range(14))
    source = ("<body style='margin:0'><div style='position:fixed;top:0;left:300px'>Fixed header</div>"
              "<div style='position:fixed;bottom:0;left:600px'>Fixed footer</div>"
              f"<div style='height:100vh'>A block one viewport tall</div>{paragraphs}</body>")
    doc = parse_html_text(source, "shots.html")
    layout = browser.layout(doc)
    assert layout.n_pages == 4
    for page in range(1, layout.n_pages + 1):
        pixmap = pymupdf.Pixmap(browser.page_image(doc.decoded_source, page))
        assert (pixmap.w, pixmap.h) == (PAGE_WIDTH, PAGE_HEIGHT)
        ink = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.h, pixmap.w, pixmap.n)[:, :, :3].min(axis=2) < 128
        covered = np.zeros_like(ink)
        for run in (r for r in layout.char_runs if r.page == page):
            for i, (x0, y0, x1, y1) in enumerate(np.floor(run.glyph_boxes).astype(int)):
                if not doc.text[run.start + i].isspace():
                    assert ink[y0:y1 + 1, x0:x1 + 1].any(), (page, doc.text[run.start + i])
                covered[y0:y1 + 1, x0:x1 + 1] = True
        assert not (ink & ~covered).any()  # and no ink outside the boxes
