"""Citations verified and located on real documents: offsets, statuses, rectangles, source ranges."""

from __future__ import annotations

import collections
import json
import random
import re
import subprocess
import sys

import pymupdf
import pytest
from bs4 import BeautifulSoup, Comment

import index
from index.citations.verify import Verifier, resolve, verify_answer
from ingest.text.normalize import normalize
from schemas.answer_json import parse_answer
from schemas.citations import CitationStatus, ClaimVerdict, Policy, Support
from schemas.errors import AnswerFormatError
from schemas.records import DocStatus, MediaType

from conftest import ROOT, STATUS_COUNTS, WAIT_S, spanindex


def _quotes(idx, per_doc=6, seed=3):
    """(chunk, quote) pairs: word-aligned spans of 30-160 characters from every ok document."""
    rng = random.Random(seed)
    for doc in idx.documents():
        if doc.status is not DocStatus.OK:
            continue
        chunks = idx.chunks_of(doc.doc_id)
        for chunk in rng.sample(chunks, min(per_doc, len(chunks))):
            # Word edges; not after a hyphen that joins a word across a line ("Nat-\nural").
            edges = [0] + [m.end() for m in re.finditer(r"(?<![-\u00ad\u2010\u2011\s])\s+", chunk.text)] + [len(chunk.text)]
            for _ in range(10):
                a = rng.choice(edges)
                ends = [e for e in edges if 30 <= e - a <= 160]
                if ends:
                    quote = chunk.text[a : rng.choice(ends)].strip()
                    if len(normalize(quote)) >= 20:
                        yield chunk, quote
                        break


def _as_a_model_writes_it(quote: str) -> str:
    """How a model alters a quote: ligatures expanded, hyphenation joined, whitespace collapsed, quotes straightened."""
    return normalize(quote)


def test_exact_quotes_verify_and_land_on_their_document_offsets(built):
    idx, _ = built
    verifier = Verifier(idx)
    n = 0
    for chunk, quote in _quotes(idx):
        citation = verifier.cite(Support(chunk.chunk_id, quote))
        STATUS_COUNTS[citation.status.value] += 1
        assert citation.status is CitationStatus.EXACT, (chunk.chunk_id, quote)
        text = idx.doc_text(chunk.doc_version)
        assert len(citation.quote) == citation.char_end - citation.char_start
        assert text[citation.doc_start : citation.doc_end] == citation.quote == quote
        assert chunk.text[citation.char_start : citation.char_end] == quote
        assert citation.prefix == text[max(0, citation.doc_start - 32) : citation.doc_start]
        assert citation.suffix == text[citation.doc_end : citation.doc_end + 32]
        n += 1
    assert n > 10


def test_quotes_altered_as_a_model_alters_them_verify_as_normalized_on_the_same_offsets(built):
    idx, _ = built
    verifier = Verifier(idx)
    altered = 0
    for chunk, quote in _quotes(idx, seed=5):
        model_quote = _as_a_model_writes_it(quote)
        exact = verifier.cite(Support(chunk.chunk_id, quote))
        cited = verifier.cite(Support(chunk.chunk_id, model_quote))
        STATUS_COUNTS[cited.status.value] += 1
        if model_quote == quote:
            assert cited.status is CitationStatus.EXACT
            continue
        altered += 1
        assert cited.status is CitationStatus.NORMALIZED, (chunk.chunk_id, quote, model_quote)
        assert (cited.doc_start, cited.doc_end) == (exact.doc_start, exact.doc_end), (quote, model_quote)
        assert cited.model_quote == model_quote and cited.quote == quote
    assert altered > 0


