"""Fairness and cancellation of the Postgres queue, on a real embedded PostgreSQL and real
procrastinate workers (in threads of the test process, sharing its model)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from sourcebook import KnowledgeBase
from sourcebook.embedders.base import Embedder
from sourcebook.jobs.worker import IngestWorker
from sourcebook.settings import Settings
from sourcebook.stores.postgres import PostgresStore
from sourcebook.stores import open_store
from sourcebook.wiring import Components

from .gated import SMALL, GatedEmbedder, big_markdown
from .test_fairness import deleted_just_before
from .test_queue import embedder, open_kb, run_worker  # noqa: F401 (the module-scoped model fixture)

WAIT = 120.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def worker_thread(dsn: str, embedder: Embedder, workers: int) -> threading.Thread:
    """`sourcebook worker --until-idle --concurrency N` in a thread, with the test's model."""

    def work() -> None:
        parts = Components(open_store(dsn), Settings(db=dsn), embedder)
        worker = IngestWorker(parts, concurrency=workers)
        try:
            worker.run_until_idle()
        finally:
            worker.close()
            parts.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def add_file(kb: KnowledgeBase, folder: Path, name: str, data: bytes) -> str:
    path = folder / kb.tenant / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    [queued] = kb.add(str(path), wait=False)
    assert queued.document_id is not None
    return queued.document_id


def test_another_tenants_first_job_runs_before_a_tenants_backlog(fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path) -> None:  # noqa: F811
    acme, globex = open_kb(fresh_postgres_dsn, embedder, "acme"), open_kb(fresh_postgres_dsn, embedder, "globex")
    backlog = [add_file(acme, tmp_path, f"note-{n}.md", SMALL.replace(b"lentil", f"soup {n}".encode())) for n in range(4)]
    mine = add_file(globex, tmp_path, "lunch.md", SMALL)
    run_worker(fresh_postgres_dsn, Settings(db=fresh_postgres_dsn), embedder)  # one job at a time: the order is the queue's
    with psycopg.connect(fresh_postgres_dsn) as conn:
        order = [row[0] for row in conn.execute("SELECT document_id FROM sourcebook_ingest_jobs ORDER BY finished_at")]
    assert order[:2] == [backlog[0], mine]  # globex's first job ranks with acme's first, not behind its fourth
    assert {d.status for d in acme.documents()} == {"ready"} and globex.document(mine).status == "ready"


def test_a_small_job_finishes_while_another_tenants_large_one_is_still_running(
    fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path,  # noqa: F811
) -> None:
    gated = GatedEmbedder(embedder)
    acme, globex = open_kb(fresh_postgres_dsn, gated, "acme"), open_kb(fresh_postgres_dsn, gated, "globex")
    big = add_file(acme, tmp_path, "ledger.md", big_markdown(20))
    small = add_file(globex, tmp_path, "lunch.md", SMALL)
    thread = worker_thread(fresh_postgres_dsn, gated, workers=2)
    try:
        assert gated.entered.wait(WAIT), "acme's large job never started embedding"
        wait_for(lambda: globex.document(small).status == "ready", "globex's small job")
        assert acme.document(big).status == "processing"  # still held by the gate
    finally:
        gated.release.set()
        thread.join(WAIT)
    assert acme.document(big).status == "ready"


def test_deleting_a_running_document_cancels_its_job_and_leaves_no_chunks(
    fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path,  # noqa: F811
) -> None:
    gated = GatedEmbedder(embedder)
    acme = open_kb(fresh_postgres_dsn, gated, "acme")
    doc_id = add_file(acme, tmp_path, "ledger.md", big_markdown(40))
    thread = worker_thread(fresh_postgres_dsn, gated, workers=1)
    try:
        assert gated.entered.wait(WAIT)
        acme.remove(doc_id)  # while its first slice is embedding
    finally:
        gated.release.set()
        thread.join(WAIT)
    assert not thread.is_alive()
    with psycopg.connect(fresh_postgres_dsn) as conn:
        [(result,)] = conn.execute("SELECT result FROM sourcebook_ingest_jobs WHERE document_id = %s", (doc_id,)).fetchall()
        chunks = conn.execute("SELECT count(*) FROM chunks WHERE document_id = %s", (doc_id,)).fetchone()
    assert (result["action"], result["error"]) == ("cancelled", None)
    assert gated.marked_batches == 1
    assert acme.documents() == [] and chunks == (0,)


def test_a_delete_landing_just_before_the_job_records_its_document_is_not_undone(
    fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    """The race of test_fairness's test of the same name, on the Postgres queue's worker."""
    acme = open_kb(fresh_postgres_dsn, embedder, "acme")
    doc_id = add_file(acme, tmp_path, "lunch.md", SMALL)
    monkeypatch.setattr(PostgresStore, "upsert_document", deleted_just_before(PostgresStore.upsert_document, monkeypatch))
    run_worker(fresh_postgres_dsn, Settings(db=fresh_postgres_dsn), embedder)
    with psycopg.connect(fresh_postgres_dsn) as conn:
        [(result,)] = conn.execute("SELECT result FROM sourcebook_ingest_jobs WHERE document_id = %s", (doc_id,)).fetchall()
    assert result["action"] == "cancelled"
    assert acme.documents() == []


def test_a_queued_job_whose_document_was_deleted_is_cancelled_not_recreated(
    fresh_postgres_dsn: str, embedder: Embedder, tmp_path: Path,  # noqa: F811
) -> None:
    acme = open_kb(fresh_postgres_dsn, embedder, "acme")
    doc_id = add_file(acme, tmp_path, "lunch.md", SMALL)
    acme.remove(doc_id)
    run_worker(fresh_postgres_dsn, Settings(db=fresh_postgres_dsn), embedder)
    with psycopg.connect(fresh_postgres_dsn) as conn:
        [(result,)] = conn.execute("SELECT result FROM sourcebook_ingest_jobs WHERE document_id = %s", (doc_id,)).fetchall()
    assert result["action"] == "cancelled"
    assert acme.documents() == []
