"""LangChain and LlamaIndex retrievers, run by the real libraries: the same chunks, in the same
order, as `spanindex search`, each carrying its exact span in its metadata."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

import index
from index.cli import main
from index.integrations import HEADINGS_JOINER

pytestmark = pytest.mark.slow

QUERIES = [
    "How much is Growth plan overage per 1,000 API calls?",
    "How often does the status page post incident updates?",
    "Which countries can employees work from?",
    "webhook retry limit",
]
MODES = [None, "dense", "lexical", "hybrid"]


def cli_search(index_dir, query: str, k: int, mode: str | None) -> list[dict]:
    argv = ["search", str(index_dir), query, "-k", str(k), "--json"] + (["--mode", mode] if mode else [])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return json.loads(out.getvalue())


def _assert_same_place(idx, metadata: dict, text: str, expected: dict) -> None:
    for key in ("chunk_id", "doc_id", "doc_version", "start", "end", "page_start", "page_end", "rank"):
        assert metadata[key] == expected[key], key
    assert text == expected["text"] == idx.doc_text(metadata["doc_version"])[metadata["start"] : metadata["end"]]
    assert metadata["headings"] == HEADINGS_JOINER.join(expected["headings"])  # the section, flat
    assert metadata["title"] == (expected["title"] or expected["doc_id"])
    if metadata["page_start"] is not None:
        assert metadata["locator"] == f"#page={metadata['page_start']}"
    if metadata["doc_id"].endswith(".html"):
        assert metadata["locator"].startswith("#:~:text=")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", QUERIES)
def test_langchain_retriever_returns_what_spanindex_search_returns(sample_index, query, mode):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from index.integrations.langchain import SpanindexRetriever

    idx = index.open(sample_index)
    retriever = SpanindexRetriever(index=idx, k=5, mode=mode)
    documents = retriever.invoke(query)
    expected = cli_search(sample_index, query, 5, mode)
    assert [d.id for d in documents] == [h["chunk_id"] for h in expected] and len(expected) == 5
    for document, hit in zip(documents, expected):
        assert isinstance(document, Document)
        _assert_same_place(idx, document.metadata, document.page_content, hit)
        assert document.metadata["mode"] == (mode or "lexical")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", QUERIES)
def test_llamaindex_retriever_returns_what_spanindex_search_returns(sample_index, query, mode):
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import MetadataMode, NodeRelationship

    from index.integrations.llamaindex import SpanindexRetriever

    idx = index.open(sample_index)
    results = SpanindexRetriever(idx, k=5, mode=mode).retrieve(query)
    expected = cli_search(sample_index, query, 5, mode)
    assert [r.node.node_id for r in results] == [h["chunk_id"] for h in expected] and len(expected) == 5
    for result, hit in zip(results, expected):
        node = result.node
        _assert_same_place(idx, node.metadata, node.get_content(MetadataMode.NONE), hit)
        assert node.metadata["mode"] == (mode or "lexical")
        assert (node.start_char_idx, node.end_char_idx) == (hit["start"], hit["end"])
        assert node.relationships[NodeRelationship.SOURCE].node_id == hit["doc_id"]
        assert result.score == pytest.approx(hit["score"])
        assert hit["chunk_id"] in node.get_content(MetadataMode.LLM)  # the model sees what to cite
        assert "doc_version" not in node.get_content(MetadataMode.LLM)


def test_retrievers_open_an_index_folder(sample_index):
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from index.integrations.langchain import SpanindexRetriever as LangChainRetriever
    from index.integrations.llamaindex import SpanindexRetriever as LlamaIndexRetriever

    query = QUERIES[0]
    from_langchain = [d.id for d in LangChainRetriever.from_path(sample_index, k=3).invoke(query)]
    from_llamaindex = [r.node.node_id for r in LlamaIndexRetriever.from_path(sample_index, k=3).retrieve(query)]
    assert from_langchain == from_llamaindex == [h["chunk_id"] for h in cli_search(sample_index, query, 3, None)]
