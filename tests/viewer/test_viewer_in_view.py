"""The highlight is always in view, and a shown source loads nothing (headless Chromium).

After a click on a citation marker, in the report and on the server: the first mark (HTML)
or box (PDF) lies inside the window and nothing covers it (``elementFromPoint`` at its
centre is the mark or the box), wherever it is: the last line of a long HTML page, the
bottom of the last page of a PDF; the view header (document, page, status, links) is in
view and uncovered; the marker's popup is closed though the pointer is still on it. An
index built with ``--html-layout`` shows HTML citations on page images as well, the box
first. A page whose CSS would load images, fonts and style sheets makes no load attempt
in the report or the server's views, with their CSP or without it: each request is counted.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pymupdf
import pytest

import index

from conftest import ARTIFACTS, SAMPLE_CORPUS, chunk_with, spanindex
from doubles import HashingEmbedder
from test_html_defuse import HOSTILE
from test_viewer import browser, open_tab, require_chromium, running_server  # noqa: F401 - browser: the viewer tests' Chromium fixture

pytestmark = [pytest.mark.browser, pytest.mark.spawns]

LAST_LINE = "The very last sentence of this long page is the one cited here."
LONG_PAGE = ("<html><body>" + "".join(f"<p>Paragraph {i} of the long page carries filler words to give it height.</p>"
                                       for i in range(150)) + f"<p>{LAST_LINE}</p></body></html>")
BOTTOM_QUOTE = "The closing figure sits on the bottom line of the last page."
CSS_QUOTE = "This sentence about hostile style sheets is what the answer quotes."
HOSTILE_CSS = HOSTILE.replace("</body>", f"<p>{CSS_QUOTE}</p></body>")
VIEWPORT = {"width": 1280, "height": 720}


def bottom_pdf(path: Path) -> None:
    """Three pages; the quote on the bottom line of the last one."""
    document = pymupdf.open()
    for number in range(1, 4):
        page = document.new_page(width=612, height=792)
        page.insert_text((72, 72), "\n".join(f"Page {number}, line {i}: routine text." for i in range(30)), fontsize=10)
        if number == 3:
            page.insert_text((72, 770), BOTTOM_QUOTE, fontsize=10)
    document.save(path)


def build(tmp_path_factory, html_layout: bool) -> Path:
    require_chromium()
    from ingest.build import BuildSettings, build_index

    root = tmp_path_factory.mktemp("in-view")
    corpus = root / "corpus"
    (corpus / "web").mkdir(parents=True)
    shutil.copy(SAMPLE_CORPUS / "web" / "faq.html", corpus / "web" / "faq.html")
    (corpus / "long.html").write_text(LONG_PAGE, encoding="utf-8")
    (corpus / "hostile-css.html").write_text(HOSTILE_CSS, encoding="utf-8")
    bottom_pdf(corpus / "bottom.pdf")
    # Worker processes: each lays pages out with a Playwright of its own (one per thread at most).
    report = build_index(corpus, root / "index", BuildSettings(workers=2, html_layout=html_layout),
                         embedder=HashingEmbedder())
    assert bool(report.html_layout) == html_layout and report.layout.failed == 0
    assert report.by_status == {"ok": 4}, report.failures
    return root / "index"


@pytest.fixture(scope="module")
def plain_index(tmp_path_factory) -> Path:
    return build(tmp_path_factory, html_layout=False)


@pytest.fixture(scope="module")
def laid_out_index(tmp_path_factory) -> Path:
    from ingest.formats.html.layout import browser_unavailable

    if browser_unavailable():
        pytest.skip(browser_unavailable())
    return build(tmp_path_factory, html_layout=True)


def answer_for(index_dir: Path) -> dict:
    idx = index.open(index_dir, embedder=HashingEmbedder())
    support = [(doc_id, quote) for doc_id, quote in
               [("long.html", LAST_LINE), ("bottom.pdf", BOTTOM_QUOTE), ("hostile-css.html", CSS_QUOTE)]]
    return {"answer_id": "in-view", "claims": [
        {"claim_id": doc_id.split(".")[0], "text": f"A claim citing {doc_id}.",
         "support": [{"chunk_id": chunk_with(idx, doc_id, quote), "quote": quote}]}
        for doc_id, quote in support
    ]}


def render(index_dir: Path, folder: Path) -> Path:
    """`spanindex verify` and `render`, in a process of their own (page images of laid-out HTML
    are taken by a browser, which Playwright will not start beside this test's)."""
    (folder / "answer.json").write_text(json.dumps(answer_for(index_dir)))
    for args in (["verify", index_dir, folder / "answer.json", "-o", folder / "records.jsonl"],
                 ["render", index_dir, folder / "records.jsonl", "-o", folder / "report.html"]):
        done = spanindex(*args, test_embedder=True)
        assert done.returncode == 0, done.stderr
    return folder / "report.html"


@pytest.fixture
def page(browser):
    with open_tab(browser, VIEWPORT) as tab:
        yield tab


# Where the first highlight of the open view is, in window coordinates, and what the browser's
# hit test finds at its centre; the same for the view header; and whether the popup shows.
IN_VIEW = """() => {
    const view = [...document.querySelectorAll('.view')].find(v => !v.hidden);
    const inside = (r) => r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight;
    const out = {};
    const box = view.querySelector('.page .hl');
    if (box) {
        const r = box.getBoundingClientRect();
        out.box = {inside: inside(r), hit: document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2) === box,
                   top: r.top, bottom: r.bottom};
    }
    const frame = view.querySelector('iframe.source-frame');
    const mark = frame && frame.contentDocument && frame.contentDocument.getElementById('spanindex-hit');
    if (mark) {
        const f = frame.getBoundingClientRect(), m = mark.getBoundingClientRect();
        const top = f.top + frame.clientTop + m.top, left = f.left + frame.clientLeft + m.left;
        const r = {left, top, right: left + m.width, bottom: top + m.height, width: m.width, height: m.height};
        const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
        const inner = frame.contentDocument.elementFromPoint(m.left + m.width / 2, m.top + m.height / 2);
        out.mark = {inside: inside(r), hit: document.elementFromPoint(cx, cy) === frame && !!inner && mark.contains(inner),
                    top: r.top, bottom: r.bottom};
    }
    const head = view.querySelector('.view-head'), h = head.getBoundingClientRect();
    out.head = {inside: inside(h), hit: head.contains(document.elementFromPoint(h.left + 8, (h.top + h.bottom) / 2))};
    out.popups = [...document.querySelectorAll('.pop')].filter(p => getComputedStyle(p).display !== 'none').length;
    return out;
}"""


def click_and_measure(tab, claim_id: str, *, wait_for: str) -> dict:
    link = tab.locator(f'.claim[data-claim-id="{claim_id}"] a.cite').first
    link.click()  # the pointer stays on the marker
    if wait_for == "mark":
        tab.frame_locator(".view:not([hidden]) iframe.source-frame").locator("#spanindex-hit").wait_for()
    tab.wait_for_function("() => [...document.querySelectorAll('.view')].find(v => !v.hidden)"
                          ".querySelectorAll('img.page-img[src]').length === "
                          "[...document.querySelectorAll('.view')].find(v => !v.hidden).querySelectorAll('img.page-img').length")
    tab.wait_for_timeout(400)  # the frame's load and its scrolling
    return tab.evaluate(IN_VIEW)


def assert_in_view(found: dict, what: str) -> None:
    assert found[what]["inside"], (what, found)
    assert found[what]["hit"], (what, "covered", found)
    assert found["head"]["inside"] and found["head"]["hit"], ("the view header", found)
    assert found["popups"] == 0, found


def shoot(tab, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"in-view-{name}.png"))


