"""HTML laid out by a real browser: a box for every character a reader sees, and why not.

The stage takes a parsed HTML document (its text and the runs that map it to the
decoded source), has headless Chromium lay out the *defused* source
(``ingest.html_defuse``: no script, nothing that loads; page scripts are off and
every request is blocked as well) at ``PAGE_WIDTH`` CSS px, and measures each
character of the document text with ``Range.getClientRects``.

From text offsets to the browser's DOM: before the page is loaded, a comment
``<!--start:end-->`` naming its source range is written before every text token.
Comments neither render nor join text, so each text node the browser builds
follows the marker of the token it came from, and its text must equal that
token's text as the browser decodes it (character references, CR LF, NUL). The
browser repairs misnested markup its own way: text that it moved away from its
marker (out of a table, into the body) is found again by content among the
markers left without a text node, after the last source position matched. Every
character is checked against the DOM text it is mapped to; one that does not
match is *unmatched*: it gets no box, never a guessed one.

Boxes are in CSS px of the layout, cut into pages of ``PAGE_HEIGHT`` (each box
relative to its page's top), as ``PdfCharRun``s: one per run of characters on one
line, the shape of ``pdf_chars``. The same pass gives each character a visibility
verdict (``HiddenRun``): no box because a style sheet hides it, laid out off the
page, clipped away, zero-sized, under 1 px, transparent, or in the colour of what
lies under it; in an ``aria-hidden`` subtree as well, the reason is ``aria_hidden``.
Content of a closed ``<details>`` or inside a form control is the reader's to open:
it is not hidden.
"""

from __future__ import annotations

import atexit
import base64
import bisect
import contextlib
import json
import math
import re
import time
import unicodedata
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np

from ingest.html_defuse import Defuser
from ingest.html_layout_js import COLLECT, HIT_TEST, MEASURE
from ingest.html_text import charref
from schemas.errors import DocumentError, SpanindexError
from schemas.records import HiddenReason, HiddenRun, ParsedDocument, PdfCharRun, RunKind
from schemas.tables import HTML_PAGE_HEIGHT, HTML_PAGE_WIDTH

PAGE_WIDTH = HTML_PAGE_WIDTH  # CSS px: the layout viewport
PAGE_HEIGHT = HTML_PAGE_HEIGHT  # CSS px: boxes are cut into pages of this height
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--mute-audio", "--hide-scrollbars")
DOC_URL = "http://document.spanindex.invalid/"
TIMEOUT_MS = 120_000

# Below these a reader sees nothing: contrast against what lies under the text, text alpha.
MIN_CONTRAST = 1.1
MIN_ALPHA = 0.05
# A box counts as clipped when less than this share of it is inside its clip.
MIN_SHOWN = 0.5

NODE_FIELDS = 12  # flags, font size, alpha, contrast, clip x0 y0 x1 y1, scroller x0 y0 x1 y1
_NONE, _REVEALABLE, _VIS_HIDDEN, _ARIA, _PAINTED = 1, 2, 4, 8, 16

# Reasons by precedence: where several apply, the first is given.
_REASONS = (
    HiddenReason.CSS_HIDDEN,
    HiddenReason.NOT_LAID_OUT,
    HiddenReason.OFF_PAGE,
    HiddenReason.CLIPPED,
    HiddenReason.TINY,
    HiddenReason.ZERO_SIZE,
    HiddenReason.TRANSPARENT,
    HiddenReason.BACKGROUND_COLOR,
)
_CODE = {reason: len(_REASONS) - i for i, reason in enumerate(_REASONS)}  # higher wins
_REASON_OF = {code: reason for reason, code in _CODE.items()}
_ARIA_CODE = len(_REASONS) + 1
_REASON_OF[_ARIA_CODE] = HiddenReason.ARIA_HIDDEN