def test_pdf_rectangles_read_back_the_quote_on_the_right_page(built):
    idx, root = built
    verifier = Verifier(idx)
    checked = 0
    for chunk, quote in _quotes(idx, seed=11):
        doc = idx.document(chunk.doc_id)
        if doc.media_type is not MediaType.PDF:
            continue
        citation = verifier.cite(Support(chunk.chunk_id, quote))
        assert citation.rects, quote
        assert citation.locator == f"#page={citation.page}"
        pages = {p.page: p for p in idx.pdf_pages(chunk.doc_id)}
        assert citation.ocr == any(pages[r.page].ocr for r in citation.rects)
        if citation.ocr:
            continue  # no text layer to read back: tests/test_ocr.py checks OCR boxes against the original words
        with pymupdf.open(root / chunk.doc_id) as pdf:
            read_back, whole_lines, textpages = [], [], {}
            for rect in citation.rects:
                page = pages[rect.page]
                assert page.start <= citation.doc_end and citation.doc_start <= page.end, "rectangle on a page the quote is not on"
                assert 0 <= rect.x0 < rect.x1 <= page.width + 1 and 0 <= rect.y0 < rect.y1 <= page.height + 1
                if rect.page not in textpages:
                    pdf_page = pdf[rect.page - 1]
                    textpages[rect.page] = (pdf_page, pdf_page.get_textpage())  # the page must outlive its text page
                pdf_page, textpage = textpages[rect.page]
                read_back.append(pdf_page.get_textbox(_middle_band(rect) * pdf_page.derotation_matrix, textpage=textpage))
                whole = pymupdf.Rect(rect.x0, rect.y0, rect.x1, rect.y1) * pdf_page.derotation_matrix
                whole_lines.append(pdf_page.get_textbox(whole, textpage=textpage))
        squash = lambda s: re.sub(r"\s+", "", normalize(s))  # noqa: E731
        wanted, got, got_whole = squash(quote), squash("\n".join(read_back)), squash("\n".join(whole_lines))
        # Lines that overlap on the page (stacked math, tight leading) can show up in two
        # rectangles, and get_textbox orders a superscript before its base. The middle band
        # of each line holds nearly all of the quote and little else; a subscript or prime
        # sits outside it, so every character must be inside the whole rectangles.
        missed_by_band = collections.Counter(wanted) - collections.Counter(got)
        assert sum(missed_by_band.values()) <= 0.1 * len(wanted), (chunk.doc_id, quote, read_back)
        assert not collections.Counter(wanted) - collections.Counter(got_whole), (chunk.doc_id, quote, whole_lines)
        assert len(got) <= 1.5 * len(wanted) + 12, (chunk.doc_id, quote, read_back)
        checked += 1
    if not checked:
        pytest.skip("no PDF quotes in this corpus")


def _middle_band(rect) -> pymupdf.Rect:
    """The rectangle's middle: glyph boxes of neighbouring lines overlap its edges.

    get_textbox takes every glyph whose box overlaps the rectangle, and line
    boxes (ascender to descender) overlap those of the lines above and below.
    """
    h, w = rect.y1 - rect.y0, rect.x1 - rect.x0
    if h > w:  # rotated text: the line runs vertically, neighbours sit left and right
        return pymupdf.Rect(rect.x0 + 0.35 * w, rect.y0 + 0.1, rect.x1 - 0.35 * w, rect.y1 - 0.1)
    return pymupdf.Rect(rect.x0 + 0.1, rect.y0 + 0.35 * h, rect.x1 - 0.1, rect.y1 - 0.35 * h)


def _visible_text(fragment: str) -> str:
    """Tags stripped and entities unescaped by BeautifulSoup/lxml, hidden content left out."""
    soup = BeautifulSoup(fragment, "lxml")
    for node in soup.find_all(string=lambda s: isinstance(s, Comment)):
        node.extract()
    for element in soup.find_all(["script", "style", "template", "noscript", "title"]):
        element.decompose()
    for element in soup.find_all(True):
        if element.decomposed:
            continue
        style = (element.get("style") or "").replace(" ", "").lower()
        if element.has_attr("hidden") or "display:none" in style or "visibility:hidden" in style:
            element.decompose()
    return soup.get_text()


