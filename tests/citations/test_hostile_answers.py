"""Malformed and hostile answers and citation records: the CLI ends in one clear line (exit 2 for
input it cannot use), or gives the bad claim, citation or line a status of its own and uses the
rest; the server answers 422 with a JSON error and one log line, never 500. What is written out
is always valid UTF-8 JSON."""

from __future__ import annotations

import html
import json
import logging
import os

import pytest
from fastapi.testclient import TestClient

import index
from index.viewer.server.app import create_app
from schemas.limits import MAX_CLAIMS, MAX_QUOTE_CHARS, MIB

from conftest import HTML_QUOTE, PDF_QUOTE, chunk_with, spanindex
from doubles import HashingEmbedder

DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE_INTEGER = b'{"answer_id": ' + b"9" * 5001 + b', "claims": []}'
# The answers of issue 10 that ended in tracebacks, and more of their kind: (bytes, what the error says).
UNREADABLE = {
    "nested 100,000 deep": (DEEP, "JSON nested 100,000 levels deep; the limit is 64"),
    "an integer of 5,001 digits": (HUGE_INTEGER, "an integer of 5,001 digits; the limit is 20"),
    "NaN": (b'{"claims": [], "score": NaN}', "NaN is not a JSON number"),
    "a number out of range (1e999)": (b'{"claims": [], "score": 1e999}', "the number 1e999 is out of range"),
    "Latin-1 bytes": (b'{"claims": [], "answer_id": "caf\xe9"}', "not UTF-8 (byte 32: b'\\xe9')"),
    "truncated JSON": (b'{"claims": [{"claim_id": "c1", "te', "not valid JSON: Unterminated string"),
}


def _unreadable(where: str, outcome: str):
    return [
        pytest.param(*UNREADABLE[name], id=name, marks=pytest.mark.hostile(f"{where}: {name}", f"{outcome}, '{UNREADABLE[name][1]}'"))
        for name in UNREADABLE
    ]


@pytest.fixture(scope="module")
def idx(sample_index_test_model):
    return index.open(sample_index_test_model)


def _one_line_error(run, path, message: str) -> None:
    """The run ended with exit 2 and one line on stderr that names ``path`` and says ``message``."""
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(f"spanindex: {path}"), run.stderr
    assert message in run.stderr
    assert run.stdout == ""


def _surrogate_answer(idx) -> bytes:
    """Three claims: a lone surrogate in one claim's text, in another's quote, and a clean one."""
    pdf_chunk, html_chunk = chunk_with(idx, "pricing/rate-card.pdf", PDF_QUOTE), chunk_with(idx, "web/faq.html", HTML_QUOTE)
    # Written by hand: json.dumps would refuse nothing, but the escapes must be exactly these.
    return (
        '{"answer_id": "a\\ud800", "claims": ['
        '{"claim_id": "broken-text", "text": "Overage \\ud83d costs money.", '
        f'"support": [{{"chunk_id": "{pdf_chunk}", "quote": "{PDF_QUOTE}"}}]}}, '
        '{"claim_id": "broken-quote", "text": "Webhooks.", '
        f'"support": [{{"chunk_id": "{html_chunk}", "quote": "Larger events are sent \\udfff"}}, '
        f'{{"chunk_id": "{html_chunk}", "quote": "{HTML_QUOTE}"}}]}}, '
        '{"claim_id": "clean", "text": "Overage.", '
        f'"support": [{{"chunk_id": "{pdf_chunk}", "quote": "{PDF_QUOTE}"}}]}}]}}'
    ).encode("ascii")


def _strict_utf8_lines(data: bytes) -> list[dict]:
    """Each line as JSON, the bytes decoded strictly: a lone surrogate written out would fail here."""
    return [json.loads(line) for line in data.decode("utf-8", "strict").splitlines()]


# -- spanindex verify ---------------------------------------------------------------------------------


@pytest.mark.spawns
@pytest.mark.parametrize("content, message", _unreadable("answer", "CLI error: exit 2"))
def test_verify_refuses_unreadable_json_in_one_line(sample_index_test_model, tmp_path, content, message):
    answer = tmp_path / "answer.json"
    answer.write_bytes(content)
    _one_line_error(spanindex("verify", sample_index_test_model, answer), answer, message)


