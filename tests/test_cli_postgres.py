"""The CLI on Postgres end to end (`--db postgresql://...`), `migrate`, and `copy` between
SQLite and Postgres in both directions, against the embedded server and the real model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sourcebook import KnowledgeBase
from sourcebook.stores import open_store
from sourcebook.stores.postgres.schema import SCHEMA_VERSION
from tests.test_cli import check_hit, run

QUESTION = "How many days of paid holiday does a full-time employee get?"


@pytest.fixture
def pg(migrated_postgres_dsn: str, example_docs: Path) -> str:
    data = json.loads(run("--db", migrated_postgres_dsn, "add", str(example_docs), "--json"))
    assert data["summary"] == {"added": 9}
    return migrated_postgres_dsn


def test_every_everyday_command_runs_on_postgres(pg: str, example_docs: Path) -> None:
    hits = json.loads(run("--db", pg, "search", "paid holiday", "--json"))["hits"]
    assert hits
    for hit in hits:
        check_hit(hit)
    answer = json.loads(run("--db", pg, "ask", QUESTION, "--json"))
    assert not answer["abstained"] and answer["citations"]
    documents = json.loads(run("--db", pg, "list", "--json"))["documents"]
    assert len(documents) == 9 and {d["status"] for d in documents} == {"ready"}
    shown = json.loads(run("--db", pg, "show", documents[0]["id"], "--json"))
    assert shown["chunks"]
    status = json.loads(run("--db", pg, "status", "--json"))
    assert status["backend"] == "postgres" and status["documents"]["ready"] == 9
    assert json.loads(run("--db", pg, "add", str(example_docs), "--json"))["summary"] == {"unchanged": 9}
    run("--db", pg, "remove", documents[0]["id"])
    assert len(json.loads(run("--db", pg, "list", "--json"))["documents"]) == 8
    assert json.loads(run("--db", pg, "migrate", "--json"))["applied"] == []
    run("--db", pg, "keys", "create", "--tenant", "acme", "--name", "ci")
    assert "acme" in run("--db", pg, "keys", "list")


def test_tenants_on_postgres_through_the_cli(pg: str) -> None:
    assert json.loads(run("--db", pg, "--tenant", "acme", "list", "--json"))["documents"] == []
    assert json.loads(run("--db", pg, "--tenant", "acme", "search", "paid holiday", "--json"))["hits"] == []


def test_migrate_brings_a_new_database_up_to_date(fresh_postgres_dsn: str, tmp_path: Path) -> None:
    applied = json.loads(run("--db", fresh_postgres_dsn, "migrate", "--json"))["applied"]
    assert applied == list(range(1, SCHEMA_VERSION + 1))
    assert json.loads(run("--db", fresh_postgres_dsn, "migrate", "--json"))["applied"] == []
    sqlite = json.loads(run("--db", str(tmp_path / "kb.db"), "migrate", "--json"))
    assert sqlite["schema_version"] >= 4


QUERIES = ["paid holiday days", "travel expenses refund", "security incident report", "remote work"]


def _results(db: str) -> dict[str, list[tuple[str, float]]]:
    with KnowledgeBase.open(db) as kb:
        return {
            f"{mode}:{query}": [(h.chunk.id, round(h.score, 5)) for h in kb.search(query, mode=mode, top_k=10)]
            for mode in ("keyword", "vector", "hybrid") for query in QUERIES
        }


def _window_vectors(db: str) -> dict[tuple[str, str], list[np.ndarray]]:
    """Every document's window vectors, per chunk, of every tenant: what copying must carry."""
    store = open_store(db)
    try:
        return {
            (tenant, record.id): store.for_tenant(tenant).export_chunks(record.id)[2]
            for tenant in store.tenants() for record in store.for_tenant(tenant).list_documents()
        }
    finally:
        store.close()


def _same_windows(a: dict[tuple[str, str], list[np.ndarray]], b: dict[tuple[str, str], list[np.ndarray]]) -> bool:
    return a.keys() == b.keys() and all(
        len(a[key]) == len(b[key]) and all(x.shape == y.shape and np.allclose(x, y) for x, y in zip(a[key], b[key]))
        for key in a
    )


@pytest.mark.slow
def test_copy_round_trip_sqlite_postgres_sqlite_keeps_search_results(
    tmp_path: Path, example_docs: Path, fresh_postgres_dsn: str
) -> None:
    original = str(tmp_path / "original.db")
    run("--db", original, "add", str(example_docs))
    run("--db", original, "--tenant", "acme", "add", str(example_docs / "employee-handbook.md"))
    with KnowledgeBase.open(original) as kb:
        kb.chat("s1").ask(QUESTION)
        failed = kb.documents()[0]
    with open_store(original) as store:  # a failed re-index, as only a crashed ingestion leaves it
        store.set_status(failed.id, "error", "re-index failed")  # type: ignore[arg-type]

    first = json.loads(run("copy", original, fresh_postgres_dsn, "--json"))
    assert first["tenants"] == ["acme", "default"] and first["documents_copied"] == 10
    assert first["chat_sessions_copied"] == 1
    again = json.loads(run("copy", original, fresh_postgres_dsn, "--json"))
    assert (again["documents_copied"], again["documents_unchanged"], again["chat_sessions_copied"]) == (0, 10, 0)

    back = str(tmp_path / "back.db")
    run("copy", fresh_postgres_dsn, back)
    assert _results(back) == _results(original)
    windows = _window_vectors(original)
    assert sum(len(w) for chunks in windows.values() for w in chunks) > 0  # ingest made sentence windows
    assert _same_windows(_window_vectors(fresh_postgres_dsn), windows)
    assert _same_windows(_window_vectors(back), windows)
    with KnowledgeBase.open(original) as a, KnowledgeBase.open(back) as b:
        strip = lambda d: {k: v for k, v in d.to_dict().items() if k not in ("created_at", "updated_at")}  # noqa: E731
        assert [strip(d) for d in a.documents()] == [strip(d) for d in b.documents()]
        assert [(m.role, m.content) for m in a.chat("s1").messages()] == [
            (m.role, m.content) for m in b.chat("s1").messages()]
        assert [strip(d) for d in a.for_tenant("acme").documents()] == [
            strip(d) for d in b.for_tenant("acme").documents()]
    only_acme = json.loads(run("copy", original, str(tmp_path / "acme.db"), "--tenant", "acme", "--json"))
    assert only_acme["tenants"] == ["acme"] and only_acme["documents_copied"] == 1


def test_postgres_start_prints_a_working_dsn_and_stop_stops_it(tmp_path: Path) -> None:
    directory = tmp_path / "pg"
    dsn = json.loads(run("postgres", "start", str(directory), "--json"))["dsn"]
    try:
        assert json.loads(run("--db", dsn, "migrate", "--json"))["applied"] == list(range(1, SCHEMA_VERSION + 1))
        assert json.loads(run("postgres", "start", str(directory), "--json"))["dsn"] == dsn  # already running
    finally:
        assert "stopped" in run("postgres", "stop", str(directory))
    assert "no server was running" in run("postgres", "stop", str(directory))
