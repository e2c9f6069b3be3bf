"""Imports run one way: schemas/ <- ingest/ <- index/ (the writer never imports the reader)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

# package -> the packages of this project it may import
ALLOWED = {
    "schemas": {"schemas"},
    "ingest": {"schemas", "ingest"},
    "index": {"schemas", "ingest", "index"},
}


def imported_packages(source: str, module: str) -> list[tuple[int, str]]:
    """(line, top-level package) of every import in ``source``, lazy ones inside functions included.

    >>> imported_packages("import os\\ndef f():\\n    from index.store import Generation", "ingest.x")
    [(1, 'os'), (3, 'index')]
    >>> imported_packages("from . import layout", "schemas.tables")
    [(1, 'schemas')]
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: within the importing module's own package
                found.append((node.lineno, module.split(".")[0]))
            else:
                found.append((node.lineno, node.module.split(".")[0]))
    return sorted(found)


def violations(package: str, root: Path = ROOT) -> list[str]:
    """Every import in ``root/package`` of a project package that ``package`` may not use."""
    bad = []
    for path in sorted((root / package).rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for line, imported in imported_packages(path.read_text(encoding="utf-8"), module):
            if imported in ALLOWED and imported not in ALLOWED[package]:
                bad.append(f"{path.relative_to(root)}:{line} imports {imported}")
    return bad


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_run_from_index_to_ingest_to_schemas_never_back(package):
    assert any((ROOT / package).rglob("*.py"))
    assert violations(package) == []


def test_an_import_against_the_direction_is_caught_even_inside_a_function(tmp_path):
    (tmp_path / "ingest").mkdir()
    (tmp_path / "ingest" / "stage.py").write_text("import numpy\n\ndef f():\n    from index.store import Generation\n")
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "record.py").write_text("from ingest import model\nfrom . import errors\n")
    assert violations("ingest", tmp_path) == ["ingest/stage.py:4 imports index"]
    assert violations("schemas", tmp_path) == ["schemas/record.py:1 imports ingest"]
