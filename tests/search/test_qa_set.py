"""The labelled questions of `make bench`: enough of them, each answered by a span of its document."""

from __future__ import annotations

import collections
import json

import pytest

import conftest
from conftest import ROOT, needs_shared_corpus

QA = ROOT / "tests" / "data" / "qa_shared_corpus.jsonl"
ROWS = [json.loads(line) for line in QA.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_set_is_large_varied_and_well_formed():
    assert len(ROWS) >= 60
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for row in ROWS:
        assert set(row) == {"id", "doc_id", "lang", "question", "answer"}
        assert row["question"].strip() and row["answer"].strip()
        assert row["answer"] not in row["question"]  # a question, not its answer
    languages = collections.Counter(r["lang"] for r in ROWS)
    assert len(languages) >= 5 and len({r["doc_id"] for r in ROWS}) >= 15


@pytest.mark.parametrize("doc_id", sorted({r["doc_id"] for r in ROWS}))
def test_every_answer_is_text_of_its_document(doc_id):
    needs_shared_corpus()
    from ingest.formats.parse import media_type_of, parse_document

    path = conftest.SHARED_CORPUS / doc_id
    text = parse_document(path.read_bytes(), doc_id, media_type_of(doc_id)).parsed.text
    for row in (r for r in ROWS if r["doc_id"] == doc_id):
        assert row["answer"] in text, row["id"]
