"""HTML laid out by a real browser: a box for every character a reader sees, and why not.

The stage takes a parsed HTML document (its text and the runs that map it to the
decoded source), has headless Chromium lay out the *defused* source
(``ingest.formats.html.defuse``: no script, nothing that loads; page scripts are off and
every request is refused as well) at ``PAGE_WIDTH`` CSS px, and measures each
character of the document text with ``Range.getClientRects`` (``ingest.formats.html.layout_js``),
in one call per page. The characters are found in the DOM through comments that
name their source ranges (``ingest.formats.html.dom``); the boxes become pages of
``PAGE_HEIGHT``, line runs and visibility verdicts (``ingest.formats.html.boxes``).

One browser serves a process (``shared_browser``), document after document, in one
page: a build's worker lays all its HTML documents out in it, the viewer takes page
images with it (``page_image``: the same layout, so the boxes land on the pixels).

Text covered by another element drawn over it is not judged: the browser's hit test
would tell, at a cost per character; the correctness check counts it apart.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import re
import time
from dataclasses import astuple, dataclass, replace
from pathlib import Path

import numpy as np

from ingest.formats.html.boxes import NODE_FIELDS, measured_boxes, pages
from ingest.formats.html.defuse import Defuser
from ingest.formats.html.dom import DomMap, caret_on_char
from ingest.formats.html.layout_js import COLLECT, HIT_TEST, MEASURE
from schemas.errors import DocumentError, SpanindexError
from schemas.records import HiddenRun, ParsedDocument, PdfCharRun
from schemas.tables import HTML_PAGE_HEIGHT, HTML_PAGE_WIDTH

PAGE_WIDTH = HTML_PAGE_WIDTH  # CSS px: the layout viewport
PAGE_HEIGHT = HTML_PAGE_HEIGHT  # CSS px: boxes are cut into pages of this height
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--mute-audio", "--hide-scrollbars")
DOC_URL = "http://document.spanindex.invalid/"
TIMEOUT_MS = 120_000


class LayoutError(DocumentError):
    """The browser could not lay out a document (it crashed, or timed out)."""


@dataclass(frozen=True, slots=True, eq=False)
class HtmlLayout:
    """One document as the browser laid it out."""

    char_runs: tuple[PdfCharRun, ...]  # boxes in CSS px, relative to their page's top
    hidden_runs: tuple[HiddenRun, ...]
    n_pages: int  # pages of PAGE_HEIGHT the laid-out document spans
    width: float  # the laid-out document, CSS px
    height: float
    source_chars: int  # characters of the document text that come from the source (not separators)
    boxed: int  # of those, with a box on a page
    not_laid_out: int  # letters, digits, signs the browser built no box for (hidden by CSS, or never drawn)
    unmatched: int  # the DOM's text did not match the source there: no box given
    blocked_requests: int  # loads the page tried (all refused)
    seconds: float
    hit_tried: int = 0  # the browser's own hit test at sampled box centres
    hit_agreed: int = 0
    hit_covered: int = 0  # of the others, those under another element, which the hit test cannot reach


@dataclass(frozen=True, slots=True)
class LayoutStats:
    """What the layout stage did over some documents (a build sums them)."""

    documents: int = 0
    source_chars: int = 0
    boxed: int = 0
    not_laid_out: int = 0
    unmatched: int = 0
    hidden: int = 0  # characters in hidden runs
    blocked_requests: int = 0
    seconds: float = 0.0
    failed: int = 0  # documents the browser could not lay out (indexed without boxes)

    @classmethod
    def of(cls, layout: HtmlLayout) -> "LayoutStats":
        return cls(1, layout.source_chars, layout.boxed, layout.not_laid_out, layout.unmatched,
                   sum(r.end - r.start for r in layout.hidden_runs), layout.blocked_requests, layout.seconds)

    def __add__(self, other: "LayoutStats") -> "LayoutStats":
        return LayoutStats(*(a + b for a, b in zip(astuple(self), astuple(other))))


def browser_unavailable(executable: Path = CHROMIUM) -> str | None:
    """Why the layout stage cannot run here, or None when it can.

    >>> browser_unavailable(Path("/nonexistent/chromium"))
    'no browser at /nonexistent/chromium'
    """
    if not executable.exists():
        return f"no browser at {executable}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright; no browser download needed)"
    return None


def layout_engine(executable: Path = CHROMIUM) -> str:
    """What lays HTML pages out here, as the manifest records it (a build whose engine differs
    from the live generation's lays its HTML pages out again).

    >>> layout_engine()                                   # doctest: +SKIP
    'Chromium 156.0.8078.114, 1280 CSS px wide, pages of 1600 px'
    """
    import subprocess

    reason = browser_unavailable(executable)
    if reason is not None:
        raise LayoutError(f"HTML layout is not available: {reason}")
    try:
        out = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise LayoutError(f"the browser does not answer: {exc}") from exc
    version = re.search(r"\d+(?:\.\d+){1,3}", out)
    return f"Chromium {version.group() if version else '(unknown version)'}, {PAGE_WIDTH} CSS px wide, pages of {PAGE_HEIGHT} px"


class LayoutBrowser:
    """One headless Chromium, reused for document after document (one per worker process).

    >>> with LayoutBrowser() as browser:                        # doctest: +SKIP
    ...     layout = browser.layout(parse_html(source, "page.html"))
    """

    def __init__(self, executable: Path = CHROMIUM) -> None:
        reason = browser_unavailable(executable)
        if reason is not None:
            raise LayoutError(f"HTML layout is not available: {reason}")
        from playwright.sync_api import sync_playwright

        try:  # (Playwright's sync API refuses to start where an event loop runs, e.g. inside another)
            self._playwright = sync_playwright().start()
        except Exception as exc:
            raise LayoutError(f"the browser driver did not start: {type(exc).__name__}: {exc}") from exc
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=str(executable), args=list(CHROMIUM_ARGS))
        except Exception as exc:
            self._playwright.stop()
            raise LayoutError(f"the browser did not start: {type(exc).__name__}: {exc}") from exc
        self.version = self._browser.version
        self._requests = _Requests()
        self._page = None  # one page, reused; made again after a failure
        self._shown: str | None = None  # the source loaded in it

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._playwright.stop()

    def __enter__(self) -> "LayoutBrowser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def layout(self, doc: ParsedDocument, *, hit_test_sample: int = 0) -> HtmlLayout:
        """Lay ``doc`` out and measure every character of its text.

        ``hit_test_sample`` characters with a box (spread evenly) are then checked with
        the browser's own hit test on the same layout: ``caretRangeFromPoint`` at the
        centre of the box must land on that character.
        """
        started = time.perf_counter()
        self._shown = None  # always a fresh load: the count of blocked requests is this page's
        with self._loaded(doc.decoded_source, doc.doc_id) as page:
            found = json.loads(page.evaluate(COLLECT))
            dom = DomMap(doc, found["entries"])
            width, height = float(found["width"]), float(found["height"])
            source_chars = int(dom.from_source.sum())
            unmatched = int((dom.from_source & ~dom.mapped).sum())
            if not dom.n_chars:
                return HtmlLayout((), (), pages(height), width, height, source_chars, 0, 0, unmatched,
                                  self._requests.blocked, time.perf_counter() - started)
            measured = page.evaluate(MEASURE, dom.request(NODE_FIELDS))
            boxes = measured_boxes(doc.text, dom.chars, dom.char_node, dom.nodes, measured, width, height)
            layout = HtmlLayout(
                char_runs=boxes.char_runs,
                hidden_runs=boxes.hidden_runs,
                n_pages=pages(height),
                width=width,
                height=height,
                source_chars=source_chars,
                boxed=int(boxes.shown.sum()),
                not_laid_out=boxes.not_laid_out,
                unmatched=unmatched,
                blocked_requests=self._requests.blocked,
                seconds=time.perf_counter() - started,
            )
            if hit_test_sample and layout.boxed:
                tried, agreed, covered = _hit_test(page, doc.text, dom, boxes.boxes, boxes.shown, hit_test_sample)
                layout = replace(layout, hit_tried=tried, hit_agreed=agreed, hit_covered=covered)
            return layout

    def page_image(self, decoded_source: str, page_number: int, *, doc_id: str = "") -> bytes:
        """Page ``page_number`` of the layout as a PNG of exactly ``PAGE_WIDTH`` x ``PAGE_HEIGHT``
        (a last page shorter than that is padded with white), the boxes' coordinates in pixels."""
        import pymupdf

        with self._loaded(decoded_source, doc_id) as page:
            page.evaluate("() => window.scrollTo(0, 0)")
            top = (page_number - 1) * PAGE_HEIGHT
            height = page.evaluate(_DOCUMENT_HEIGHT)
            if top >= height:
                raise LayoutError(f"no page {page_number}: the layout is {height} px tall", doc_id=doc_id)
            clip = {"x": 0, "y": top, "width": PAGE_WIDTH, "height": min(PAGE_HEIGHT, height - top)}
            png = page.screenshot(clip=clip, full_page=True, type="png")
        if clip["height"] == PAGE_HEIGHT:
            return png
        shot = pymupdf.Pixmap(png)
        tile = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, PAGE_WIDTH, PAGE_HEIGHT), False)
        tile.clear_with(255)
        if shot.alpha:
            shot = pymupdf.Pixmap(shot, 0)
        tile.copy(shot, shot.irect)
        return tile.tobytes("png")

    @contextlib.contextmanager
    def _loaded(self, decoded_source: str | None, doc_id: str):
        """The page with the annotated, defused source loaded; nothing else loads."""
        if decoded_source is None:
            raise LayoutError("not an HTML document: no decoded source", doc_id=doc_id)
        try:
            if self._page is None:
                context = self._browser.new_context(
                    viewport={"width": PAGE_WIDTH, "height": PAGE_HEIGHT}, device_scale_factor=1,
                    java_script_enabled=False, service_workers="block", locale="en-US", timezone_id="UTC",
                )
                context.route("**/*", self._requests.route)
                self._page = context.new_page()
                self._page.set_default_timeout(TIMEOUT_MS)
                self._shown = None
            if self._shown is not decoded_source:  # the same source stays loaded (one page, several images)
                self._shown = None
                url = self._requests.serve(layout_source(decoded_source))
                self._page.goto(url, wait_until="load")
                self._shown = decoded_source
            yield self._page
        except SpanindexError:
            raise
        except Exception as exc:
            self._drop_page()
            raise LayoutError(f"the browser failed to lay out the page: {type(exc).__name__}: {exc}",
                              doc_id=doc_id) from exc

    def _drop_page(self) -> None:
        page, self._page = self._page, None
        if page is not None:
            with contextlib.suppress(Exception):
                page.context.close()


