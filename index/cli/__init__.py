"""`spanindex`: a thin shell over the library. It parses arguments, shows progress,
prints results and maps errors to exit codes; the work happens in ingest/ and index/.
"""

from __future__ import annotations

import argparse
import sys

from index.cli.registry import COMMANDS, EXIT_CANNOT_WRITE, EXIT_ERROR, EXIT_LOCKED, EXIT_OK, EXIT_USAGE
from ingest.embed import Embedder
from schemas.errors import IndexLockedError, IndexWriteError, PasswordFileError, SpanindexError


def main(argv: list[str] | None = None, *, embedder: Embedder | None = None) -> int:
    """Run one command; the exit code. ``embedder``: for an index built with an embedder of
    your own (or a test double), which the commands that search then use."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.embedder = embedder
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return args.run(args) or EXIT_OK
    except IndexLockedError as exc:
        print(f"spanindex: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except IndexWriteError as exc:
        print(f"spanindex: {exc}", file=sys.stderr)
        return EXIT_CANNOT_WRITE
    except PasswordFileError as exc:
        print(f"spanindex: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SpanindexError as exc:
        print(f"spanindex: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("spanindex: interrupted; the live generation is unchanged", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    # Importing the command modules registers their subcommands, in this order:
    # the index itself, citations, the viewer.
    from index.cli import index_commands  # noqa: F401, I001
    from index.cli import citation_commands  # noqa: F401
    from index.cli import viewer_commands  # noqa: F401

    parser = argparse.ArgumentParser(
        prog="spanindex",
        description="An offset-preserving chunk index for retrieval-augmented generation.",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, (configure, help_text, example) in COMMANDS.items():
        p = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=f"example:\n  {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        configure(p)
    return parser
