"""The web page end to end in headless Chromium (Debian's, driven by Playwright).

A real `sourcebook serve` process on 127.0.0.1 with API keys, answering with an LLM: the
mock Anthropic Messages server of tests/mock_servers, which streams its answer a word at a
time, so the test can watch the answer grow in the page before it is final. A person's
path through the page: enter the key, drop a file, wait for it to be ready, ask, watch the
answer stream in, open a citation's passage, search, reopen the conversation, delete.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.mock_servers import AnthropicProtocol, MockServer, Reply
from tests.mock_servers.core import Recorded
from tests.mock_servers.responder import Responder, citing

playwright = pytest.importorskip("playwright.sync_api")
axe = pytest.importorskip("axe_playwright_python.sync_playwright")

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
SOURCEBOOK = str(Path(sys.executable).with_name("sourcebook"))
SCREENSHOTS = Path(os.environ.get("SOURCEBOOK_SCREENSHOTS", "/tmp/sourcebook-web"))
QUESTION = "How many days of annual leave does a full-time employee get?"
CLAIM = "Full-time employees get 27 days of annual leave per year, plus UK bank holidays"

if not os.path.exists(CHROMIUM):
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    pytest.skip(f"{CHROMIUM} is missing (make browser installs it)", allow_module_level=True)

pytestmark = pytest.mark.slow


def _slowly(responder: Responder):
    """The responder's replies, streamed a word every 60 ms: slow enough to see the answer grow."""

    def reply(request: Recorded) -> Any:
        action = responder(request)
        return dataclasses.replace(action, chunk_delay=0.06) if isinstance(action, Reply) else action

    return reply


@pytest.fixture
def llm() -> Iterator[MockServer]:
    with MockServer(AnthropicProtocol()) as server:
        server.default = _slowly(Responder(answer=citing("27 days", CLAIM)))
        yield server


def create_key(db: str, role: str, env: dict[str, str]) -> str:
    """A new API key of `role` in the knowledge base `db`, made with `sourcebook keys create`."""
    created = subprocess.run(
        [SOURCEBOOK, "--db", db, "keys", "create", "--role", role, "--name", "browser test", "--json"],
        capture_output=True, text=True, check=True, env=env,
    )
    return str(json.loads(created.stdout)["secret"])


