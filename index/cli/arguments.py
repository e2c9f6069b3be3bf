"""The arguments several commands take, declared once so that every command spells,
documents and defaults them alike; and opening the index a command names."""

from __future__ import annotations

import argparse

from schemas.limits import READER_CACHE_MB


def index_argument(p: argparse.ArgumentParser, reads_rows: bool = True) -> None:
    """The index a command opens. ``reads_rows``: a reader's command, which reads of an index in a bucket
    the byte ranges it needs into a bounded cache (the others fetch a whole copy of the live generation)."""
    p.add_argument("index", help="index folder, or an index in a bucket: s3://bucket/prefix (what is read of it is "
                                 "cached under $XDG_CACHE_HOME/spanindex)")
    if reads_rows:
        p.add_argument("--cache-mb", type=float, default=READER_CACHE_MB, metavar="MB",
                       help="for an index in a bucket: the most its local cache keeps of what was read, least "
                            f"recently used out first (default {READER_CACHE_MB})")


def cache_bytes(args: argparse.Namespace) -> int:
    from schemas.limits import MIB

    return int(args.cache_mb * MIB)


def records_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", help="citation records as `spanindex verify` writes them (JSON Lines)")


def json_option(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON")


# The library's defaults (index.citations.match.DEFAULT_MIN_QUOTE_CHARS, index.viewer.page_images.DEFAULT_ZOOM),
# spelled here so that building the parser loads neither the matcher nor PyMuPDF; a test keeps them equal.
MIN_QUOTE_CHARS = 12
ZOOM = 1.5


def min_quote_chars_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-quote-chars", type=int, default=MIN_QUOTE_CHARS,
                   help=f"shorter quotes prove nothing (default {MIN_QUOTE_CHARS})")


def zoom_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--zoom", type=float, default=ZOOM, help=f"page image scale, pixels per point (default {ZOOM:g})")


def answer_limit_options(p: argparse.ArgumentParser) -> None:
    from schemas.limits import MAX_ANSWER_MB, MAX_CLAIMS, MAX_QUOTE_CHARS

    p.add_argument("--max-answer-mb", type=float, default=MAX_ANSWER_MB,
                   help=f"refuse a larger answer file (default {MAX_ANSWER_MB:g})")
    p.add_argument("--max-claims", type=int, default=MAX_CLAIMS,
                   help=f"refuse an answer with more claims (default {MAX_CLAIMS:,})")
    p.add_argument("--max-quote-chars", type=int, default=MAX_QUOTE_CHARS,
                   help=f"a longer quote is an invalid citation (default {MAX_QUOTE_CHARS:,})")


def answer_limits(args: argparse.Namespace):
    """The limits on an answer that ``answer_limit_options`` set."""
    from schemas.limits import MIB, AnswerLimits

    return AnswerLimits(max_bytes=int(args.max_answer_mb * MIB), max_claims=args.max_claims,
                        max_quote_chars=args.max_quote_chars)


def open_index(args: argparse.Namespace):
    """The live generation of the index the command names (with the embedder ``main`` was given)."""
    import index

    return index.open(args.index, embedder=args.embedder, cache_bytes=cache_bytes(args))
