"""The viewer in a real browser (Playwright on Debian's Chromium): the report and the server.

One index is built for the module: sample_corpus/ plus a hostile HTML page, a hostile
Markdown note and a 300-page PDF, with the test embedder. The real server runs in a
subprocess (`spanindex serve`) on a free loopback port. Screenshots go to
test-artifacts/. Run with -s to see the click-to-highlight times.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

import pymupdf
import pytest

import index
from index.cli import main

from conftest import ARTIFACTS, HTML_QUOTE, PDF_QUOTE, ROOT, SAMPLE_CORPUS, WAIT_S, chunk_with, spanindex_command
from doubles import HashingEmbedder

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LATE_PAGE = 290
LATE_QUOTE = "The late-page figure is 4,711 widgets shipped to Reykjavik in week 38."
HOSTILE_TEXT_QUOTE = '</script><script>window.top.__pwned="text"</script>'
HOSTILE_CLAIM = 'Widgets cost <img src=x onerror="window.top.__pwned=\'claim-img\'"> less </script><script>window.top.__pwned="claim"</script> today.'
HOSTILE_HTML = """<!DOCTYPE html>
<html><head><title>Hostile page</title>
<script>window.top.__pwned = "script";</script>
<meta http-equiv="refresh" content="0;url=javascript:window.top.__pwned='meta'">
<base href="javascript:window.top.__pwned='base'//">
</head><body onload="window.top.__pwned='body'">
<h1>Hostile page</h1>
<p>The hostile paragraph says &lt;/script&gt;&lt;script&gt;window.top.__pwned="text"&lt;/script&gt; right in its text.</p>
<p>A picture <img src=x onerror="window.top.__pwned='onerror'"> and <a href="javascript:window.top.__pwned='href'">a link</a>
and <svg onload="window.top.__pwned='svg'"><circle r="3"/></svg> sit in this paragraph.</p>
<iframe srcdoc="<script>window.top.__pwned='iframe'</script>"></iframe>
<img src="https://tracker.example/pixel.gif"><link rel="stylesheet" href="https://cdn.example/site.css">
<p onmouseover="window.top.__pwned='hover'">Hovering this sentence about hostile refunds must run nothing at all.</p>
</body></html>
"""
HOSTILE_MD = """# Hostile note

