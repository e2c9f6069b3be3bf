"""The README documents every CLI command, and every --help carries an example."""

from __future__ import annotations

import pytest

from index.cli import build_parser
from index.cli_registry import COMMANDS

from conftest import ROOT

build_parser()  # registers the commands, so they can be listed below


def test_every_command_appears_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    missing = [name for name in COMMANDS if f"spanindex {name}" not in readme]
    assert not missing, f"README does not show: {missing}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_help_ends_with_an_example(name, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args([name, "--help"])
    out = capsys.readouterr().out
    assert "example:\n  spanindex " + name in out
