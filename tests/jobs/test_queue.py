"""The Postgres ingestion queue against a real embedded PostgreSQL: enqueue, a worker, retries
with backoff (a real HTTP server failing on purpose), tenants, and the in-process fallback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg
import pytest

from sourcebook import KnowledgeBase
from sourcebook.embedders import create_embedder
from sourcebook.embedders.base import Embedder
from sourcebook.jobs import InProcessRunner
from sourcebook.jobs.queue import QueueRunner
from sourcebook.jobs.worker import IngestWorker
from sourcebook.models import DocumentStatus
from sourcebook.settings import Settings
from sourcebook.stores import open_store
from sourcebook.wiring import Components


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return create_embedder(Settings())


def open_kb(dsn: str, embedder: Embedder, tenant: str = "default", **settings: object) -> KnowledgeBase:
    store = open_store(dsn).for_tenant(tenant)
    return KnowledgeBase(store, Settings(db=dsn, **settings), embedder)  # type: ignore[arg-type]


def run_worker(dsn: str, settings: Settings, embedder: Embedder) -> None:
    """What `sourcebook worker --until-idle` does, with the test's model: work the queue until idle."""
    parts = Components(open_store(dsn), settings, embedder)
    worker = IngestWorker(parts)
    try:
        worker.run_until_idle()
    finally:
        worker.close()
        parts.close()


