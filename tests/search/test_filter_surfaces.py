"""One filter language on every surface: the CLI's --where, the HTTP API and search page, the MCP
search tool, the LangChain and LlamaIndex retrievers (MetadataFilters mapped onto it). A good
filter keeps only its documents' chunks; a bad one is one line (exit 2, HTTP 400, a tool error)."""

from __future__ import annotations

import contextlib
import io
import json

import anyio
import pytest

import index
from index.cli import main
from schemas.errors import FilterError

from conftest import spanindex
from doubles import HashingEmbedder

QUERY = "overage price per API calls status page incident"
PDFS = "media_type = 'application/pdf'"
BAD = "lower(doc_id) = 'x'"


@pytest.fixture(scope="module")
def idx(sample_index_test_model):
    return index.open(sample_index_test_model, embedder=HashingEmbedder())


def _cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv], embedder=HashingEmbedder())
    return code, out.getvalue(), err.getvalue()


def _pdf_ids(idx) -> set[str]:
    return {d.doc_id for d in idx.documents() if d.media_type == "application/pdf" and d.n_chunks}


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_cli_where_keeps_only_the_documents_it_names(sample_index_test_model, idx, mode):
    code, out, _ = _cli("search", sample_index_test_model, QUERY, "-k", 8, "--mode", mode, "--where", PDFS, "--json")
    hits = json.loads(out)
    assert code == 0 and hits
    assert {h["doc_id"] for h in hits} <= _pdf_ids(idx)
    assert [h["chunk_id"] for h in hits] == [h.chunk_id for h in idx.search(QUERY, 8, mode, where=PDFS)]


@pytest.mark.hostile("--where holding a function call", "CLI error: one line on stderr naming it, exit 2")
def test_cli_bad_where_is_one_line_and_exit_2(sample_index_test_model):
    code, out, err = _cli("search", sample_index_test_model, QUERY, "--where", BAD)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "lower() is not allowed" in err


