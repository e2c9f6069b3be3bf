"""The corpus folder as the build sees it: odd names, symlinks in and out, loops, FIFOs, sockets and
devices. Real builds on real files; nothing outside the corpus is ever read, stored or served."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
from fastapi.testclient import TestClient
from hypothesis import example, given, settings
from hypothesis import strategies as st

import index
from index.fsck import fsck
from index.viewer.server.app import create_app
from ingest.build import BuildSettings, build_index
from ingest.corpus import NotReadable, discover, read_corpus_file, safe_doc_id
from ingest.embed.model import resolve_model
from ingest.run.worker import FileJob, WorkerSettings, init_worker, process_file
from schemas.errors import CorpusError
from schemas.records import ChunkerSettings, DocStatus, MediaType, SkipReason

from conftest import WAIT_S, examples, spanindex
from doubles import HashingEmbedder

SECRET = "The outside secret sentence: launch codes are 0000."


def _build(corpus, idx_dir, **settings):
    return build_index(corpus, idx_dir, BuildSettings(workers=1, **settings), embedder=HashingEmbedder())


def _every_stored_byte(idx_dir: Path) -> bytes:
    """Every file of the index folder, and every string cell of its tables (Parquet is compressed)."""
    blob = b"".join(p.read_bytes() for p in sorted(idx_dir.rglob("*")) if p.is_file())
    idx = index.open(idx_dir)
    cells = [repr(table.to_pylist()).encode() for table in (idx.generation.table(n) for n in
             ("documents", "chunks", "pdf_pages", "html_map"))]
    return blob + b"".join(cells)


# -- names that are not UTF-8 ------------------------------------------------------------------


@pytest.mark.hostile(
    "file names of random bytes (not UTF-8, '%' in them)",
    "handled: a valid name is its own id; any other gets a percent-encoded id that unquote_to_bytes turns back into the name",
)
@settings(max_examples=examples(300))
@given(st.lists(st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b), min_size=1, max_size=3))
@example([b"caf\xe9 100%.txt"])
@example([b"%FF", b"\xff"])
def test_safe_doc_id_gives_the_name_bytes_back_and_leaves_utf8_names_alone(parts):
    raw = b"/".join(parts)
    relative = os.fsdecode(raw)
    doc_id, note = safe_doc_id(relative)
    doc_id.encode("utf-8")  # always storable
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        assert unquote_to_bytes(doc_id) == raw and note
    else:
        assert doc_id == relative and not note


@pytest.mark.hostile("a file name that is not UTF-8 (b'bad\\xffname.txt') among good files",
                     "handled: indexed under the id 'bad%FFname.txt', its row's warning says so; the batch is published")
def test_a_name_that_is_not_utf8_is_indexed_under_its_safe_id_and_the_batch_is_published(tmp_path):
    corpus = tmp_path / "c"
    (corpus / "sub\udcfe").mkdir(parents=True)
    (corpus / "good.txt").write_text("A good document about invoices and their due dates.")
    Path(os.fsdecode(bytes(corpus) + b"/bad\xffname.txt")).write_bytes(b"Receipts are kept for seven years.")
    Path(os.fsdecode(bytes(corpus) + b"/sub\xfe/100%.md")).write_bytes(b"# Percent\n\nA hundred percent of the fees.")
    report = _build(corpus, tmp_path / "idx")
    assert report.by_status == {"ok": 3}
    idx = index.open(tmp_path / "idx", embedder=HashingEmbedder())
    docs = {d.doc_id: d for d in idx.documents()}
    assert set(docs) == {"bad%FFname.txt", "good.txt", "sub%FE/100%25.md"}
    assert unquote_to_bytes("bad%FFname.txt") == b"bad\xffname.txt"
    assert "not valid UTF-8" in docs["bad%FFname.txt"].warning and not docs["good.txt"].warning
    [hit] = idx.search("receipts kept seven years", k=1)
    assert hit.doc_id == "bad%FFname.txt" and idx.doc_text(hit.doc_version) == "Receipts are kept for seven years."
    assert fsck(tmp_path / "idx") == []


@pytest.mark.spawns
@pytest.mark.hostile("`spanindex build` on a corpus with a file name that is not UTF-8",
                     "handled: exit 0, the summary lists the file under its safe id with the reason")
def test_build_cli_publishes_a_batch_with_a_name_that_is_not_utf8(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "good.txt").write_text("A good document about invoices.")
    Path(os.fsdecode(bytes(corpus) + b"/\x1b[31mred\xff.txt")).write_bytes(b"An escape sequence in a name.")
    run = spanindex("build", corpus, "--index", tmp_path / "idx", "--quiet", "--workers", "1", test_embedder=True)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "generation 000001: 2 documents (ok 2)" in run.stdout
    assert "\\x1b[31mred%FF.txt: file name is not valid UTF-8" in run.stdout  # no escape reaches the terminal
    assert "\x1b" not in run.stdout


# -- symlinks, loops, FIFOs, sockets, devices --------------------------------------------------


@pytest.fixture
def linked_corpus(tmp_path) -> tuple[Path, Path]:
    """A corpus of real files and every kind of link and special node; and the folder outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "folder").mkdir()
    (outside / "folder" / "also-secret.md").write_text("# Also\n\n" + SECRET)
    corpus = tmp_path / "corpus"
    (corpus / "docs").mkdir(parents=True)
    (corpus / ".store" / "v2").mkdir(parents=True)
    (corpus / "docs" / "real.md").write_text("# Real\n\nThe real document about invoices and their due dates.")
    (corpus / ".store" / "v2" / "release.md").write_text("# Release\n\nVersion two ships audit exports.")
    links = {
        "docs/alias.md": "real.md",  # a file inside: followed
        "docs/leak.txt": "../../outside/secret.txt",  # a file outside: skipped
        "docs/absolute-leak.txt": str(outside / "secret.txt"),
        "docs/self.txt": "self.txt",  # a loop
        "docs/ping.txt": "pong.txt",
        "docs/pong.txt": "ping.txt",
        "docs/broken.md": "nothing-here.md",
        "current": ".store/v2",  # a folder inside, not walked otherwise: followed
        "docs/again": ".",  # a folder already in the corpus (itself): a loop
        "mirror": "docs",  # a folder already in the corpus: its files once, under their own path
        "up": "..",  # leaves the corpus
        "outside-folder": "../outside/folder",
    }
    for name, target in links.items():
        os.symlink(target, corpus / name)
    os.mkfifo(corpus / "docs" / "pipe.txt")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(corpus / "docs" / "socket.md"))
    if os.geteuid() == 0:
        os.mknod(corpus / "docs" / "null.txt", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    yield corpus, outside
    server.close()


EXPECTED_SKIPS = {
    "docs/leak.txt": SkipReason.SYMLINK_OUTSIDE,
    "docs/absolute-leak.txt": SkipReason.SYMLINK_OUTSIDE,
    "docs/self.txt": SkipReason.SYMLINK_LOOP,
    "docs/ping.txt": SkipReason.SYMLINK_LOOP,
    "docs/pong.txt": SkipReason.SYMLINK_LOOP,
    "docs/broken.md": SkipReason.SYMLINK_BROKEN,
    "docs/again": SkipReason.SYMLINK_LOOP,
    "mirror": SkipReason.FOLDER_IN_CORPUS,
    "up": SkipReason.SYMLINK_LOOP,  # a folder above the corpus holds the corpus
    "outside-folder": SkipReason.SYMLINK_OUTSIDE,
    "docs/pipe.txt": SkipReason.FIFO,
    "docs/socket.md": SkipReason.SOCKET,
    "docs/null.txt": SkipReason.DEVICE,
}


@pytest.mark.hostile("symlinks to files and folders outside the corpus (relative, absolute, '..')",
                     "skipped: named in the build summary with where they lead; nothing outside is read or stored")
def test_links_inside_the_corpus_are_followed_and_links_out_of_it_are_skipped_with_their_reason(linked_corpus, tmp_path):
    corpus, _ = linked_corpus
    report = _build(corpus, tmp_path / "idx")
    idx = index.open(tmp_path / "idx", embedder=HashingEmbedder())
    assert sorted(d.doc_id for d in idx.documents()) == ["current/release.md", "docs/alias.md", "docs/real.md"]
    assert {d.status for d in idx.documents()} == {DocStatus.OK}
    expected = {k: v for k, v in EXPECTED_SKIPS.items() if k != "docs/null.txt" or os.geteuid() == 0}
    assert {s.doc_id: s.reason for s in report.skipped} == expected
    leak = next(s for s in report.skipped if s.doc_id == "docs/leak.txt")
    assert str(leak).startswith("symlink leads outside the corpus (to ") and "--follow-symlinks" in str(leak)
    assert SECRET.encode() not in _every_stored_byte(tmp_path / "idx")
    assert fsck(tmp_path / "idx") == []


@pytest.mark.hostile("a FIFO, a socket and a character device named like documents",
                     "skipped: never opened (the build does not wait on the FIFO); the summary names each kind")
def test_special_files_are_never_opened_and_the_build_does_not_wait_on_a_fifo(linked_corpus, tmp_path):
    corpus, _ = linked_corpus
    reports = []
    # In a thread with a bound: a build that opens the FIFO would wait for a writer forever.
    builder = threading.Thread(target=lambda: reports.append(_build(corpus, tmp_path / "idx")), daemon=True)
    builder.start()
    builder.join(timeout=WAIT_S)
    assert not builder.is_alive(), "the build waits on the FIFO"
    reasons = {s.doc_id: s.reason for s in reports[0].skipped}
    assert reasons["docs/pipe.txt"] is SkipReason.FIFO and reasons["docs/socket.md"] is SkipReason.SOCKET
    # A worker handed one anyway (the file became a FIFO after discovery) refuses it without opening it.
    for name in ("pipe.txt", "socket.md", *(["null.txt"] if os.geteuid() == 0 else [])):
        with pytest.raises(NotReadable, match="not read: a (FIFO|socket|device)"):
            read_corpus_file(corpus / "docs" / name, str(corpus.resolve()))


@pytest.mark.hostile("a link that points outside the corpus by the time a worker opens it (swapped after discovery)",
                     "error row: 'not read: symlink leads outside the corpus'; the outside file is never read")
def test_a_worker_refuses_a_file_that_left_the_corpus_after_discovery(linked_corpus, tmp_path):
    corpus, outside = linked_corpus
    init_worker(WorkerSettings(resolve_model(), ChunkerSettings(), tmp_path / "idx", 1 << 20,
                               corpus_root=str(corpus.resolve())))
    result = process_file(FileJob(corpus / "docs" / "leak.txt", "docs/leak.txt", MediaType.TEXT, None))
    assert result.record.status is DocStatus.ERROR and "outside the corpus" in result.record.error
    followed = process_file(FileJob(corpus / "docs" / "alias.md", "docs/alias.md", MediaType.MARKDOWN, None))
    assert followed.record.status is DocStatus.OK
    assert not any(SECRET.encode() in p.read_bytes() for p in (tmp_path / "idx").rglob("*") if p.is_file())


def test_follow_symlinks_indexes_what_the_links_lead_to_and_still_walks_each_folder_once(linked_corpus, tmp_path):
    corpus, _ = linked_corpus
    report = _build(corpus, tmp_path / "idx", follow_symlinks=True)
    idx = index.open(tmp_path / "idx")
    assert sorted(d.doc_id for d in idx.documents()) == [
        "current/release.md", "docs/absolute-leak.txt", "docs/alias.md", "docs/leak.txt", "docs/real.md",
        "outside-folder/also-secret.md",
    ]
    reasons = {s.doc_id: s.reason for s in report.skipped}
    assert reasons["up"] is SkipReason.SYMLINK_LOOP  # never followed: it holds the corpus (and the index)
    assert reasons["docs/self.txt"] is SkipReason.SYMLINK_LOOP and reasons["mirror"] is SkipReason.FOLDER_IN_CORPUS


@pytest.mark.hostile("links that fan out (each folder links twice to the next: 2^20 paths)",
                     "bounded: every real folder is walked once; discovery lists 21 files, not a million")
def test_folder_links_cannot_blow_up_the_walk(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    for level in range(21):
        folder = corpus / f".level{level}"
        folder.mkdir()
        (folder / f"doc{level}.md").write_text(f"Level {level}.")
        if level:
            for name in ("a", "b"):
                os.symlink(f"../.level{level}", corpus / f".level{level - 1}" / name)
    os.symlink(".level0", corpus / "start")
    found = discover(corpus)
    assert len(found.files) == 21
    assert sum(s.reason is SkipReason.FOLDER_IN_CORPUS for s in found.skipped) == 20


@pytest.mark.hostile("a corpus folder nested 1,500 deep", "handled: discovery walks it without recursion")
def test_a_deep_tree_is_walked(tmp_path):
    corpus = deep = tmp_path / "c"
    corpus.mkdir()
    for _ in range(1500):  # one by one: pathlib's mkdir(parents=True) itself recurses
        deep = deep / "d"
        deep.mkdir()
    (deep / "bottom.md").write_text("# Bottom")
    try:
        [found] = discover(corpus).files
        assert found.doc_id == "/".join(["d"] * 1500 + ["bottom.md"])
    finally:  # bottom up: shutil.rmtree (pytest's clean-up) recurses too
        (deep / "bottom.md").unlink()
        while deep != corpus:
            deep.rmdir()
            deep = deep.parent


@pytest.mark.hostile("the index folder inside its own corpus (`spanindex build . --index idx`)",
                     "skipped: the index folder is never part of the corpus; its stored texts are not indexed again")
def test_an_index_inside_its_corpus_does_not_index_itself(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nOne document.")
    _build(corpus, corpus / "idx")
    second = _build(corpus, corpus / "idx")
    assert second.n_files == 1 and second.unchanged == 1
    assert [(s.doc_id, s.reason) for s in second.skipped] == [("idx", SkipReason.INDEX_FOLDER)]


@pytest.mark.hostile("a corpus folder that does not exist (a typo)",
                     "CLI error: 'no such folder', exit 3; the index is not touched (no empty generation published)")
def test_a_missing_corpus_is_refused_before_the_index_is_touched(tmp_path):
    with pytest.raises(CorpusError, match="no such folder"):
        _build(tmp_path / "typo", tmp_path / "idx")
    assert not (tmp_path / "idx").exists()


@pytest.mark.hostile("GET /documents/<link>/file for a link out of the corpus, and traversals to the outside file",
                     "HTTP 4xx: 404; the server serves only stored copies of what was indexed")
def test_the_server_never_serves_a_file_outside_the_corpus(linked_corpus, tmp_path):
    corpus, outside = linked_corpus
    _build(corpus, tmp_path / "idx")
    client = TestClient(create_app(tmp_path / "idx", embedder=HashingEmbedder()), base_url="http://127.0.0.1")
    served = client.get("/documents/docs/alias.md/file")
    assert served.status_code == 200 and "The real document" in served.text
    relative = os.path.relpath(outside / "secret.txt", corpus)
    for path in ("docs/leak.txt", "docs/absolute-leak.txt", "outside-folder/also-secret.md", relative,
                 relative.replace("/", "%2F"), str(outside / "secret.txt"), "up/outside/secret.txt"):
        for what in ("file", "view"):
            answer = client.get(f"/documents/{path}/{what}")
            assert answer.status_code == 404, (path, what)
            assert SECRET not in answer.text
    search = client.get("/api/search", params={"q": "launch codes secret", "k": 10})
    assert search.status_code == 200 and SECRET not in search.text
