"""Shared fixtures: the example corpus and knowledge bases built from it.

Everything is real: a SQLite file in a temp dir and the bundled MiniLM model
(loaded once per test process and cached by `create_embedder`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from sourcebook import KnowledgeBase
from sourcebook.stores.postgres.embedded import EmbeddedPostgres

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="session")
def example_docs() -> Path:
    return EXAMPLES / "docs"


@pytest.fixture(scope="session")
def example_kb(tmp_path_factory: pytest.TempPathFactory, example_docs: Path) -> Iterator[KnowledgeBase]:
    """A read-only knowledge base of the example corpus, built once per session."""
    db = tmp_path_factory.mktemp("example") / "kb.db"
    with KnowledgeBase.open(db) as kb:
        results = kb.add(str(example_docs))
        assert all(r.action == "added" for r in results), results
        yield kb


@pytest.fixture
def docs_copy(tmp_path: Path, example_docs: Path) -> Path:
    """A private, writable copy of the example documents."""
    target = tmp_path / "docs"
    shutil.copytree(example_docs, target)
    return target


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "kb.db") as knowledge_base:
        yield knowledge_base


# PostgreSQL: one embedded server per test session (started only if a test asks for it),
# a fresh database per test, so tests never see each other's rows.
@pytest.fixture(scope="session")
def embedded_postgres() -> Iterator[EmbeddedPostgres]:
    """Not under pytest's tmp_path: pytest prunes old basetemp dirs of *other* concurrent runs
    by the same user, which would pull the data directory from under a running server."""
    directory = Path(tempfile.mkdtemp(prefix="sourcebook-pg-"))
    server = EmbeddedPostgres.start(directory / "data", delete_on_stop=True, durable=False)
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_dsn(embedded_postgres: EmbeddedPostgres) -> str:
    """Superuser DSN of the session's server (its maintenance database: create, never fill)."""
    return embedded_postgres.dsn


@pytest.fixture
def fresh_postgres_dsn(embedded_postgres: EmbeddedPostgres) -> Iterator[str]:
    """A new empty database with pgvector installed, dropped after the test."""
    dsn = embedded_postgres.create_database()
    yield dsn
    embedded_postgres.drop_database(conninfo_to_dict(dsn)["dbname"])


OWNER_ROLE = "sourcebook_owner_test"


@pytest.fixture
def owned_database(embedded_postgres: EmbeddedPostgres) -> Iterator[tuple[str, str]]:
    """A new database owned, with its public schema, by a non-superuser login role: the
    deployment where the application logs in as the schema's owner, whom FORCE ROW LEVEL
    SECURITY binds. Yields (the owner's DSN, the superuser's DSN); dropped after the test."""
    with psycopg.connect(embedded_postgres.dsn, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {OWNER_ROLE}")
        conn.execute(f"CREATE ROLE {OWNER_ROLE} LOGIN")
    admin_dsn = embedded_postgres.create_database()
    name = conninfo_to_dict(admin_dsn)["dbname"]
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} OWNER TO {OWNER_ROLE}")
        conn.execute(f"ALTER SCHEMA public OWNER TO {OWNER_ROLE}")
    yield embedded_postgres.database_dsn(name, user=OWNER_ROLE), admin_dsn
    embedded_postgres.drop_database(name)


@pytest.fixture(scope="session")
def _migrated_postgres_template(embedded_postgres: EmbeddedPostgres) -> str:
    """A database with Sourcebook's schema, copied by `migrated_postgres_dsn` (faster than migrating)."""
    from sourcebook.stores.postgres import PostgresStore

    dsn = embedded_postgres.create_database("sourcebook_template")
    PostgresStore(dsn).close()
    return "sourcebook_template"


@pytest.fixture
def migrated_postgres_dsn(embedded_postgres: EmbeddedPostgres, _migrated_postgres_template: str) -> Iterator[str]:
    """A new database holding Sourcebook's schema and no rows, dropped after the test."""
    dsn = embedded_postgres.create_database(template=_migrated_postgres_template)
    yield dsn
    embedded_postgres.drop_database(conninfo_to_dict(dsn)["dbname"])