@pytest.mark.spawns
def test_cli_bad_where_in_its_own_process_has_no_traceback(sample_index_test_model):
    done = spanindex("search", sample_index_test_model, QUERY, "--where", "author = 'me'", test_embedder=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "unknown column 'author'" in done.stderr


@pytest.fixture(scope="module")
def client(sample_index_test_model):
    from fastapi.testclient import TestClient

    from index.viewer.server.app import create_app

    return TestClient(create_app(sample_index_test_model, embedder=HashingEmbedder()), base_url="http://127.0.0.1")


def test_http_search_takes_where_and_a_bad_one_is_400_with_the_reason(client, idx):
    good = client.get("/api/search", params={"q": QUERY, "k": 6, "mode": "hybrid", "where": PDFS})
    assert good.status_code == 200
    body = good.json()
    assert body["where"] == PDFS and body["hits"]
    assert {h["doc_id"] for h in body["hits"]} <= _pdf_ids(idx)
    bad = client.get("/api/search", params={"q": QUERY, "where": BAD})
    assert bad.status_code == 400 and "lower() is not allowed" in bad.json()["detail"]


def test_search_page_shows_a_bad_filter_beside_the_form(client):
    page = client.get("/", params={"q": QUERY, "where": BAD})
    assert page.status_code == 400 and "lower() is not allowed" in page.text and 'name="where"' in page.text
    good = client.get("/", params={"q": QUERY, "where": "doc_id = 'web/faq.html'"})
    assert good.status_code == 200 and "web/faq.html" in good.text


def test_mcp_search_tool_takes_where_and_a_bad_one_is_a_tool_error(sample_index_test_model, idx):
    mcp = pytest.importorskip("mcp")
    from index.integrations.mcp_server import make_server

    server = make_server(sample_index_test_model, embedder=HashingEmbedder())

    async def run():
        async with mcp.Client(server) as client:
            good = await client.call_tool("search", {"query": QUERY, "k": 5, "where": PDFS})
            bad = await client.call_tool("search", {"query": QUERY, "k": 5, "where": BAD})
            return good, bad

    good, bad = anyio.run(run)
    assert not good.is_error and good.structured_content["hits"]
    assert {h["doc_id"] for h in good.structured_content["hits"]} <= _pdf_ids(idx)
    assert bad.is_error and "lower() is not allowed" in bad.content[0].text


def test_langchain_retriever_takes_where(idx):
    pytest.importorskip("langchain_core")
    from index.integrations.langchain import SpanindexRetriever

    documents = SpanindexRetriever(index=idx, k=5, mode="lexical", where=PDFS).invoke(QUERY)
    assert documents and {d.metadata["doc_id"] for d in documents} <= _pdf_ids(idx)
    assert [d.id for d in documents] == [h.chunk_id for h in idx.search(QUERY, 5, "lexical", where=PDFS)]
    with pytest.raises(FilterError, match="lower"):
        SpanindexRetriever(index=idx, k=5, where=BAD).invoke(QUERY)


def test_llamaindex_retriever_maps_metadata_filters_onto_the_same_filter(idx):
    pytest.importorskip("llama_index.core")
    from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

    from index.integrations.llamaindex import SpanindexRetriever

    filters = MetadataFilters(filters=[
        MetadataFilter(key="media_type", value="application/pdf"),
        MetadataFilters(filters=[
            MetadataFilter(key="doc_id", value="pricing", operator=FilterOperator.TEXT_MATCH),
            MetadataFilter(key="pages", value=1, operator=FilterOperator.GT),
        ], condition="or"),
    ])
    where = "media_type = 'application/pdf' AND (doc_id LIKE '%pricing%' OR pages > 1)"
    nodes = SpanindexRetriever(idx, k=6, mode="hybrid", filters=filters).retrieve(QUERY)
    assert nodes
    assert [n.node.node_id for n in nodes] == [h.chunk_id for h in idx.search(QUERY, 6, "hybrid", where=where)]
    both = SpanindexRetriever(idx, k=6, mode="lexical", where="doc_id LIKE 'pricing/%'", filters=filters)
    assert {n.node.metadata["doc_id"] for n in both.retrieve(QUERY)} == {"pricing/rate-card.pdf"}
    with pytest.raises(FilterError, match="not a filter spanindex can apply"):
        SpanindexRetriever(idx, filters=MetadataFilters(filters=[
            MetadataFilter(key="team", value=["a"], operator=FilterOperator.ALL)]))


@pytest.mark.parametrize("operator, value, where", [
    ("==", "web/faq.html", "doc_id = 'web/faq.html'"),
    ("!=", "web/faq.html", "doc_id <> 'web/faq.html'"),
    ("in", ["web/faq.html", "pricing/rate-card.pdf"], "doc_id IN ('web/faq.html', 'pricing/rate-card.pdf')"),
    ("nin", ["web/faq.html"], "doc_id NOT IN ('web/faq.html')"),
    ("text_match", "50%_x", "doc_id LIKE '%50\\%\\_x%'"),
    ("text_match_insensitive", "FAQ", "doc_id ILIKE '%FAQ%'"),
    ("contains", "faq", "doc_id LIKE '%faq%'"),
    ("is_empty", None, "(doc_id IS NULL OR doc_id = '')"),
])
def test_each_llamaindex_operator_maps_to_its_sql(operator, value, where):
    pytest.importorskip("llama_index.core")
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    from index.integrations.llamaindex import where_of_filters
    from index.search.filters import compile_filter

    mapped = where_of_filters(MetadataFilters(filters=[MetadataFilter(key="doc_id", value=value, operator=operator)]))
    assert mapped == f"({where})"
    compile_filter(mapped)  # and the filter language takes it
    numbers = MetadataFilters(filters=[MetadataFilter(key="pages", value=2, operator=">=")], condition="not")
    assert where_of_filters(numbers) == "NOT ((pages >= 2))"