This note writes <script>window.top.__pwned="md"</script> and <img src=x onerror="window.top.__pwned='md-img'"> inline, and a closing </script> tag in its prose.
"""


def require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is absent (.ci/run installs Debian's chromium package)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def long_pdf(path: Path, pages: int = 300) -> None:
    """A 300-page report: numbered paragraphs on every page, one distinctive sentence on a late page."""
    document = pymupdf.open()
    for number in range(1, pages + 1):
        page = document.new_page(width=612, height=792)
        lines = [f"Section {number}. Quarterly operations log, page {number} of {pages}."]
        lines += [f"Entry {number}.{i}: routine checks completed in region {i % 7} without findings." for i in range(1, 28)]
        if number == LATE_PAGE:
            lines[20] = LATE_QUOTE
        page.insert_text((72, 72), "\n".join(lines), fontsize=10, lineheight=1.9)
    document.save(path)


@pytest.fixture(scope="module")
def viewer_index(tmp_path_factory) -> Path:
    require_chromium()
    from ingest.build import BuildSettings, build_index

    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path_factory.mktemp("viewer") / "corpus")
    (corpus / "extra").mkdir()
    (corpus / "extra" / "hostile.html").write_text(HOSTILE_HTML, encoding="utf-8")
    (corpus / "extra" / "hostile.md").write_text(HOSTILE_MD, encoding="utf-8")
    long_pdf(corpus / "extra" / "long-report.pdf")
    index_dir = corpus.parent / "index"
    build_index(corpus, index_dir, BuildSettings(workers=2), embedder=HashingEmbedder())
    return index_dir


@pytest.fixture(scope="module")
def idx(viewer_index):
    return index.open(viewer_index)


@pytest.fixture(scope="module")
def answer(idx) -> dict:
    pdf_chunk = chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE)
    return {
        "answer_id": "viewer-test",
        "claims": [
            {"claim_id": "pdf", "text": "Growth overage costs $0.12 per 1,000 API calls.",
             "support": [{"chunk_id": pdf_chunk, "quote": PDF_QUOTE}]},
            {"claim_id": "html", "text": "Large webhook events are delivered as links valid for a day.",
             "support": [{"chunk_id": chunk_with(idx, "web/faq.html", HTML_QUOTE), "quote": HTML_QUOTE},
                         {"chunk_id": pdf_chunk, "quote": PDF_QUOTE}]},
            {"claim_id": "hostile", "text": HOSTILE_CLAIM,
             "support": [{"chunk_id": chunk_with(idx, "extra/hostile.html", HOSTILE_TEXT_QUOTE), "quote": HOSTILE_TEXT_QUOTE},
                         {"chunk_id": chunk_with(idx, "extra/hostile.md", "<script>"),
                          "quote": "This note writes <script>window.top.__pwned=\"md\"</script>"}]},
            {"claim_id": "failed", "text": "Scale customers eat free.",
             "support": [{"chunk_id": pdf_chunk, "quote": "Scale customers receive free pizza every Friday."},
                         {"chunk_id": "pricing/rate-card.pdf#tok:999999", "quote": "a quote from nowhere at all"}]},
            {"claim_id": "abstain", "text": "I found no source for the refund policy.", "support": []},
            {"claim_id": "late", "text": "4,711 widgets went to Reykjavik.",
             "support": [{"chunk_id": chunk_with(idx, "extra/long-report.pdf", LATE_QUOTE), "quote": LATE_QUOTE}]},
        ],
    }


@pytest.fixture(scope="module")
def report(viewer_index, answer, tmp_path_factory) -> tuple[Path, list[dict]]:
    folder = tmp_path_factory.mktemp("report")
    (folder / "answer.json").write_text(json.dumps(answer))
    assert main(["verify", str(viewer_index), str(folder / "answer.json"), "-o", str(folder / "records.jsonl")]) == 0
    assert main(["render", str(viewer_index), str(folder / "records.jsonl"), "-o", str(folder / "report.html")]) == 0
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    return folder / "report.html", records


@contextlib.contextmanager
def running_server(index_dir: Path):
    """`spanindex serve` (with the test embedder the index was built with) on a free loopback port."""
    port = free_port()
    process = subprocess.Popen(
        spanindex_command("serve", index_dir, "--port", port, test_embedder=True),
        cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT_S  # ready as soon as it answers; it may start slowly on a busy machine
    try:
        while True:
            try:
                urllib.request.urlopen(base + "/openapi.json", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    pytest.fail(f"the server did not start: {process.stdout.read().decode(errors='replace')}")
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(viewer_index):
    with running_server(viewer_index) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@contextlib.contextmanager
def open_tab(browser, viewport: dict):
    """A tab of its own context, collecting the page's script errors in ``tab.errors``."""
    context = browser.new_context(viewport=viewport)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_S * 1000)
    tab.errors = []
    tab.on("pageerror", lambda error: tab.errors.append(str(error)))
    try:
        yield tab
    finally:
        context.close()


@pytest.fixture
def page(browser):
    with open_tab(browser, {"width": 1280, "height": 800}) as tab:
        yield tab