@contextmanager
def serving(db: str, env: dict[str, str]) -> Iterator[str]:
    """The base URL of `sourcebook serve` over `db`, stopped on exit."""
    process = subprocess.Popen(
        [SOURCEBOOK, "--db", db, "serve", "--port", "0", "--log-text"], stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        line = process.stderr.readline()
        assert " on http://127.0.0.1:" in line, line + process.stderr.read()
        yield line.split(" on ", 1)[1].split()[0]
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


@pytest.fixture
def served(tmp_path: Path, llm: MockServer) -> Iterator[tuple[str, str]]:
    """(base URL, admin key) of `sourcebook serve` over an empty knowledge base."""
    db = str(tmp_path / "kb.db")
    env = {
        **os.environ, "SOURCEBOOK_LLM": "anthropic:claude-test", "ANTHROPIC_API_KEY": "test-key",
        "SOURCEBOOK_LLM_BASE_URLS": json.dumps({"anthropic": llm.url}), "SOURCEBOOK_LLM_RETRY_BASE_DELAY": "0",
    }
    secret = create_key(db, "admin", env)
    with serving(db, env) as url:
        yield url, secret


@pytest.fixture
def page(served: tuple[str, str]) -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.set_default_timeout(60_000)
        yield page
        context.close()
        browser.close()
        assert not errors, errors


def _accessible(page: Any, where: str) -> None:
    """axe-core's WCAG and best-practice rules (labels, contrast, keyboard, landmarks) find nothing."""
    results = axe.Axe().run(page)
    assert results.violations_count == 0, f"{where}:\n{results.generate_report()}"


def _drop(page: Any, selector: str, path: Path, media_type: str) -> None:
    """Drag a file onto `selector` as a person would: a `drop` event carrying it."""
    transfer = page.evaluate_handle(
        """([name, text, type]) => {
            const transfer = new DataTransfer();
            transfer.items.add(new File([text], name, { type }));
            return transfer;
        }""",
        [path.name, path.read_text(encoding="utf-8"), media_type],
    )
    page.dispatch_event(selector, "dragenter", {"dataTransfer": transfer})
    page.dispatch_event(selector, "drop", {"dataTransfer": transfer})


def test_upload_ask_stream_cite_search(page: Any, served: tuple[str, str], example_docs: Path) -> None:
    url, secret = served
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(url)

    # The key: asked for at once, a wrong one refused, the right one kept in localStorage.
    page.wait_for_selector("#key-dialog[open]")
    _accessible(page, "key dialog")
    page.fill("#key-input", "sb_wrong")
    page.click("#key-save")
    page.wait_for_selector("#key-error:has-text('unknown or revoked')")
    page.fill("#key-input", secret)
    page.click("#key-save")
    page.wait_for_selector("#key-dialog:not([open])", state="attached")
    assert page.evaluate("localStorage.getItem('sourcebook.apiKey')") == secret

    # Upload by drag and drop, and watch the status change until ready.
    page.click("#tab-documents")
    _drop(page, "#dropzone", example_docs / "employee-handbook.md", "text/markdown")
    page.wait_for_selector(".uploads li:has-text('employee-handbook.md') .status.ready")
    row = page.locator("#doc-rows tr", has_text="Northwind Labs Employee Handbook")
    row.locator(".status.ready").wait_for()
    assert int(row.locator("td.num").inner_text()) > 5
    _accessible(page, "documents")

    # Ask: the answer streams in (seen unfinished), then its citations become buttons.
    page.click("#tab-ask")
    page.fill("#question", QUESTION)
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => { const t = document.querySelector('.answer-text.streaming'); return t && t.textContent.length > 5; }"
    )
    partial = page.locator(".answer-text").inner_text()
    page.wait_for_selector(".turn-answer .sources")
    final = page.locator(".answer-text").inner_text()
    assert CLAIM.startswith(partial.strip()) and len(partial.strip()) < len(CLAIM), (partial, final)
    assert final.startswith(CLAIM)
    assert page.locator(".turn-answer .badge", has_text="Confidence").count() == 1
    page.screenshot(path=str(SCREENSHOTS / "answer.png"))
    _accessible(page, "answer")

    # A citation opens its passage in the document: title, section, the quote marked.
    page.locator(".answer-text .cite").first.click()
    page.wait_for_selector("#passage[open] .chunk.cited mark.quote")
    assert page.locator("#passage-title").inner_text() == "Northwind Labs Employee Handbook"
    assert "Annual leave" in page.locator("#passage-meta").inner_text()
    assert "27 days" in page.locator(".chunk.cited mark.quote").inner_text()
    assert page.evaluate("document.activeElement.classList.contains('cited')")
    page.screenshot(path=str(SCREENSHOTS / "passage.png"))
    _accessible(page, "passage")
    page.keyboard.press("Escape")
    page.wait_for_selector("#passage:not([open])", state="attached")

    # Search: hits with the matched terms highlighted.
    page.click("#tab-search")
    page.fill("#search-query", "sick leave")
    page.keyboard.press("Enter")
    page.wait_for_selector(".hit")
    marks = [m.lower() for m in page.locator(".hit mark").all_inner_texts()]
    assert "sick" in marks and "leave" in marks
    page.screenshot(path=str(SCREENSHOTS / "search.png"))
    _accessible(page, "search")

    # The conversation is kept: a new one clears the thread, the history brings it back.
    page.click("#tab-ask")
    page.wait_for_selector("#sessions li:has-text('annual leave')")
    page.click("#new-chat")
    assert page.locator(".turn-answer").count() == 0
    page.click("#sessions li button.open")
    page.wait_for_selector(".turn-question:has-text('annual leave')")
    assert page.locator(".answer-text").inner_text().startswith(CLAIM)
    _accessible(page, "conversation history")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#sessions li button.delete")
    page.wait_for_selector("#sessions-empty:not([hidden])")
    assert page.locator(".turn-answer").count() == 0

    # Delete the document (after confirming).
    page.click("#tab-documents")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#doc-rows tr", has_text="Employee Handbook").locator("button", has_text="Delete").click()
    page.wait_for_selector("#docs-empty:not([hidden])")


def test_keyboard_only_navigation(page: Any, served: tuple[str, str]) -> None:
    """Tabs follow the arrow keys, the key is remembered across reloads; the dark scheme passes axe too
    (the graph view's empty state included)."""
    url, secret = served
    page.emulate_media(color_scheme="dark")
    page.goto(url)
    page.wait_for_selector("#key-dialog[open]")
    page.keyboard.type(secret)  # the key field has focus
    page.keyboard.press("Enter")
    page.wait_for_selector("#key-dialog:not([open])", state="attached")
    page.reload()
    page.wait_for_selector("#key-button[data-state='set']")
    assert not page.locator("#key-dialog").get_attribute("open")
    page.focus("#tab-ask")
    page.keyboard.press("ArrowRight")
    assert page.locator("#tab-search").get_attribute("aria-selected") == "true"
    assert page.locator("#view-search").is_visible() and not page.locator("#view-ask").is_visible()
    _accessible(page, "search, dark")
    page.keyboard.press("ArrowRight")
    assert page.locator("#view-documents").is_visible()
    page.wait_for_selector("#docs-empty:not([hidden])")
    _accessible(page, "documents, dark")
    page.keyboard.press("ArrowRight")
    assert page.locator("#view-graph").is_visible()
    page.wait_for_selector("#graph-empty:not([hidden]) #graph-build:not([hidden])")  # an admin may build it
    _accessible(page, "graph, empty, dark")
    page.keyboard.press("ArrowRight")
    assert page.locator("#view-usage").is_visible()
    page.wait_for_selector("#usage-summary:not(:empty)")
    _accessible(page, "usage, dark")
    page.keyboard.press("ArrowRight")  # wraps around
    assert page.evaluate("document.activeElement.id") == "tab-ask" and page.locator("#view-ask").is_visible()
    _accessible(page, "ask, dark")