_DOM_SPECIAL = re.compile(r"\r\n?|\x00|&")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# Characters whose own box says nothing about visibility: spaces, marks, format controls.
_WEAK = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me"})
_ORPHAN_TRIES = 8
_HTML_SPACE = " \t\n\r\f"


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
            plan = _Plan(doc, found["entries"])
            measured = page.evaluate(MEASURE, plan.request()) if plan.n_chars else None
            layout = plan.layout(measured, found["width"], found["height"], self._requests.blocked,
                                 time.perf_counter() - started)
            if hit_test_sample and layout.boxed:
                tried, agreed, covered = plan.hit_test(page, hit_test_sample)
                layout = _replace(layout, hit_tried=tried, hit_agreed=agreed, hit_covered=covered)
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


def dom_text(source: str, start: int, end: int, refs: dict) -> tuple[str, np.ndarray]:
    """The text node the browser makes of ``source[start:end]``, and each character's source offset.

    CR LF and CR read as LF, NUL is dropped, character references are decoded (all the
    characters of one reference carry its offset).

    >>> text, offsets = dom_text("a&lt;\\r\\nb", 0, 8, {})
    >>> text, offsets.tolist()
    ('a<\\nb', [0, 1, 5, 7])
    """
    parts: list[str] = []
    offsets: list[np.ndarray] = []
    pos = start
    for m in _DOM_SPECIAL.finditer(source, start, end):
        at = m.start()
        if at < pos:
            continue  # inside a reference already read
        if at > pos:
            parts.append(source[pos:at])
            offsets.append(np.arange(pos, at))
        found = m.group()
        if found[0] == "\r":
            parts.append("\n")
            offsets.append(np.array([at]))
            pos = m.end()
        elif found == "\x00":
            pos = at + 1
        else:
            ref = charref(source, at, end, refs)
            if ref is None:
                parts.append("&")
                offsets.append(np.array([at]))
                pos = at + 1
            else:
                pos, value = ref
                parts.append(value)
                offsets.append(np.full(len(value), at))
    if pos < end:
        parts.append(source[pos:end])
        offsets.append(np.arange(pos, end))
    text = "".join(parts)
    return text, (np.concatenate(offsets) if offsets else np.zeros(0, dtype=np.int64))


