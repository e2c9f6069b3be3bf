"""Imports run one way: schemas/ <- ingest/ <- index/ (the writer never imports the reader), and
inside ingest/ from the lower stages to the higher ones, through each stage's public names only.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from conftest import ROOT

# package -> the packages of this project it may import
ALLOWED = {
    "schemas": {"schemas"},
    "ingest": {"schemas", "ingest"},
    "index": {"schemas", "ingest", "index"},
}

# The stages of ingest/, lowest first: a stage imports only stages of a lower rank (formats and
# text know nothing of each other; build composes everything).
STAGE_RANK = {"formats": 0, "text": 0, "embed": 1, "corpus": 1, "store": 2, "user_metadata": 2, "run": 3, "build": 4,
              "compact": 5}


def imported_packages(source: str, module: str) -> list[tuple[int, str]]:
    """(line, top-level package) of every import in ``source``, lazy ones inside functions included.

    >>> imported_packages("import os\\ndef f():\\n    from index.store import Generation", "ingest.x")
    [(1, 'os'), (3, 'index')]
    >>> imported_packages("from . import layout", "schemas.tables")
    [(1, 'schemas')]
    """
    return sorted((line, name.split(".")[0]) for line, name, _ in imported_names(source, module))


def imported_names(source: str, module: str) -> list[tuple[int, str, list[str]]]:
    """(line, module imported from, names taken) of every import in ``source``; ``import a.b``
    takes no names.

    >>> imported_names("from ingest.text import embed_text\\nimport ingest.store.lock", "index.x")
    [(1, 'ingest.text', ['embed_text']), (2, 'ingest.store.lock', [])]
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: within the importing module's own package
                base = module.split(".")[: -node.level]
                found.append((node.lineno, ".".join(base + ([node.module] if node.module else [])),
                              [a.name for a in node.names]))
            else:
                found.append((node.lineno, node.module, [a.name for a in node.names]))
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


def stage_of(module: str) -> str | None:
    """The stage of ingest/ a dotted module name belongs to (None for the package itself).

    >>> stage_of("ingest.formats.pdf.parser"), stage_of("ingest.build"), stage_of("ingest")
    ('formats', 'build', None)
    """
    parts = module.split(".")
    return parts[1] if parts[0] == "ingest" and len(parts) > 1 else None


def public_names(stage: str, root: Path = ROOT) -> set[str] | None:
    """What a stage exports: the names its package ``__init__`` lists for ``lazy_loader.attach``;
    for a one-module stage (``build.py``), every name not starting with ``_``; None: no such stage."""
    package = root / "ingest" / stage / "__init__.py"
    if package.is_file():
        for node in ast.walk(ast.parse(package.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                return {name for names in node.values for name in ast.literal_eval(names)}
        return set()
    if (root / "ingest" / f"{stage}.py").is_file():
        return None if stage.startswith("_") else {"*"}
    return None


def stage_violations(root: Path = ROOT) -> list[str]:
    """Imports of a stage of ingest/ from another stage, or from index/, that go against the
    stage order or past a stage's public names."""
    bad = []
    for package in ("ingest", "index"):
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            mine = stage_of(module) if package == "ingest" else None
            for line, imported, names in imported_names(path.read_text(encoding="utf-8"), module):
                theirs = stage_of(imported)
                if theirs is None or theirs == mine:
                    continue
                where = f"{path.relative_to(root)}:{line}"
                if mine is not None and STAGE_RANK.get(theirs, 99) >= STAGE_RANK.get(mine, -1):
                    bad.append(f"{where} imports {imported}: stage {mine} may not use stage {theirs}")
                    continue
                public = public_names(theirs, root)
                if imported.count(".") > 1 and (root / "ingest" / theirs / "__init__.py").is_file():
                    bad.append(f"{where} imports {imported}: use the names ingest.{theirs} exports")
                elif public is not None and "*" not in public:
                    private = sorted(set(names) - public)
                    if private:
                        bad.append(f"{where} imports {', '.join(private)} that ingest.{theirs} does not export")
                elif public is not None and any(name.startswith("_") for name in names):
                    bad.append(f"{where} imports a private name of {imported}")
    return bad


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_run_from_index_to_ingest_to_schemas_never_back(package):
    assert any((ROOT / package).rglob("*.py"))
    assert violations(package) == []


def test_stages_import_lower_stages_only_and_only_their_public_names():
    assert {path.stem for path in (ROOT / "ingest").iterdir() if path.name != "__init__.py"
            and (path.suffix == ".py" or (path / "__init__.py").is_file())} == set(STAGE_RANK)
    assert stage_violations() == []


@pytest.mark.parametrize("stage", sorted(s for s in STAGE_RANK if (ROOT / "ingest" / s / "__init__.py").is_file()))
def test_every_public_name_of_a_stage_resolves(stage):
    package = importlib.import_module(f"ingest.{stage}")
    assert set(package.__all__) == public_names(stage)
    for name in package.__all__:
        assert getattr(package, name) is not None, name


def test_an_import_against_the_direction_is_caught_even_inside_a_function(tmp_path):
    (tmp_path / "ingest").mkdir()
    (tmp_path / "ingest" / "stage.py").write_text("import numpy\n\ndef f():\n    from index.store import Generation\n")
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "record.py").write_text("from ingest import model\nfrom . import errors\n")
    assert violations("ingest", tmp_path) == ["ingest/stage.py:4 imports index"]
    assert violations("schemas", tmp_path) == ["schemas/record.py:1 imports ingest"]


def test_a_stage_reaching_up_or_past_public_names_is_caught(tmp_path):
    ingest = tmp_path / "ingest"
    for stage, exports in (("formats", '{"parse": ["parse_document"]}'), ("store", '{"write": ["GenerationWriter"]}')):
        (ingest / stage).mkdir(parents=True)
        (ingest / stage / "__init__.py").write_text(f"import lazy_loader\nlazy_loader.attach(__name__, submod_attrs={exports})\n")
    (ingest / "formats" / "parse.py").write_text("def f():\n    from ingest.store import GenerationWriter\n")
    (ingest / "store" / "write.py").write_text(
        "from ingest.formats import parse_document, _private\nfrom ingest.formats.parse import parse_document\n"
        "from ingest.store.lock import BuildLock\n")
    (ingest / "corpus.py").write_text("def _walk(): ...\n")
    (ingest / "build.py").write_text("from ingest.store import GenerationWriter\nfrom ingest.corpus import _walk\n")
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "reader.py").write_text("from ingest.store import GenerationWriter, _table\n")
    assert stage_violations(tmp_path) == [
        "ingest/build.py:2 imports a private name of ingest.corpus",
        "ingest/formats/parse.py:2 imports ingest.store: stage formats may not use stage store",
        "ingest/store/write.py:1 imports _private that ingest.formats does not export",
        "ingest/store/write.py:2 imports ingest.formats.parse: use the names ingest.formats exports",
        "index/reader.py:1 imports _table that ingest.store does not export",
    ]