_DOCUMENT_HEIGHT = ("() => Math.max(document.documentElement.scrollHeight, "
                    "(document.scrollingElement || document.documentElement).scrollHeight)")


_shared: LayoutBrowser | None = None
_shared_failure: LayoutError | None = None


def shared_browser() -> LayoutBrowser:
    """This process's browser, started on first use and closed when the process exits
    (a worker process lays out all its HTML documents in one browser). A browser that
    would not start is not tried again: the same LayoutError each time."""
    global _shared, _shared_failure
    if _shared_failure is not None:
        raise _shared_failure
    if _shared is None:
        try:
            _shared = LayoutBrowser()
        except LayoutError as exc:
            _shared_failure = exc
            raise
        atexit.register(close_shared_browser)
    return _shared


def close_shared_browser() -> None:
    """Close this process's browser, if one was started (the next ``shared_browser()`` starts
    another): a build or a report run in the caller's process leaves no browser behind, and
    no Playwright that would keep the caller from starting its own."""
    global _shared
    browser, _shared = _shared, None
    if browser is not None:
        with contextlib.suppress(Exception):
            browser.close()


class _Requests:
    """Serves each document once, at its own address; refuses, and counts, every other request."""

    def __init__(self) -> None:
        self.url = ""
        self.body: str | None = None  # until served
        self.loads = 0
        self.blocked = 0

    def serve(self, body: str) -> str:
        self.loads += 1
        self.url = f"{DOC_URL}?{self.loads}"
        self.body = body
        self.blocked = 0
        return self.url

    def route(self, route) -> None:
        request = route.request
        if self.body is not None and request.url == self.url and request.resource_type == "document":
            body, self.body = self.body, None
            route.fulfill(status=200, content_type="text/html; charset=utf-8", body=body)
        else:
            self.blocked += 1
            route.abort("blockedbyclient")