def shoot(tab, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"viewer-{name}.png"
    tab.mouse.move(1, 1)
    tab.screenshot(path=str(path))
    return path


def marker(claim_id: str, n: int = 0) -> str:
    """The selector of a claim's n-th citation marker."""
    return f'.claim[data-claim-id="{claim_id}"] a.cite >> nth={n}'


def open_report(tab, report_path: Path) -> None:
    tab.goto(report_path.as_uri())
    tab.wait_for_selector("a.cite")


# -- the report: hover, click, highlight ---------------------------------------------------------


def test_hovering_or_focusing_a_marker_shows_its_quote_and_place(page, report):
    report_path, _ = report
    open_report(page, report_path)
    first = page.locator(marker("pdf"))
    popup = page.locator("#" + first.get_attribute("aria-describedby"))
    assert not popup.is_visible()
    first.hover()
    popup.wait_for(state="visible")
    text = popup.inner_text()
    assert PDF_QUOTE in text and "pricing/rate-card.pdf" in text and "p. 3" in text
    page.mouse.move(1, 1)
    html_marker = page.locator(marker("html"))
    html_marker.focus()  # the keyboard path: focus alone shows it
    html_popup = page.locator("#" + html_marker.get_attribute("aria-describedby"))
    html_popup.wait_for(state="visible")
    assert HTML_QUOTE in html_popup.inner_text() and "HTML" in html_popup.inner_text()
    assert page.errors == []


def _visible_box(tab) -> dict:
    """The first highlight box of the open view, with its page image, as the browser lays them out."""
    return tab.evaluate("""() => {
        const view = [...document.querySelectorAll('.view')].find(v => !v.hidden);
        const box = view.querySelector('.hl'), img = box.parentElement.querySelector('img');
        const b = box.getBoundingClientRect(), i = img.getBoundingClientRect();
        return {box: [b.left, b.top, b.width, b.height], img: [i.left, i.top, i.width, i.height],
                loaded: img.complete && img.naturalWidth > 0, viewport: [innerWidth, innerHeight]};
    }""")


def test_clicking_a_marker_draws_the_box_on_the_cited_glyphs(page, report, idx):
    report_path, records = report
    open_report(page, report_path)
    page.click(marker("pdf"))
    page.wait_for_function("() => [...document.querySelectorAll('.view')].some(v => !v.hidden && v.querySelector('img.page-img[src]'))")
    page.wait_for_function("() => { const v = [...document.querySelectorAll('.view')].find(v => !v.hidden); const i = v.querySelector('img'); return i.complete && i.naturalWidth > 0; }")
    citation = records[0]["citations"][0]
    rect = citation["rects"][0]
    size = {p.page: p for p in idx.pdf_pages("pricing/rate-card.pdf")}[rect["page"]]
    layout = _visible_box(page)
    left, top, width, _ = layout["img"]
    scale = width / size.width
    expected = [left + rect["x0"] * scale, top + rect["y0"] * scale,
                (rect["x1"] - rect["x0"]) * scale, (rect["y1"] - rect["y0"]) * scale]
    assert all(abs(a - b) <= 2 for a, b in zip(layout["box"], expected)), (layout["box"], expected)
    _, box_top, _, box_height = layout["box"]
    assert 0 <= box_top and box_top + box_height <= layout["viewport"][1], "the highlight is not scrolled into view"
    shoot(page, "report")
    assert page.errors == []


def test_an_html_citation_marks_the_quote_in_the_sandboxed_source_and_scrolls_to_it(page, report):
    report_path, _ = report
    open_report(page, report_path)
    page.click(marker("html"))
    frame_element = page.locator(".view:not([hidden]) iframe.source-frame")
    assert frame_element.get_attribute("sandbox") == "allow-same-origin"
    hit = page.frame_locator(".view:not([hidden]) iframe.source-frame").locator("#spanindex-hit")
    hit.wait_for()
    assert " ".join(hit.inner_text().split()) == HTML_QUOTE
    page.wait_for_function("""() => {
        const f = [...document.querySelectorAll('.view')].find(v => !v.hidden).querySelector('iframe');
        const m = f.contentDocument && f.contentDocument.getElementById('spanindex-hit');
        if (!m) return false;
        const r = m.getBoundingClientRect();
        return r.top >= 0 && r.bottom <= f.contentWindow.innerHeight && f.contentWindow.scrollY > 0;
    }""")
    frame_box = frame_element.bounding_box()
    assert frame_box["y"] < 800 and frame_box["y"] + 40 > 0, "the source frame is off screen"
    shoot(page, "html-source")
    assert page.errors == []


def test_two_citations_of_one_html_page_each_light_their_own_span(page, idx, viewer_index, tmp_path):
    second_quote = "Audit logs are kept for 400 days on the Scale plan."
    answer = {"answer_id": "shared", "claims": [
        {"claim_id": f"c{i}", "text": f"Claim {i}.", "support": [{"chunk_id": chunk_with(idx, "web/faq.html", q), "quote": q}]}
        for i, q in enumerate([HTML_QUOTE, second_quote])
    ]}
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    assert main(["verify", str(viewer_index), str(tmp_path / "answer.json"), "-o", str(tmp_path / "records.jsonl")]) == 0
    assert main(["render", str(viewer_index), str(tmp_path / "records.jsonl"), "-o", str(tmp_path / "report.html")]) == 0
    open_report(page, tmp_path / "report.html")
    for claim_id, quote in [("c0", HTML_QUOTE), ("c1", second_quote), ("c0", HTML_QUOTE)]:
        page.click(marker(claim_id))
        frame = page.frame_locator(".view:not([hidden]) iframe.source-frame")
        frame.locator("#spanindex-hit").wait_for()
        lit = " ".join(frame.locator("mark.on").all_inner_texts())
        assert " ".join(lit.split()) == quote
        background = frame.locator("#spanindex-hit").evaluate("m => getComputedStyle(m).backgroundColor")
        assert background == "rgb(255, 224, 102)", "the chosen span is not highlighted"
        others = frame.locator("mark:not(.on)")
        if others.count():
            assert others.first.evaluate("m => getComputedStyle(m).backgroundColor") == "rgba(0, 0, 0, 0)"
    assert page.errors == []


def test_failed_citations_abstentions_and_several_sources_are_all_shown(page, report):
    report_path, _ = report
    open_report(page, report_path)
    assert page.locator(".claim[data-claim-id='html'] a.cite").count() == 2
    failed = page.locator(".claim[data-claim-id='failed']")
    assert "unverified" in failed.locator(".badge").inner_text().lower()
    statuses = failed.locator(".failures").inner_text()
    assert "quote_not_found" in statuses and "unknown_chunk" in statuses
    assert "abstention" in page.locator(".claim[data-claim-id='abstain'] .badge").inner_text().lower()


# -- nothing from a document or an answer runs ------------------------------------------------------


def _assert_nothing_ran(tab) -> None:
    assert tab.evaluate("() => window.__pwned") is None
    for frame in tab.frames:
        assert frame.evaluate("() => window.__pwned") is None


@pytest.mark.hostile("hostile documents and claims in a report (scripts, handlers, injections)", "handled: nothing runs in Chromium; read as text")
def test_hostile_documents_and_claims_run_nothing_and_read_as_text(page, report):
    report_path, _ = report
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    open_report(page, report_path)
    assert page.locator(".claim[data-claim-id='hostile'] .claim-words").inner_text() == HOSTILE_CLAIM
    cite = page.locator(marker("hostile", 0))
    cite.hover()
    assert HOSTILE_TEXT_QUOTE in page.locator("#" + cite.get_attribute("aria-describedby")).inner_text()
    cite.click()
    source = page.frame_locator(".view:not([hidden]) iframe")
    assert " ".join(source.locator("#spanindex-hit").inner_text().split()) == HOSTILE_TEXT_QUOTE
    source.locator("p").last.hover()  # its onmouseover is gone
    source.locator("text=a link").click()  # and so is its javascript: URL
    page.click(marker("hostile", 1))
    assert '<script>window.top.__pwned="md"</script>' in page.locator(".view:not([hidden]) pre.doc-text").inner_text()
    page.wait_for_timeout(500)
    _assert_nothing_ran(page)
    assert all(url.startswith(("file:", "data:", "about:")) for url in requested), "the report reached for the network"
    shoot(page, "hostile")


@pytest.mark.hostile("hostile documents and answers served by the viewer", "handled: nothing runs in Chromium; read as text")
def test_the_server_runs_nothing_from_hostile_documents_or_answers(page, server, answer):
    page.goto(server + "/verify")
    page.fill("textarea[name=answer]", json.dumps(answer))
    page.click("button[type=submit]")
    page.wait_for_selector("a.cite")
    assert page.locator(".claim[data-claim-id='hostile'] .claim-words").inner_text() == HOSTILE_CLAIM
    for n in range(2):
        page.click(f'.claim[data-claim-id="hostile"] a.cite >> nth={n}')
        page.wait_for_timeout(300)
    page.goto(server + "/?q=hostile+paragraph+script&k=5")
    page.wait_for_selector(".hit")
    page.goto(server + "/inspect?chunk_id=" + answer["claims"][2]["support"][0]["chunk_id"].replace("#", "%23"))
    page.wait_for_selector(".tokens")
    page.goto(server + "/documents/extra/hostile.html/view")
    page.wait_for_timeout(500)
    _assert_nothing_ran(page)
    assert page.errors == []


# -- documents by id only ------------------------------------------------------------------------


@pytest.mark.hostile("traversal and unknown document ids, from a browser", "HTTP 4xx: 404")
@pytest.mark.parametrize("path", [
    "/documents/../../etc/passwd/file",
    "/documents/..%2F..%2Fetc%2Fpasswd/file",
    "/documents/%2e%2e/%2e%2e/etc/passwd/pages/1.png",
    "/documents/no-such.pdf/pages/1.png",
    "/documents/web/nothing.html/view",
])
def test_a_document_route_with_a_traversal_or_unknown_id_is_404(page, server, path):
    assert page.request.get(server + path).status == 404
    # Sent verbatim, dot segments and all, as a hostile client would.
    connection = http.client.HTTPConnection("127.0.0.1", int(server.rsplit(":", 1)[1]), timeout=10)
    connection.request("GET", path)
    response = connection.getresponse()
    assert response.status == 404 and b"root:" not in response.read()
    connection.close()


# -- each page, as the README shows it -------------------------------------------------------------


def test_screenshots_of_each_page(page, server, answer, idx):
    page.goto(server + "/?q=Growth+plan+overage+billed+per+1%2C000+API+calls&k=3")
    page.wait_for_function("() => [...document.querySelectorAll('img.page-img')].every(i => i.complete && i.naturalWidth)")
    assert page.locator(".hit").count() == 3
    shoot(page, "search")
    page.goto(server + "/verify")
    page.fill("textarea[name=answer]", json.dumps(answer))
    shoot(page, "verify-form")
    page.click("button[type=submit]")
    page.click('.claim[data-claim-id="pdf"] a.cite')
    page.wait_for_function("() => { const i = [...document.querySelectorAll('.view')].find(v => !v.hidden).querySelector('img'); return i && i.complete && i.naturalWidth > 0; }")
    page.locator('.claim[data-claim-id="pdf"] a.cite').hover()
    shoot(page, "verify")
    chunk_id = chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE)
    page.goto(server + "/inspect?chunk_id=" + chunk_id.replace("#", "%23"))
    page.wait_for_function("() => [...document.querySelectorAll('img.page-img')].every(i => i.complete && i.naturalWidth)")
    assert page.locator(".tokens span").count() == idx.chunk(chunk_id).n_tokens
    shoot(page, "inspect")
    assert page.errors == []


