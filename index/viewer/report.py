"""Citation records as a page a reader verifies in one click.

``render_report`` writes one self-contained HTML file: claims in order, each
with its citation markers; a marker's popup gives the quote and its place, a
click opens the source at the highlight in a side panel (the cited PDF page
with boxes over the glyphs, the HTML source with the span marked, or the
text). Only cited pages are embedded, as data: URIs; the CSS and the one
script are inline, and a CSP meta tag allows that script alone, by hash.
The server renders the same claims with the same templates
(``index.viewer.claims``), linking page images instead of embedding them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote as percent_encode

from markupsafe import Markup

from index.reader import Index
from index.viewer.claims import AnswerView, Links, answer_views, page_views
from index.viewer.marked_source import labelled_ranges, marked_html
from index.viewer.page_images import DEFAULT_ZOOM, render_html_page, render_page
from index.viewer.source_views import ViewBuilder, ViewKind
from index.viewer.templating import asset, environment, script_hash
from ingest.formats import close_shared_browser
from schemas.citations import ClaimRecord
from schemas.record_json import to_json
from schemas.records import OFFICE_TYPES, MediaType


def render_report(
    index: Index,
    records: Iterable[ClaimRecord],
    *,
    zoom: float = DEFAULT_ZOOM,
    source_base: str | None = None,
    title: str = "",
) -> str:
    """One self-contained HTML page of the records; it needs no network to open.

    ``source_base`` is where the original files are published (``{source_base}/{doc_id}``);
    without it, the links to originals point at the index's stored copies (file: URLs).

    >>> html = render_report(index.open("build/sample-index"), records)   # doctest: +SKIP
    """
    try:
        return _render_report(index, list(records), zoom=zoom, source_base=source_base, title=title)
    finally:
        close_shared_browser()  # one that took HTML page images here


def _render_report(index: Index, records: list[ClaimRecord], *, zoom: float, source_base: str | None,
                   title: str) -> str:
    answers = answer_views(records, ViewBuilder(index, inline_html=False))
    html_sources, html_keys = shared_html_sources(index, answers)
    images: dict[str, str] = {}
    keys: dict[tuple[str, int], str] = {}
    for page in page_views(answers):
        key = f"p{len(keys)}"
        keys[(page.doc_id, page.page)] = key
        if index.document(page.doc_id).media_type is MediaType.HTML:  # a tile of the browser layout
            image = render_html_page(index.decoded_source_path(page.doc_id),
                                     page.page, doc_id=page.doc_id)
        elif index.document(page.doc_id).media_type in OFFICE_TYPES:  # a page as LibreOffice rendered it
            image = render_page(index.rendered_path(page.doc_id), page.page, zoom, doc_id=page.doc_id)
        else:
            image = render_page(index.source_path(page.doc_id), page.page, zoom, doc_id=page.doc_id)
        images[key] = image.data_uri()

    def source_file(doc_id: str, page: int | None) -> str:
        if source_base:
            url = source_base.rstrip("/") + "/" + percent_encode(doc_id)
        else:
            url = index.source_path(doc_id).resolve().as_uri()
        return url + (f"#page={page}" if page else "")

    # With a published copy, an HTML citation also links the live page at its text fragment.
    live_page = (lambda doc_id, locator: source_file(doc_id, None) + locator) if source_base else None
    links = Links(
        page_image=lambda page: ("data-src-ref", keys[(page.doc_id, page.page)]),
        source_file=source_file,
        live_page=live_page,
        shared_html=html_keys.__getitem__,
    )
    script = asset("viewer.js")
    csp = "; ".join([
        "default-src 'none'",
        f"script-src {script_hash(script)}",
        "style-src 'unsafe-inline'",  # our stylesheet, box positions, and the sources' own CSS
        "img-src data:",
        "frame-src 'none'",  # srcdoc frames only: a link inside a source cannot load anything
        "base-uri 'none'",
        "form-action 'none'",
    ])
    return environment().get_template("report.html").render(
        title=title or _title(answers),
        answers=answers,
        links=links,
        generation=index.generation.name,
        inline_assets=True,
        css=Markup(asset("viewer.css")),  # our own files, not document content
        script=Markup(script),
        csp=csp,
        page_images=images,
        html_sources=html_sources,
        records_json=[to_json(r) for r in records],
    )


def shared_html_sources(index: Index, answers: Iterable[AnswerView]) -> tuple[dict[str, str], dict[str, str]]:
    """One defused copy of each cited HTML page, marked for all its citations at once.

    A report citing one large page five times carries it once; each citation's view
    names the copy and switches on its own marks. Returns (key -> page, doc_id -> key).
    """
    spans: dict[str, list[tuple[int, int, str]]] = {}
    windows: dict[str, list[tuple[int, int]]] = {}  # of a large page: the part around each citation
    for answer in answers:
        for claim in answer.claims:
            for marker in claim.markers:
                if marker.view.kind is ViewKind.HTML:
                    spans.setdefault(marker.view.doc_id, []).extend((a, b, marker.key) for a, b in marker.view.source_ranges)
                    if marker.view.windows:
                        windows.setdefault(marker.view.doc_id, []).extend(marker.view.windows)
    sources, keys = {}, {}
    for n, (doc_id, doc_spans) in enumerate(spans.items()):
        ranges, cite_keys = labelled_ranges(doc_spans)
        keys[doc_id] = f"h{n}"
        shown = _merged(windows[doc_id]) if doc_id in windows else None
        sources[f"h{n}"] = marked_html(index.decoded_source(doc_id), ranges, cite_keys, windows=shown)
    return sources, keys


def _merged(windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, overlapping windows joined: each part of a page shown once."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(windows):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def write_report(index: Index, records: Iterable[ClaimRecord], output: str | Path, **options) -> Path:
    output = Path(output)
    output.write_text(render_report(index, records, **options), encoding="utf-8")
    return output


def _title(answers: list[AnswerView]) -> str:
    ids = [a.answer_id for a in answers if a.answer_id]
    return "Answer " + ", ".join(ids) if ids else "Verified answer"
