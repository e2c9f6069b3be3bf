"""Chunk ids do not move by accident: the chunker's output over every document of sample_corpus/
and ../shared/corpus/ is compared with digests recorded in tests/golden/chunk_spans.json.

A chunk id is ``doc_id#tok:token_start``; a change of a cut, a token number, a token count or
an embedded string changes ids or vectors, breaks stored citations' ids and makes every index
embed again. Such a change must be deliberate: regenerate the digests with
``SPANINDEX_REGENERATE_GOLDEN=1`` (the test then fails, so that the flag is never left on).
A document whose text or hidden runs changed (a parser change) fails the test the same way,
with a message that says so: its digest says nothing about the chunker any more.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from ingest.corpus import discover
from ingest.text.chunker import chunk_spans
from ingest.formats.parse import media_type_of, parse_document
from schemas.records import ChunkerSettings, DocStatus, HiddenReason, HiddenRun

from conftest import ROOT, SAMPLE_CORPUS, SHARED_CORPUS

GOLDEN = ROOT / "tests" / "golden" / "chunk_spans.json"
REGENERATE = os.environ.get("SPANINDEX_REGENERATE_GOLDEN") == "1"


def _every_500(text: str) -> tuple[HiddenRun, ...]:
    """Seven hidden characters every 500: what embeds is recomputed in most chunks."""
    return tuple(HiddenRun(i, min(i + 7, len(text)), HiddenReason.TINY) for i in range(100, len(text), 500))


# name -> (settings, hidden runs of a document); the parser's own runs in "default"
VARIANTS = {
    "default": (ChunkerSettings(), lambda text, runs: runs),
    "small": (ChunkerSettings(max_tokens=64, overlap=16), lambda text, runs: ()),
    "hidden": (ChunkerSettings(), lambda text, runs: _every_500(text)),
}


def _documents():
    folders = [("sample", SAMPLE_CORPUS)] + ([("shared", SHARED_CORPUS)] if SHARED_CORPUS.is_dir() else [])
    for prefix, folder in folders:
        for found in discover(folder).files:
            outcome = parse_document(found.path.read_bytes(), found.doc_id, media_type_of(found.doc_id))
            if outcome.parsed is not None and outcome.record.status is DocStatus.OK:
                yield f"{prefix}/{found.doc_id}", outcome.parsed


def _digest(spans) -> str:
    rows = [[s.start, s.end, s.token_start, s.n_tokens, s.embed_text] for s in spans]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=True).encode()).hexdigest()


def _outputs(tokenizer) -> dict[str, dict]:
    out = {}
    for doc_id, parsed in _documents():
        runs = [[r.start, r.end, r.reason.value] for r in parsed.hidden_runs]
        entry = {
            "text_sha256": hashlib.sha256(parsed.text.encode("utf-8", "surrogatepass")).hexdigest(),
            "hidden_sha256": hashlib.sha256(json.dumps(runs).encode()).hexdigest(),
        }
        for name, (settings, hidden) in VARIANTS.items():
            spans = chunk_spans(parsed.text, tokenizer, settings, hidden(parsed.text, parsed.hidden_runs))
            entry[name] = f"{len(spans)} {_digest(spans)}"
        out[doc_id] = entry
    return out


def test_chunk_spans_of_every_corpus_document_are_those_recorded(tokenizer):
    outputs = _outputs(tokenizer)
    if REGENERATE:
        recorded = json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else {}
        recorded.update(outputs)  # a run without the shared corpus keeps its entries
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
        pytest.fail(f"{GOLDEN.name} regenerated ({len(outputs)} documents): unset SPANINDEX_REGENERATE_GOLDEN")
    recorded = json.loads(GOLDEN.read_text())
    if not SHARED_CORPUS.is_dir():
        recorded = {k: v for k, v in recorded.items() if not k.startswith("shared/")}
    assert sorted(outputs) == sorted(recorded), "the corpus changed: regenerate the digests"
    changed_text = [d for d in outputs if outputs[d]["text_sha256"] != recorded[d]["text_sha256"]]
    assert not changed_text, f"the parser's text changed for {changed_text}: regenerate the digests"
    changed_runs = [d for d in outputs if outputs[d]["hidden_sha256"] != recorded[d].get("hidden_sha256")]
    assert not changed_runs, f"the parser's hidden runs changed for {changed_runs}: regenerate the digests"
    moved = [(d, name) for d in outputs for name in VARIANTS if outputs[d][name] != recorded[d][name]]
    assert not moved, f"chunk spans differ from those recorded (document, variant): {moved}"
