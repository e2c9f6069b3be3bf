"""What the `spanindex` command sets up for its process before any work: Arrow's memory pool."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

_POOL = "import index.cli, pyarrow; print(pyarrow.default_memory_pool().backend_name)"


def _run(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"} | env
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True,
                          check=True).stdout.split()


@pytest.mark.spawns
def test_the_command_allocates_arrow_memory_with_malloc_unless_the_user_chose_a_pool():
    assert _run(_POOL)[0] == "system"
    assert _run(_POOL, ARROW_DEFAULT_MEMORY_POOL="mimalloc")[0] == "mimalloc"


@pytest.mark.spawns
def test_importing_the_package_does_not_import_pyarrow():
    # The command chooses the pool in index/cli/__init__.py, after `index` itself is imported:
    # too late if the package imported pyarrow (Arrow reads the choice once, at import).
    assert _run("import index, sys; print('pyarrow' in sys.modules)") == ["False"]
    assert _run("import index, sys; index.open; print('pyarrow' in sys.modules)") == ["True"]
