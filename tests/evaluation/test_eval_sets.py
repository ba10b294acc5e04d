"""The evaluation sets' own build scripts run: a set whose corpus cannot be rebuilt cannot be scored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EVAL = Path(__file__).resolve().parents[2] / "eval"


@pytest.mark.parametrize("script", sorted(EVAL.glob("*/build.py")), ids=lambda p: p.parent.name)
def test_every_set_has_a_build_script_that_runs(script: Path) -> None:
    """`--help` runs the script's argument parser: an empty or broken script prints no usage."""
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "usage:" in shown.stdout and "--out" in shown.stdout