@pytest.mark.parametrize("claim_id, what", [("long", "mark"), ("bottom", "box")])
def test_report_after_a_click_the_highlight_and_header_are_in_view_and_the_popup_closed(page, plain_index, tmp_path,
                                                                                        claim_id, what):
    page.goto(render(plain_index, tmp_path).as_uri())
    found = click_and_measure(page, claim_id, wait_for=what)
    shoot(page, f"report-{claim_id}")
    assert_in_view(found, what)
    assert page.errors == []


@pytest.mark.parametrize("claim_id, what", [("long", "mark"), ("bottom", "box")])
def test_server_after_a_click_the_highlight_and_header_are_in_view_and_the_popup_closed(page, plain_index, claim_id, what):
    with running_server(plain_index) as server:
        page.goto(server + "/verify")
        page.fill("textarea[name=answer]", json.dumps(answer_for(plain_index)))
        page.click("button[type=submit]")
        page.wait_for_selector("a.cite")
        found = click_and_measure(page, claim_id, wait_for=what)
        shoot(page, f"server-{claim_id}")
    assert_in_view(found, what)
    assert page.errors == []


def test_report_of_a_laid_out_page_shows_the_page_image_box_first_in_view(page, laid_out_index, tmp_path):
    page.goto(render(laid_out_index, tmp_path).as_uri())
    found = click_and_measure(page, "long", wait_for="box")
    shoot(page, "report-laid-out")
    assert_in_view(found, "box")
    # the page image is the layout's, one pixel per CSS px, and the frame below is at the mark too
    size = page.evaluate("() => { const i = [...document.querySelectorAll('.view')].find(v => !v.hidden)"
                         ".querySelector('img.page-img'); return [i.naturalWidth, i.naturalHeight]; }")
    assert size == [1280, 1600]
    assert page.evaluate("""() => { const f = [...document.querySelectorAll('.view')].find(v => !v.hidden).querySelector('iframe');
        const m = f.contentDocument.getElementById('spanindex-hit').getBoundingClientRect();
        return m.top >= 0 && m.bottom <= f.contentWindow.innerHeight; }""")
    assert page.errors == []


