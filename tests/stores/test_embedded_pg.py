"""The embedded PostgreSQL server the Postgres tests (and users trying it out) run on."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from sourcebook.errors import ConfigurationError
from sourcebook.stores.postgres.embedded import EmbeddedPostgres, stop_directory


def test_fresh_databases_are_separate_and_have_pgvector(embedded_postgres: EmbeddedPostgres) -> None:
    first, second = embedded_postgres.create_database(), embedded_postgres.create_database()
    with psycopg.connect(first, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (v vector(3))")
        conn.execute("INSERT INTO t VALUES ('[1,2,3]')")
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0] >= "0.8"
    with psycopg.connect(second) as conn:
        assert conn.execute("SELECT to_regclass('t')").fetchone()[0] is None
    copy = embedded_postgres.create_database(template=conninfo_to_dict(first)["dbname"])
    with psycopg.connect(copy) as conn:
        assert conn.execute("SELECT v::text FROM t").fetchone()[0] == "[1,2,3]"


def test_fixture_database_is_empty(fresh_postgres_dsn: str) -> None:
    with psycopg.connect(fresh_postgres_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


def test_bad_database_names_are_refused(embedded_postgres: EmbeddedPostgres) -> None:
    with pytest.raises(ConfigurationError, match="database name"):
        embedded_postgres.create_database("x; DROP DATABASE postgres")


def test_a_kept_server_is_stopped_by_directory(tmp_path: Path) -> None:
    directory = tmp_path / "kept"
    server = EmbeddedPostgres.start(directory, keep_running=True)
    with psycopg.connect(server.dsn) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert stop_directory(directory) is True
    assert stop_directory(directory) is False
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.dsn, connect_timeout=2)
