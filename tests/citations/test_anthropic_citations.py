"""Claude's citations both ways: hits out as search_result blocks, a response's citations back in.

Every block and response is validated by the ``anthropic`` package's own types (no network):
what spanindex writes is what the Messages API accepts, and what it reads is what the API returns.
"""

from __future__ import annotations

import dataclasses

import pytest

anthropic_types = pytest.importorskip("anthropic.types")
pydantic = pytest.importorskip("pydantic")

import index  # noqa: E402
from index.citations.anthropic_format import citable_pieces, search_result_blocks, verify_message  # noqa: E402
from schemas.citations import CitationStatus, ClaimVerdict  # noqa: E402
from schemas.records import MediaType  # noqa: E402

from conftest import needs_shared_corpus  # noqa: E402
from doubles import HashingEmbedder  # noqa: E402

QUERIES = ["Growth plan overage per 1,000 API calls", "incident updates on the status page", "webhook retry limit"]


def _message_param(blocks: list[dict], question: str) -> dict:
    return {"role": "user", "content": [*blocks, {"type": "text", "text": question}]}


def _validate_request(blocks: list[dict]) -> None:
    from anthropic.types import MessageParam, SearchResultBlockParam

    for block in blocks:
        pydantic.TypeAdapter(SearchResultBlockParam).validate_python(block)
    pydantic.TypeAdapter(MessageParam).validate_python(_message_param(blocks, "?"))


def _hits_and_blocks(idx):
    hits = [hit for query in QUERIES for hit in idx.search(query, k=3)]
    unique = list({h.chunk_id: h for h in hits}.values())
    return unique, search_result_blocks(idx, unique)


def _response(citations_by_block: list[tuple[str, list[dict]]]) -> dict:
    """A Messages API response with the documented shape: text blocks, some with citations."""
    content = []
    for text, citations in citations_by_block:
        content.append({"type": "text", "text": text, "citations": citations or None})
    raw = {
        "id": "msg_0123456789",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1200, "output_tokens": 80},
    }
    from anthropic.types import Message

    Message.model_validate(raw)  # raises on anything the API would not return
    return raw


def _citation(blocks: list[dict], result: int, start: int, end: int, *, cited_text: str | None = None) -> dict:
    block = blocks[result]
    text = "".join(piece["text"] for piece in block["content"][start:end])
    return {
        "type": "search_result_location",
        "source": block["source"],
        "title": block["title"],
        "cited_text": text if cited_text is None else cited_text,
        "search_result_index": result,
        "start_block_index": start,
        "end_block_index": end,
    }


def _longest_piece(block: dict) -> int:
    return max(range(len(block["content"])), key=lambda i: len(block["content"][i]["text"]))


def test_search_results_are_blocks_the_messages_api_accepts(sample_index_test_model):
    idx = index.open(sample_index_test_model, embedder=HashingEmbedder())
    hits, blocks = _hits_and_blocks(idx)
    assert len(blocks) == len(hits) >= 3
    _validate_request(blocks)
    for hit, block in zip(hits, blocks):
        assert block["type"] == "search_result" and block["citations"] == {"enabled": True}
        assert "".join(piece["text"] for piece in block["content"]) == hit.text  # the chunk, exactly
        assert all(piece["text"].strip() for piece in block["content"])
        assert block["title"].strip()
        assert block["source"] == hit.chunk_id or block["source"].startswith("http")


def test_validation_is_not_vacuous():
    """The types the tests lean on do refuse a malformed block and a malformed response."""
    from anthropic.types import Message, SearchResultBlockParam

    with pytest.raises(pydantic.ValidationError):
        pydantic.TypeAdapter(SearchResultBlockParam).validate_python({"type": "search_result", "source": "s", "content": []})
    with pytest.raises(pydantic.ValidationError):
        Message.model_validate({"id": "m", "type": "message", "role": "assistant", "content": [], "model": "x"})


def test_a_page_that_names_its_address_is_cited_by_that_address(sample_index_test_model):
    idx = index.open(sample_index_test_model, embedder=HashingEmbedder())
    faq = idx.document("web/faq.html")
    assert faq.source_url.startswith("https://")
    chunk = idx.chunks_of("web/faq.html")[0]
    hit = next(h for h in idx.search(chunk.text[:200], k=10) if h.chunk_id == chunk.chunk_id)
    block = search_result_blocks(idx, [hit])[0]
    assert block["source"].startswith(faq.source_url + "#:~:text=")


def test_citations_of_a_response_verify_and_locate_like_any_quote(sample_index_test_model):
    idx = index.open(sample_index_test_model, embedder=HashingEmbedder())
    hits, blocks = _hits_and_blocks(idx)
    cited = [(i, _longest_piece(b)) for i, b in enumerate(blocks)]
    raw = _response(
        [("According to the documents, ", [])]
        + [(f"claim {i}", [_citation(blocks, i, p, p + 1)]) for i, p in cited]
    )
    records, summary = verify_message(idx, raw)
    assert summary.claims == len(cited) and summary.verified == len(cited)
    for record, (i, p) in zip(records, cited):
        (citation,) = record.citations
        hit = hits[i]
        start, end = citable_pieces(hit.text)[p]
        assert citation.status is CitationStatus.EXACT and not citation.error
        assert citation.chunk_id == hit.chunk_id
        assert (citation.doc_start, citation.doc_end) == (hit.start + start, hit.start + end)
        assert citation.quote == idx.doc_text(hit.doc_version)[citation.doc_start : citation.doc_end]
        media = idx.document(hit.doc_id).media_type
        if media is MediaType.PDF:
            assert citation.page and citation.rects and citation.locator == f"#page={citation.page}"
        elif media is MediaType.HTML:
            assert citation.src_start is not None and citation.locator.startswith("#:~:text=")


