"""Incremental reindexing, retention, fsck, and the drift sweep of stored citations."""

from __future__ import annotations

import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymupdf
import pytest

import index
from index.citations.drift import check_records, summarize_drift
from index.fsck import fsck
from index.citations.verify import Verifier, resolve
from ingest.compact import compact_index
from ingest.build import BuildSettings, build_index
from schemas.citations import Claim, ClaimVerdict, DriftStatus, Support
from schemas.manifest import read_manifest
from schemas.record_json import read_records, record_line

from conftest import ROOT, SAMPLE_CORPUS, SHARED_CORPUS, WAIT_S, live_files, spanindex
from doubles import HashingEmbedder


def _build(corpus, idx_dir, **settings):
    return build_index(corpus, idx_dir, BuildSettings(workers=1, **settings), embedder=HashingEmbedder())


def _records(idx, doc_id, n, seed):
    """Verified citation records for n sentence-sized quotes spread over one document."""
    verifier = Verifier(idx)
    chunks = idx.chunks_of(doc_id)
    rng = random.Random(seed)
    records = []
    for i, chunk in enumerate(rng.sample(chunks, min(n, len(chunks)))):
        sentences = [m for m in re.finditer(r"[A-Z][^.!?\n]{25,160}[.!?]", chunk.text)]
        if not sentences:
            continue
        quote = rng.choice(sentences).group()
        record = verifier.verify_claim("a", Claim(f"{doc_id}:{i}", "claim", (Support(chunk.chunk_id, quote),)))
        assert record.verdict is ClaimVerdict.VERIFIED
        records.append(record)
    return records