def test_html_source_range_with_tags_stripped_gives_the_quote(built):
    idx, _ = built
    verifier = Verifier(idx)
    checked = 0
    for chunk, quote in _quotes(idx, seed=13):
        if idx.document(chunk.doc_id).media_type is not MediaType.HTML:
            continue
        citation = verifier.cite(Support(chunk.chunk_id, quote))
        source = idx.decoded_source(chunk.doc_id)
        fragment = source[citation.src_start : citation.src_end]
        squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
        assert squash(_visible_text(fragment)) == squash(quote), (chunk.doc_id, quote, fragment[:300])
        assert citation.locator.startswith("#:~:text=")
        # A page that names its own address gets a link to the live page at the quote.
        page_url = idx.document(chunk.doc_id).source_url
        assert citation.url == (page_url + citation.locator if page_url else "")
        checked += 1
    assert checked > 0


@pytest.mark.hostile("a quote with a changed digit, a quote from another document, a made-up chunk id", "record status: quote_not_found or unknown_chunk, never verified")
def test_a_changed_digit_a_foreign_quote_and_a_made_up_chunk_never_verify(built):
    idx, _ = built
    verifier = Verifier(idx)
    pairs = list(_quotes(idx, seed=17))
    changed = 0
    for (chunk, quote), (_, foreign) in zip(pairs, pairs[len(pairs) // 2 :] + pairs[: len(pairs) // 2]):
        digits = [m.start() for m in re.finditer(r"\d", quote)]
        if digits:
            at = digits[0]
            altered = quote[:at] + str((int(quote[at]) + 1) % 10) + quote[at + 1 :]
            citation = verifier.cite(Support(chunk.chunk_id, altered))
            STATUS_COUNTS[citation.status.value] += 1
            assert not citation.status.verified, (chunk.chunk_id, quote, altered, citation)
            changed += 1
        if normalize(foreign) not in normalize(chunk.text):
            citation = verifier.cite(Support(chunk.chunk_id, foreign))
            STATUS_COUNTS[citation.status.value] += 1
            assert not citation.status.verified, (chunk.chunk_id, foreign)
        made_up = verifier.cite(Support(chunk.doc_id + "#tok:999999999", quote))
        STATUS_COUNTS[made_up.status.value] += 1
        assert made_up.status is CitationStatus.UNKNOWN_CHUNK
    assert changed > 0


def test_number_guard_on_a_near_identical_quote(sample_index_test_model):
    idx = index.open(sample_index_test_model)
    chunk = next(c for c in idx.chunks_of("pricing/rate-card.pdf") if "$0.12 per 1,000" in c.text)
    assert resolve(idx, chunk.chunk_id, "Growth plan overage is billed at $0.12 per 1,000 API calls.").status.verified
    wrong = resolve(idx, chunk.chunk_id, "Growth plan overage is billed at $0.21 per 1,000 API calls.")
    assert wrong.status is CitationStatus.QUOTE_NOT_FOUND
    typo = resolve(idx, chunk.chunk_id, "Growth plan overage is biled at $0.12 per 1,000 API call.")
    assert typo.status is CitationStatus.FUZZY and typo.match_score >= 0.9
    assert "$0.12 per 1,000" in typo.quote


def test_offset_maps_are_built_once_per_document_by_the_index_for_every_user(sample_index_test_model):
    from index.inspect import inspect_chunk
    from index.reader import MAPS_KEPT
    from index.viewer.source_views import ViewBuilder

    idx = index.open(sample_index_test_model)
    pdf = next(c for c in idx.chunks_of("pricing/rate-card.pdf") if "$0.12 per 1,000" in c.text)
    html = idx.chunks_of("web/faq.html")[0]
    char_map, source_map = idx.pdf_char_map(pdf.doc_id), idx.html_source_map(html.doc_id)
    views = ViewBuilder(idx)
    for chunk, quote in ((pdf, "billed at $0.12 per 1,000 API calls"), (html, html.text[:40])):
        citation = Verifier(idx).cite(Support(chunk.chunk_id, quote))  # a fresh verifier: nothing of its own
        assert citation.status.verified and views.citation(citation).kind.value in ("pdf", "html")
        inspect_chunk(idx, chunk.chunk_id, glyph_boxes=True)
    assert idx.pdf_char_map(pdf.doc_id) is char_map and idx.html_source_map(html.doc_id) is source_map
    assert {kind for kind, _ in idx._maps} == {"pdf_char_map", "page_labels", "pdf_pages", "html_source_map",
                                               "hidden_text", "html_box_map"}
    for doc in idx.documents():
        idx.page_labels(doc.doc_id)
        idx.pdf_page(doc.doc_id, 1)
    assert len(idx._maps) <= MAPS_KEPT


@pytest.mark.hostile("a quote under 12 characters", "record status: quote_too_short")
def test_short_quotes_prove_nothing_and_repeats_take_the_first(sample_index_test_model):
    idx = index.open(sample_index_test_model)
    chunk = idx.chunks_of("docs/long-policy.md")[0]
    assert resolve(idx, chunk.chunk_id, "the policy").status is CitationStatus.QUOTE_TOO_SHORT
    word = max(set(chunk.text.split()), key=lambda w: (chunk.text.count(w + " "), len(w)))
    phrase = word + " "
    if chunk.text.count(phrase) > 1 and len(phrase) >= 4:
        citation = resolve(idx, chunk.chunk_id, phrase * 1, min_quote_chars=3)
        assert citation.occurrences == chunk.text.count(phrase)
        assert citation.char_start == chunk.text.find(phrase)


def test_a_quote_from_elsewhere_in_the_document_is_reported_not_verified(sample_index_test_model):
    idx = index.open(sample_index_test_model)
    chunks = idx.chunks_of("docs/long-policy.md")
    quote = chunks[-1].text.split("\n")[0][:80]
    citation = resolve(idx, chunks[0].chunk_id, quote)
    if quote in chunks[0].text:
        pytest.skip("quote also in the first chunk")
    assert citation.status is CitationStatus.QUOTE_NOT_FOUND
    assert citation.found_elsewhere == chunks[-1].start + chunks[-1].text.find(quote)


@pytest.mark.hostile('answer: a support whose quote is a number, a made-up chunk id, a changed number', "record status: 'invalid', 'unknown_chunk', 'quote_not_found'; the rest verified")
def test_answers_in_camel_or_snake_case_and_policies(sample_index_test_model):
    idx = index.open(sample_index_test_model)
    chunk = next(c for c in idx.chunks_of("pricing/rate-card.pdf") if "$0.12 per 1,000" in c.text)
    answer = parse_answer(
        {
            "answerId": "a1",
            "claims": [
                {"claimId": "c1", "text": "Overage is $0.12.", "support": [{"chunkId": chunk.chunk_id, "quote": "billed at $0.12 per 1,000 API calls"}]},
                {"claim_id": "c2", "text": "Overage is $0.21.", "support": [{"chunk_id": chunk.chunk_id, "quote": "billed at $0.21 per 1,000 API calls"}]},
                {"claim_id": "c3", "text": "I cannot tell.", "support": []},
                {"claim_id": "c4", "text": "Made up.", "support": [{"chunk_id": "nowhere.pdf#tok:0", "quote": "anything at all here"}]},
                {"claim_id": "c5", "text": "Bad.", "support": [{"chunk_id": chunk.chunk_id, "quote": 42}]},
            ],
        }
    )
    records, summary = verify_answer(idx, answer, policy=Policy.MARK)
    verdicts = {r.claim_id: r.verdict for r in records}
    assert verdicts == {
        "c1": ClaimVerdict.VERIFIED,
        "c2": ClaimVerdict.UNVERIFIED,
        "c3": ClaimVerdict.UNSUPPORTED,
        "c4": ClaimVerdict.UNVERIFIED,
        "c5": ClaimVerdict.UNVERIFIED,
    }
    assert records[4].citations[0].status is CitationStatus.INVALID
    assert summary.unknown_chunk_rate == pytest.approx(1 / 4)
    assert summary.quote_not_found_rate == pytest.approx(1 / 4)
    dropped, _ = verify_answer(idx, answer, policy=Policy.DROP)
    assert [r.claim_id for r in dropped if not r.dropped] == ["c1"]
    _, refused = verify_answer(idx, answer, policy=Policy.REFUSE)
    assert refused.refused


@pytest.mark.parametrize(
    "raw, message",
    [([1, 2], "JSON object"), ({"claims": "x"}, "must be a list"), ({"answer_id": "a"}, "must be a list")],
)
def test_a_file_that_is_not_an_answer_is_refused_clearly(raw, message):
    with pytest.raises(AnswerFormatError, match=message):
        parse_answer(raw)


@pytest.mark.spawns
def test_verify_cli_never_loads_torch_and_reports_rates(sample_index_test_model, tmp_path):
    idx = index.open(sample_index_test_model)
    chunk = idx.chunks_of("web/faq.html")[0]
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"answer_id": "x", "claims": [
        {"claim_id": "c1", "text": "t", "support": [{"chunk_id": chunk.chunk_id, "quote": chunk.text[:60]}]},
        {"claim_id": "c2", "text": "t", "support": [{"chunk_id": "made/up#tok:1", "quote": "some made-up quote"}]},
    ]}))
    probe = (
        "import sys; from index.cli import main; code = main(sys.argv[1:]); "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules, 'model loaded'; sys.exit(code)"
    )
    out = tmp_path / "records.jsonl"
    run = subprocess.run([sys.executable, "-c", probe, "verify", str(sample_index_test_model), str(answer), "-o", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=WAIT_S)
    assert run.returncode == 0, run.stderr
    assert "1 verified" in run.stdout and "unknown_chunk 50.0%" in run.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["citations"][0]["status"] == "exact"
    assert records[0]["citations"][0]["src_start"] is not None

    refused = spanindex("verify", str(sample_index_test_model), str(answer), "--policy", "refuse")
    assert refused.returncode == 1 and "answer refused" in refused.stderr

    w3c = spanindex("verify", str(sample_index_test_model), str(answer), "--format", "w3c")
    annotation = json.loads(w3c.stdout.splitlines()[0])
    selectors = {s["type"]: s for s in annotation["target"]["selector"]}
    assert selectors["TextQuoteSelector"]["exact"] == chunk.text[:60]
    assert selectors["TextPositionSelector"]["end"] - selectors["TextPositionSelector"]["start"] == 60
    assert annotation["target"]["source"] == "https://help.northwind.example/faq?lang=en&v=2"
    assert annotation["target"]["spanindex:docId"] == "web/faq.html"


def _bad_answer(content: str, message: str, what: str):
    return pytest.param(content, message, id=what,
                        marks=pytest.mark.hostile(f"answer: {what}", f"CLI error: exit 2, '{message}'"))


@pytest.mark.spawns
@pytest.mark.parametrize("content, message", [
    _bad_answer("{not json", "not valid JSON: Expecting property name", "not JSON"),
    _bad_answer("[]", "an answer is a JSON object with a 'claims' list", "JSON that is not an object"),
    _bad_answer('{"claims": 5}', "'claims' must be a list", "'claims' not a list"),
    _bad_answer("\udcff", "not UTF-8 (byte 0", "bytes that are not UTF-8"),
])
def test_verify_cli_rejects_malformed_answers_without_a_traceback(sample_index_test_model, tmp_path, content, message):
    answer = tmp_path / "answer.json"
    answer.write_bytes(content.encode("utf-8", "surrogateescape"))
    run = spanindex("verify", str(sample_index_test_model), str(answer))
    assert run.returncode == 2
    assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith(f"spanindex: {answer}: ")
    assert message in run.stderr