def test_a_citation_spanning_several_blocks_is_one_quote(sample_index_test_model):
    idx = index.open(sample_index_test_model, embedder=HashingEmbedder())
    hits, blocks = _hits_and_blocks(idx)
    i = next(n for n, b in enumerate(blocks) if len(b["content"]) >= 3)
    raw = _response([("Three sentences.", [_citation(blocks, i, 0, 3)])])
    (record,), _ = verify_message(idx, raw)
    (citation,) = record.citations
    pieces = citable_pieces(hits[i].text)
    assert citation.status is CitationStatus.EXACT
    assert (citation.char_start, citation.char_end) == (pieces[0][0], pieces[2][1])


def test_an_altered_cited_text_is_caught(sample_index_test_model):
    idx = index.open(sample_index_test_model, embedder=HashingEmbedder())
    hits, blocks = _hits_and_blocks(idx)
    i = next(n for n, b in enumerate(blocks) if any(any(c.isdigit() for c in p["text"]) and len(p["text"]) >= 40 for p in b["content"]))
    p = next(n for n, piece in enumerate(blocks[i]["content"]) if any(c.isdigit() for c in piece["text"]) and len(piece["text"]) >= 40)
    original = blocks[i]["content"][p]["text"]
    digit = next(c for c in original if c.isdigit())
    altered = original.replace(digit, str((int(digit) + 1) % 10), 1)
    honest_word = max(original.split(), key=len)
    reworded = original.replace(honest_word, honest_word[::-1], 1)
    raw = _response(
        [
            ("altered figure", [_citation(blocks, i, p, p + 1, cited_text=altered)]),
            ("altered word", [_citation(blocks, i, p, p + 1, cited_text=reworded)]),
            ("honest", [_citation(blocks, i, p, p + 1)]),
        ]
    )
    records, summary = verify_message(idx, raw)
    figure, word, honest = (r.citations[0] for r in records)
    assert not figure.status.verified  # a changed number never verifies
    assert records[0].verdict is ClaimVerdict.UNVERIFIED
    assert "cited_text is not the text of blocks" in figure.error
    assert "cited_text is not the text of blocks" in word.error  # whatever status the words earn
    assert honest.status is CitationStatus.EXACT and not honest.error


def test_unknown_sources_and_other_citation_types_are_reported_not_verified(sample_index_test_model):
    idx = index.open(sample_index_test_model, embedder=HashingEmbedder())
    _, blocks = _hits_and_blocks(idx)
    forged = dict(_citation(blocks, 0, 0, 1), source="nowhere.pdf#tok:0")
    char_location = {
        "type": "char_location", "cited_text": "x" * 20, "document_index": 0,
        "document_title": None, "start_char_index": 0, "end_char_index": 20, "file_id": None,
    }
    raw = _response([("forged", [forged]), ("document citation", [char_location])])
    records, summary = verify_message(idx, raw)
    assert records[0].citations[0].status is CitationStatus.UNKNOWN_CHUNK
    assert records[1].citations[0].status is CitationStatus.INVALID
    assert summary.verified == 0


def test_citations_on_shared_corpus_pages_resolve_through_their_address(shared_index):
    """HTML pages of ../shared/corpus that name their address: the cited URL finds the chunk again."""
    needs_shared_corpus()
    idx = index.open(shared_index, embedder=HashingEmbedder())
    named = [d for d in idx.documents() if d.source_url and d.n_chunks > 1]
    assert named, "no page of ../shared/corpus names its address"
    for doc in named:
        for chunk in idx.chunks_of(doc.doc_id)[:3]:
            hit = dataclasses.replace(idx.search(chunk.text[:100], k=1)[0], **_hit_fields(chunk))
            (block,) = search_result_blocks(idx, [hit])
            assert block["source"].startswith(doc.source_url)
            p = _longest_piece(block)
            (record,), _ = verify_message(idx, _response([("c", [_citation([block], 0, p, p + 1)])]))
            assert record.citations[0].chunk_id == chunk.chunk_id, (doc.doc_id, block["source"])
            assert record.citations[0].status is CitationStatus.EXACT


def _hit_fields(chunk) -> dict:
    return dict(
        chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, doc_version=chunk.doc_version, start=chunk.start,
        end=chunk.end, page_start=chunk.page_start, page_end=chunk.page_end, text=chunk.text,
    )


def test_the_command_line_writes_blocks_and_reads_a_response(sample_index_test_model, tmp_path):
    import contextlib
    import io
    import json

    from index.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["search", str(sample_index_test_model), QUERIES[0], "-k", "3", "--format", "anthropic"],
                    embedder=HashingEmbedder()) == 0
    blocks = json.loads(out.getvalue())
    _validate_request(blocks)
    assert len(blocks) == 3
    p = _longest_piece(blocks[0])
    response = tmp_path / "response.json"
    response.write_text(json.dumps(_response([("claim", [_citation(blocks, 0, p, p + 1)])])), encoding="utf-8")
    records = tmp_path / "records.jsonl"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["verify", str(sample_index_test_model), str(response), "--from", "anthropic", "-o", str(records)],
                    embedder=HashingEmbedder()) == 0
    (record,) = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    assert record["claim_id"] == "block-0" and record["citations"][0]["status"] == "exact"
