"""Assemble every file of the corpus and write it: the command line of the generator.

`build_corpus` maps each relative path to its bytes, in a fixed order, and checks the result
against the README list; `main` parses --out, writes the files and prints their sizes. It is
run by scripts/make_sample_corpus.py (as the Makefile does) or `python -m scripts.sample_corpus`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from . import __doc__ as PACKAGE_DOC
from .bad_inputs import UNSUPPORTED_XYZ, build_encrypted, build_junk, build_truncated
from .checks import check_readme_lists
from .pdf_documents import build_handbook, build_multilingual, build_rate_card, build_report
from .readme import README_LINES, build_readme
from .text_documents import (
    build_faq,
    build_getting_started,
    build_legacy_1252,
    build_long_policy,
    build_no_charset,
    build_release_notes,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def build_corpus(existing: Callable[[str], bytes | None]) -> dict[str, bytes]:
    """Every owned file of the corpus, relative path to bytes."""
    files = {
        "pricing/rate-card.pdf": build_rate_card(),
        "handbook/two-column.pdf": build_handbook(),
        "reports/rotated-and-scanned.pdf": build_report(),
        "intl/multilingual.pdf": build_multilingual(),
        "web/faq.html": build_faq(),
        "web/legacy-1252.html": build_legacy_1252(),
        "web/no-charset.html": build_no_charset(),
        "docs/getting-started.md": build_getting_started(),
        "docs/release-notes.txt": build_release_notes(),
        "docs/long-policy.md": build_long_policy().encode("utf-8"),
        "bad/truncated.pdf": build_truncated(),
        "bad/encrypted.pdf": build_encrypted(existing("bad/encrypted.pdf")),
        "bad/empty.txt": b"",
        "bad/junk.html": build_junk(),
        "bad/unsupported.xyz": UNSUPPORTED_XYZ,
        "README.md": build_readme().encode("utf-8"),
    }
    check_readme_lists(files, (path for path, _ in README_LINES))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=PACKAGE_DOC.split("\n\n")[0],
                                     epilog="Example: .venv/bin/python "
                                            "scripts/make_sample_corpus.py --out /tmp/corpus")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "sample_corpus",
                        help="corpus folder (default: sample_corpus/ in the repository)")
    args = parser.parse_args(argv)
    out: Path = args.out

    def existing(relative: str) -> bytes | None:
        path = out / relative
        return path.read_bytes() if path.is_file() else None

    files = build_corpus(existing)
    total = 0
    for relative, data in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.write_bytes(data)
        total += len(data)
        print(f"{len(data):>9,}  {relative}")
    print(f"{total:>9,}  total bytes in {len(files)} files under {out}")
    return 0
