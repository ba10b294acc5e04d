"""The web page's passage view names a slide, and a sheet with its rows, in headless Chromium:
`sourcebook serve` over a real deck and workbook (tests/loaders/office_files.py). The PDF's page
is shown in test_reading_view.py; the location comes from the server (locations.py)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.loaders.office_files import make_pptx, make_xlsx
from tests.web.test_browser import SOURCEBOOK, create_key, page, serving

__all__ = ["page"]  # the browser fixture, over the server below
pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(base URL, read key) of `sourcebook serve` over review.pptx and staff.xlsx."""
    db = str(tmp_path / "kb.db")
    env = {**os.environ}
    env.pop("SOURCEBOOK_LLM", None)
    (tmp_path / "review.pptx").write_bytes(make_pptx())
    (tmp_path / "staff.xlsx").write_bytes(make_xlsx(staff_rows=60))
    sources = [str(tmp_path / "review.pptx"), str(tmp_path / "staff.xlsx")]
    subprocess.run([SOURCEBOOK, "--db", db, "add", *sources], capture_output=True, check=True, env=env)
    reader = create_key(db, "read", env)
    with serving(db, env) as url:
        yield url, reader


def _open_first_hit(page: Any, query: str, mode: str = "hybrid") -> str:
    """Search, open the first hit's passage; the passage view's place line."""
    if page.locator("#passage[open]").count():
        page.keyboard.press("Escape")
        page.wait_for_selector("#passage:not([open])", state="attached")
    page.click("#tab-search")
    page.select_option("#search-mode", mode)
    page.fill("#search-query", query)
    page.keyboard.press("Enter")
    page.wait_for_selector(".hit button")
    page.locator(".hit button").first.click()
    page.wait_for_selector("#passage[open] .chunk.cited")
    return str(page.locator("#passage-meta").inner_text())


def test_the_passage_view_names_the_slide_and_the_sheet_rows(page: Any, served: tuple[str, str]) -> None:
    url, reader = served
    page.goto(url)
    page.wait_for_selector("#key-dialog[open]")
    page.fill("#key-input", reader)
    page.click("#key-save")
    page.wait_for_selector("#key-dialog:not([open])", state="attached")

    slide = _open_first_hit(page, "new office in Lyon")
    assert slide.endswith("review.pptx · slide 1: Results › Speaker notes"), slide
    assert "slide 1: Results › Speaker notes" in page.locator("#passage-body .section").all_inner_texts()

    rows = _open_first_hit(page, "Person 50", mode="keyword")
    assert "staff.xlsx · sheet Staff, rows " in rows, rows
    first, last = (int(n) for n in rows.rsplit("rows ", 1)[1].split("-"))
    assert first <= 52 <= last  # Person 50 is on sheet row 52