def test_a_changed_corpus_rebuilds_only_what_changed(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    first = _build(corpus, idx_dir)
    (corpus / "docs" / "release-notes.txt").write_bytes(
        (corpus / "docs" / "release-notes.txt").read_bytes() + b"\r\nVersion 4.3.0 adds audit exports.\r\n"
    )
    (corpus / "docs" / "new.md").write_text("# New\n\nA new page about data residency in Zurich.\n")
    (corpus / "web" / "no-charset.html").unlink()
    second = _build(corpus, idx_dir)
    assert (second.added, second.changed, second.removed, second.unchanged) == (1, 1, 1, first.n_files - 2)
    assert second.chunks_embedded <= 3, "only the new and edited chunks are embedded"
    assert second.chunks_reused >= first.chunks - 10
    assert fsck(idx_dir) == []


def test_retention_keeps_three_generations_and_the_texts_they_reference(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    idx_dir = tmp_path / "idx"
    versions, sources = [], []
    (corpus / "b.html").write_text("<p>A page that never changes.</p>")
    for i in range(5):
        (corpus / "a.md").write_text(f"Version {i} of the document, with its own sentence number {i}.")
        _build(corpus, idx_dir)
        versions.append(index.open(idx_dir).document("a.md").doc_version)
        sources.append(index.open(idx_dir).document("a.md").source_sha256)
    generations = sorted(p.name for p in (idx_dir / "generations").iterdir())
    assert generations == ["000003", "000004", "000005"]
    idx = index.open(idx_dir)
    assert [idx.has_text(v) for v in versions] == [False, False, True, True, True]
    page = idx.document("b.html")
    # The retired versions' sources went by name; the unchanged page's bytes stay.
    assert sorted(p.name for p in (idx_dir / "sources").iterdir()) == sorted(
        [f"{sha}.md" for sha in sources[2:]] + [f"{page.source_sha256}.html", f"{page.source_sha256}.decoded.html"])
    assert idx.has_text(page.doc_version)
    # A file no generation ever referenced is not looked for by a build; a compaction sweeps it.
    stray = idx_dir / "texts" / f"{'0' * 64}.txt"
    stray.write_text("debris")
    (corpus / "a.md").write_text("Version 4b.")
    _build(corpus, idx_dir)
    assert stray.exists()
    compact_index(idx_dir)
    assert not stray.exists() and fsck(idx_dir) == []
    versions.append(index.open(idx_dir).document("a.md").doc_version)
    (corpus / "a.md").write_text("Version 5.")
    _build(corpus, idx_dir, keep_texts=True, keep_generations=1)
    assert sorted(p.name for p in (idx_dir / "generations").iterdir()) == ["000008"]  # after a build and a compaction
    assert all(index.open(idx_dir).has_text(v) for v in versions[4:])  # versions 4 and 4b were still referenced


@pytest.mark.hostile("an index with damaged files and missing texts", "CLI error: `spanindex fsck` names each fault, exit 1")
@pytest.mark.spawns
def test_fsck_names_damaged_files_and_missing_texts(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS / "docs", tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    assert fsck(idx_dir) == []
    gen = index.open(idx_dir).generation
    chunks_file = gen.segments[0].dir / "chunks.parquet"
    data = bytearray(chunks_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunks_file.write_bytes(bytes(data))
    faults = fsck(idx_dir)
    assert any("chunks.parquet" in str(f) and "checksum" in str(f) for f in faults)
    run = spanindex("fsck", idx_dir)
    assert run.returncode == 1 and "FAULT" in run.stdout

    _build(corpus, idx_dir, full=True)
    doc = index.open(idx_dir).documents()[0]
    index.open(idx_dir).paths.text(doc.doc_version).unlink()
    assert any("stored text" in str(f) for f in fsck(idx_dir))


# -- the drift sweep on edited copies of real documents ----------------------------------------


def _edit_pdf(path: Path, edit) -> None:
    with pymupdf.open(path) as pdf:
        edit(pdf)
        data = pdf.tobytes(garbage=3, deflate=True)
    path.write_bytes(data)


def _insert_paragraph_on_first_page(pdf) -> None:
    page = pdf[0]
    page.insert_text((36, 30), "An inserted notice: this copy was reissued for the drift test.", fontsize=7)


def _redact(pdf, page_number: int, text: str, replacement: str | None = None) -> None:
    page = pdf[page_number - 1]
    hits = page.search_for(text)
    assert hits, f"{text!r} not on page {page_number}"
    for rect in hits[:1]:
        page.add_redact_annot(rect)
    page.apply_redactions(images=pymupdf.PDF_REDACT_IMAGE_NONE)
    if replacement:
        page.insert_text(hits[0].bl + (0, -2), replacement, fontsize=9)


def _sweep(idx_dir, records):
    return list(check_records(index.open(idx_dir), records))


def _drifts(records):
    return [c.drift for r in records for c in r.citations]


@pytest.fixture(scope="module")
def drift_case(tmp_path_factory):
    """A corpus of real documents, citations verified against it, then the corpus edited and reindexed."""
    root = tmp_path_factory.mktemp("drift")
    corpus = root / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus, ignore=shutil.ignore_patterns("bad"))
    shared = {
        "shared/dpr.pdf": SHARED_CORPUS / "pdf" / "unstructured__dpr-multi-column.pdf",
        "shared/tsne.html": SHARED_CORPUS / "html" / "trafilatura__wikipedia-tsne.html",
    }
    for doc_id, source in shared.items():
        if source.is_file():
            (corpus / doc_id).parent.mkdir(exist_ok=True)
            shutil.copy(source, corpus / doc_id)
    idx_dir = root / "idx"
    _build(corpus, idx_dir)
    idx = index.open(idx_dir)
    cited = [d.doc_id for d in idx.documents() if d.n_chunks]
    before = {doc_id: _records(idx, doc_id, 6, seed=len(doc_id)) for doc_id in cited}
    return corpus, idx_dir, before


def _apply_edits(corpus: Path, before) -> dict[str, str]:
    """Edit the corpus; return what each edited document's citations should become."""
    expected = {}
    policy = corpus / "docs" / "long-policy.md"
    text = policy.read_text()
    cut = text.index("\n\n", 200) + 2
    policy.write_text(text[:cut] + "A paragraph inserted near the start moves every later quote.\n\n" + text[cut:])
    expected["docs/long-policy.md"] = "moved"

    notes = corpus / "docs" / "release-notes.txt"
    (citation,) = before["docs/release-notes.txt"][0].citations
    notes.write_bytes(notes.read_bytes().replace(citation.quote.encode(), b""))
    expected["docs/release-notes.txt"] = "first_gone"

    faq = corpus / "web" / "faq.html"
    html = faq.read_bytes().decode("utf-8")
    citation = before["web/faq.html"][0].citations[0]
    number = re.search(r"\d+", citation.quote)
    if number:
        # Change the number where the quote's source range holds it: its text may be split by tags.
        segment = html[citation.src_start : citation.src_end]
        text_only = re.sub(r"<[^>]*>", lambda tag: " " * len(tag.group()), segment)
        at = citation.src_start + text_only.index(number.group())
        html = html[:at] + str(int(number.group()) + 7) + html[at + len(number.group()) :]
        faq.write_bytes(html.encode("utf-8"))
        expected["web/faq.html"] = "first_gone"

    (corpus / "docs" / "getting-started.md").unlink()
    expected["docs/getting-started.md"] = "gone"

    if (corpus / "shared" / "dpr.pdf").is_file():
        _edit_pdf(corpus / "shared" / "dpr.pdf", _insert_paragraph_on_first_page)
        expected["shared/dpr.pdf"] = "ok_or_moved"
    if (corpus / "shared" / "tsne.html").is_file():
        page = corpus / "shared" / "tsne.html"
        source = page.read_bytes()
        page.write_bytes(source.replace(b"<body", b"<p>Inserted before everything.</p><body", 1) if b"<body" in source else source)
        expected["shared/tsne.html"] = "ok_or_moved"
    return expected


def test_swept_citations_land_in_the_expected_class_and_repairs_verify(drift_case):
    corpus, idx_dir, before = drift_case
    expected = _apply_edits(corpus, before)
    report = _build(corpus, idx_dir)
    assert report.changed >= 3 and report.removed == 1
    idx = index.open(idx_dir)
    swept = {doc_id: _sweep(idx_dir, records) for doc_id, records in before.items()}
    for doc_id, records in swept.items():
        drifts = _drifts(records)
        how = expected.get(doc_id, "ok")
        if how == "ok":
            assert set(drifts) == {"ok"}, (doc_id, drifts)
        elif how == "moved":
            assert "moved" in drifts and set(drifts) <= {"ok", "moved"}, (doc_id, drifts)
        elif how == "ok_or_moved":
            assert set(drifts) <= {"ok", "moved"}, (doc_id, drifts)
        elif how == "first_gone":
            assert drifts[0] == "gone", (doc_id, drifts, records[0].citations[0].drift_detail)
            assert set(drifts[1:]) <= {"ok", "moved"}, (doc_id, drifts)
        elif how == "gone":
            assert set(drifts) == {"gone"}, (doc_id, drifts)
        for record in records:
            for c in record.citations:
                if c.drift in ("ok", "moved"):
                    text = idx.doc_text(c.doc_version)
                    assert text[c.doc_start : c.doc_end] == c.quote
                    again = resolve(idx, c.chunk_id, c.quote)
                    assert again.status.verified and (again.doc_start, again.doc_end) == (c.doc_start, c.doc_end), (doc_id, c)
    counts = summarize_drift(r for records in swept.values() for r in records)
    print("\ndrift sweep:", counts.by_drift)


def test_a_reworded_quote_is_changed_and_a_repeated_one_is_ambiguous(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    doc = corpus / "terms.md"
    doc.write_text(
        "# Terms\n\nRefunds are issued within 14 days of a written request to the billing team.\n\n"
        "Support tickets are answered within one business day by the support desk.\n"
    )
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    idx = index.open(idx_dir)
    chunk = idx.chunks_of("terms.md")[0]
    verifier = Verifier(idx)
    refund = verifier.verify_claim("a", Claim("c1", "t", (Support(chunk.chunk_id, "Refunds are issued within 14 days of a written request to the billing team."),)))
    support = verifier.verify_claim("a", Claim("c2", "t", (Support(chunk.chunk_id, "Support tickets are answered within one business day"),)))
    doc.write_text(
        "# Terms\n\nRefunds are issued within 14 days of a written request to the billing department.\n\n"
        "Intro. Support tickets are answered within one business day, always.\n\n"
        "Archive: Support tickets are answered within one business day, then closed.\n"
    )
    _build(corpus, idx_dir)
    swept = _sweep(idx_dir, [refund, support])
    assert swept[0].citations[0].drift == "changed"
    assert "department" in swept[0].citations[0].drift_detail and swept[0].citations[0].quote.endswith("department.")
    assert swept[1].citations[0].drift == "ambiguous"


@pytest.mark.hostile('a citation record whose quote does not fit its offsets', "record status: drift 'corrupt_record'")
def test_a_record_whose_quote_does_not_fit_its_offsets_is_corrupt(sample_index_test_model, tmp_path):
    idx = index.open(sample_index_test_model)
    chunk = idx.chunks_of("docs/long-policy.md")[2]
    record = Verifier(idx).verify_claim("a", Claim("c", "t", (Support(chunk.chunk_id, chunk.text[10:80]),)))
    path = tmp_path / "records.jsonl"
    raw = json.loads(record_line(record))
    raw["citations"][0]["char_end"] += 3
    path.write_text(json.dumps(raw) + "\nnot json\n")
    parsed = list(read_records(path))
    assert parsed[1][1] is None and "line 2" in parsed[1][2]
    (swept,) = _sweep(sample_index_test_model, [parsed[0][1]])
    assert swept.citations[0].drift == DriftStatus.CORRUPT_RECORD


@pytest.mark.spawns
def test_check_cli_writes_repaired_records_and_a_summary(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("First paragraph stays where it is.\n\nThe quoted sentence sits in the second paragraph.\n")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    idx = index.open(idx_dir)
    record = Verifier(idx).verify_claim("a", Claim("c", "t", (Support("a.md#tok:0", "The quoted sentence sits in the second paragraph."),)))
    records = tmp_path / "records.jsonl"
    records.write_text(record_line(record) + "\n")
    (corpus / "a.md").write_text("A new first paragraph.\n\nFirst paragraph stays where it is.\n\nThe quoted sentence sits in the second paragraph.\n")
    _build(corpus, idx_dir)
    out = tmp_path / "repaired.jsonl"
    run = spanindex("check", idx_dir, records, "-o", out)
    assert run.returncode == 0, run.stderr
    assert "moved 1" in run.stdout
    repaired = json.loads(out.read_text())["citations"][0]
    assert repaired["drift"] == "moved" and repaired["doc_start"] == record.citations[0].doc_start + len("A new first paragraph.\n\n")


# -- crash safety and concurrency -------------------------------------------------------------

_BUILDER = """
import os, sys, time
sys.path.insert(0, "tests")
from doubles import HashingEmbedder
from ingest.build import BuildSettings, build_index
hold = sys.argv[3] if len(sys.argv) > 3 else None

def progress(step):
    while hold and os.path.exists(hold):  # the lock is held until the test removes the file
        time.sleep(0.05)

build_index(sys.argv[1], sys.argv[2], BuildSettings(workers=1, wait_for_lock={wait}), embedder=HashingEmbedder(),
            progress=progress)
"""


def _start_build(corpus, idx_dir, wait=False, hold: Path | None = None):
    """A build in a process of its own; with ``hold``, it keeps the index's lock while that file exists."""
    return subprocess.Popen([sys.executable, "-c", _BUILDER.format(wait=wait), str(corpus), str(idx_dir),
                             *([str(hold)] if hold else [])],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.hostile("a build killed at any moment", "handled: the previous generation keeps serving; the next build removes the debris")
@pytest.mark.slow
def test_a_build_killed_at_any_moment_leaves_a_whole_generation_serving(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    state = live_files(idx_dir)
    rng = random.Random(42)
    started = time.perf_counter()
    assert _start_build(corpus, idx_dir).wait() == 0
    build_seconds = time.perf_counter() - started  # a whole build process, start-up included
    outcomes = collections.Counter()
    for run in range(24):
        (corpus / "docs" / f"edit-{run % 3}.md").write_text(f"Edit number {run}: a sentence that changes, {rng.random()}.\n")
        build = _start_build(corpus, idx_dir)
        time.sleep(rng.uniform(0.0, build_seconds))
        build.kill()
        build.wait()
        faults = fsck(idx_dir)
        assert faults == [], f"run {run}: {faults}"
        live = live_files(idx_dir)
        _build(corpus, idx_dir)  # the next build: cleans the debris and completes
        assert not list((idx_dir / "generations").glob(".*tmp*")), "debris left after the next build"
        assert not list((idx_dir / "segments").glob(".*tmp*")) and not list((idx_dir / "ann").glob("*/.*tmp*"))
        gen = index.open(idx_dir).generation
        read = {s.name for s in gen.manifest.segments}  # no segment or shard that no generation reads
        kept = {s.name for name in os.listdir(idx_dir / "generations")
                for s in read_manifest(idx_dir / "generations" / name).segments}
        assert read <= kept == {p.name for p in (idx_dir / "segments").iterdir()}
        new_state = live_files(idx_dir)
        assert live in (state, new_state), f"run {run}: the live generation is neither the old nor the new corpus"
        outcomes["previous" if live == state else "new"] += 1
        state = new_state
    print("\nkilled builds left serving:", dict(outcomes))
    assert outcomes["previous"] > 0


@pytest.mark.hostile('a second build on an index while one runs', "CLI error: exit 4 naming the holder's pid (or it waits with --wait)")
@pytest.mark.slow
def test_two_builds_on_one_index_one_runs_one_is_refused_or_waits(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    hold = tmp_path / "hold"
    hold.touch()
    first = _start_build(corpus, idx_dir, hold=hold)  # holds the lock until `hold` is removed
    lock = idx_dir / "LOCK"
    while first.poll() is None and not (lock.exists() and lock.read_text().strip()):  # until it holds the lock
        time.sleep(0.05)
    refused = spanindex("build", corpus, "--index", idx_dir, "--quiet")
    waiting = _start_build(corpus, idx_dir, wait=True)
    hold.unlink()
    assert first.wait(timeout=WAIT_S) == 0, first.stderr.read()
    assert refused.returncode == 4 and f"pid {first.pid}" in refused.stderr, refused.stderr
    assert waiting.wait(timeout=WAIT_S) == 0, waiting.stderr.read()
    assert fsck(idx_dir) == []


@pytest.mark.slow
def test_searches_and_verifications_during_builds_never_fail(tmp_path):
    corpus = shutil.copytree(SAMPLE_CORPUS, tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    _build(corpus, idx_dir)
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = collections.Counter()

    def reader():
        while not stop.is_set():
            try:
                idx = index.open(idx_dir, embedder=HashingEmbedder())
                chunk = idx.chunks_of("docs/long-policy.md")[3]
                assert resolve(idx, chunk.chunk_id, chunk.text[5:90]).status.verified
                assert idx.search("security council review", k=3)
                reads["ok"] += 1
            except BaseException as exc:  # noqa: BLE001 - any failure is the finding
                errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(6):
        (corpus / "docs" / "churn.md").write_text(f"Churn {i}: " + "words " * (50 * i + 5))
        _build(corpus, idx_dir)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert reads["ok"] > 5
