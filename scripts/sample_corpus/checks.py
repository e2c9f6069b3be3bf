"""Self-checks that stop the generator before it writes a corpus the tests do not expect.

Each check raises RuntimeError naming the file at fault. They guard what content edits can
silently change: page counts, text that must fit on one page, the bytes a file exists to
carry, and the README list staying in step with the files actually generated.
"""

from __future__ import annotations

from collections.abc import Iterable

import pymupdf


def check_page_count(doc: pymupdf.Document, expected: int, what: str) -> None:
    # Content edits can silently push text onto another page; the corpus README and the
    # tests rely on these page counts.
    if doc.page_count != expected:
        raise RuntimeError(f"{what}: laid out {doc.page_count} pages, expected {expected}")


def check_fits_on_page(more: bool, what: str, page_number: int) -> None:
    """`more` is what a Story placement reports: text left over that did not fit."""
    if more:
        raise RuntimeError(f"{what}: page {page_number} text does not fit on one page")


def check_contains_bytes(data: bytes, needed: Iterable[bytes], what: str) -> None:
    for byte in needed:
        if byte not in data:
            raise RuntimeError(f"{what}: byte {byte!r} missing")


def check_readme_lists(generated: Iterable[str], listed: Iterable[str]) -> None:
    if sorted(generated) != sorted(listed):
        raise RuntimeError("README_LINES and the generated files are out of step")