@pytest.mark.spawns
@pytest.mark.parametrize("make, message", [
    pytest.param(lambda p: p.mkdir(), "is a folder, not an answer file", id="folder",
                 marks=pytest.mark.hostile("answer: a folder given as the answer file", "CLI error: exit 2, 'is a folder'")),
    pytest.param(lambda p: None, "no such file", id="missing",
                 marks=pytest.mark.hostile("answer: a file that does not exist", "CLI error: exit 2, 'no such file'")),
])
def test_verify_refuses_an_answer_path_that_is_no_file_in_one_line(sample_index_test_model, tmp_path, make, message):
    answer = tmp_path / "answer.json"
    make(answer)
    _one_line_error(spanindex("verify", sample_index_test_model, answer), answer, message)


@pytest.mark.spawns
@pytest.mark.hostile("answer: lone surrogates (\\ud800) in a claim's text, a quote and the answer id",
                     "record status: that claim or citation 'invalid' with the reason, U+FFFD written in its place; "
                     "the rest verified; records (JSON Lines and W3C) valid UTF-8")
def test_verify_writes_lone_surrogates_as_replacement_characters_and_marks_them_invalid(
    sample_index_test_model, idx, tmp_path
):
    answer = tmp_path / "answer.json"
    answer.write_bytes(_surrogate_answer(idx))
    out = tmp_path / "records.jsonl"
    run = spanindex("verify", sample_index_test_model, answer, "-o", out)
    assert run.returncode == 0, run.stderr
    records = {r["claim_id"]: r for r in _strict_utf8_lines(out.read_bytes())}
    assert records["broken-text"]["verdict"] == "invalid" and records["broken-text"]["text"] == "Overage \ufffd costs money."
    assert "lone surrogate (U+D83D) at character 8" in records["broken-text"]["error"]
    bad_quote, good_quote = records["broken-quote"]["citations"]
    assert bad_quote["status"] == "invalid" and bad_quote["model_quote"] == "Larger events are sent \ufffd"
    assert "lone surrogate (U+DFFF)" in bad_quote["error"]
    assert good_quote["status"] == "exact" and records["broken-quote"]["verdict"] == "verified"
    assert records["clean"]["verdict"] == "verified"
    assert {r["answer_id"] for r in records.values()} == {"a\ufffd"}

    w3c = spanindex("verify", sample_index_test_model, answer, "--format", "w3c")
    assert w3c.returncode == 0, w3c.stderr
    annotations = _strict_utf8_lines(w3c.stdout.encode("utf-8"))
    assert {a["target"]["selector"][0]["exact"] for a in annotations} == {PDF_QUOTE, HTML_QUOTE}


@pytest.mark.spawns
@pytest.mark.hostile("resolve: a quote argument that is not UTF-8 (a \\xff byte)", "CLI error: exit 2, 'the quote is not UTF-8 text'")
def test_resolve_refuses_a_quote_that_is_not_utf8(sample_index_test_model, idx):
    run = spanindex("resolve", sample_index_test_model, chunk_with(idx, "web/faq.html", HTML_QUOTE), os.fsdecode(b"Larger \xff events"))
    assert run.returncode == 2 and run.stderr == "spanindex: the quote is not UTF-8 text\n"


# -- spanindex check and render -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_records(sample_index_test_model, idx, tmp_path_factory) -> bytes:
    from index.citations.verify import verify_answer
    from schemas.answer_json import parse_answer
    from schemas.record_json import record_line

    answer = parse_answer({"answer_id": "a", "claims": [
        {"claim_id": "c1", "text": "t", "support": [{"chunk_id": chunk_with(idx, "web/faq.html", HTML_QUOTE), "quote": HTML_QUOTE}]},
    ]})
    records, _ = verify_answer(idx, answer)
    return "".join(record_line(r) + "\n" for r in records).encode("utf-8")


BAD_RECORD_LINES = [DEEP, HUGE_INTEGER, b'{"answer_id": "a", "claim_id": "c\\ud800", "text": "t", "verdict": "verified"}',
                    b"\xff\xfe not even UTF-8", b'{"answer_id": 5}', b"[1, 2"]


@pytest.mark.spawns
@pytest.mark.parametrize("command", ["check", "render"])
@pytest.mark.hostile("records: a folder given as the records file", "CLI error: exit 2, 'is a folder, not a records file'")
def test_check_and_render_refuse_a_folder_in_one_line(sample_index_test_model, tmp_path, command):
    extra = ["-o", tmp_path / "out.html"] if command == "render" else []
    _one_line_error(spanindex(command, sample_index_test_model, tmp_path, *extra), tmp_path, "is a folder, not a records file")


