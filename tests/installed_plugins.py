"""Install a real (tiny) distribution with entry points for a test: a dist-info folder on sys.path.

`importlib.metadata` finds it exactly as it finds a pip-installed package, so the plugin
registry is tested through the real entry-point machinery, not a mock of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest


def install_distribution(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    entry_points: Mapping[str, Mapping[str, str]],
    modules: Mapping[str, str] | None = None,
) -> None:
    """Put a distribution declaring `entry_points` ({group: {name: "module:attribute"}}) on sys.path,
    with `modules` ({module name: source}) beside it, as pip would install them."""
    site = tmp_path / "site"
    dist_info = site / "sourcebook_test_plugin-0.1.dist-info"
    dist_info.mkdir(parents=True)
    for module_name, source in (modules or {}).items():
        (site / f"{module_name}.py").write_text(source)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: sourcebook-test-plugin\nVersion: 0.1\n")
    sections = [
        f"[{group}]\n" + "".join(f"{name} = {reference}\n" for name, reference in points.items())
        for group, points in entry_points.items()
    ]
    (dist_info / "entry_points.txt").write_text("\n".join(sections))
    monkeypatch.syspath_prepend(str(site))
