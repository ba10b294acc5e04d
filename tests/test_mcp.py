"""`sourcebook mcp` driven by the official `mcp` client library, over both transports.

Each transport test starts the real `sourcebook` executable as a subprocess: over
stdio the client launches it and talks on its pipes; over streamable HTTP it
listens on a free port on 127.0.0.1 that it prints on stderr. One session per
transport exercises every tool, so the embedding model loads once per process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from sourcebook import KnowledgeBase  # noqa: E402

SOURCEBOOK = str(Path(sys.executable).with_name("sourcebook"))
TOOLS = {"search", "ask", "summarize", "related", "add", "list"}


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory, example_docs: Path) -> Path:
    """A knowledge base holding two example documents; a third is left for `add`."""
    db = tmp_path_factory.mktemp("mcp") / "kb.db"
    with KnowledgeBase.open(db) as kb:
        kb.add([str(example_docs / "employee-handbook.md"), str(example_docs / "security-policy.md")])
    return db


@pytest.fixture
def mcp_db(base_db: Path, tmp_path: Path) -> str:
    """A private copy of `base_db`, so what one test adds no other test sees."""
    return str(shutil.copy(base_db, tmp_path / "kb.db"))


def _data(result: Any) -> dict[str, Any]:
    """A tool result's structured content, checked against its text twin."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def _exercise(client: Client, db: str, new_doc: Path) -> None:
    """Every tool and the document resource, as an assistant would call them."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert tools["search"].input_schema["required"] == ["query"]

    listed = _data(await client.call_tool("list", {}))
    assert {d["title"] for d in listed["documents"]} == {"Northwind Labs Employee Handbook", "Information Security Policy"}
    assert all(d["status"] == "ready" and d["chunk_count"] > 0 for d in listed["documents"])

    hits = _data(await client.call_tool("search", {"query": "parental leave at full pay", "top_k": 3}))["hits"]
    assert 1 <= len(hits) <= 3
    assert hits[0]["source"].endswith("employee-handbook.md")
    assert "leave" in hits[0]["text"].lower()

    answer = _data(await client.call_tool("ask", {"question": "How many days of annual leave does a full-time employee get?"}))
    assert not answer["abstained"]
    assert "27" in answer["answer"]
    assert answer["citations"] and answer["citations"][0]["source"].endswith("employee-handbook.md")

    handbook = next(d for d in listed["documents"] if d["title"] == "Northwind Labs Employee Handbook")
    summary = _data(await client.call_tool("summarize", {"document": handbook["source"]}))
    assert summary["document_id"] == handbook["id"] and summary["summarizer"] == "extractive"
    assert summary["citations"] and all(c["document_id"] == handbook["id"] for c in summary["citations"])
    assert all(f"[{c['n']}]" in summary["summary"] for c in summary["citations"])
    related = _data(await client.call_tool("related", {"document": handbook["id"]}))["documents"]
    assert [d["title"] for d in related] == ["Information Security Policy"]  # never the handbook itself
    nothing = await client.call_tool("summarize", {})
    assert nothing.is_error and "invalid_query" in nothing.content[0].text

    added = _data(await client.call_tool("add", {"sources": [str(new_doc)], "collection": "runbooks"}))
    assert added["summary"] == {"added": 1}
    assert added["results"][0]["status"] == "ready"
    runbooks = _data(await client.call_tool("list", {"collection": "runbooks"}))["documents"]
    assert [d["source"] for d in runbooks] == [os.path.normpath(str(new_doc))]
    found = _data(await client.call_tool("search", {"query": "severity levels of incidents", "collection": "runbooks"}))
    assert found["hits"] and found["hits"][0]["document_id"] == runbooks[0]["id"]

    text = (await client.read_resource(f"sourcebook://documents/{runbooks[0]['id']}")).contents[0].text
    assert text.startswith("# ") and "## " in text

    # The caller's mistakes come back as readable tool errors, not crashes.
    bad = await client.call_tool("list", {"status": "finished"})
    assert bad.is_error and "status must be one of" in bad.content[0].text
    empty = await client.call_tool("search", {"query": "   "})
    assert empty.is_error and "invalid_query: the query is empty" in empty.content[0].text
    missing = await client.call_tool("add", {"sources": [str(new_doc.with_name("nope.md"))]})
    assert _data(missing)["summary"] == {"failed": 1}


def _run(session: Callable[[], Awaitable[None]]) -> None:
    anyio.run(session)


@pytest.fixture
def new_doc(tmp_path: Path, example_docs: Path) -> Path:
    target = tmp_path / "incident-response-runbook.md"
    shutil.copy(example_docs / "incident-response-runbook.md", target)
    return target


def test_stdio_transport(mcp_db: str, new_doc: Path) -> None:
    params = StdioServerParameters(command=SOURCEBOOK, args=["--db", mcp_db, "mcp"])

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _exercise(client, mcp_db, new_doc)

    _run(session)


@pytest.fixture
def http_server(mcp_db: str) -> Iterator[str]:
    """`sourcebook mcp --transport http --port 0`; yields the URL it prints."""
    process = subprocess.Popen(
        [SOURCEBOOK, "--db", mcp_db, "mcp", "--transport", "http", "--port", "0"],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        line = process.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line + process.stderr.read()
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


def test_streamable_http_transport(http_server: str, mcp_db: str, new_doc: Path) -> None:
    assert http_server.endswith("/mcp")

    async def session() -> None:
        async with Client(http_server, read_timeout_seconds=120) as client:
            await _exercise(client, mcp_db, new_doc)

    _run(session)


def test_read_only_leaves_out_add(mcp_db: str) -> None:
    params = StdioServerParameters(command=SOURCEBOOK, args=["--db", mcp_db, "mcp", "--read-only"])

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS - {"add"}

    _run(session)


def test_http_refuses_a_public_host_without_allow_remote(mcp_db: str) -> None:
    done = subprocess.run(
        [SOURCEBOOK, "--db", mcp_db, "mcp", "--transport", "http", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1
    assert "--allow-remote" in done.stderr


def test_tenant_option_scopes_the_tools(mcp_db: str) -> None:
    """`sourcebook --tenant T mcp` sees only tenant T's documents (the store enforces it)."""
    params = StdioServerParameters(command=SOURCEBOOK, args=["--db", mcp_db, "--tenant", "team-b", "mcp"])

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            assert _data(await client.call_tool("list", {}))["documents"] == []
            assert _data(await client.call_tool("search", {"query": "annual leave"}))["hits"] == []

    _run(session)
