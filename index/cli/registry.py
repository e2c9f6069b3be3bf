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


def print_json(value) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
