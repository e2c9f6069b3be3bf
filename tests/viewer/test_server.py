"""The viewer without a browser: the JSON API, document routes, limits and headers (FastAPI
TestClient), and what the pages and the report are made of (escaping, defused sources)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from html import unescape
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

import index
from index.cli import main
from index.citations.verify import resolve
from index.viewer.marked_source import HIT_ID, marked_html
from index.viewer.server.app import create_app
from index.viewer.source_views import ViewBuilder, ViewKind
from index.viewer.templating import script_hash, script_json
from schemas.record_json import read_records

from conftest import HTML_QUOTE, PDF_QUOTE, chunk_with
from doubles import HashingEmbedder

HOSTILE_CLAIM = 'Costs <img src=x onerror="window.top.__pwned=1"> and </script><script>window.top.__pwned=2</script> apply.'
TRAVERSALS = [
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%252e%252e%252fetc%252fpasswd",
    "/etc/passwd",
    "pricing/../../../etc/passwd",
    "no-such-file.pdf",
    "bad/encrypted.pdf",  # in the index, but never parsed: nothing to serve
]


@pytest.fixture(scope="module")
def idx(sample_index_test_model):
    return index.open(sample_index_test_model)


@pytest.fixture(scope="module")
def client(sample_index_test_model):
    return TestClient(create_app(sample_index_test_model, embedder=HashingEmbedder()), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def answer(idx) -> dict:
    return {
        "answerId": "a-test",
        "claims": [
            {"claimId": "c1", "text": "Growth overage is $0.12 per 1,000 calls.",
             "support": [{"chunkId": chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE), "quote": PDF_QUOTE}]},
            {"claim_id": "c2", "text": "Big webhook events become links.",
             "support": [{"chunk_id": chunk_with(idx, "web/faq.html", HTML_QUOTE), "quote": HTML_QUOTE},
                         {"chunk_id": chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE), "quote": PDF_QUOTE}]},
            {"claim_id": "c3", "text": HOSTILE_CLAIM,
             "support": [{"chunk_id": "pricing/rate-card.pdf#tok:999999", "quote": "a quote of a chunk that is not there"},
                         {"chunk_id": chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE),
                          "quote": "Scale customers receive free pizza every Friday."}]},
            {"claim_id": "c4", "text": "I found no source for the refund policy.", "support": []},
        ],
    }


# -- the JSON API ---------------------------------------------------------------------------------


def test_search_api_returns_hits_whose_text_is_the_exact_span(client, idx):
    response = client.get("/api/search", params={"q": "overage per 1,000 API calls", "k": 3})
    assert response.status_code == 200
    body = response.json()
    assert body["k"] == 3 and body["generation"] == idx.generation.name
    assert [h["rank"] for h in body["hits"]] == [1, 2, 3]
    for hit in body["hits"]:
        assert hit["text"] == idx.doc_text(hit["doc_version"])[hit["start"] : hit["end"]]
        chunk = idx.chunk(hit["chunk_id"])
        assert (hit["title"], hit["headings"]) == (chunk.title, list(chunk.headings))  # the section it lies in
    assert any(hit["headings"] for hit in body["hits"])


@pytest.mark.hostile("GET /api/search: an empty or missing query, k of 0 or 1000", "HTTP 4xx: 422")
@pytest.mark.parametrize("params", [{"q": ""}, {"q": "x", "k": 0}, {"q": "x", "k": 1000}, {"k": 3}])
def test_search_api_refuses_an_empty_query_or_k_out_of_range(client, params):
    assert client.get("/api/search", params=params).status_code == 422


def test_verify_api_returns_one_located_record_per_claim(client, answer):
    response = client.post("/api/verify", json=answer)
    assert response.status_code == 200
    body = response.json()
    assert body["answer_id"] == "a-test" and body["policy"] == "mark"
    records = {r["claim_id"]: r for r in body["records"]}
    assert list(records) == ["c1", "c2", "c3", "c4"]
    pdf = records["c1"]["citations"][0]
    assert pdf["status"] == "exact" and pdf["quote"] == PDF_QUOTE and pdf["rects"] and pdf["locator"].startswith("#page=")
    html = records["c2"]["citations"][0]
    assert html["status"] == "exact" and html["src_end"] > html["src_start"] and html["locator"].startswith("#:~:text=")
    assert [c["status"] for c in records["c3"]["citations"]] == ["unknown_chunk", "quote_not_found"]
    assert [r["verdict"] for r in records.values()] == ["verified", "verified", "unverified", "unsupported"]
    assert body["summary"]["by_status"] == {"exact": 3, "quote_not_found": 1, "unknown_chunk": 1}


def test_verify_api_policy_drop_marks_failed_claims_dropped(client, answer):
    records = client.post("/api/verify", params={"policy": "drop"}, json=answer).json()["records"]
    assert [r["dropped"] for r in records] == [False, False, True, True]


@pytest.mark.hostile("POST /api/verify: JSON that is not an answer (a list, claims not a list, no claims, a string)", "HTTP 4xx: 422, JSON {detail}")
@pytest.mark.parametrize("body", [[], {"claims": "nope"}, {"answer_id": "x"}, "just a string"])
def test_verify_api_refuses_what_is_not_an_answer(client, body):
    assert client.post("/api/verify", json=body).status_code == 422


def test_chunk_api_gives_text_offsets_tokens_and_line_rectangles(client, idx):
    chunk_id = chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE)
    response = client.get("/api/chunks/" + chunk_id.replace("#", "%23"))
    assert response.status_code == 200
    body = response.json()
    chunk = body["chunk"]
    assert chunk["chunk_id"] == chunk_id
    assert chunk["text"] == idx.doc_text(chunk["doc_version"])[chunk["start"] : chunk["end"]]
    assert chunk["rects"] and all(chunk["page_start"] <= r["page"] <= chunk["page_end"] for r in chunk["rects"])
    assert len(body["tokens"]) == chunk["n_tokens"]
    words = [t for t in body["tokens"] if not t["special"]]
    assert all(chunk["text"][t["char_start"] : t["char_end"]].strip() for t in words)


def test_chunk_api_gives_an_html_chunk_its_source_range(client, idx):
    chunk_id = chunk_with(idx, "web/faq.html", HTML_QUOTE)
    chunk = client.get("/api/chunks/" + chunk_id.replace("#", "%23")).json()["chunk"]
    assert chunk["rects"] == [] and 0 <= chunk["src_start"] < chunk["src_end"]


@pytest.mark.hostile("an unknown chunk id (API and inspector)", "HTTP 4xx: 404")
@pytest.mark.parametrize("path", ["/api/chunks/nope", "/api/chunks/pricing/rate-card.pdf%23tok:999999", "/inspect?chunk_id=nope"])
def test_an_unknown_chunk_is_404(client, path):
    assert client.get(path).status_code == 404


def test_openapi_lists_the_api_with_its_response_models(client):
    schema = client.get("/openapi.json").json()
    assert {"/api/search", "/api/verify", "/api/chunks/{chunk_id}"} <= set(schema["paths"])
    ok = {path: ops for path, ops in schema["paths"].items()}
    refs = {
        "/api/search": ok["/api/search"]["get"],
        "/api/verify": ok["/api/verify"]["post"],
        "/api/chunks/{chunk_id}": ok["/api/chunks/{chunk_id}"]["get"],
    }
    for path, op in refs.items():
        assert "$ref" in op["responses"]["200"]["content"]["application/json"]["schema"], path
    assert {"SearchHit", "ClaimRecord", "Citation", "Rect", "ChunkPlace", "ChunkToken"} <= set(schema["components"]["schemas"])
    assert "claims" in refs["/api/verify"]["requestBody"]["content"]["application/json"]["schema"]["properties"]


def test_the_served_json_schemas_hold_for_what_the_api_takes_and_writes(client, answer):
    import jsonschema

    answer_schema = client.get("/api/schemas/answer").json()
    record_schema = client.get("/api/schemas/record").json()
    snake = json.loads(json.dumps(answer).replace('"answerId"', '"answer_id"').replace('"claimId"', '"claim_id"')
                       .replace('"chunkId"', '"chunk_id"'))
    jsonschema.validate(snake, answer_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"claims": [{"text": "t", "support": [{"chunk_id": "a#tok:0"}]}]}, answer_schema)
    records = client.post("/api/verify", json=answer).json()["records"]
    for record in records:
        jsonschema.validate(record, record_schema)
    citation = records[0]["citations"][0]
    for broken in ({**citation, "quote": 5}, {**citation, "media_type": "application/x-unknown"}, {**citation, "drift": None}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**records[0], "citations": [broken]}, record_schema)
    components = client.get("/openapi.json").json()["components"]["schemas"]
    as_component = json.dumps(record_schema["$defs"]["Citation"]["properties"]).replace("#/$defs/", "#/components/schemas/")
    assert components["Citation"]["properties"] == json.loads(as_component)  # /openapi.json says the same


# -- documents: served by id from the index, never by path ---------------------------------------


@pytest.mark.hostile("document routes with traversal ids (../, encoded, double-encoded, absolute), unknown ids, a document never parsed", "HTTP 4xx: 404; only ids in the index are served")
@pytest.mark.parametrize("doc_id", TRAVERSALS)
@pytest.mark.parametrize("route", ["file", "view", "pages/1.png"])
def test_document_routes_answer_only_ids_in_the_index(client, doc_id, route):
    response = client.get(f"/documents/{doc_id}/{route}")
    assert response.status_code == 404
    assert "root:" not in response.text


@pytest.mark.hostile("a traversal path sent verbatim (/documents/../../etc/passwd/file)", "HTTP 4xx: 404")
@pytest.mark.parametrize("raw_path", [b"/documents/../../etc/passwd/file", b"/documents/pricing/../../../../etc/passwd/pages/1.png"])
def test_a_traversal_path_sent_verbatim_reaches_the_route_and_is_404(client, raw_path):
    # HTTP clients remove dot segments before sending; a hostile one need not, and uvicorn keeps them.
    assert _asgi_get(client.app, raw_path) == 404


def _asgi_get(app, raw_path: bytes) -> int:
    status = {}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            status["code"] = message["status"]

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": unquote(raw_path.decode()), "raw_path": raw_path, "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }
    asyncio.run(app(scope, receive, send))
    return status["code"]


def test_a_page_image_is_rendered_once_then_served_from_the_cache(client, idx):
    page = idx.pdf_pages("reports/rotated-and-scanned.pdf")[1]  # rotated 90 degrees: rendered as displayed
    first = client.get("/documents/reports/rotated-and-scanned.pdf/pages/2.png")
    second = client.get("/documents/reports/rotated-and-scanned.pdf/pages/2.png")
    assert first.status_code == second.status_code == 200
    assert first.content[:8] == b"\x89PNG\r\n\x1a\n" and first.content == second.content
    assert 'desc="pymupdf"' in first.headers["server-timing"] and 'desc="cached"' in second.headers["server-timing"]
    width, height = int.from_bytes(first.content[16:20], "big"), int.from_bytes(first.content[20:24], "big")
    assert (width, height) == (round(page.width * 1.5), round(page.height * 1.5))


@pytest.mark.hostile("a page number outside the PDF (0, 5, 99)", "HTTP 4xx: 404")
@pytest.mark.parametrize("page", [0, 5, 99])
def test_a_page_outside_the_document_is_404(client, page):
    assert client.get(f"/documents/pricing/rate-card.pdf/pages/{page}.png").status_code == 404


@pytest.mark.hostile('an HTML original requested from the server', "handled: served as text/plain under a sandbox CSP, never rendered from the viewer's origin")
def test_an_html_original_is_served_as_text_in_a_sandbox(client):
    response = client.get("/documents/web/faq.html/file")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["content-security-policy"].startswith("sandbox")
    stored = client.get("/documents/web/faq.html/view")
    assert stored.headers["content-security-policy"].startswith("sandbox") and "<script" not in stored.text


def test_a_pdf_original_is_served_whole_for_the_browser_pdf_viewer(client, idx):
    response = client.get("/documents/pricing/rate-card.pdf/file")
    assert response.status_code == 200 and response.headers["content-type"] == "application/pdf"
    assert response.content == idx.source_path("pricing/rate-card.pdf").read_bytes()
    assert "object-src 'self'" in response.headers["content-security-policy"]


# -- limits and headers ---------------------------------------------------------------------------


@pytest.mark.hostile("a request body over 2 MB, declared or streamed (API and form)", "HTTP 4xx: 413")
def test_an_oversized_body_is_413_whether_declared_or_streamed(client):
    body = b'{"claims": [], "pad": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    declared = client.post("/api/verify", content=body, headers={"content-type": "application/json"})
    assert declared.status_code == 413

    def chunks():
        for i in range(0, len(body), 256 * 1024):
            yield body[i : i + 256 * 1024]

    streamed = client.post("/api/verify", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert client.post("/verify", files={"answer_file": ("a.json", body)}).status_code == 413


@pytest.mark.parametrize(
    "method, path",
    [("get", "/"), ("get", "/?q=overage"), ("get", "/verify"), ("get", "/inspect"), ("get", "/api/search?q=overage"),
     ("get", "/openapi.json"), ("get", "/static/viewer.js"), ("get", "/documents/pricing/rate-card.pdf/pages/1.png"),
     ("get", "/documents/../../etc/passwd/file"), ("get", "/api/chunks/nope"), ("post", "/api/verify")],
)
def test_every_response_carries_a_content_security_policy(client, method, path):
    response = getattr(client, method)(path, **({"json": {"claims": []}} if method == "post" else {}))
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.hostile("a foreign Host header (DNS rebinding)", "HTTP 4xx: 400")
def test_a_foreign_host_header_is_refused(sample_index_test_model):
    # A page whose DNS name was rebound to 127.0.0.1 sends its own name as Host.
    response = TestClient(create_app(sample_index_test_model), base_url="http://evil.example").get("/api/search?q=x")
    assert response.status_code == 400


# -- pages: untrusted text stays text -------------------------------------------------------------


@pytest.mark.hostile("a claim with HTML and script injection, on the verify page", "handled: escaped, shown as text")
def test_the_verify_page_escapes_claim_text_and_shows_every_verdict(client, answer):
    response = client.post("/verify", data={"answer": json.dumps(answer), "policy": "mark"})
    assert response.status_code == 200
    html = response.text
    assert "<img src=x" not in html and "<script>window" not in html
    assert "&lt;img src=x onerror=" in html
    assert "badge--unverified" in html and "badge--abstention" in html
    assert "unknown_chunk" in html and "quote_not_found" in html
    assert html.count('class="cite ') == 5


def test_the_verify_page_says_when_the_policy_refuses_the_answer(client, answer):
    assert "Answer refused by policy" in client.post("/verify", data={"answer": json.dumps(answer), "policy": "refuse"}).text
    assert "Answer refused by policy" not in client.post("/verify", data={"answer": json.dumps(answer), "policy": "mark"}).text


@pytest.mark.hostile("the verify form: text that is not JSON", "HTTP 4xx: 422, the form again with the reason")
def test_the_verify_page_reports_json_it_cannot_read(client):
    response = client.post("/verify", data={"answer": "{not json", "policy": "mark"})
    assert response.status_code == 422 and "not valid JSON" in response.text


def test_search_and_inspector_pages_show_spans_in_their_sources(client, idx):
    search = client.get("/", params={"q": "overage per 1,000 API calls", "k": 5}).text
    assert search.count('class="hit"') == 5 and 'class="hl"' in search
    chunk_id = chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE)
    page = client.get("/inspect", params={"chunk_id": chunk_id}).text
    assert "/documents/pricing/rate-card.pdf/pages/" in page and 'class="tokens"' in page
    chunk = client.get("/api/chunks/" + chunk_id.replace("#", "%23")).json()["chunk"]
    assert page.count('class="hl"') == len(chunk["rects"])
    # The form feed between two pages is drawn, not swallowed.
    assert chunk["page_start"] < chunk["page_end"] and "\f" in chunk["text"]
    assert "\u240c" in page and "\f" not in page


# -- the defused HTML source and embedded JSON ---------------------------------------------------


@pytest.mark.hostile("an HTML source with scripts, event handlers, javascript: URLs and remote resources", "handled: all removed from what the viewer shows")
def test_a_defused_source_keeps_no_script_handler_active_url_or_remote_resource():
    source = (
        '<p onclick="x()">a <a href="&#106;avascript:alert(1)">b</a> <a href=" java\tscript:x">c</a>'
        '<img src=x onerror=alert(1)><script>alert(2)</script><svg onload=alert(3)><set attributeName=href to=javascript:x />'
        '<animate values="javascript:x"/></svg><iframe srcdoc="<script>alert(4)</script>"></iframe>'
        "<noscript><img src=x onerror=alert(5)></noscript><base href=javascript:x//><meta http-equiv=refresh content=0>"
        '<object data="javascript:x"></object><form action="javascript:x"><button formaction=javascript:x>go</button></form>'
        '<img src="https://tracker.example/pixel.gif"><video poster=//cdn.example/p.jpg></video><img src="data:image/png;base64,AAAA"></p>'
    )
    out = marked_html(source, []).lower()
    assert "tracker.example" not in out and "cdn.example" not in out, "the stored copy would reach for the network"
    assert 'src="data:image/png;base64,aaaa"' in out
    for needle in ("onclick", "onerror", "onload", "<script", "javascript", "<iframe", "srcdoc", "<noscript", "<base",
                   "<meta", "<object", "<set", "<animate"):
        assert needle not in out, needle


def test_marks_cover_exactly_the_source_range_even_across_elements():
    source = "<p>Invoices are issued on the <b><i>first business day</i></b> of each &amp; every month.</p>"
    start = source.index("issued")
    end = source.index("every") + len("every")
    out = marked_html(source, [(start, end)])
    marked = "".join(re.findall(r"<mark[^>]*>(.*?)</mark>", out))
    assert marked == "issued on the first business day of each &amp; every"
    assert out.count(f'id="{HIT_ID}"') == 1 and out.count("<mark") == 3
    # A cut inside a character reference widens to the whole reference.
    inside = source.index("&amp;") + 2
    assert "&amp;</mark>" in marked_html(source, [(start, inside)])


@pytest.mark.hostile("text holding `</script>` embedded as JSON in a page", "handled: escaped; it cannot close the element")
def test_json_in_a_page_cannot_close_its_script_element():
    encoded = str(script_json({"text": "</script><script>alert(1)</script><!--", "line": "\u2028"}))
    assert "<" not in encoded and ">" not in encoded and "\u2028" not in encoded
    assert json.loads(encoded)["text"].startswith("</script>")


def test_a_citation_of_a_changed_document_says_so_instead_of_drawing_stale_boxes(idx):
    citation = resolve(idx, chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE), PDF_QUOTE)
    assert ViewBuilder(idx).citation(citation).kind is ViewKind.PDF
    stale = ViewBuilder(idx).citation(dataclasses.replace(citation, doc_version="sha256:" + "0" * 64))
    assert stale.kind is ViewKind.NONE and not stale.pages and "changed" in stale.note


# -- the self-contained report --------------------------------------------------------------------


def test_the_report_is_self_contained_and_allows_only_its_own_script(answer, idx, tmp_path):
    answer_path, records_path, report_path = tmp_path / "a.json", tmp_path / "r.jsonl", tmp_path / "report.html"
    answer_path.write_text(json.dumps(answer))
    root = str(idx.paths.root)
    assert main(["verify", root, str(answer_path), "-o", str(records_path), "--policy", "drop"]) == 0
    assert main(["render", root, str(records_path), "-o", str(report_path)]) == 0
    html = report_path.read_text()
    scripts = re.findall(r"<script>(.*?)</script>", html, re.DOTALL)
    assert len(scripts) == 1
    csp = unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1))
    assert f"script-src {script_hash(scripts[0])}" in csp and "default-src 'none'" in csp
    # Nothing loads from the network; the one outside address is a link the reader may follow.
    assert not re.search(r'\ssrc="(?:https?:)?//|<link[^>]+href="(?:https?:)?//', html), "the report reaches for the network"
    assert [unescape(url) for url in re.findall(r'href="(https?:[^"]*)"', html)] == [
        f"https://help.northwind.example/faq?lang=en&v=2{c['locator']}"
        for line in records_path.read_text().splitlines() for c in json.loads(line)["citations"]
        if c["media_type"] == "text/html" and c["status"] == "exact"
    ]
    images = json.loads(re.search(r'id="spanindex-page-images">(.*?)</script>', html, re.DOTALL).group(1))
    cited_pages = {(c.doc_id, r.page) for _, rec, _ in read_records(records_path) for c in rec.citations for r in c.rects}
    assert len(images) == len(cited_pages) == 1 and all(v.startswith("data:image/png;base64,") for v in images.values())
    assert "dropped by policy · unverified" in html and "dropped by policy · abstention" in html
    assert "&lt;img src=x" in html and "<img src=x" not in html


def test_a_report_with_a_source_base_links_the_live_html_page_at_its_text_fragment(answer, idx):
    from index.citations.verify import verify_answer
    from index.viewer.report import render_report
    from schemas.answer_json import parse_answer

    records, _ = verify_answer(idx, parse_answer(answer))
    html_citation = records[1].citations[0]
    assert html_citation.doc_id == "web/faq.html" and html_citation.locator.startswith("#:~:text=")
    report = render_report(idx, records, source_base="https://docs.example.com/corpus/")
    assert f'href="https://docs.example.com/corpus/web/faq.html{html_citation.locator}"' in unescape(report)
    pdf_page = records[0].citations[0].page
    assert f'href="https://docs.example.com/corpus/pricing/rate-card.pdf#page={pdf_page}"' in report
    assert html_citation.url == "https://help.northwind.example/faq?lang=en&v=2" + html_citation.locator
    assert f'href="{html_citation.url}"' in unescape(report), "no link to the live page"
    assert "docs.example.com" not in render_report(idx, records)  # without one, only the stored copies


@pytest.mark.hostile("a records line with fields of the wrong type (render)", "record status: skipped with its reason, the rest rendered")
def test_a_record_with_fields_of_the_wrong_type_is_skipped_not_rendered(answer, idx, tmp_path):
    answer_path, records_path, report_path = tmp_path / "a.json", tmp_path / "r.jsonl", tmp_path / "report.html"
    answer_path.write_text(json.dumps(answer))
    root = str(idx.paths.root)
    assert main(["verify", root, str(answer_path), "-o", str(records_path)]) == 0
    good = [json.loads(line) for line in records_path.read_text().splitlines()]
    broken = []
    for field, value in [("doc_start", "12"), ("quote", 5), ("page", True), ("rects", "all of it")]:
        record = json.loads(json.dumps(good[0]))
        record["citations"][0][field] = value
        broken.append(record)
    records_path.write_text("\n".join(json.dumps(r) for r in [*good, *broken]) + "\n")
    errors = [error for _, record, error in read_records(records_path) if record is None]
    assert len(errors) == 4 and all("not a citation record" in e for e in errors)
    assert main(["render", root, str(records_path), "-o", str(report_path)]) == 1  # skipped lines make it fail
    assert report_path.read_text().count('class="claim claim--') == len(good)


def test_the_server_follows_a_reindex_to_the_new_generation(tmp_path):
    from ingest.build import BuildSettings, build_index

    corpus, index_dir = tmp_path / "corpus", tmp_path / "index"
    corpus.mkdir()
    (corpus / "note.md").write_text("# Note\n\nThe first version says the limit is 40 requests.\n")
    build_index(corpus, index_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    local = TestClient(create_app(index_dir, embedder=HashingEmbedder()), base_url="http://127.0.0.1")
    first = local.get("/api/search", params={"q": "limit"}).json()
    assert "40 requests" in first["hits"][0]["text"]

    (corpus / "note.md").write_text("# Note\n\nThe second version says the limit is 90 requests.\n")
    for _ in range(4):  # past the retention of 3: the first generation is deleted
        build_index(corpus, index_dir, BuildSettings(workers=1, full=True), embedder=HashingEmbedder())
    assert not (index_dir / "generations" / first["generation"]).exists()
    second = local.get("/api/search", params={"q": "limit"}).json()
    assert second["generation"] != first["generation"]
    assert "90 requests" in second["hits"][0]["text"]
    chunk = local.get("/api/chunks/" + second["hits"][0]["chunk_id"].replace("#", "%23")).json()
    assert "90 requests" in chunk["chunk"]["text"]
    assert "90 requests" in local.get("/inspect", params={"chunk_id": second["hits"][0]["chunk_id"]}).text


def test_a_report_carries_each_cited_html_page_once_with_marks_for_every_citation(idx):
    from index.citations.verify import verify_answer
    from index.viewer.report import render_report
    from schemas.answer_json import parse_answer

    quotes = [HTML_QUOTE, "Audit logs are kept for 400 days on the Scale plan.", "Larger events are sent as a link"]
    answer = {"answer_id": "twice", "claims": [
        {"claim_id": f"c{i}", "text": "t", "support": [{"chunk_id": chunk_with(idx, "web/faq.html", q), "quote": q}]}
        for i, q in enumerate(quotes)
    ]}
    records, _ = verify_answer(idx, parse_answer(answer))
    assert all(r.citations[0].status.verified for r in records)
    report = render_report(idx, records)
    assert report.count("Northwind Cloud FAQ") == 1, "the page is copied per citation"
    assert re.findall(r'data-srcdoc-ref="(h\d+)" data-cite="([^"]+)"', report) == [("h0", "a0-c1"), ("h0", "a0-c2"), ("h0", "a0-c3")]
    sources = json.loads(re.search(r'id="spanindex-html-sources">(.*?)</script>', report, re.DOTALL).group(1))
    page = sources["h0"]
    # Citation 3 lies inside citation 1: their common text is one mark that names both.
    marks = re.findall(r'<mark class="spanindex-hit" data-cite="([^"]+)">(.*?)</mark>', page)
    assert ("a0-c1 a0-c3", "Larger events are sent as a link") in marks
    assert "".join(text for keys, text in marks if "a0-c2" in keys.split()) == "Audit logs are kept for 400 days on the Scale plan."
