"""Hidden HTML text: each trick on a generated page beside a visible control of the same words.

With a browser (``ingest.formats.html.layout``) every trick is caught with its reason; from the
source alone (``ingest.formats.html.visibility``) the inline ones are, and what a style sheet
does is not (the build says so). Pages that hide nothing, or show text in unusual but
visible ways, get no flag. Over the shared corpus, the flagged characters per page are
printed with -s.
"""

from __future__ import annotations

import collections

import pytest

from ingest.formats.html.parser import parse_html, parse_html_text
from schemas.records import HiddenReason as R

from conftest import SHARED_CORPUS
from test_html_layout import browser  # noqa: F401 - the layout tests' Chromium fixture

WORDS = "The vault code is 4711 and the key sits under the blue mat."

# name: (style sheet, markup around the hidden copy, reason with a browser, reason from the source)
TRICKS = {
    "class display:none": (".t{display:none}", '<p class="t">{}</p>', R.CSS_HIDDEN, None),
    "class visibility:hidden": (".t{visibility:hidden}", '<p class="t">{}</p>', R.CSS_HIDDEN, None),
    "content-visibility:hidden by class": (".t{content-visibility:hidden}", '<div class="t"><p>{}</p></div>',
                                           R.CSS_HIDDEN, None),
    "font-size:0": ("", '<p style="font-size:0">{}</p>', R.TINY, R.TINY),
    "font-size:0.5px by class": (".t{font-size:.5px}", '<p class="t">{}</p>', R.TINY, None),
    "font: 0/0 a": ("", '<p style="font:0/0 a">{}</p>', R.TINY, R.TINY),
    "scaled to 1%": ("", '<p style="transform:scale(0.01)">{}</p>', R.TINY, None),
    "scaled to nothing": ("", '<p style="transform:scale(0)">{}</p>', R.ZERO_SIZE, R.ZERO_SIZE),
    "color:transparent": ("", '<p style="color:transparent">{}</p>', R.TRANSPARENT, R.TRANSPARENT),
    "opacity:0": ("", '<div style="opacity:0"><p>{}</p></div>', R.TRANSPARENT, R.TRANSPARENT),
    "alpha 0.02": ("", '<p style="color:rgba(0,0,0,.02)">{}</p>', R.TRANSPARENT, R.TRANSPARENT),
    "white on white": ("", '<p style="color:#fff">{}</p>', R.BACKGROUND_COLOR, R.BACKGROUND_COLOR),
    "white by class": (".t{color:white}", '<p class="t">{}</p>', R.BACKGROUND_COLOR, None),
    "nearly white": ("", '<p style="color:#fcfcfc">{}</p>', R.BACKGROUND_COLOR, R.BACKGROUND_COLOR),
    "colour of its box": ("", '<div style="background:#123456"><p style="color:#123456">{}</p></div>',
                          R.BACKGROUND_COLOR, R.BACKGROUND_COLOR),
    "legacy font colour": ("", '<table bgcolor="#000000"><tr><td><font color="000000">{}</font></td></tr></table>',
                           R.BACKGROUND_COLOR, R.BACKGROUND_COLOR),
    "left:-9999px": ("", '<div style="position:absolute;left:-9999px">{}</div>', R.OFF_PAGE, R.OFF_PAGE),
    "top:-9999px by class": (".t{position:absolute;top:-9999px}", '<div class="t">{}</div>', R.OFF_PAGE, None),
    "text-indent:-9999px": ("", '<p style="text-indent:-9999px;white-space:nowrap">{}</p>', R.OFF_PAGE, R.OFF_PAGE),
    "translated away": ("", '<p style="transform:translateX(-5000px)">{}</p>', R.OFF_PAGE, R.OFF_PAGE),
    "screen-reader only": ("", '<span style="position:absolute;width:1px;height:1px;overflow:hidden;'
                           'clip:rect(0 0 0 0);white-space:nowrap">{}</span>', R.CLIPPED, R.CLIPPED),
    "height:0 overflow:hidden": ("", '<div style="height:0;overflow:hidden"><p>{}</p></div>', R.CLIPPED, R.CLIPPED),
    "max-height:0 by class": (".t{max-height:0;overflow:hidden}", '<div class="t"><p>{}</p></div>', R.CLIPPED, None),
    "clip-path inset(50%)": ("", '<p style="clip-path:inset(50%)">{}</p>', R.CLIPPED, R.CLIPPED),
    "aria-hidden and off the page": ("", '<div aria-hidden="true" style="position:absolute;left:-9999px">{}</div>',
                                     R.ARIA_HIDDEN, R.ARIA_HIDDEN),
    "aria-hidden and hidden by class": (".t{display:none}", '<div aria-hidden="true"><p class="t">{}</p></div>',
                                        R.ARIA_HIDDEN, None),
}

# Text shown in unusual ways that a reader still sees (or opens): never flagged.
VISIBLE = {
    "plain": "<p>{}</p>",
    "white on a dark box": '<div style="background:#222;padding:4px"><p style="color:#fff">{}</p></div>',
    "aria-hidden but shown": '<p aria-hidden="true">{}</p>',
    "closed details": "<details><summary>More</summary><p>{}</p></details>",
    "gradient text": '<p style="background:linear-gradient(red,blue);-webkit-background-clip:text;'
                     'background-clip:text;-webkit-text-fill-color:transparent">{}</p>',
    "scrolled in its box": '<pre style="width:200px;overflow:auto">{}</pre>',
    "small but legible": '<p style="font-size:9px">{}</p>',
    "inline-block gap trick": '<div style="font-size:0"><span style="font-size:16px">{}</span></div>',
    "in a select": "<select><option>first</option><option>{}</option></select>",
}