class _MarkedSource(Defuser):
    def text(self, start: int, end: int) -> str:
        return f"<!--{start}:{end}-->{self.source[start:end]}"


def layout_source(decoded_source: str) -> str:
    """The defused source with a comment naming each text token's source range before it.

    >>> layout_source("<p>a &amp; b<script>x()</script>")
    '<p><!--3:12-->a &amp; b'
    """
    return _MarkedSource(decoded_source).html()


def _hit_test(page, text: str, dom: DomMap, boxes: np.ndarray, shown: np.ndarray, sample: int) -> tuple[int, int, int]:
    """Of ``sample`` shown letters and digits (evenly spread): how many were tried, how many the
    browser's hit test at the box centre found, and how many it could not reach because another
    element lies on top there."""
    candidates = np.array([i for i in np.flatnonzero(shown).tolist() if text[int(dom.chars[i])].isalnum()],
                          dtype=np.int64)
    if len(candidates) == 0:
        return 0, 0, 0
    picks = candidates[np.unique(np.linspace(0, len(candidates) - 1, min(sample, len(candidates))).astype(np.int64))]
    picked = boxes[picks].astype(np.float64)
    points = np.stack([(picked[:, 0] + picked[:, 2]) / 2, (picked[:, 1] + picked[:, 3]) / 2,
                       dom.char_node[picks]], axis=1)
    found = json.loads(page.evaluate(HIT_TEST, points.reshape(-1).tolist()))
    starts, ends = dom.utf16
    agreed = covered = 0
    for j, i in enumerate(picks.tolist()):
        node, offset, on_top = found[3 * j: 3 * j + 3]
        if node == int(dom.char_node[i]) and caret_on_char(dom.node_data[node], offset, starts[i], ends[i]):
            agreed += 1
        elif on_top:
            covered += 1
    return len(picks), agreed, covered
