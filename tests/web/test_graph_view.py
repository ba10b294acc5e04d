"""The Graph view end to end in headless Chromium: a `sourcebook serve` process over the example
corpus (no LLM: the offline extractor), its graph built from the page, nodes drawn and sized
by mentions, an entity's passages and neighbours in the side panel, a neighbour followed, a
node opened by keyboard, the find box, and axe-core's rules in both colour schemes."""

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


@pytest.fixture
def served(tmp_path: Path, example_docs: Path) -> Iterator[tuple[str, str, str]]:
    """(base URL, write key, read key) of `sourcebook serve` over the example documents, no graph yet."""
    db = str(tmp_path / "kb.db")
    env = {**os.environ, "SOURCEBOOK_GRAPH_EXTRACTOR": "offline"}
    env.pop("SOURCEBOOK_LLM", None)
    subprocess.run([SOURCEBOOK, "--db", db, "add", str(example_docs)], capture_output=True, check=True, env=env)
    writer, reader = create_key(db, "write", env), create_key(db, "read", env)
    with serving(db, env) as url:
        yield url, writer, reader


def _sign_in(page: Any, url: str, secret: str) -> None:
    page.goto(url)
    page.wait_for_selector("#key-dialog[open]")
    page.fill("#key-input", secret)
    page.click("#key-save")
    page.wait_for_selector("#key-dialog:not([open])", state="attached")


def _radius(page: Any, key: str) -> float:
    return float(page.locator(f".node[data-id='{key}'] circle").get_attribute("r"))


def test_build_browse_and_follow_the_graph(page: Any, served: tuple[str, str, str]) -> None:
    url, writer, reader = served
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _sign_in(page, url, writer)

    # Empty at first: a clear empty state, and a Build button for a write key.
    page.click("#tab-graph")
    page.wait_for_selector("#graph-empty:not([hidden]) #graph-build:not([hidden])")
    assert "No knowledge graph yet" in page.locator("#graph-empty").inner_text()
    _accessible(page, "graph, empty")

    # Build it from the page: nodes drawn, the most mentioned labelled and drawn larger.
    page.click("#graph-build")
    page.wait_for_selector("#status:has-text('Graph built from 9 documents')")
    page.wait_for_selector("#graph-body:not([hidden]) .node")
    assert page.locator("#graph-empty").is_hidden()
    assert 100 <= page.locator(".node").count() <= 150 and page.locator(".edge").count() > 100
    assert "entities" in page.locator("#graph-summary").inner_text()
    assert page.locator(".node[data-id='tidewater']").get_attribute("aria-label") == "Tidewater (name, 9 mentions)"
    ones = page.locator(".node[aria-label$=', 1 mention)'] circle").first.get_attribute("r")
    assert _radius(page, "api") > _radius(page, "tidewater") > float(ones)
    page.screenshot(path=str(SCREENSHOTS / "graph.png"))

    # Click a node: its passages (document, section, the name marked) and its neighbours.
    page.locator(".node[data-id='tidewater'] circle").click()
    page.wait_for_selector("#entity-title:has-text('Tidewater')")
    assert "9 mentions in 3 documents" in page.locator(".entity-meta").inner_text()
    passages = page.locator("#entity-panel > .entity-passages > li")
    assert passages.count() >= 3
    first = passages.first
    assert first.locator("button").inner_text() == "Beacon Platform Architecture Overview"
    assert "Tidewater (ingestion service)" in first.locator(".where").inner_text()
    assert first.locator("blockquote mark").first.inner_text() == "Tidewater"
    kafka = page.locator(".neighbour", has=page.locator(".neighbour-link", has_text="Kafka"))
    assert "Tidewater → publishes batch to → Kafka" in kafka.locator(".relation").inner_text()
    assert "publishes the batch to Kafka" in kafka.locator("blockquote").first.inner_text()
    assert page.locator(".node[data-id='tidewater']").get_attribute("aria-current") == "true"
    assert "near" in page.locator(".node[data-id='kafka']").get_attribute("class")
    page.screenshot(path=str(SCREENSHOTS / "graph-entity.png"))
    _accessible(page, "graph, entity")

    # A passage opens in its document; a neighbour navigates to it (focus follows to its heading).
    first.locator("button").click()
    page.wait_for_selector("#passage[open] .chunk.cited mark")
    assert page.locator("#passage-title").inner_text() == "Beacon Platform Architecture Overview"
    page.keyboard.press("Escape")
    page.wait_for_selector("#passage:not([open])", state="attached")
    kafka.locator(".neighbour-link").click()
    page.wait_for_selector("#entity-title:has-text('Kafka')")
    assert page.evaluate("document.activeElement.id") == "entity-title"
    assert page.locator(".node[data-id='kafka']").get_attribute("aria-current") == "true"
    assert page.locator(".neighbour-link", has_text="Tidewater").count() >= 1

    # Keyboard: Tab from the toolbar reaches the nodes, most mentioned first; Enter opens one.
    page.focus("#graph-update")
    page.keyboard.press("Tab")
    focused = page.evaluate("[document.activeElement.dataset.id, document.activeElement.getAttribute('aria-label')]")
    assert focused[0] == "api", focused
    page.keyboard.press("Enter")
    page.wait_for_selector("#entity-title:text-is('API')")
    page.focus(".node[data-id='harbor-db']")
    page.keyboard.press("Space")
    page.wait_for_selector("#entity-title:text-is('harbor-db')")

    # The find box: matches stand out, Enter opens the best one (an alias works too).
    page.fill("#graph-filter", "DCP")
    page.wait_for_selector(".node.match[data-id='data collection pipeline']")
    assert "1 entity shown matches" in page.locator("#graph-matches").inner_text()
    page.keyboard.press("Enter")
    page.wait_for_selector("#entity-title:text-is('Data Collection Pipeline')")
    assert "also dcp" in page.locator(".entity-meta").inner_text()
    page.fill("#graph-filter", "zzzz")
    page.keyboard.press("Enter")
    page.wait_for_selector("#graph-matches:has-text('No entity matches')")

    # Zoom buttons change the view box; Fit brings it back.
    page.click("#zoom-fit")
    before = page.locator("#graph-svg").get_attribute("viewBox")
    page.click("#zoom-in")
    assert page.locator("#graph-svg").get_attribute("viewBox") != before
    page.click("#zoom-fit")
    assert page.locator("#graph-svg").get_attribute("viewBox") == before

    # A read key sees the graph but may not build it; the dark scheme passes axe too.
    page.evaluate("key => localStorage.setItem('sourcebook.apiKey', key)", reader)
    page.emulate_media(color_scheme="dark")
    page.reload()
    page.click("#tab-graph")
    page.locator(".node[data-id='beacon'] circle").click()
    page.wait_for_selector("#entity-title:text-is('Beacon')")
    assert page.locator("#graph-update").is_hidden() and page.locator("#graph-export").is_visible()
    page.screenshot(path=str(SCREENSHOTS / "graph-dark.png"))
    _accessible(page, "graph, entity, dark")
