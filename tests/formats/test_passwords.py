"""Password-protected PDFs: `--passwords FILE` opens them; no password ever reaches the index, the
manifest, the build's output or an error message. A real encrypted PDF (RC4, LibreOffice) from the
shared corpus and PDFs encrypted here with PyMuPDF (AES-256)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pymupdf
import pytest

import index
from index.fsck import fsck
from index.viewer.page_images import render_page
from ingest.build import BuildSettings, build_index
from ingest.formats.pdf.passwords import Passwords
from schemas.errors import PasswordFileError

from conftest import SHARED_CORPUS, spanindex
from doubles import HashingEmbedder

LIBREOFFICE = SHARED_CORPUS / "pdf" / "libreoffice-writer-password.pdf"  # user password 'openpassword' (SOURCES.tsv)
AES_PASSWORD = "s3cr\u00e9t \u00fcber-pass\u00a79"  # non-ASCII, a space, a section sign
WRONG_PASSWORD = "not-the-right-one-4711"
OWNER_PASSWORD = "owner-only-0815"
PASSWORDS = ("openpassword", AES_PASSWORD, WRONG_PASSWORD, OWNER_PASSWORD)


def _encrypted_pdf(path: Path, text: str, user_pw: str) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    path.write_bytes(doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=user_pw, owner_pw=OWNER_PASSWORD,
                                 permissions=0))


def _corpus(root: Path) -> Path:
    (root / "finance").mkdir(parents=True)
    (root / "legal").mkdir()
    _encrypted_pdf(root / "finance" / "merger.pdf", "Confidential: the merger closes on 12 March.", AES_PASSWORD)
    _encrypted_pdf(root / "legal" / "wrong.pdf", "Nobody reads this one.", "a password nobody gave")
    _encrypted_pdf(root / "legal" / "none.pdf", "Nor this one.", "another password nobody gave")
    (root / "open.md").write_text("# Open\n\nAn open note about invoices.\n")
    if LIBREOFFICE.is_file():
        shutil.copy(LIBREOFFICE, root / "finance" / "libreoffice.pdf")
    return root


def _passwords_file(path: Path) -> Path:
    path.write_text(
        "# comment lines and blank lines are ignored\n\n"
        f"finance/libre*.pdf\topenpassword\n"
        f"finance/*\t{WRONG_PASSWORD}\n"  # tried first on merger.pdf, and fails: the next line opens it
        f"finance/merger.pdf\t{AES_PASSWORD}\n"
        f"legal/wrong.pdf\t{WRONG_PASSWORD}\n",
        encoding="utf-8",
    )
    return path


def _leaked(blob: bytes) -> list[str]:
    return [p for p in PASSWORDS if p.encode("utf-8") in blob or p.encode("utf-16-le") in blob]


def _index_bytes(idx_dir: Path) -> bytes:
    """Every byte of every file in the index, and every string cell of every table (Parquet compresses)."""
    files = b"".join(p.read_bytes() for p in sorted(idx_dir.rglob("*")) if p.is_file())
    idx = index.open(idx_dir)
    cells = b"".join(repr(idx.generation.table(name).to_pylist()).encode("utf-8")
                     for name in ("documents", "chunks", "pdf_pages", "html_map"))
    return files + cells


@pytest.mark.hostile("a passwords file whose lines are malformed",
                     "CLI error: 'FILE, line N: expected GLOB<TAB>PASSWORD' (the line is never quoted), exit 2")
def test_a_passwords_file_never_shows_a_password(tmp_path):
    parsed = Passwords.parse(f"*.pdf\t{AES_PASSWORD}\n")
    assert AES_PASSWORD not in repr(parsed) and AES_PASSWORD not in repr(parsed.lines) and AES_PASSWORD not in str(parsed)
    assert AES_PASSWORD not in repr(BuildSettings(passwords=parsed))
    with pytest.raises(PasswordFileError, match="line 2: expected GLOB<TAB>PASSWORD") as bad:
        Passwords.parse(f"*.pdf\t{AES_PASSWORD}\n*.pdf {AES_PASSWORD}\n")
    assert AES_PASSWORD not in str(bad.value) and AES_PASSWORD not in repr(bad.value)


@pytest.mark.hostile("password-protected PDFs: RC4 (LibreOffice) and AES-256, with the right, a wrong or no password",
                     "error row: 'a password is needed' without one, 'no password given for it opens it (--passwords line N)' "
                     "with a wrong one; opened with the right one; no password in the index, the manifest or any message")
def test_passwords_open_encrypted_pdfs_and_never_reach_the_index(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    passwords = Passwords.read(_passwords_file(tmp_path / "passwords.tsv"))
    idx_dir = tmp_path / "idx"
    report = build_index(corpus, idx_dir, BuildSettings(workers=1, passwords=passwords), embedder=HashingEmbedder())
    idx = index.open(idx_dir, embedder=HashingEmbedder())
    docs = {d.doc_id: d for d in idx.documents()}
    assert docs["finance/merger.pdf"].status.value == "ok"
    assert "merger closes on 12 March" in idx.doc_text(docs["finance/merger.pdf"].doc_version)
    assert docs["legal/wrong.pdf"].error == "encrypted: no password given for it opens it (--passwords line 6)"
    assert docs["legal/none.pdf"].error == "encrypted: a password is needed to open it"
    if LIBREOFFICE.is_file():
        assert "Lorem ipsum" in idx.doc_text(docs["finance/libreoffice.pdf"].doc_version)
    # The viewer renders the page from the copy kept without encryption; the original is kept as it was.
    assert render_page(idx.source_path("finance/merger.pdf"), 1).png.startswith(b"\x89PNG")
    assert pymupdf.open(idx.paths.source(docs["finance/merger.pdf"].source_sha256, ".pdf")).needs_pass
    assert fsck(idx_dir) == []
    assert _leaked(_index_bytes(idx_dir)) == []
    assert _leaked(repr(report).encode()) == []


def test_a_password_given_later_opens_a_file_that_failed_before(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    idx_dir = tmp_path / "idx"
    build_index(corpus, idx_dir, BuildSettings(workers=1), embedder=HashingEmbedder())
    assert index.open(idx_dir).document("finance/merger.pdf").error == "encrypted: a password is needed to open it"
    again = build_index(corpus, idx_dir, BuildSettings(workers=1, passwords=Passwords.read(_passwords_file(tmp_path / "p"))),
                        embedder=HashingEmbedder())
    assert index.open(idx_dir).document("finance/merger.pdf").status.value == "ok"
    assert again.changed >= 1 and again.unchanged >= 1  # the open note is carried over; the failed file parsed again


@pytest.mark.spawns
@pytest.mark.hostile("`spanindex build --passwords FILE` on encrypted PDFs; a passwords file with a bad line",
                     "handled: the build's output holds no password; the bad file is a one-line CLI error, exit 2")
def test_build_cli_with_passwords_prints_none_of_them(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    passwords = _passwords_file(tmp_path / "passwords.tsv")
    idx_dir = tmp_path / "idx"
    run = spanindex("build", corpus, "--index", idx_dir, "--passwords", passwords, "--workers", "2", "--verbose",
                    test_embedder=True)
    assert run.returncode == 0, run.stderr
    assert "legal/wrong.pdf" in run.stdout and "--passwords line 6" in run.stdout
    assert "a password is needed" in run.stdout
    assert _leaked((run.stdout + run.stderr).encode()) == []
    assert _leaked(_index_bytes(idx_dir)) == []

    (tmp_path / "bad.tsv").write_text(f"finance/*.pdf {AES_PASSWORD}\n")
    bad = spanindex("build", corpus, "--index", idx_dir, "--passwords", tmp_path / "bad.tsv", test_embedder=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr == f"spanindex: {tmp_path / 'bad.tsv'}, line 1: expected GLOB<TAB>PASSWORD\n"
    assert _leaked((bad.stdout + bad.stderr).encode()) == []
