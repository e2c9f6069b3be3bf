"""Pages grow with what they show, not with the document: a 50 MB one-line HTML page indexed, the
search page, the chunk inspector, the verify page and the report show a bounded window of its
source around each span (schemas.limits: VIEW_*); the whole page only on request, streamed."""

from __future__ import annotations

import html
import json
import random
import re

import pytest
from fastapi.testclient import TestClient

import index
from index.citations.locate import HtmlSourceMap
from index.viewer.marked_source import WINDOW_GAP
from index.viewer.server.app import create_app
from ingest.formats.html.parser import parse_html
from ingest.formats.html.tokens import TEXT, Tokenizer
from schemas.limits import MIB, VIEW_CHUNK_CHARS, VIEW_SIBLINGS, VIEW_SOURCE_CHARS
from schemas.records import DocStatus
from schemas.tables import html_map_table

from conftest import SAMPLE_CORPUS, spanindex
from doubles import HashingEmbedder

WORDS = "invoice refund overage webhook plan growth tier limit quota export archive ledger".split()
FRAME = re.compile(r'data-srcdoc="([^"]*)"')
MARK = re.compile(r"<mark[^>]*>(.*?)</mark>", re.S)


def one_line_page(size: int, seed: int = 5) -> bytes:
    """About ``size`` bytes of HTML on one line: a sentence, then 8 KB of CSS (kept by the viewer,
    cheap to parse), and every 50th sentence an inline image of 60 KB."""
    rng = random.Random(seed)
    blob = rng.randbytes(1 << 20).hex()
    parts, total, i = ["<!DOCTYPE html><html><head><title>One line</title></head><body>"], 0, 0
    while total < size:
        at = rng.randrange(len(blob) - 70_000)
        part = f"<p>Section {i}: {' '.join(rng.choice(WORDS) for _ in range(14))}.</p><style>/* {blob[at:at + 8000]} */</style>"
        if i % 50 == 0:
            part += f'<img alt="figure {i}" src="data:image/png;base64,{blob[at:at + 60_000]}">'
        parts.append(part)
        total, i = total + len(part), i + 1
    return ("".join(parts) + "</body></html>").encode()


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """An index of a 50 MB one-line HTML page, a word of 60,000 letters, and a small page."""
    from ingest.build import BuildSettings, build_index

    root = tmp_path_factory.mktemp("large")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "big.html").write_bytes(one_line_page(50 * MIB))
    (corpus / "word.txt").write_text("A word: " + "x" * 60_000 + " and after it.")
    (corpus / "small.html").write_bytes((SAMPLE_CORPUS / "web" / "faq.html").read_bytes())
    build_index(corpus, root / "idx", BuildSettings(workers=1), embedder=HashingEmbedder())
    idx = index.open(root / "idx", embedder=HashingEmbedder())
    assert all(d.status is DocStatus.OK for d in idx.documents())
    assert b"\n" not in (corpus / "big.html").read_bytes() and idx.document("big.html").source_bytes > 50 * MIB
    return root / "idx", idx


@pytest.fixture(scope="module")
def client(large):
    return TestClient(create_app(large[0], embedder=HashingEmbedder()), base_url="http://127.0.0.1")


def _frames(page: str) -> list[str]:
    return [html.unescape(m) for m in FRAME.findall(page)]


def _marked(frame: str) -> str:
    return "".join(MARK.findall(frame))


