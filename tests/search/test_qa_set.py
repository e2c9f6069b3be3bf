"""The labelled questions of `make bench`: enough of them, in enough languages, each answered by a span
of its document, and a held-out part chosen by a fixed rule that no tuning can move."""

from __future__ import annotations

import collections
import json

import pytest

from benchmarks.retrieval import SPLITS, split_of

import conftest
from conftest import ROOT, needs_shared_corpus

QA = ROOT / "tests" / "data" / "qa_shared_corpus.jsonl"
ROWS = [json.loads(line) for line in QA.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_set_is_large_varied_and_well_formed():
    assert len(ROWS) >= 300
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for row in ROWS:
        assert set(row) == {"id", "doc_id", "lang", "question", "answer", "split"}
        assert row["question"].strip() and row["answer"].strip()
        assert row["answer"] not in row["question"]  # a question, not its answer
    assert len({(r["doc_id"], r["question"]) for r in ROWS}) == len(ROWS)
    languages = collections.Counter(r["lang"] for r in ROWS)
    assert sum(1 for n in languages.values() if n >= 20) >= 5 and len({r["doc_id"] for r in ROWS}) >= 15


def test_the_held_out_split_is_the_fixed_rule_and_spread_over_languages():
    for row in ROWS:
        assert row["split"] in SPLITS and row["split"] == split_of(row["id"]), row["id"]
    held = [r for r in ROWS if r["split"] == "heldout"]
    assert 0.25 <= len(held) / len(ROWS) <= 0.4
    big = {lang for lang, n in collections.Counter(r["lang"] for r in ROWS).items() if n >= 20}
    assert big <= {r["lang"] for r in held}  # every language with 20 questions has held-out ones


@pytest.mark.parametrize("doc_id", sorted({r["doc_id"] for r in ROWS}))
def test_every_answer_is_text_of_its_document(doc_id):
    needs_shared_corpus()
    from ingest.formats.parse import media_type_of, parse_document

    path = conftest.SHARED_CORPUS / doc_id
    text = parse_document(path.read_bytes(), doc_id, media_type_of(doc_id)).parsed.text
    for row in (r for r in ROWS if r["doc_id"] == doc_id):
        assert row["answer"] in text, row["id"]
