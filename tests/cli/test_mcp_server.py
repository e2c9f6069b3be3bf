"""`spanindex mcp DIR` driven by the MCP SDK's own client over stdio: three tools with JSON
Schemas, whose results are what the library gives."""

from __future__ import annotations

import os

import anyio
import pytest

import index

from conftest import ROOT, spanindex_command

mcp = pytest.importorskip("mcp")
pytestmark = [pytest.mark.slow, pytest.mark.spawns]

QUERY = "How much is Growth plan overage per 1,000 API calls?"


def _server(index_dir) -> "mcp.StdioServerParameters":
    """`spanindex mcp DIR`, launched by the SDK's stdio client as an MCP host would launch it."""
    command, *args = spanindex_command("mcp", index_dir)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return mcp.StdioServerParameters(command=command, args=args, env=env, cwd=str(ROOT))


def _session(index_dir, steps):
    async def run():
        async with mcp.Client(_server(index_dir)) as client:
            return await steps(client)

    return anyio.run(run)


def test_the_server_lists_search_verify_and_resolve_with_schemas(sample_index):
    tools = _session(sample_index, lambda client: client.list_tools()).tools
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {"search", "verify", "resolve"}
    search = by_name["search"]
    assert search.input_schema["required"] == ["query"]
    assert set(search.input_schema["properties"]) == {"query", "k", "mode", "where"}
    assert "hits" in search.output_schema["properties"]
    verify = by_name["verify"]
    assert verify.input_schema["required"] == ["claims"]
    assert set(by_name["resolve"].input_schema["required"]) == {"chunk_id", "quote"}
    assert all(tool.description for tool in tools)


def test_an_agent_searches_cites_and_checks_itself(sample_index):
    idx = index.open(sample_index)
    expected = idx.search(QUERY, k=3)

    async def steps(client):
        found = await client.call_tool("search", {"query": QUERY, "k": 3})
        hit = found.structured_content["hits"][0]
        sentence = next(s for s in hit["text"].split("\n") if len(s) > 30)
        checked = await client.call_tool(
            "verify",
            {
                "claims": [
                    {"claim_id": "c1", "text": "cited", "support": [{"chunk_id": hit["chunk_id"], "quote": sentence}]},
                    {"claim_id": "c2", "text": "forged", "support": [{"chunk_id": "nowhere.pdf#tok:0", "quote": sentence}]},
                ]
            },
        )
        resolved = await client.call_tool("resolve", {"chunk_id": hit["chunk_id"], "quote": sentence})
        return found, checked, resolved, sentence

    found, checked, resolved, sentence = _session(sample_index, steps)
    assert not found.is_error
    hits = found.structured_content["hits"]
    assert [h["chunk_id"] for h in hits] == [h.chunk_id for h in expected]
    for hit, want in zip(hits, expected):
        assert hit["text"] == want.text == idx.doc_text(want.doc_version)[hit["start"] : hit["end"]]
        assert hit["headings"] == list(want.headings) and hit["title"] == (want.title or want.doc_id)
        if hit["page_start"] is not None:
            assert hit["locator"] == f"#page={hit['page_start']}"
    records = checked.structured_content["records"]
    assert [r["verdict"] for r in records] == ["verified", "unverified"]
    assert records[1]["citations"][0]["status"] == "unknown_chunk"
    citation = resolved.structured_content
    assert citation["status"] == "exact" and citation["quote"] == sentence
    assert citation["doc_start"] == hits[0]["start"] + hits[0]["text"].index(sentence)


def test_a_bad_request_is_a_tool_error_not_a_dead_server(sample_index):
    async def steps(client):
        bad = await client.call_tool("resolve", {"chunk_id": "x", "quote": 42})
        after = await client.call_tool("search", {"query": QUERY, "k": 1})
        return bad, after

    bad, after = _session(sample_index, steps)
    assert bad.is_error
    assert not after.is_error and len(after.structured_content["hits"]) == 1
