"""Readers while builds publish and retire generations: an index opened once and held (as a RAG
service holds it) answers every search, resolve and verify across 10 reindexes, each request on one
whole generation, whether it sat idle or read all along."""

from __future__ import annotations

import collections
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import index
from index.citations.drift import check_records
from index.fsck import fsck
from index.citations.verify import Verifier, resolve, verify_answer
from index.viewer.server.app import create_app
from ingest.build import BuildSettings, build_index
from schemas.citations import Answer, Claim, DriftStatus, Support
from schemas.errors import IndexFormatError

from conftest import WAIT_S
from doubles import HashingEmbedder

STABLE = "Refunds are issued within fourteen days of a written request to the billing team."


def _corpus(root: Path) -> Path:
    root.mkdir()
    (root / "terms.md").write_text(f"# Terms\n\n{STABLE}\n\nSupport tickets are answered within one business day.\n")
    for i in range(4):
        (root / f"note-{i}.md").write_text(f"# Note {i}\n\nNote {i} talks about storage, egress and audit logs.\n")
    return root


def _reindex(corpus: Path, idx_dir: Path, run: int) -> None:
    """Every document but terms.md changes: their old texts are retired three builds later."""
    for i in range(4):
        (corpus / f"note-{i}.md").write_text(f"# Note {i}\n\nRevision {run}: note {i} talks about egress and logs.\n")
    build_index(corpus, idx_dir, BuildSettings(workers=1, full=run % 2 == 0), embedder=HashingEmbedder())


def _one_whole_generation(idx) -> None:
    """Within one request, every row the reader sees is of the generation it started on."""
    with idx.request():
        name = idx.generation.name
        hits = idx.search("notes about egress and audit logs", k=5)
        for hit in hits:
            chunk = idx.chunk(hit.chunk_id)
            assert chunk is not None and chunk.doc_version == hit.doc_version
            assert idx.document(hit.doc_id).doc_version == hit.doc_version
            assert idx.doc_text(chunk.doc_version)[chunk.start : chunk.end] == chunk.text == hit.text
            citation = resolve(idx, hit.chunk_id, chunk.text[4:70])
            assert citation.status.verified and citation.doc_version == hit.doc_version
        assert idx.generation.name == name


@pytest.mark.hostile("a reader opened once (index.open) and left idle while 10 reindexes publish and retire generations",
                     "handled: its next search, resolve, verify and check run on the live generation; nothing it needs was retired")
def test_an_idle_reader_answers_after_ten_reindexes(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    [hit] = idx.search("notes about egress", k=1)
    old = resolve(idx, hit.chunk_id, hit.text[4:60])  # loads a text of generation 000001
    verifier = Verifier(idx)
    for run in range(10):
        _reindex(corpus, idx_dir, run)
    assert not idx.has_text(old.doc_version), "the first generation's texts are retired: the case that failed"
    _one_whole_generation(idx)
    assert idx.generation.name == "000011"
    terms = next(c for c in idx.chunks_of("terms.md") if STABLE in c.text)
    record = verifier.verify_claim("a", Claim("c", "refunds", (Support(terms.chunk_id, STABLE),)))
    assert record.citations[0].status.verified
    (swept,) = check_records(idx, [record])
    assert swept.citations[0].drift is DriftStatus.OK


def test_a_pinned_reader_says_its_generation_was_retired(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    pinned = index.open(idx_dir, "000001", embedder=HashingEmbedder())
    for run in range(4):
        _reindex(corpus, idx_dir, run)
    assert pinned.generation.name == "000001"  # pinned readers never move
    note = pinned.chunks_of("note-0.md")[0]
    with pytest.raises(IndexFormatError, match="generation 000001 has been retired"):
        pinned.doc_text(note.doc_version)


def test_one_request_sees_one_generation_even_when_a_build_publishes_inside_it(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    with idx.request():
        before = idx.chunks_of("note-0.md")[0]
        _reindex(corpus, idx_dir, 1)
        assert idx.generation.name == "000001" and idx.chunks_of("note-0.md")[0] == before
        assert idx.doc_text(before.doc_version)[before.start : before.end] == before.text
    assert idx.chunks_of("note-0.md")[0].doc_version != before.doc_version  # the next request moved
    assert idx.generation.name == "000002"


@pytest.mark.hostile("three long-lived readers (whole requests, single calls, the HTTP server) searching and verifying "
                     "without pause while 10 reindexes publish and retire generations",
                     "handled: zero failed reads; each request on one whole generation; every reader moved with CURRENT")
def test_busy_readers_never_fail_across_ten_reindexes(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    stop = threading.Event()
    reads: collections.Counter = collections.Counter()
    seen: dict[str, set[str]] = collections.defaultdict(set)
    failures: list[str] = []

    def loop(name, read):
        while not stop.is_set():
            try:
                seen[name].add(read())
                reads[name] += 1
            except BaseException as exc:  # noqa: BLE001 - any failure is the finding
                failures.append(f"{name}: {type(exc).__name__}: {exc}")

    whole = index.open(idx_dir, embedder=HashingEmbedder())

    def whole_requests():
        _one_whole_generation(whole)
        return whole.generation.name

    single = index.open(idx_dir, embedder=HashingEmbedder())

    def single_calls():  # no request block: each call on the live generation of its moment
        chunk = next(c for c in single.chunks_of("terms.md") if STABLE in c.text)
        assert resolve(single, chunk.chunk_id, STABLE).status.verified
        assert single.search("refunds billing team", k=2)
        records, summary = verify_answer(single, Answer("a", (Claim("c", "t", (Support(chunk.chunk_id, STABLE),)),)))
        assert summary.verified == 1
        return single.generation.name

    client = TestClient(create_app(idx_dir, embedder=HashingEmbedder()), base_url="http://127.0.0.1")

    def server():
        found = client.get("/api/search", params={"q": "refunds billing team", "k": 3})
        assert found.status_code == 200, found.text
        hit = next(h for h in found.json()["hits"] if h["doc_id"] == "terms.md")
        answer = {"answer_id": "a", "claims": [{"claim_id": "c", "text": "t",
                  "support": [{"chunk_id": hit["chunk_id"], "quote": STABLE}]}]}
        verified = client.post("/api/verify", json=answer)
        assert verified.status_code == 200, verified.text
        assert verified.json()["summary"]["verified"] == 1
        return found.json()["generation"]

    threads = [threading.Thread(target=loop, args=args) for args in
               [("whole requests", whole_requests), ("single calls", single_calls), ("server", server)]]
    for thread in threads:
        thread.start()
    try:
        for run in range(10):
            _reindex(corpus, idx_dir, run)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=WAIT_S)
    assert not failures, failures[:5]
    assert fsck(idx_dir) == []
    print(f"\nreads during 10 reindexes: {dict(reads)}; generations seen: "
          f"{ {k: len(v) for k, v in seen.items()} }; failures: {len(failures)}")
    for name in ("whole requests", "single calls", "server"):
        assert reads[name] >= 10, (name, reads)
        assert len(seen[name]) >= 3, f"{name} did not move with CURRENT: {sorted(seen[name])}"
