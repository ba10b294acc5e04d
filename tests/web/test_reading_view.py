"""A document's summary and related documents in the web page, and "you may also want to read"
under an answer, in headless Chromium: `sourcebook serve` over three example documents, no LLM
(extractive summaries and answers), axe-core's rules on the drawer, screenshots kept."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.test_browser import SCREENSHOTS, SOURCEBOOK, _accessible, create_key, page, serving

__all__ = ["page"]  # the browser fixture, over the server below
pytestmark = pytest.mark.slow
DOCUMENTS = ("employee-handbook.md", "travel-policy.pdf", "security-policy.md")


@pytest.fixture
def served(tmp_path: Path, example_docs: Path) -> Iterator[tuple[str, str]]:
    """(base URL, read key) of `sourcebook serve` over three example documents."""
    db = str(tmp_path / "kb.db")
    env = {**os.environ}
    env.pop("SOURCEBOOK_LLM", None)
    sources = [str(example_docs / name) for name in DOCUMENTS]
    subprocess.run([SOURCEBOOK, "--db", db, "add", *sources], capture_output=True, check=True, env=env)
    reader = create_key(db, "read", env)
    with serving(db, env) as url:
        yield url, reader


def test_summary_and_related_beside_a_document_and_under_an_answer(page: Any, served: tuple[str, str]) -> None:
    url, reader = served
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(url)
    page.wait_for_selector("#key-dialog[open]")
    page.fill("#key-input", reader)
    page.click("#key-save")
    page.wait_for_selector("#key-dialog:not([open])", state="attached")

    # The documents panel: each ready document offers its summary and the documents like it.
    page.set_viewport_size({"width": 1280, "height": 1200})  # the drawer's summary and related list in one shot
    page.click("#tab-documents")
    row = page.locator("#doc-rows tr", has_text="Northwind Labs Employee Handbook")
    row.locator("button", has_text="Summary").click()
    page.wait_for_selector("#insight[open] #insight-summary .cite")
    page.wait_for_selector("#insight[open] #insight-related .related button")
    assert page.locator("#insight-title").inner_text() == "Northwind Labs Employee Handbook"
    cites = page.locator("#insight-summary .cite").count()
    assert cites >= 5 and 1 <= page.locator("#insight-summary .sources li").count() <= cites  # a source per chunk cited
    related = page.locator("#insight-related .related .title").all_inner_texts()
    assert set(related) == {"Northwind Labs Travel and Expenses Policy", "Information Security Policy"}
    page.screenshot(path=str(SCREENSHOTS / "summary-related.png"))
    _accessible(page, "summary and related drawer")
    page.set_viewport_size({"width": 1280, "height": 800})

    # A citation of the summary opens its passage, the quoted sentence marked.
    page.locator("#insight-summary .cite").first.click()
    page.wait_for_selector("#passage[open] .chunk.cited mark.quote")
    assert page.locator("#passage-title").inner_text() == "Northwind Labs Employee Handbook"
    page.keyboard.press("Escape")
    page.wait_for_selector("#passage:not([open])", state="attached")

    # Under an answer: the retrieved documents it did not cite.
    page.click("#tab-ask")
    page.fill("#question", "How many days of annual leave does a full-time employee get?")
    page.keyboard.press("Enter")
    page.wait_for_selector(".turn-answer .suggestions .related button")
    suggested = page.locator(".turn-answer .suggestions .title").all_inner_texts()
    assert suggested and "Northwind Labs Employee Handbook" not in suggested
    page.screenshot(path=str(SCREENSHOTS / "answer-suggestions.png"))
    _accessible(page, "answer with suggestions")
    page.locator(".turn-answer .suggestions button").first.click()
    page.wait_for_selector("#passage[open] .chunk.cited")
    assert page.locator("#passage-title").inner_text() == suggested[0]

    # A PDF's passage names its page: a hit of the travel policy opens on "page 2".
    page.keyboard.press("Escape")
    page.wait_for_selector("#passage:not([open])", state="attached")
    page.click("#tab-search")
    page.fill("#search-query", "hotel nightly limit in London")
    page.keyboard.press("Enter")
    page.locator(".hit button", has_text="Travel and Expenses Policy").first.click()
    page.wait_for_selector("#passage[open] .chunk.cited")
    assert page.locator("#passage-meta").inner_text().endswith("3. Accommodation · page 2")
    assert "3. Accommodation · page 2" in page.locator("#passage-body .section").all_inner_texts()
