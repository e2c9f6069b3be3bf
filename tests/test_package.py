"""`pip install .` gives the whole package: every module and data file in the wheel, the
console script, the version, and the extras the README lists."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile

import pytest

import index
from index.cli import main

from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = ("ingest", "index", "schemas")


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"spanindex {index.__version__}"


def test_the_readme_lists_every_extra():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for extra in PYPROJECT["project"]["optional-dependencies"]:
        assert f"spanindex[{extra}]" in readme, extra


@pytest.mark.spawns
def test_the_wheel_holds_every_module_and_data_file(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("spanindex-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {
        p.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for p in (ROOT / package).rglob("*")
        if p.is_file() and p.suffix in {".py", ".html", ".css", ".js"} and "__pycache__" not in p.parts
    }
    assert sources - names == set()
    assert not {n for n in names if n.startswith("tests/")}
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode()
    assert f"Version: {index.__version__}" in metadata
    extras = {line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Provides-Extra: ")}
    assert extras == set(PYPROJECT["project"]["optional-dependencies"])
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "spanindex = index.cli:main" in entry_points
