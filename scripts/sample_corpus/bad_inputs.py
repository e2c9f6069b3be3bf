"""Builders for the files under bad/, which the indexer must reject or skip cleanly.

An encrypted PDF, a truncated PDF, binary junk named .html and a file of an unknown type
(bad/empty.txt is simply zero bytes). The encrypted PDF is the one file whose bytes are not
reproducible, so an existing copy is kept while it still decrypts to the intended text.
"""

from __future__ import annotations

import hashlib

import pymupdf

from .pdf_layout import HELV, HELV_BOLD, LETTER, PageFlow, pdf_bytes, put_text

ENCRYPTED_TEXT = [
    "Salary bands 2024 (restricted)",
    "This salary band table is encrypted and must never be indexed.",
    "Band L4: $142,000 to $171,000. Band L5: $168,000 to $204,000.",
]


def _encrypted_plain_doc() -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=LETTER[0], height=LETTER[1])
    for index, line in enumerate(ENCRYPTED_TEXT):
        put_text(page, 72, 90 + 20 * index, line, HELV, 11)
    return doc


def _page_texts(doc: pymupdf.Document) -> list[str]:
    return [page.get_text() for page in doc]


def build_encrypted(existing: bytes | None) -> bytes:
    """AES-256 with user password "secret"; an existing file that still fits is kept.

    MuPDF draws random salts and IVs on every encrypted save, so rewriting would change
    the bytes on every run for no reason.
    """
    expected = _page_texts(_encrypted_plain_doc())
    if existing:
        try:
            old = pymupdf.open("pdf", existing)
        except pymupdf.FileDataError:
            old = None
        if (old is not None and old.needs_pass and old.authenticate("secret")
                and "AES" in (old.metadata or {}).get("encryption", "")
                and "256" in old.metadata["encryption"] and _page_texts(old) == expected):
            return existing
    doc = _encrypted_plain_doc()
    return pdf_bytes(doc, "Salary bands 2024", "Restricted", encryption=pymupdf.PDF_ENCRYPT_AES_256,
                     user_pw="secret", owner_pw="owner")


def build_truncated() -> bytes:
    doc = pymupdf.open()
    flow = PageFlow(doc, LETTER, [(72, 540)], top=72, bottom=720)
    flow.block("Northwind Cloud Capacity Forecast 2025 (export interrupted)", HELV_BOLD, 14, 20,
               space_after=8)
    for month in ("January", "February", "March", "April", "May", "June"):
        if month != "January":
            flow.new_page()
        flow.block(f"Forecast for {month} 2025: the Osaka region needs 18 more storage "
                   f"hosts and 6 more API hosts to keep 35 percent headroom at peak.",
                   HELV, 11, 15, space_after=6)
    flow.close()
    whole = pdf_bytes(doc, "Capacity Forecast 2025", "Truncated on purpose")
    return whole[: len(whole) * 2 // 5]


def build_junk() -> bytes:
    block = hashlib.sha256(b"northwind-junk").digest()
    junk = bytearray()
    while len(junk) < 2048:
        block = hashlib.sha256(block).digest()
        junk += block
    for position in range(0, 2048, 61):
        junk[position] = 0
    return bytes(junk[:2048])


UNSUPPORTED_XYZ = (
    b"NWXYZ\x01\x00\x02"
    b"Northwind Cloud workspace snapshot, format 2 (proprietary; no parser exists).\n"
    b"workspace=acme-prod region=eu-central taken=2024-04-30T23:00:00Z\n"
)