class FlakyServer:
    """A real HTTP server on 127.0.0.1 that answers /doc.md with the given statuses in turn
    (the last one repeats) and records when each request came."""

    def __init__(self, statuses: list[int], body: bytes) -> None:
        self.statuses = statuses
        self.body = body
        self.times: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.times.append(time.monotonic())
                status = server.statuses[min(len(server.times), len(server.statuses)) - 1]
                payload = server.body if status == 200 else b"try later"
                self.send_response(status)
                self.send_header("Content-Type", "text/markdown" if status == 200 else "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/doc.md"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def flaky() -> Iterator[type[FlakyServer]]:
    servers: list[FlakyServer] = []

    class Tracked(FlakyServer):
        def __init__(self, statuses: list[int], body: bytes) -> None:
            super().__init__(statuses, body)
            servers.append(self)

    yield Tracked
    for server in servers:
        server.close()


def test_sqlite_runs_in_process_and_postgres_queues(tmp_path: Path, fresh_postgres_dsn: str, embedder: Embedder) -> None:
    assert isinstance(KnowledgeBase.open(tmp_path / "kb.db").ingestion_runner(), InProcessRunner)
    assert isinstance(open_kb(fresh_postgres_dsn, embedder).ingestion_runner(), QueueRunner)
    assert isinstance(open_kb(fresh_postgres_dsn, embedder, ingest_jobs="inline").ingestion_runner(), InProcessRunner)


def test_enqueue_then_a_worker_processes_the_jobs(fresh_postgres_dsn: str, embedder: Embedder, example_docs: Path) -> None:
    kb = open_kb(fresh_postgres_dsn, embedder)
    sources = [str(example_docs / "employee-handbook.md"), str(example_docs / "travel-policy.pdf")]
    queued = kb.add(sources, wait=False)
    assert [r.action for r in queued] == ["queued", "queued"]
    assert {d.status for d in kb.documents()} == {DocumentStatus.PENDING}
    with psycopg.connect(fresh_postgres_dsn) as conn:  # the bytes travel with the job, not a path
        sizes = conn.execute("SELECT octet_length(data) FROM sourcebook_ingest_jobs ORDER BY source").fetchall()
    assert [s for (s,) in sizes] == [Path(s).stat().st_size for s in sorted(sources)]

    run_worker(fresh_postgres_dsn, kb.settings, embedder)
    documents = kb.documents()
    assert {d.status for d in documents} == {DocumentStatus.READY}
    for document in documents:
        chunks = kb.chunks(document.id)
        assert document.chunk_count == len(chunks) > 0
        assert [c.position for c in chunks] == list(range(len(chunks)))
    assert kb.search("How many days of annual leave?", top_k=1)[0].chunk.source.endswith("employee-handbook.md")
    with psycopg.connect(fresh_postgres_dsn) as conn:
        left = conn.execute("SELECT count(*) FROM sourcebook_ingest_jobs WHERE data IS NOT NULL OR result IS NULL").fetchone()
    assert left == (0,)
    again = kb.add(sources)  # unchanged files are settled without a job
    assert [r.action for r in again] == ["unchanged", "unchanged"]


def test_add_waits_and_works_the_queue_itself_when_no_worker_runs(
    fresh_postgres_dsn: str, embedder: Embedder, example_docs: Path
) -> None:
    kb = open_kb(fresh_postgres_dsn, embedder)
    events: list[str] = []
    results = kb.add(str(example_docs / "security-policy.md"), progress=lambda e: events.append(e.kind))
    assert [(r.action, r.status) for r in results] == [("added", "ready")]
    assert results[0].chunks == len(kb.chunks(results[0].document_id)) == results[0].embedded
    assert events[0] == "planned" and "document" in events


def test_a_failing_source_is_retried_with_backoff_then_in_error_with_the_reason(
    fresh_postgres_dsn: str, embedder: Embedder, flaky: type[FlakyServer]
) -> None:
    server = flaky([503], b"")
    kb = open_kb(fresh_postgres_dsn, embedder, allow_private_urls=True, job_retry_delay=0.4)
    [result] = kb.add(server.url)
    assert result.action == "failed"
    assert len(server.times) == 3  # job_attempts defaults to 3
    gaps = [b - a for a, b in zip(server.times, server.times[1:])]
    assert gaps[0] >= 0.4 and gaps[1] >= 0.8  # exponential: retry_delay, then twice that
    record = kb.document(server.url)
    assert record.status == DocumentStatus.ERROR
    assert record.error is not None and "HTTP 503" in record.error and "after 3 attempts" in record.error
    assert result.error == record.error


def test_a_source_that_recovers_within_its_attempts_becomes_ready(
    fresh_postgres_dsn: str, embedder: Embedder, flaky: type[FlakyServer]
) -> None:
    server = flaky([500, 503, 200], b"# Flaky\n\nThe flaky server finally answered with this paragraph.\n")
    kb = open_kb(fresh_postgres_dsn, embedder, allow_private_urls=True, job_retry_delay=0.2)
    [result] = kb.add(server.url)
    assert (result.action, result.status, len(server.times)) == ("added", "ready", 3)
    assert kb.document(server.url).status == DocumentStatus.READY


def test_permanent_failures_are_not_retried(fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("   \n")
    kb = open_kb(fresh_postgres_dsn, embedder, job_retry_delay=30)  # a retry would make this test hang
    [result] = kb.add(str(empty))
    assert (result.action, result.error_code) == ("failed", "empty_document")
    assert kb.document(str(empty)).status == DocumentStatus.ERROR


def test_jobs_carry_their_tenant(fresh_postgres_dsn: str, embedder: Embedder, example_docs: Path) -> None:
    acme = open_kb(fresh_postgres_dsn, embedder, tenant="acme")
    other = open_kb(fresh_postgres_dsn, embedder, tenant="globex")
    [queued] = acme.add(str(example_docs / "onboarding-guide.md"), wait=False)
    with psycopg.connect(fresh_postgres_dsn) as conn:
        tenants = conn.execute("SELECT tenant FROM sourcebook_ingest_jobs").fetchall()
    assert tenants == [("acme",)]
    run_worker(fresh_postgres_dsn, acme.settings, embedder)  # a worker serves every tenant
    assert acme.document(queued.document_id).status == DocumentStatus.READY
    assert acme.search("first week onboarding", top_k=1)
    assert other.documents() == [] and other.search("first week onboarding") == []


def test_cli_add_queues_with_no_wait_then_waits_for_the_jobs(fresh_postgres_dsn: str, example_docs: Path) -> None:
    from typer.testing import CliRunner

    from sourcebook.cli import app

    source = str(example_docs / "meeting-notes-2024-05-14.txt")
    runner = CliRunner()
    queued = runner.invoke(app, ["--db", fresh_postgres_dsn, "add", source, "--no-wait", "--json"])
    assert queued.exit_code == 0, queued.output
    assert [r["action"] for r in json.loads(queued.stdout)["results"]] == ["queued"]
    waited = runner.invoke(app, ["--db", fresh_postgres_dsn, "add", str(example_docs / "product-faq.html")])
    assert waited.exit_code == 0, waited.output
    assert "1 added" in waited.stdout  # the queued job was worked too (no worker was running)
    listed = runner.invoke(app, ["--db", fresh_postgres_dsn, "list", "--json"])
    assert {d["status"] for d in json.loads(listed.stdout)["documents"]} == {"ready"}
