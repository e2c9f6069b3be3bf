"""RELIABILITY.md is what scripts/reliability.py writes from the tests marked ``hostile``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.spawns
def test_reliability_md_is_up_to_date_with_the_hostile_input_tests():
    run = subprocess.run([sys.executable, "scripts/reliability.py", "--check"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