@pytest.mark.spawns
@pytest.mark.parametrize("command", ["check", "render"])
@pytest.mark.hostile("records: a file whose every line is corrupt (too deep, a huge integer, a lone surrogate, "
                     "not UTF-8, wrong types, not JSON)", "CLI error: exit 2, each line skipped with its reason, "
                     "then 'no usable citation record'")
def test_check_and_render_exit_2_when_no_line_is_a_record(sample_index_test_model, tmp_path, command):
    records = tmp_path / "records.jsonl"
    records.write_bytes(b"\n".join(BAD_RECORD_LINES) + b"\n")
    output = tmp_path / "out"
    run = spanindex(command, sample_index_test_model, records, "-o", output)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == [f"skipped line {n}" for n in range(1, 7)]
    assert "nested 100,000 levels deep" in lines[0] and "5,001 digits" in lines[1]
    assert "claim_id is not Unicode text: a lone surrogate (U+D800)" in lines[2] and "not UTF-8" in lines[3]
    assert lines[-1] == f"spanindex: {records}: no usable citation record (6 line(s), none a record)"
    assert "Traceback" not in run.stderr and not output.exists()


@pytest.mark.spawns
@pytest.mark.hostile("records: corrupt lines among good ones (check and render)",
                     "record status: each bad line skipped with its reason, the good records checked and rendered")
def test_check_and_render_skip_bad_lines_and_use_the_rest(sample_index_test_model, good_records, tmp_path):
    records = tmp_path / "records.jsonl"
    records.write_bytes(BAD_RECORD_LINES[2] + b"\n" + good_records + DEEP + b"\n")
    repaired = tmp_path / "repaired.jsonl"
    check = spanindex("check", sample_index_test_model, records, "-o", repaired)
    assert check.returncode == 0, check.stderr
    assert "1 citations checked: ok 1" in check.stdout
    assert [line.split(":")[0] for line in check.stderr.splitlines()] == ["skipped line 1", "skipped line 3"]
    assert [r["claim_id"] for r in _strict_utf8_lines(repaired.read_bytes())] == ["c1"]

    report = tmp_path / "report.html"
    render = spanindex("render", sample_index_test_model, records, "-o", report)
    assert render.returncode == 1 and "1 claims, 1 citations" in render.stdout  # 1: lines were skipped
    report.read_bytes().decode("utf-8", "strict")


# -- the server ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(sample_index_test_model):
    return TestClient(create_app(sample_index_test_model, embedder=HashingEmbedder()), base_url="http://127.0.0.1")


def _refused_once(caplog, response, status: int = 422) -> None:
    """The answer was refused with ``status`` and the server logged exactly one line, no traceback."""
    assert response.status_code == status, response.text[:300]
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == 1 and records[0].exc_info is None and "\n" not in records[0].getMessage()
    assert records[0].name == "spanindex.server" and records[0].getMessage().startswith("refused POST")


@pytest.mark.parametrize("content, message", _unreadable("POST /api/verify", "HTTP 4xx: 422, JSON {detail}"))
def test_verify_api_answers_422_with_the_reason_and_one_log_line(client, caplog, content, message):
    caplog.set_level(logging.INFO)
    response = client.post("/api/verify", content=content, headers={"content-type": "application/json"})
    _refused_once(caplog, response)
    detail = response.json()["detail"]
    assert detail.startswith("the request body: ") and message in detail


@pytest.mark.parametrize("content, message", _unreadable("the verify page's form (pasted and uploaded)", "HTTP 4xx: 422, the form again with the reason"))
def test_verify_form_answers_422_with_the_reason_pasted_or_uploaded(client, caplog, content, message):
    caplog.set_level(logging.INFO)
    uploaded = client.post("/verify", files={"answer_file": ("answer.json", content)}, data={"policy": "mark"})
    _refused_once(caplog, uploaded)
    assert f"the answer: {message}" in html.unescape(uploaded.text) and "<form" in uploaded.text
    caplog.clear()
    if message.startswith("not UTF-8"):
        return  # pasted text arrives as a form field, always UTF-8 (the server reads other bytes as Latin-1)
    pasted = client.post("/verify", data={"answer": content.decode("utf-8"), "policy": "mark"})
    _refused_once(caplog, pasted)
    assert f"the answer: {message}" in html.unescape(pasted.text)


@pytest.mark.hostile("POST /api/verify and the verify form: lone surrogates in a claim's text, a quote, the answer id",
                     "record status: that claim or citation 'invalid', U+FFFD in its place; 200 with valid UTF-8")