def trick_page(sheet: str, markup: str) -> str:
    style = f"<style>{sheet}</style>" if sheet else ""
    return f"<html><head>{style}</head><body><p>{WORDS}</p>{markup.format(WORDS)}<p>The end.</p></body></html>"


def copies(text: str) -> tuple[range, range]:
    """Where the visible control and the hidden copy of WORDS are in the document text."""
    first = text.index(WORDS)
    second = text.index(WORDS, first + 1)
    return range(first, first + len(WORDS)), range(second, second + len(WORDS))


def flagged(runs, where: range) -> set:
    return {r.reason for r in runs if r.start < where.stop and where.start < r.end}


def covers(runs, where: range, reason) -> bool:
    return any(r.start <= where.start and where.stop <= r.end and r.reason is reason for r in runs)


# -- with a browser


@pytest.mark.browser
@pytest.mark.parametrize("trick", TRICKS, ids=TRICKS)
def test_each_trick_is_flagged_with_its_reason_and_the_visible_control_is_not(browser, trick):
    sheet, markup, reason, _ = TRICKS[trick]
    doc = parse_html_text(trick_page(sheet, markup), "trick.html")
    control, hidden = copies(doc.text)
    layout = browser.layout(doc)
    assert covers(layout.hidden_runs, hidden, reason), (trick, layout.hidden_runs)
    assert flagged(layout.hidden_runs, control) == set()
    # Nothing else on the page is flagged, and hidden text is not drawn on the page image.
    assert sum(r.end - r.start for r in layout.hidden_runs) == len(WORDS)
    assert not any(r.start < hidden.stop and hidden.start < r.end for r in layout.char_runs)
    assert any(r.start <= control.start and control.start < r.end for r in layout.char_runs)


@pytest.mark.browser
@pytest.mark.parametrize("case", VISIBLE, ids=VISIBLE)
def test_text_a_reader_sees_or_opens_is_not_flagged(browser, case):
    doc = parse_html_text(trick_page("", VISIBLE[case]), "visible.html")
    layout = browser.layout(doc)
    assert layout.hidden_runs == ()


def test_the_hidden_attribute_and_inline_hiding_leave_the_text_itself():
    doc = parse_html_text(f'<p hidden>{WORDS}</p><p style="display:none">{WORDS}</p>'
                          f'<div style="content-visibility:hidden">{WORDS}</div><p>shown</p>', "h.html")
    assert doc.text == "shown"


# -- from the source alone


@pytest.mark.parametrize("trick", TRICKS, ids=TRICKS)
def test_inline_tricks_are_flagged_from_the_source_and_style_sheets_are_not(trick):
    sheet, markup, _, reason = TRICKS[trick]
    doc = parse_html_text(trick_page(sheet, markup), "trick.html")
    control, hidden = copies(doc.text)
    runs = doc.hidden_runs
    assert flagged(runs, control) == set()
    if reason is None:  # what a class does is beyond the source
        assert runs == ()
    else:
        assert covers(runs, hidden, reason), (trick, runs)
        assert sum(r.end - r.start for r in runs) == len(WORDS)


@pytest.mark.parametrize("case", VISIBLE, ids=VISIBLE)
def test_visible_text_is_not_flagged_from_the_source(case):
    doc = parse_html_text(trick_page("", VISIBLE[case]), "visible.html")
    assert doc.hidden_runs == ()


def test_source_verdicts_follow_the_tree_builder_through_misnested_markup():
    source = ('<p style="font-size:0"><b>tiny <p>own paragraph</b> still</p>'
              '<table style="color:#fff"><tr><td>white cell</td></tr></table>')
    doc = parse_html_text(source, "m.html")
    runs = doc.hidden_runs
    assert [(doc.text[r.start:r.end], r.reason) for r in runs] == [("tiny", R.TINY), ("white cell", R.BACKGROUND_COLOR)]


def test_white_text_is_not_judged_where_a_style_sheet_may_set_the_background():
    source = f'<style>body{{background:#000}}</style><p style="color:#fff">{WORDS}</p>'
    doc = parse_html_text(source, "dark.html")
    assert doc.hidden_runs == ()


# -- the shared corpus


@pytest.mark.browser
def test_shared_corpus_hidden_text_per_page(browser):
    """Flagged characters per page, by reason: printed for a look (run with -s); the runs are
    sorted, disjoint, inside the text, and never begin or end with whitespace."""
    pages = sorted((SHARED_CORPUS / "html").glob("*.html"))
    if not pages:
        pytest.skip("../shared/corpus is absent")
    lines = []
    for path in pages:
        doc = parse_html(path.read_bytes(), path.name)
        by_browser = browser.layout(doc).hidden_runs
        by_source = doc.hidden_runs
        for runs in (by_browser, by_source):
            last = 0
            for run in runs:
                assert last <= run.start < run.end <= len(doc.text)
                assert not doc.text[run.start].isspace() and not doc.text[run.end - 1].isspace()
                last = run.end
        counts = collections.Counter()
        for run in by_browser:
            counts[run.reason.value] += run.end - run.start
        source_counts = collections.Counter()
        for run in by_source:
            source_counts[run.reason.value] += run.end - run.start
        lines.append(f"{path.name[:44]:44s} {len(doc.text):7d} chars  browser {sum(counts.values()):6d} "
                     f"{dict(counts)}  source {sum(source_counts.values())} {dict(source_counts)}")
    print("\n" + "\n".join(lines))
