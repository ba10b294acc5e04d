"""The Usage tab in headless Chromium: an admin sees the tenant's requests, tokens and embedding
calls by day and key (GET /v1/usage); a reader is told it is for admins. axe-core's rules, and a
screenshot kept."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.test_browser import SCREENSHOTS, SOURCEBOOK, _accessible, create_key, page, serving
from tests.web.test_graph_view import _sign_in

__all__ = ["page"]  # the browser fixture, over the server below
pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path, example_docs: Path) -> Iterator[tuple[str, str, str]]:
    """(base URL, admin key, read key) of `sourcebook serve` over one example document."""
    db = str(tmp_path / "kb.db")
    env = {**os.environ}
    env.pop("SOURCEBOOK_LLM", None)
    subprocess.run([SOURCEBOOK, "--db", db, "add", str(example_docs / "employee-handbook.md")],
                   capture_output=True, check=True, env=env)
    admin, reader = create_key(db, "admin", env), create_key(db, "read", env)
    with serving(db, env) as url:
        yield url, admin, reader


def test_an_admin_sees_usage_by_day_and_key_and_a_reader_is_told_why_not(page: Any, served: tuple[str, str, str]) -> None:
    url, admin, reader = served
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _sign_in(page, url, admin)
    page.click("#tab-search")
    page.fill("#search-query", "annual leave")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hits li")
    page.click("#tab-usage")
    page.wait_for_selector("#usage-table:not([hidden]) #usage-rows tr")
    cells = page.locator("#usage-rows tr").first.locator("td").all_inner_texts()
    assert len(cells) == 8 and int(cells[2].replace(",", "")) >= 1  # this page's requests so far
    assert "requests" in page.locator("#usage-summary").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "usage.png"))
    _accessible(page, "usage tab")

    page.evaluate("localStorage.clear()")
    _sign_in(page, url, reader)
    page.click("#tab-usage")
    page.wait_for_function("document.getElementById('usage-summary').textContent.includes('admin keys only')")
    assert page.locator("#usage-table").is_hidden()