def test_lone_surrogates_reach_the_server_as_invalid_claims_and_citations(client, idx, caplog):
    caplog.set_level(logging.WARNING)
    response = client.post("/api/verify", content=_surrogate_answer(idx), headers={"content-type": "application/json"})
    assert response.status_code == 200
    body = json.loads(response.content.decode("utf-8", "strict"))
    verdicts = {r["claim_id"]: r["verdict"] for r in body["records"]}
    assert verdicts == {"broken-text": "invalid", "broken-quote": "verified", "clean": "verified"}
    assert body["summary"]["by_status"] == {"exact": 2, "invalid": 1}
    page = client.post("/verify", files={"answer_file": ("answer.json", _surrogate_answer(idx))})
    assert page.status_code == 200 and "Overage \ufffd costs money." in page.content.decode("utf-8", "strict")
    assert not caplog.records


@pytest.mark.hostile("the verify form: an answer with no claims", "handled: the form again, 'the answer has no claims'")
def test_the_verify_form_says_when_an_answer_has_no_claims(client):
    response = client.post("/verify", data={"answer": '{"claims": []}', "policy": "mark"})
    assert response.status_code == 200 and "the answer has no claims" in response.text


# -- limits on answers: both sides of each ----------------------------------------------------------


def _answer_of_size(n_bytes: int) -> bytes:
    head, tail = b'{"answer_id": "big", "claims": [], "text": "', b'"}'
    return head + b"x" * (n_bytes - len(head) - len(tail)) + tail


@pytest.mark.spawns
@pytest.mark.hostile("answer: over 2 MB (the answer size limit)", "CLI error: exit 2, 'over the limit of 2 MB for an answer (--max-answer-mb)'")
def test_an_answer_file_over_the_size_limit_is_refused_and_the_option_raises_it(sample_index_test_model, tmp_path):
    at_limit, over = tmp_path / "at.json", tmp_path / "over.json"
    at_limit.write_bytes(_answer_of_size(2 * MIB))
    over.write_bytes(_answer_of_size(2 * MIB + 1))
    assert spanindex("verify", sample_index_test_model, at_limit).returncode == 0
    _one_line_error(spanindex("verify", sample_index_test_model, over), over,
                    "2.0 MB, over the limit of 2 MB for an answer (--max-answer-mb)")
    assert spanindex("verify", sample_index_test_model, over, "--max-answer-mb", "2.5").returncode == 0


@pytest.mark.hostile("POST /api/verify and the verify form: a body over 2 MB", "HTTP 4xx: 413, JSON {detail}")
def test_the_server_refuses_a_body_over_the_answer_size_limit(client):
    at_limit, over = _answer_of_size(2 * MIB), _answer_of_size(2 * MIB + 1)
    headers = {"content-type": "application/json"}
    assert client.post("/api/verify", content=at_limit, headers=headers).status_code == 200
    refused = client.post("/api/verify", content=over, headers=headers)
    assert refused.status_code == 413 and refused.json() == {"detail": f"request body over {2 * MIB} bytes"}


def _claims(n: int) -> dict:
    return {"answer_id": "many", "claims": [
        {"claim_id": f"c{i}", "text": "t", "support": [{"chunk_id": "no/such.pdf#tok:0", "quote": "some quoted words"}]}
        for i in range(n)
    ]}


@pytest.mark.spawns
@pytest.mark.hostile("answer: 1,001 claims (the claims limit is 1,000)", "CLI error: exit 2, '1,001 claims, over the limit of 1,000 (--max-claims)'")
def test_an_answer_with_more_claims_than_the_limit_is_refused_and_the_option_raises_it(sample_index_test_model, tmp_path):
    at_limit, over = tmp_path / "at.json", tmp_path / "over.json"
    at_limit.write_text(json.dumps(_claims(MAX_CLAIMS)))
    over.write_text(json.dumps(_claims(MAX_CLAIMS + 1)))
    run = spanindex("verify", sample_index_test_model, at_limit, "-o", tmp_path / "r.jsonl")
    assert run.returncode == 0 and "1000 claims" in run.stdout
    _one_line_error(spanindex("verify", sample_index_test_model, over), over, "1,001 claims, over the limit of 1,000 for an answer (--max-claims)")
    assert spanindex("verify", sample_index_test_model, over, "--max-claims", "1001", "-o", tmp_path / "r.jsonl").returncode == 0


@pytest.mark.hostile("POST /api/verify: 1,001 claims", "HTTP 4xx: 422, JSON {detail} naming the claims limit")
def test_the_server_refuses_more_claims_than_the_limit(client, caplog):
    assert client.post("/api/verify", json=_claims(MAX_CLAIMS)).status_code == 200
    caplog.set_level(logging.INFO)
    refused = client.post("/api/verify", json=_claims(MAX_CLAIMS + 1))
    _refused_once(caplog, refused)
    assert refused.json()["detail"] == "the answer: 1,001 claims, over the limit of 1,000 for an answer (--max-claims)"