def test_server_serves_the_page_images_of_a_laid_out_html_page(page, laid_out_index):
    with running_server(laid_out_index) as server:
        response = page.request.get(server + "/documents/long.html/pages/4.png")
        assert response.status == 200 and response.headers["content-type"] == "image/png"
        assert "chromium" in response.headers["server-timing"]
        assert page.request.get(server + "/documents/long.html/pages/99.png").status == 404


# -- a source's CSS loads nothing ------------------------------------------------------------------

_APP_PATHS = re.compile(r"/(static/|documents/[^?#]*/(pages/\d+\.png|view|file)$|api/|verify|inspect|\?|$)")


def _count_attempts(context, origin: str, page_html: str | None = None) -> list[str]:
    """Route every request of the context: serve ``page_html`` at ``origin`` (if given), let the
    server's own routes through, refuse and count everything else."""
    attempts: list[str] = []

    def route(route):
        url = route.request.url
        if page_html is not None and url == origin + "/":
            route.fulfill(status=200, content_type="text/html; charset=utf-8", body=page_html)
        elif page_html is None and url.startswith(origin) and _APP_PATHS.match(url[len(origin):]):
            route.continue_()
        else:
            attempts.append(url)
            route.abort()

    context.route("**/*", route)
    return attempts


@pytest.mark.parametrize("with_csp", [True, False], ids=["with CSP", "without CSP"])
def test_the_report_makes_no_load_attempt_for_a_sources_css(browser, plain_index, tmp_path, with_csp):
    html = render(plain_index, tmp_path).read_text(encoding="utf-8")
    if not with_csp:
        html, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
        assert n == 1
    context = browser.new_context(viewport=VIEWPORT)
    attempts = _count_attempts(context, "http://report.test", html)
    tab = context.new_page()
    tab.goto("http://report.test/")
    tab.click('.claim[data-claim-id="hostile-css"] a.cite')
    tab.frame_locator(".view:not([hidden]) iframe.source-frame").locator("#spanindex-hit").wait_for()
    tab.wait_for_timeout(800)
    context.close()
    assert attempts == []


@pytest.mark.parametrize("with_csp", [True, False], ids=["with CSP", "without CSP"])
def test_the_servers_views_make_no_load_attempt_for_a_sources_css(browser, plain_index, with_csp):
    with running_server(plain_index) as server:
        context = browser.new_context(viewport=VIEWPORT, bypass_csp=not with_csp)
        attempts = _count_attempts(context, server)
        tab = context.new_page()
        tab.goto(server + "/documents/hostile-css.html/view")  # the stored page, where a text fragment lands
        tab.wait_for_timeout(500)
        tab.goto(server + "/verify")
        tab.fill("textarea[name=answer]", json.dumps(answer_for(plain_index)))
        tab.click("button[type=submit]")
        tab.click('.claim[data-claim-id="hostile-css"] a.cite')
        tab.frame_locator(".view:not([hidden]) iframe.source-frame").locator("#spanindex-hit").wait_for()
        tab.goto(server + "/?q=hostile+style+sheets+answer+quotes&k=3")
        tab.wait_for_selector(".hit")
        tab.wait_for_timeout(800)
        context.close()
    assert attempts == []


def test_the_stored_page_as_it_is_would_load_what_the_views_do_not(browser):
    """The counting above can fail: the same page, not defused, tries its loads."""
    context = browser.new_context(viewport=VIEWPORT, java_script_enabled=False)
    attempts = _count_attempts(context, "http://page.test", HOSTILE_CSS)
    tab = context.new_page()
    tab.goto("http://page.test/")
    tab.wait_for_timeout(500)
    context.close()
    assert len([a for a in attempts if "/l/" in a]) >= 20
