"""What the CLI's command modules share: exit codes, the command registry, JSON output.

The arguments several commands take are declared once in ``index.cli.arguments``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

EXIT_OK = 0
EXIT_FAILURES = 1  # the command ran, but found failures it was told to treat as fatal
EXIT_USAGE = 2
EXIT_ERROR = 3
EXIT_LOCKED = 4
EXIT_CANNOT_WRITE = 5  # the index folder cannot be written (disk full, read-only): the live generation is unchanged

# name -> (configure the subparser, one-line help, an example invocation)
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], str, str]] = {}


def command(name: str, help: str, example: str):
    """Register a subcommand; every --help ends with an example."""

    def register(fn):
        COMMANDS[name] = (fn, help, example)
        return fn

    return register


def read_usable_records(path: str):
    """(records, bad line errors) of a records file, each bad line reported on stderr; records is
    None, after one line that says so, when the file holds lines but not one usable record."""
    from schemas.record_json import read_records

    parsed = list(read_records(path))
    records = [record for _, record, _ in parsed if record is not None]
    bad_lines = [error for _, record, error in parsed if record is None]
    for error in bad_lines[:20]:
        print(f"skipped {error}", file=sys.stderr)
    if len(bad_lines) > 20:
        print(f"skipped {len(bad_lines) - 20} more lines that are not citation records", file=sys.stderr)
    if bad_lines and not records:
        print(f"spanindex: {path}: no usable citation record ({len(bad_lines)} line(s), none a record)", file=sys.stderr)
        return None, bad_lines
    return records, bad_lines


def print_json(value) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