@pytest.mark.spawns
@pytest.mark.hostile("answer: a quote of 10,001 characters (a 1 MB quote too)",
                     "record status: that citation 'invalid', 'over the limit of 10,000 (--max-quote-chars)'; a quote at the limit is matched")
def test_a_quote_over_the_length_limit_is_an_invalid_citation(sample_index_test_model, idx, tmp_path):
    chunk_id = chunk_with(idx, "web/faq.html", HTML_QUOTE)
    padded = HTML_QUOTE + " " + "y" * (MAX_QUOTE_CHARS - len(HTML_QUOTE) - 1)
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"answer_id": "q", "claims": [
        {"claim_id": "at-limit", "text": "t", "support": [{"chunk_id": chunk_id, "quote": padded}]},
        {"claim_id": "over", "text": "t", "support": [{"chunk_id": chunk_id, "quote": padded + "y"}]},
        {"claim_id": "megabyte", "text": "t", "support": [{"chunk_id": chunk_id, "quote": "z" * MIB}]},
        {"claim_id": "fine", "text": "t", "support": [{"chunk_id": chunk_id, "quote": HTML_QUOTE}]},
    ]}))
    out = tmp_path / "records.jsonl"
    run = spanindex("verify", sample_index_test_model, answer, "-o", out, "--max-answer-mb", "3")
    assert run.returncode == 0, run.stderr
    citations = {r["claim_id"]: r["citations"][0] for r in _strict_utf8_lines(out.read_bytes())}
    assert len(padded) == MAX_QUOTE_CHARS and citations["at-limit"]["status"] == "quote_not_found"
    for claim_id, length in [("over", MAX_QUOTE_CHARS + 1), ("megabyte", MIB)]:
        assert citations[claim_id]["status"] == "invalid"
        assert citations[claim_id]["error"].startswith(f"the quote has {length:,} characters, over the limit of 10,000 (--max-quote-chars)")
        assert len(citations[claim_id]["model_quote"]) == MAX_QUOTE_CHARS
    assert citations["fine"]["status"] == "exact"
    raised = spanindex("verify", sample_index_test_model, answer, "--max-quote-chars", "20000", "--max-answer-mb", "3")
    assert raised.returncode == 0 and "invalid 1" in raised.stderr  # only the megabyte quote is still over


# -- odd text on the command line and in URLs ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.spawns
@pytest.mark.hostile("search: a query with a byte that is not UTF-8 (\\xff), with the real model's tokenizer",
                     "handled: read as U+FFFD; the hits are printed")
def test_a_query_that_is_not_utf8_is_searched_as_replacement_characters(sample_index):
    run = spanindex("search", sample_index, os.fsdecode(b"overage \xff per 1,000 API calls"), "-k", "2", "--json")
    assert run.returncode == 0, run.stderr
    assert len(json.loads(run.stdout)) == 2


@pytest.mark.spawns
@pytest.mark.hostile("verify -o naming a folder", "CLI error: exit 3, one line naming it, 'Is a directory'")
def test_an_output_path_that_is_a_folder_is_one_line(sample_index_test_model, tmp_path):
    answer = tmp_path / "answer.json"
    answer.write_text('{"claims": []}')
    run = spanindex("verify", sample_index_test_model, answer, "-o", tmp_path)
    assert run.returncode == 3 and run.stderr == f"spanindex: {tmp_path}: Is a directory\n"


@pytest.mark.parametrize("path", [
    "/?q=%ED%A0%80%FF", "/api/search?q=%ED%A0%80%FF", "/?q=%00%00", "/inspect?chunk_id=%ED%A0%80",
    "/api/chunks/%ED%A0%80%FF", "/documents/%ED%A0%80/file", "/documents/%00/view", "/inspect?chunk_id=" + "a" * 2001,
])
@pytest.mark.hostile("URLs with bytes that are not UTF-8, encoded lone surrogates, NUL, a 2,001-character chunk id",
                     "HTTP 4xx: 404 or 422 for what names nothing; pages and searches read them as U+FFFD; never 500")
def test_odd_bytes_in_urls_never_make_the_server_fail(client, path):
    response = client.get(path)
    assert response.status_code in (200, 404, 422), (path, response.status_code)
    response.content.decode("utf-8", "strict")