def _bare(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.hostile("a 50 MB one-line HTML page: the search page for a query hitting it (k=5)",
                     "bounded: each hit shows its chunk in a window of at most 100,000 characters of source (0.5 MB "
                     "in all; 263 MB before)")
def test_the_search_page_shows_each_hit_in_a_bounded_window_of_the_page(client, large):
    _, idx = large
    page = client.get("/", params={"q": "Section 20000 overage webhook ledger", "k": 5})
    assert page.status_code == 200
    frames = _frames(page.text)
    assert len(frames) == 5 and len(page.content) < 5 * 3 * VIEW_SOURCE_CHARS
    hits = idx.search("Section 20000 overage webhook ledger", 5)
    assert {h.doc_id for h in hits} == {"big.html"}
    for hit, frame in zip(hits, frames):
        assert len(frame) < VIEW_SOURCE_CHARS + 2_000
        assert _bare(_marked(frame)) == _bare(hit.text)  # the whole span is marked inside the window
    assert page.text.count("A large page (52,") == 5 and page.text.count("Open the whole page") == 5


@pytest.mark.hostile("a 50 MB one-line HTML page: the chunk inspector for its first, middle and last chunks",
                     "bounded: the chunk in a window of the source and 41 of its 1,300 neighbours listed (0.1 MB; 53 MB before)")
def test_the_chunk_inspector_shows_a_window_and_a_few_neighbours(client, large):
    _, idx = large
    chunks = sorted(idx.chunks_of("big.html"), key=lambda c: c.seq)
    assert len(chunks) > 1000
    for chunk in (chunks[0], chunks[len(chunks) // 2], chunks[-1]):
        page = client.get("/inspect", params={"chunk_id": chunk.chunk_id})
        assert page.status_code == 200 and len(page.content) < 2 * VIEW_SOURCE_CHARS
        [frame] = _frames(page.text)
        assert _bare(_marked(frame)) == _bare(chunk.text)
        listed = re.findall(r'<ol class="chunk-list" start="(\d+)">(.*?)</ol>', page.text, re.S)
        start, items = int(listed[0][0]), listed[0][1].count("<li>")
        assert items <= 2 * VIEW_SIBLINGS + 1 and start == max(0, chunk.seq - VIEW_SIBLINGS)
        assert f"Chunks of this document ({len(chunks)})" in page.text


@pytest.mark.hostile("a chunk of 60,000 characters (one word the tokenizer cannot split)",
                     "bounded: its text cut to 20,000 characters with the count of the rest, on the inspector and the search page")
def test_a_huge_chunk_text_is_cut_on_every_page(client, large):
    _, idx = large
    [chunk] = idx.chunks_of("word.txt")
    assert len(chunk.text) > 60_000 and idx.search("A word and after it", 1)[0].chunk_id == chunk.chunk_id
    for page in (client.get("/inspect", params={"chunk_id": chunk.chunk_id}),
                 client.get("/", params={"q": "A word and after it", "k": 1})):
        assert page.status_code == 200 and len(page.content) < 4 * VIEW_CHUNK_CHARS
        assert f"[{len(chunk.text) - VIEW_CHUNK_CHARS:,} more characters]" in page.text
        assert chunk.text[:VIEW_CHUNK_CHARS] in page.text and chunk.text[: VIEW_CHUNK_CHARS + 1] not in page.text


@pytest.mark.hostile("a 50 MB one-line HTML page: its whole source requested (/documents/big.html/view)",
                     "bounded: streamed in blocks as it is defused, never built whole in memory")
def test_the_whole_page_comes_only_on_request_and_streamed(client, large):
    with client.stream("GET", "/documents/big.html/view") as response:
        assert response.status_code == 200 and "content-length" not in response.headers
        assert "sandbox" in response.headers["content-security-policy"]
        sizes = [len(block) for block in response.iter_bytes()]
    assert sum(sizes) > 50 * MIB and len(sizes) > 100


def test_a_page_under_the_limit_is_shown_whole(client, large):
    _, idx = large
    chunk = idx.chunks_of("small.html")[0]
    [frame] = _frames(client.get("/inspect", params={"chunk_id": chunk.chunk_id}).text)
    assert len(idx.decoded_source("small.html")) <= VIEW_SOURCE_CHARS
    assert "Open the whole page" not in frame and frame.rstrip().endswith("</html>")


@pytest.mark.spawns
@pytest.mark.hostile("a 50 MB one-line HTML page cited twice, far apart: `spanindex render` and the verify page",
                     "bounded: one window around each citation, marked, in one shared copy (0.3 MB)")
def test_a_report_citing_a_large_page_twice_carries_a_window_around_each(large, client, tmp_path):
    from index.citations.verify import verify_answer
    from schemas.answer_json import parse_answer
    from schemas.record_json import record_line

    index_dir, idx = large
    chunks = sorted(idx.chunks_of("big.html"), key=lambda c: c.seq)
    quotes = [(c, re.search(r"Section \d+: [a-z ]+\.", c.text).group()) for c in (chunks[10], chunks[-10])]
    answer = {"answer_id": "big", "claims": [
        {"claim_id": f"c{n}", "text": "t", "support": [{"chunk_id": c.chunk_id, "quote": q}]} for n, (c, q) in enumerate(quotes)
    ]}
    records, _ = verify_answer(idx, parse_answer(answer))
    assert all(r.citations[0].status.verified for r in records)
    path = tmp_path / "records.jsonl"
    path.write_text("".join(record_line(r) + "\n" for r in records))
    report = tmp_path / "report.html"
    run = spanindex("render", index_dir, path, "-o", report)
    assert run.returncode == 0, run.stderr
    text = report.read_text()
    assert len(text) < 4 * VIEW_SOURCE_CHARS
    shared = re.search(r'<script type="application/json" id="spanindex-html-sources">(.*?)</script>', text, re.S)
    [copy] = json.loads(shared.group(1)).values()
    assert copy.count(WINDOW_GAP) == 1 and all(q in copy for _, q in quotes)

    page = client.post("/verify", data={"answer": json.dumps(answer), "policy": "mark"})
    assert page.status_code == 200 and len(page.content) < 4 * VIEW_SOURCE_CHARS
    assert all(q in html.unescape(page.text) for _, q in quotes)


def _pages() -> list:
    return sorted((SAMPLE_CORPUS / "web").glob("*.html"))


@pytest.mark.parametrize("path", _pages(), ids=lambda p: p.name)
def test_a_window_starts_where_the_page_is_character_data(path):
    """Tokens from a window's start are those of the whole page from there: the window defuses alike."""
    doc = parse_html(path.read_bytes(), path.name)
    source_map = HtmlSourceMap.from_table(html_map_table(doc.doc_id, doc.doc_version, doc.html_runs))
    whole = list(Tokenizer(doc.decoded_source))
    for position in range(0, len(doc.decoded_source), 37):
        start = source_map.data_position(position)
        if start is None:  # no text after it: a window never starts there
            continue
        tail = [t for t in whole if t[1] >= start]
        clipped = [t for t in whole if t[1] < start < t[2]]
        assert [t[0] for t in clipped] in ([], [TEXT]), (position, start, clipped)  # only a text token is entered
        from_window = list(Tokenizer(doc.decoded_source, start))
        if clipped:
            assert from_window.pop(0) == (TEXT, start, clipped[0][2])
        assert from_window == tail, (position, start)