# -- click to highlight on a 300-page PDF ----------------------------------------------------------

CLICK_TO_HIGHLIGHT = """async (selector) => {
    const link = document.querySelector(selector);
    const view = document.getElementById(link.dataset.view);
    const started = performance.now();
    link.click();
    const box = view.querySelector('.hl'), img = box.parentElement.querySelector('img');
    await new Promise((resolve, reject) => {
        const check = () => (img.complete && img.naturalWidth > 0) ? resolve() : requestAnimationFrame(check);
        img.addEventListener('error', reject, {once: true});
        check();
    });
    await img.decode();
    const r = box.getBoundingClientRect();
    if (!(r.width > 0 && r.top >= 0 && r.bottom <= innerHeight)) throw new Error('highlight not in view');
    await new Promise(resolve => requestAnimationFrame(() => resolve()));
    const entry = performance.getEntriesByName(img.src)[0];
    const timing = entry && entry.serverTiming ? entry.serverTiming.map(t => [t.description, t.duration]) : [];
    return {ms: performance.now() - started, server: timing};
}"""


def test_click_to_highlight_on_a_late_page_of_a_300_page_pdf(page, report, viewer_index, answer, idx):
    assert idx.document("extra/long-report.pdf").n_pages == 300
    report_path, records = report
    late = next(r for r in records if r["claim_id"] == "late")["citations"][0]
    assert late["status"] == "exact" and late["page"] == LATE_PAGE
    from index.viewer.page_images import render_page

    started = time.perf_counter()
    rendered = render_page(idx.source_path("extra/long-report.pdf"), LATE_PAGE)
    render_ms = (time.perf_counter() - started) * 1000

    embedded = []
    for _ in range(5):
        open_report(page, report_path)
        embedded.append(page.evaluate(CLICK_TO_HIGHLIGHT, '.claim[data-claim-id="late"] a.cite')["ms"])

    with running_server(viewer_index) as fresh:  # its page cache is empty: the page is rendered on the click
        page.goto(fresh + "/verify")
        page.fill("textarea[name=answer]", json.dumps(answer))
        page.click("button[type=submit]")
        page.wait_for_selector("a.cite")
        served = page.evaluate(CLICK_TO_HIGHLIGHT, '.claim[data-claim-id="late"] a.cite')
        shoot(page, "late-page")
    [(how, server_ms)] = served["server"]
    assert how == "pymupdf"
    print(
        f"\n300-page PDF, citation on page {LATE_PAGE}, click to visible highlight: "
        f"report (page embedded) median {statistics.median(embedded):.0f} ms of {len(embedded)} "
        f"({', '.join(f'{ms:.0f}' for ms in embedded)}); "
        f"server (page rendered on request) {served['ms']:.0f} ms, of which the server's render {server_ms:.0f} ms; "
        f"PyMuPDF render alone {render_ms:.0f} ms ({rendered.width_px}x{rendered.height_px} px, {len(rendered.png) // 1024} KiB)"
    )
