"""Every README example marked "runs in tests/test_readme_examples.py" runs, in README order,
against the sample index built with the real model, with `spanindex` on the PATH."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys

import pytest

import index
from index.citations.anthropic_format import search_result_blocks
from schemas.citations import CitationStatus

from conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.spawns]

MARK = "<!-- runs in tests/test_readme_examples.py -->"
_EXAMPLE = re.compile(re.escape(MARK) + r"\n```(\w+)\n(.*?)\n```", re.S)


def readme_examples() -> list[tuple[str, str]]:
    """(language, code) of each marked example, in README order."""
    return _EXAMPLE.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_marked_examples_are_there():
    kinds = [code for _, code in readme_examples()]
    for needle in ("langchain", "llamaindex", "search_result_blocks", "--from anthropic", "from mcp import",
                   "import duckdb", "import polars", "idx.search("):
        assert any(needle in code for code in kinds), needle
    assert len(kinds) == (ROOT / "README.md").read_text(encoding="utf-8").count(MARK)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, sample_index):
    """A folder as the README assumes it: build/sample-index, `spanindex` on the PATH, and the
    response Claude would have given to the README's question (response.json)."""
    work = tmp_path_factory.mktemp("readme")
    (work / "build").mkdir()
    (work / "build" / "sample-index").symlink_to(sample_index)
    bin_dir = work / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "spanindex"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m index "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    idx = index.open(sample_index)
    blocks = search_result_blocks(idx, idx.search("How much is Growth plan overage per 1,000 API calls?", k=3))
    result, piece = next((i, p) for i, b in enumerate(blocks) for p, t in enumerate(b["content"]) if "$0.12" in t["text"])
    citation = {
        "type": "search_result_location", "source": blocks[result]["source"], "title": blocks[result]["title"],
        "cited_text": blocks[result]["content"][piece]["text"], "search_result_index": result,
        "start_block_index": piece, "end_block_index": piece + 1,
    }
    response = {
        "id": "msg_readme", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Growth overage costs $0.12 per 1,000 API calls.", "citations": [citation]}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 900, "output_tokens": 20},
    }
    (work / "response.json").write_text(json.dumps(response), encoding="utf-8")
    return work


def test_the_readme_examples_run(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("PATH", f"{workspace / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    outputs = []
    for language, code in readme_examples():
        if language == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})  # noqa: S102
            outputs.append(out.getvalue())
        else:
            assert language == "sh"
            done = subprocess.run(["bash", "-e", "-c", code], capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, (code, done.stderr)
            outputs.append(done.stdout)
        assert outputs[-1].strip() or language == "sh", code
    records = [json.loads(line) for line in (workspace / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["status"] for r in records for c in r["citations"]] == ["exact"]  # Claude's citation, verified
    results = json.loads((workspace / "search_results.json").read_text(encoding="utf-8"))
    assert len(results) == 3 and all(r["type"] == "search_result" for r in results)
    printed = {code: out for (_, code), out in zip(readme_examples(), outputs)}
    tables = [out for code, out in printed.items() if "index.live_" in code]
    assert len(tables) == 2 and all("pricing/rate-card.pdf" in out for out in tables)  # chunks, citations per page
    (mcp_out,) = [out for code, out in printed.items() if "from mcp import" in code]
    chunk_id, status = mcp_out.split()
    assert index.open(workspace / "build" / "sample-index").chunk(chunk_id) is not None
    assert status in {s.value for s in CitationStatus}
