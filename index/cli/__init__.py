"""`spanindex`: a thin shell over the library. It parses arguments, shows progress,
prints results and maps errors to exit codes; the work happens in ingest/ and index/.
"""

from __future__ import annotations

import os

# Arrow allocates from the C library's malloc in this process and in the workers it starts
# (they inherit the environment), unless the user chose a pool. Arrow reads this once, when
# pyarrow is imported, so it is set before anything imports it; ingest.store.write.system_memory_pool
# says why (a build's memory otherwise grows with its corpus: mimalloc keeps freed pages).
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

import argparse  # noqa: E402
import sys  # noqa: E402

from index.cli.registry import COMMANDS, EXIT_CANNOT_WRITE, EXIT_ERROR, EXIT_LOCKED, EXIT_OK, EXIT_USAGE  # noqa: E402
from ingest.embed import Embedder  # noqa: E402
from schemas.errors import (  # noqa: E402
    AnswerFormatError,
    FilterError,
    IndexLockedError,
    IndexWriteError,
    PasswordFileError,
    SpanindexError,
)


def main(argv: list[str] | None = None, *, embedder: Embedder | None = None) -> int:
    """Run one command; the exit code. ``embedder``: an embedder of your own (or a test
    double) that ``build`` embeds with and the commands that search then use."""
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
    except (PasswordFileError, AnswerFormatError, FilterError) as exc:  # a file or a filter (--where) we cannot use
        print(f"spanindex: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SpanindexError as exc:
        print(f"spanindex: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # a file the command was told to read or write (an output path that is a folder)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"spanindex: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("spanindex: interrupted; the live generation is unchanged", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    # Importing the command modules registers their subcommands, in this order:
    # the index itself, citations, the viewer, agents.
    from index.cli import index_commands  # noqa: F401, I001
    from index.cli import citation_commands  # noqa: F401
    from index.cli import viewer_commands  # noqa: F401
    from index.cli import agent_commands  # noqa: F401
    from index import __version__

    parser = argparse.ArgumentParser(
        prog="spanindex",
        description="An offset-preserving chunk index for retrieval-augmented generation.",
    )
    parser.add_argument("--version", action="version", version=f"spanindex {__version__}")
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
