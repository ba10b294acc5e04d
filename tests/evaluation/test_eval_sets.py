"""The evaluation sets' own build scripts run: a set whose corpus cannot be rebuilt cannot be scored."""

from __future__ import annotations

import hashlib
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


def test_pinned_pages_keep_the_subfolders_they_are_named_with(tmp_path: Path) -> None:
    """A set drawn from two manuals of one package names each as `folder/file` under the package's
    documentation root; the copy must recreate the folder rather than fail on it."""
    sys.path.insert(0, str(EVAL))
    from pinned_pages import copy_pinned

    docs = tmp_path / "docs"
    (docs / "fancyvrb").mkdir(parents=True)
    (docs / "fancyvrb" / "manual.pdf").write_bytes(b"%PDF-1.5 manual")
    digest = hashlib.sha256(b"%PDF-1.5 manual").hexdigest()[:16]
    copy_pinned(docs, {"fancyvrb/manual.pdf": digest}, tmp_path / "corpus", "texlive-doc")
    assert (tmp_path / "corpus" / "fancyvrb" / "manual.pdf").read_bytes() == b"%PDF-1.5 manual"
