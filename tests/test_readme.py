"""The README documents every CLI command, and every --help carries an example."""

from __future__ import annotations

import pytest

from index.cli import build_parser
from index.cli.registry import COMMANDS

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


def _options_by_command() -> dict[str, dict[str, object]]:
    """command -> {option string or positional name -> its argparse action}."""
    parser = build_parser()
    [commands] = [a for a in parser._actions if a.choices and isinstance(a.choices, dict)]
    return {
        name: {(a.option_strings[-1] if a.option_strings else a.dest): a for a in sub._actions}
        for name, sub in commands.choices.items()
    }


def test_options_shared_by_commands_are_spelled_documented_and_defaulted_alike():
    from index.citations.match import DEFAULT_MIN_QUOTE_CHARS
    from index.viewer.page_images import DEFAULT_ZOOM

    shared: dict[str, list] = {}
    for options in _options_by_command().values():
        for name in ("index", "records", "--json", "--min-quote-chars", "--zoom"):
            if name in options:
                shared.setdefault(name, []).append(options[name])
    assert len(shared["index"]) == len(COMMANDS) - 1  # all but build, whose --index is the folder to make
    for name, actions in shared.items():
        assert len(actions) > 1, name
        assert all(a.help for a in actions), f"{name} is undocumented somewhere"
        if name != "--json":  # its help names what is printed
            assert len({a.help for a in actions}) == 1, f"{name} is documented differently: {[a.help for a in actions]}"
    assert {a.default for a in shared["--min-quote-chars"]} == {DEFAULT_MIN_QUOTE_CHARS}
    assert {a.default for a in shared["--zoom"]} == {DEFAULT_ZOOM}


# (command, option, the constant in schemas.limits, how the README's table writes its default)
LIMIT_OPTIONS = [
    ("build", "--max-file-mb", "MAX_FILE_MB", "{} MB"),
    ("build", "--max-pages", "MAX_PDF_PAGES", "{:,}"),
    ("build", "--max-chars", "MAX_DOC_CHARS", "{:,}"),
    ("verify", "--max-answer-mb", "MAX_ANSWER_MB", "{:g} MB"),
    ("verify", "--max-claims", "MAX_CLAIMS", "{:,}"),
    ("verify", "--max-quote-chars", "MAX_QUOTE_CHARS", "{:,} characters"),
]


def test_the_readme_states_every_limit_as_schemas_limits_sets_it():
    from schemas import limits

    readme = (ROOT / "README.md").read_text()
    options = _options_by_command()
    for command, option, constant, cell in LIMIT_OPTIONS:
        value = getattr(limits, constant)
        assert options[command][option].default == value, option
        [row] = [line for line in readme.splitlines() if line.endswith(f"| `{command} {option}` |")]
        assert f"| {cell.format(value)} |" in row, (option, row)
    assert f"| {limits.MAX_JSON_DEPTH} levels; {limits.MAX_INT_DIGITS} digits |" in readme
    prose = " ".join(readme.split())
    for number in (limits.VIEW_SOURCE_CHARS, limits.VIEW_CHUNK_CHARS, limits.VIEW_TEXT_CHARS):
        assert f"{number:,} characters" in prose, number
    assert f"lists the {limits.VIEW_SIBLINGS} chunks on each side" in prose
