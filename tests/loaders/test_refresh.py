"""`KnowledgeBase.refresh` (and `sourcebook refresh`) against a real HTTP server on 127.0.0.1
that answers conditional GETs, with a real SQLite knowledge base and the real model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from sourcebook import KnowledgeBase
from sourcebook.cli import app
from sourcebook.loaders import url as url_module
from sourcebook.testing.helpers import heeds_ctrl_c

if TYPE_CHECKING:
    from conftest import LocalServer

HTML = "<html><head><title>Policy</title></head><body><main><h1>Leave</h1><p>{leave}</p><h1>Travel</h1><p>{travel}</p></main></body></html>"


def page(leave: str = "Parental leave is sixteen weeks.", travel: str = "Book trains, not flights.") -> bytes:
    return HTML.format(leave=leave, travel=travel).encode()


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "kb.db", allow_private_urls=True, url_timeout=2.0) as knowledge_base:
        yield knowledge_base


def serve(server: LocalServer, body: bytes, **headers: str) -> str:
    return server.add("/policy.html", body=body, headers={"Content-Type": "text/html", **headers})


def test_an_unchanged_page_answers_304_and_nothing_changes(kb: KnowledgeBase, http_server: LocalServer) -> None:
    url = serve(http_server, page(), ETag='"v1"')
    kb.add(url, "web", metadata={"team": "people"})
    before = kb.document(url)
    assert before.metadata["etag"] == '"v1"'

    [result] = kb.refresh()

    assert (result.action, result.embedded) == ("unchanged", 0)
    assert http_server.request_headers[-1]["If-None-Match"] == '"v1"'
    assert kb.document(url) == before


def test_last_modified_alone_makes_the_request_conditional(kb: KnowledgeBase, http_server: LocalServer) -> None:
    url = serve(http_server, page(), **{"Last-Modified": "Tue, 24 Nov 2026 10:00:00 GMT"})
    kb.add(url)

    assert kb.refresh()[0].action == "unchanged"
    assert http_server.request_headers[-1]["If-Modified-Since"] == "Tue, 24 Nov 2026 10:00:00 GMT"
    assert "If-None-Match" not in http_server.request_headers[-1]


def test_the_same_bytes_without_validators_embed_nothing_and_keep_the_new_validators(
    kb: KnowledgeBase, http_server: LocalServer
) -> None:
    url = serve(http_server, page())
    kb.add(url)
    updated_at = kb.document(url).updated_at
    serve(http_server, page(), ETag='"v2"')  # same content, the server now sends an ETag

    [result] = kb.refresh()

    assert (result.action, result.embedded) == ("unchanged", 0)
    record = kb.document(url)
    assert record.metadata["etag"] == '"v2"' and record.updated_at >= updated_at
    assert kb.refresh()[0].action == "unchanged"
    assert http_server.request_headers[-1]["If-None-Match"] == '"v2"'


def test_a_changed_page_is_ingested_again_embedding_only_its_changed_chunks(
    kb: KnowledgeBase, http_server: LocalServer
) -> None:
    url = serve(http_server, page(), ETag='"v1"')
    kb.add(url, "web", metadata={"team": "people"})
    chunks = kb.document(url).chunk_count
    serve(http_server, page(travel="Book trains; flights need approval."), ETag='"v2"')

    [result] = kb.refresh("web")

    assert (result.action, result.chunks, result.embedded) == ("updated", chunks, 1)
    record = kb.document(url)
    assert record.metadata["team"] == "people" and record.metadata["etag"] == '"v2"'
    assert "approval" in kb.search("flights approval", collection="web")[0].chunk.text


def test_a_failed_fetch_leaves_the_document_as_it_was(kb: KnowledgeBase, http_server: LocalServer) -> None:
    url = serve(http_server, page(), ETag='"v1"')
    kb.add(url)
    before = kb.document(url)
    http_server.add("/policy.html", status=500, body=b"down")

    [result] = kb.refresh()

    assert (result.action, result.error_code) == ("failed", "fetch_error")
    assert kb.document(url) == before


def test_refresh_keeps_refusing_private_addresses(tmp_path: Path, http_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A document added while loopback was allowed is not fetched once it is not, and a
    redirect into the private network is refused at its hop, as on the first fetch."""
    url = serve(http_server, page(), ETag='"v1"')
    with KnowledgeBase.open(tmp_path / "kb.db", allow_private_urls=True) as kb:
        kb.add(url)
    fetched = len(http_server.requested)
    with KnowledgeBase.open(tmp_path / "kb.db", allow_private_urls=False) as kb:
        assert kb.refresh()[0].error_code == "blocked_url"
        assert len(http_server.requested) == fetched

        real_resolve = url_module.resolve_host
        monkeypatch.setattr(
            url_module, "resolve_host",
            lambda host, port: ["93.184.216.34"] if host == "127.0.0.1" else real_resolve(host, port),
        )
        http_server.add("/policy.html", status=302, headers={"Location": http_server.url("/admin", host="localhost")})
        [result] = kb.refresh()
        assert result.error_code == "blocked_url" and "localhost" in str(result.error)
        assert http_server.requested[fetched:] == ["/policy.html"]
        assert kb.document(url).status == "ready"


def test_the_refresh_command(tmp_path: Path, http_server: LocalServer) -> None:
    url = serve(http_server, page(), ETag='"v1"')
    db = str(tmp_path / "kb.db")
    env = {"SOURCEBOOK_ALLOW_PRIVATE_URLS": "true"}
    runner = CliRunner()
    assert runner.invoke(app, ["--db", db, "add", url], env=env).exit_code == 0
    serve(http_server, page(leave="Parental leave is twenty weeks."), ETag='"v2"')

    run = runner.invoke(app, ["--db", db, "refresh", "--json"], env=env)

    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["summary"] == {"updated": 1} and report["results"][0]["embedded"] == 1
    human = runner.invoke(app, ["--db", db, "refresh"], env=env)
    assert human.stdout.strip() == "1 unchanged; 0 chunks embedded"
    bad = runner.invoke(app, ["--db", db, "refresh", "--every", "soon"], env=env)
    assert bad.exit_code == 2 and "no interval" in bad.output


def test_refresh_every_interval_until_ctrl_c(tmp_path: Path, http_server: LocalServer) -> None:
    url = serve(http_server, page(), ETag='"v1"')
    db = str(tmp_path / "kb.db")
    with KnowledgeBase.open(db, allow_private_urls=True) as kb:
        kb.add(url)
    command = [str(Path(sys.executable).with_name("sourcebook")), "--db", db, "refresh", "--every", "0.2s", "--json"]
    env = {**os.environ, "SOURCEBOOK_ALLOW_PRIVATE_URLS": "true"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               preexec_fn=heeds_ctrl_c)
    try:
        assert process.stdout is not None
        rounds = [json.loads(process.stdout.readline()) for _ in range(2)]
        process.send_signal(signal.SIGINT)
        assert process.wait(20) == 0
    finally:
        process.kill()
    assert [r["summary"] for r in rounds] == [{"unchanged": 1}, {"unchanged": 1}]
    assert [h.get("If-None-Match") for h in http_server.request_headers[-2:]] == ['"v1"', '"v1"']