class _Plan:
    """The mapping of one document's characters to DOM text positions, and what was measured."""

    def __init__(self, doc: ParsedDocument, entries: list) -> None:
        self.doc = doc
        source = doc.decoded_source
        self.node_data: dict[int, str] = {}
        self._pieces: list[tuple[np.ndarray, int, np.ndarray]] = []  # source offsets, node, DOM positions
        self._match(source, entries)
        self._map_chars()

    # -- DOM text nodes to source offsets

    def _match(self, source: str, entries: list) -> None:
        refs: dict = {}
        orphans = sorted((start, end) for node, start, end, _ in entries if node < 0)
        orphan_starts = [s for s, _ in orphans]
        used = [False] * len(orphans)
        last = -1  # the furthest source position matched so far, in tree order
        for node, start, end, data in entries:
            if node < 0:
                continue
            self.node_data[node] = data
            pos = 0
            if start >= 0:
                text, offsets = dom_text(source, start, end, refs)
                if data.startswith(text):  # its own text, perhaps with moved text after it
                    self._assign(node, 0, offsets)
                    pos = len(text)
                elif len(data) == len(text):  # decoded differently in places: keep what agrees
                    same = np.frombuffer(data.encode("utf-32-le"), dtype=np.uint32) == \
                        np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
                    self._assign(node, 0, np.where(same, offsets, -1))
                    pos = len(data)
                elif data and text.startswith(data):  # the rest went elsewhere (whitespace in <head>)
                    self._assign(node, 0, offsets[:len(data)])
                    rest = (int(offsets[len(data)]), end)
                    i = bisect.bisect_left(orphans, rest)
                    orphans.insert(i, rest)
                    orphan_starts.insert(i, rest[0])
                    used.insert(i, False)
                    pos = len(data)
                last = max(last, end if pos < len(data) else start)
            # Text the browser moved away from its marker (out of a table, into the body) is
            # the text of a marker that claimed nothing, further on in the source; the browser
            # may have dropped the whitespace it began with (before <body>).
            i = bisect.bisect_left(orphan_starts, last)
            tries = 0
            while pos < len(data) and i < len(orphans) and tries < _ORPHAN_TRIES:
                if not used[i]:
                    tries += 1
                    text, offsets = dom_text(source, orphans[i][0], orphans[i][1], refs)
                    if not data.startswith(text, pos):
                        lead = len(text) - len(text.lstrip(_HTML_SPACE))
                        text, offsets = text[lead:], offsets[lead:]
                    if text and data.startswith(text, pos):
                        used[i] = True
                        self._assign(node, pos, offsets)
                        pos += len(text)
                        last = max(last, orphans[i][1])
                        i = bisect.bisect_left(orphan_starts, last)
                        tries = 0
                        continue
                i += 1

    def _assign(self, node: int, at: int, offsets: np.ndarray) -> None:
        """DOM text ``data[at:at + len(offsets)]`` came from these source offsets (-1: from none)."""
        if len(offsets) == 0:
            return
        first = np.ones(len(offsets), dtype=bool)  # of a reference's characters, the first
        first[1:] = offsets[1:] != offsets[:-1]
        first &= offsets >= 0
        positions = at + np.arange(len(offsets))
        self._pieces.append((offsets[first], node, positions[first]))

    # -- document characters to DOM positions

    def _map_chars(self) -> None:
        doc = self.doc
        n = len(doc.text)
        src = np.full(n, -1, dtype=np.int64)
        step = np.zeros(n, dtype=np.int64)  # k-th character of a multi-character reference
        for run in doc.html_runs:
            if run.kind is RunKind.SYNTHETIC:
                continue
            length = run.end - run.start
            if run.kind is RunKind.TEXT:
                src[run.start:run.end] = np.arange(run.src_start, run.src_start + length)
            else:
                src[run.start:run.end] = run.src_start
                step[run.start:run.end] = np.arange(length)
        self.from_source = src >= 0
        # Source offset -> (node, position in its text), sorted by offset, for a binary search.
        pieces = self._pieces or [(np.zeros(0, dtype=np.int64), -1, np.zeros(0, dtype=np.int64))]
        offsets = np.concatenate([p[0] for p in pieces] + [np.array([-1])])  # -1: a sentinel
        nodes = np.concatenate([np.full(len(p[0]), p[1], dtype=np.int64) for p in pieces] + [np.array([-1])])
        positions = np.concatenate([p[2] for p in pieces] + [np.array([-1])])
        order = np.argsort(offsets, kind="stable")
        offsets, nodes, positions = offsets[order], nodes[order], positions[order]
        at = np.minimum(np.searchsorted(offsets, src), len(offsets) - 1)
        has = self.from_source & (offsets[at] == src)
        node = np.where(has, nodes[at], -1)
        pos = np.where(has, positions[at] + step, -1)
        text = doc.text
        for i in np.flatnonzero(has).tolist():  # never a box for a character the DOM does not hold
            data = self.node_data[int(node[i])]
            p = int(pos[i])
            if p >= len(data) or (data[p] != text[i] and not (data[p].isspace() and text[i].isspace())):
                has[i] = False
        self.mapped = has
        self.chars = np.flatnonzero(has)
        self.char_node = node[self.chars]
        self.char_pos = pos[self.chars]
        self.n_chars = len(self.chars)

    def request(self) -> dict:
        """What MEASURE needs: (node, UTF-16 start, UTF-16 end) per character, and the nodes."""
        starts = self.char_pos.copy()
        ends = starts + 1
        for node in np.unique(self.char_node).tolist():
            data = self.node_data[node]
            if _ASTRAL.search(data):
                units = np.concatenate(([0], np.cumsum([2 if ord(c) > 0xFFFF else 1 for c in data])))
                at = self.char_node == node
                ends[at] = units[starts[at] + 1]
                starts[at] = units[starts[at]]
        self.nodes = np.unique(self.char_node)
        triples = np.stack([self.char_node, starts, ends], axis=1).astype(np.int32).reshape(-1)
        self.utf16 = (starts, ends)
        return {"chars": _b64(triples), "nodes": _b64(self.nodes.astype(np.int32)), "fields": NODE_FIELDS}

    # -- boxes, pages and verdicts

    def layout(self, measured: dict | None, width: float, height: float, blocked: int,
               seconds: float) -> HtmlLayout:
        doc = self.doc
        n = len(doc.text)
        source_chars = int(self.from_source.sum())
        unmatched = int((self.from_source & ~self.mapped).sum())
        if measured is None:
            return HtmlLayout((), (), _pages(height), width, height, source_chars, 0, 0, unmatched,
                              blocked, seconds)
        boxes = np.frombuffer(base64.b64decode(measured["boxes"]), dtype=np.float32).reshape(-1, 4)
        info = np.frombuffer(base64.b64decode(measured["nodes"]), dtype=np.float32).reshape(-1, NODE_FIELDS)
        per_char = info[np.searchsorted(self.nodes, self.char_node)]
        text = doc.text
        strong = np.array([unicodedata.category(text[i]) not in _WEAK for i in self.chars.tolist()], dtype=bool)
        verdict = _verdicts(strong, boxes, per_char, width, height)
        codes = np.zeros(n, dtype=np.int8)
        codes[self.chars] = verdict
        hidden_runs = _hidden_runs(text, codes)
        hidden = np.zeros(n, dtype=bool)
        for run in hidden_runs:
            hidden[run.start:run.end] = True
        self.boxes = boxes
        self.shown = _on_page(boxes, per_char, width, height) & ~hidden[self.chars]  # hidden text is not drawn
        not_laid_out = int((np.isnan(boxes[:, 0]) & strong).sum())
        return HtmlLayout(
            char_runs=_char_runs(self.chars, boxes, self.shown),
            hidden_runs=hidden_runs,
            n_pages=_pages(height),
            width=float(width),
            height=float(height),
            source_chars=source_chars,
            boxed=int(self.shown.sum()),
            not_laid_out=not_laid_out,
            unmatched=unmatched,
            blocked_requests=blocked,
            seconds=seconds,
        )

    def hit_test(self, page, sample: int) -> tuple[int, int, int]:
        """Of ``sample`` shown letters and digits (evenly spread): how many were tried, how many
        the hit test found, and how many it could not reach because another element lies on top."""
        text = self.doc.text
        shown = np.flatnonzero(self.shown)
        candidates = np.array([i for i in shown.tolist() if text[int(self.chars[i])].isalnum()], dtype=np.int64)
        if len(candidates) == 0:
            return 0, 0, 0
        picks = candidates[np.unique(np.linspace(0, len(candidates) - 1, min(sample, len(candidates))).astype(np.int64))]
        boxes = self.boxes[picks].astype(np.float64)
        points = np.stack([(boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2,
                           self.char_node[picks]], axis=1)
        found = json.loads(page.evaluate(HIT_TEST, points.reshape(-1).tolist()))
        starts, ends = self.utf16
        agreed = covered = 0
        for j, i in enumerate(picks.tolist()):
            node, offset, on_top = found[3 * j: 3 * j + 3]
            if node == int(self.char_node[i]) and _same_cluster(self.node_data[node], offset, starts[i], ends[i]):
                agreed += 1
            elif on_top:
                covered += 1
        return len(picks), agreed, covered


def _same_cluster(data: str, offset: int, start: int, end: int) -> bool:
    """Whether a caret at UTF-16 ``offset`` is an edge of the character [start, end) or of the
    grapheme cluster it belongs to (a caret never stops inside a cluster).

    >>> _same_cluster("e\u0301x", 0, 1, 2), _same_cluster("ex", 0, 1, 2)
    (True, False)
    """
    if start <= offset <= end:
        return True
    units = _utf16_units(data)
    at, first, last = (bisect.bisect_left(units, u) for u in (offset, start, end))
    if offset < start:  # before the cluster: it and everything up to this character extend it
        return all(_extends(c) for c in data[at + 1:first + 1])
    return all(_extends(c) for c in data[last:at])


def _extends(c: str) -> bool:
    return unicodedata.category(c) in ("Mn", "Mc", "Me") or c in "\u200d\uff9e\uff9f" or "\ufe00" <= c <= "\ufe0f"


def _utf16_units(data: str) -> list[int]:
    units, n = [], 0
    for c in data:
        units.append(n)
        n += 2 if ord(c) > 0xFFFF else 1
    return units


def _verdicts(strong: np.ndarray, boxes: np.ndarray, info: np.ndarray,
              width: float, height: float) -> np.ndarray:
    """A reason code per measured character (0: a reader sees it), by precedence."""
    flags = info[:, 0].astype(np.int64)
    font_size, alpha, contrast = info[:, 1], info[:, 2], info[:, 3]
    x0, y0, x1, y1 = boxes.T
    boxed = ~np.isnan(x0)
    revealable = (flags & _REVEALABLE) != 0
    painted = (flags & _PAINTED) != 0
    w = np.where(boxed, x1 - x0, 0)
    h = np.where(boxed, y1 - y0, 0)
    # Content inside a box the reader can scroll counts where that box is.
    scroller = ~np.isnan(info[:, 8])
    rx0, ry0 = np.where(scroller, info[:, 8], x0), np.where(scroller, info[:, 9], y0)
    rx1, ry1 = np.where(scroller, info[:, 10], x1), np.where(scroller, info[:, 11], y1)
    off_page = boxed & ((rx1 <= 0) | (ry1 <= 0) | (rx0 >= width) | (ry0 >= height))
    cx0, cy0 = np.maximum(x0, info[:, 4]), np.maximum(y0, info[:, 5])
    cx1, cy1 = np.minimum(x1, info[:, 6]), np.minimum(y1, info[:, 7])
    shown_area = np.clip(cx1 - cx0, 0, None) * np.clip(cy1 - cy0, 0, None)
    area = w * h
    mid_x, mid_y = (x0 + x1) / 2, (y0 + y1) / 2
    centre_in = (mid_x >= info[:, 4]) & (mid_x <= info[:, 6]) & (mid_y >= info[:, 5]) & (mid_y <= info[:, 7])
    clipped = boxed & np.where(area > 0, shown_area < MIN_SHOWN * np.where(area > 0, area, 1), ~centre_in)
    checks = [
        # checkVisibility() says no (display:none, content-visibility:hidden: the rectangles of
        # such text are computed on demand, though never drawn), or visibility:hidden
        (HiddenReason.CSS_HIDDEN, ((flags & _NONE) != 0) | (boxed & ((flags & _VIS_HIDDEN) != 0))),
        (HiddenReason.NOT_LAID_OUT, ~boxed & ((flags & _NONE) == 0)),
        (HiddenReason.OFF_PAGE, off_page),
        (HiddenReason.CLIPPED, clipped),
        (HiddenReason.TINY, boxed & ((font_size < 1) | (strong & (h > 0) & (h < 1)))),
        (HiddenReason.ZERO_SIZE, boxed & strong & ((w <= 0) | (h <= 0))),
        (HiddenReason.TRANSPARENT, boxed & ~painted & (alpha < MIN_ALPHA)),
        (HiddenReason.BACKGROUND_COLOR, boxed & ~painted & (contrast >= 0) & (contrast < MIN_CONTRAST)),
    ]
    verdict = np.zeros(len(strong), dtype=np.int8)
    for reason, where in reversed(checks):
        verdict[where] = _CODE[reason]
    # A closed <details> or a form control the reader can open hides nothing (unless it is hidden itself).
    verdict[revealable & ((flags & _NONE) == 0)] = 0
    verdict[(verdict > 0) & ((flags & _ARIA) != 0)] = _ARIA_CODE
    return verdict


def _on_page(boxes: np.ndarray, info: np.ndarray, width: float, height: float) -> np.ndarray:
    """Characters whose box is drawn on a page: inside the document, their clip and their scroller."""
    x0, y0, x1, y1 = boxes.T
    mid_x, mid_y = (x0 + x1) / 2, (y0 + y1) / 2
    with np.errstate(invalid="ignore"):
        # on the page images (PAGE_WIDTH wide: what overflows to the right is not drawn)
        inside = (mid_x >= 0) & (mid_y >= 0) & (mid_x < min(width, PAGE_WIDTH)) & (mid_y < height) & (y1 > y0)
        inside &= (mid_x >= info[:, 4]) & (mid_x <= info[:, 6]) & (mid_y >= info[:, 5]) & (mid_y <= info[:, 7])
        scroller = ~np.isnan(info[:, 8])
        in_scroller = (mid_x >= info[:, 8]) & (mid_x <= info[:, 10]) & (mid_y >= info[:, 9]) & (mid_y <= info[:, 11])
    return inside & (~scroller | in_scroller)


def _char_runs(chars: np.ndarray, boxes: np.ndarray, shown: np.ndarray) -> tuple[PdfCharRun, ...]:
    """Runs of consecutive characters drawn on one line of one page, boxes relative to the page."""
    idx = np.flatnonzero(shown)
    if len(idx) == 0:
        return ()
    offsets = chars[idx]
    b = boxes[idx].astype(np.float64)
    pages = ((b[:, 1] + b[:, 3]) / 2 // PAGE_HEIGHT).astype(np.int64) + 1
    top = (pages - 1) * PAGE_HEIGHT
    b[:, 1] -= top
    b[:, 3] -= top
    overlap = np.minimum(b[1:, 3], b[:-1, 3]) - np.maximum(b[1:, 1], b[:-1, 1])
    shorter = np.minimum(b[1:, 3] - b[1:, 1], b[:-1, 3] - b[:-1, 1])
    continues = (offsets[1:] == offsets[:-1] + 1) & (pages[1:] == pages[:-1]) & (overlap > 0.5 * shorter)
    cuts = np.concatenate(([0], np.flatnonzero(~continues) + 1, [len(idx)]))
    b32 = b.astype(np.float32)
    return tuple(
        PdfCharRun(int(pages[a]), int(offsets[a]), int(offsets[z - 1]) + 1, b32[a:z])
        for a, z in zip(cuts[:-1].tolist(), cuts[1:].tolist())
    )


def _hidden_runs(text: str, codes: np.ndarray) -> tuple[HiddenRun, ...]:
    """Runs of one reason; spaces, marks and separators between two characters hidden for the
    same reason belong to the run, and never begin or end one."""
    runs: list[HiddenRun] = []
    start = -1
    code = 0
    last_strong = -1
    for i in np.flatnonzero(codes).tolist():
        c = int(codes[i])
        if unicodedata.category(text[i]) in _WEAK:
            continue
        if start >= 0 and c == code and _all_weak(text, last_strong + 1, i):
            last_strong = i
            continue
        if start >= 0:
            runs.append(HiddenRun(start, last_strong + 1, _REASON_OF[code]))
        start, code, last_strong = i, c, i
    if start >= 0:
        runs.append(HiddenRun(start, last_strong + 1, _REASON_OF[code]))
    return tuple(runs)


def _all_weak(text: str, start: int, end: int) -> bool:
    return all(unicodedata.category(c) in _WEAK for c in text[start:end])


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype="<i4").tobytes()).decode("ascii")


def _pages(height: float) -> int:
    return max(1, math.ceil(height / PAGE_HEIGHT))


def _replace(layout: HtmlLayout, **changes) -> HtmlLayout:
    from dataclasses import replace

    return replace(layout, **changes)
