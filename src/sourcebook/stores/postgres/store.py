"""The server store: PostgreSQL + pgvector behind the `Store` protocol, for a team.

Design choices, and why (each role's own are in its module: schema.py, documents.py,
vectors.py, keywords.py, graph.py, keys.py; the SQL both stores share is in stores/sql/):

* One `psycopg_pool.ConnectionPool` per database, shared by every tenant's view of it
  (`for_tenant`). Connections are autocommit; every method runs one explicit
  transaction that first sets ``sourcebook.tenant`` (and ``hnsw.iterative_scan``) with
  ``set_config(..., true)``, so the settings die with the transaction and a pooled
  connection never carries one tenant's scope into another's work.
* Tenant isolation is row-level security, not WHERE clauses: the Postgres-only queries
  name no tenant, and the SQL shared with SQLite (stores/sql/), which does, is checked by
  the same policies. Reads are pipelined (the settings and the query go in one round trip).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from typing import Any, ClassVar, Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from ...errors import ConfigurationError, StoreError
from ...tenants import DEFAULT_TENANT, check_tenant
from ..sql.caches import SqlContextCache, drop_unused_caches
from ..sql.chat import SqlChat
from ..sql.summaries import SqlSummaryCache
from ..sql.usage import SqlUsage
from ..sql.dialect import POSTGRES, Dialect, Sql
from ..sql.graph_read import graph_counts
from ..sql.migrations import MigrationReport
from .documents import STAGING_TABLES, PostgresDocuments
from .graph import PostgresGraph
from .keys import PostgresKeyStore
from .keyword_stats import fold
from .keywords import PostgresKeywords
from .schema import TENANT_SETTING, migrate, restricted_role, schema_version
from .vectors import HnswSettings, PostgresVectors, indexed_dimensions

_SCOPE = (
    f"SELECT set_config('{TENANT_SETTING}', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)"
)


class PostgresStore(PostgresDocuments, PostgresVectors, PostgresKeywords, SqlChat, SqlContextCache, SqlSummaryCache, SqlUsage, PostgresGraph):
    """The `Store` protocol on a PostgreSQL database with pgvector (see the module docstring)."""

    dialect: ClassVar[Dialect] = POSTGRES
    concurrent_searches: bool = True
    """A hybrid search's keyword and vector searches overlap (`SearchStore.concurrent_searches`):
    each is a round trip on its own pooled connection, served by its own server process."""

    def __init__(
        self,
        dsn: str,
        *,
        tenant: str = DEFAULT_TENANT,
        hnsw: HnswSettings | None = None,
        pool_size: int = 10,
    ) -> None:
        """Connect, migrate the schema if needed, and open the pool."""
        self.dsn = dsn
        self.tenant = check_tenant(tenant)
        self.hnsw = hnsw or HnswSettings()
        self._where = _redacted(dsn)
        self._indexed_dimensions: set[int] = set()
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                self.migration: MigrationReport = migrate(conn, self._where)
                self._role = restricted_role(conn)
                self._indexed_dimensions.update(indexed_dimensions(conn))
            self._pool = ConnectionPool(
                dsn, min_size=1, max_size=pool_size, kwargs={"autocommit": True},
                configure=self._configure, open=True, name=f"sourcebook {self._where}",
            )
        except psycopg.Error as exc:
            raise StoreError(f"cannot open Postgres store {self._where}: {exc}") from exc

    def _configure(self, conn: psycopg.Connection) -> None:
        register_vector(conn)
        conn.execute("SET TimeZone = 'UTC'")
        if self._role is not None:
            conn.execute(f'SET ROLE "{self._role}"')
        # COPY cannot write a table under row-level security: chunks are COPYed here, then
        # moved with one INSERT ... SELECT (which the policies check).
        for statement in STAGING_TABLES:
            conn.execute(statement)

    def for_tenant(self, tenant: str) -> PostgresStore:
        """The same database (and pool) scoped to `tenant`."""
        scoped = copy.copy(self)
        scoped.tenant = check_tenant(tenant)
        return scoped

    def close(self) -> None:
        """Close the pool: every tenant's view of the database."""
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def transaction(self, *, pipeline: bool = False) -> Iterator[psycopg.Connection]:
        """A pooled connection inside one transaction scoped to this store's tenant.

        Row-level security limits every statement run on it to the tenant's rows, also
        hand-written SQL (tools, tests). `pipeline` sends statements without waiting
        for each reply: the scope and a read go to the server in one round trip.
        """
        try:
            with self._pool.connection() as conn:
                if pipeline:
                    with conn.pipeline(), conn.transaction():
                        conn.execute(_SCOPE, (self.tenant,))
                        yield conn
                else:
                    with conn.transaction():
                        conn.execute(_SCOPE, (self.tenant,))
                        yield conn
        except psycopg.Error as exc:
            raise StoreError(f"Postgres store {self._where}: {exc}") from exc

    @contextmanager
    def unscoped_transaction(self) -> Iterator[psycopg.Connection]:
        """A pooled connection in a transaction with no tenant set: it sees no tenant's rows,
        only the global tables (API keys, which say what tenant a request is)."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"Postgres store {self._where}: {exc}") from exc

    def _read(self) -> AbstractContextManager[psycopg.Connection]:
        """A read: the scope and the statements pipelined (one round trip for a single query)."""
        return self.transaction(pipeline=True)

    def _write(self) -> AbstractContextManager[psycopg.Connection]:
        return self.transaction()

    def search_generation(self) -> int:
        """See `SearchStore.search_generation`: the tenant's row of ``search_generations``, moved
        on in the transaction of each write, so it commits (and is seen) with what it announces."""
        with self._read() as conn:
            row = conn.execute("SELECT value FROM search_generations WHERE tenant = %s", (self.tenant,)).fetchone()
        return int(row[0]) if row else 0

    def _searches_changed(self, sql: Sql) -> None:
        """Also where the keyword statistics' counter rows are folded (keyword_stats.py)."""
        fold(sql.conn)
        sql.conn.execute(
            """INSERT INTO search_generations (value) VALUES (1)
               ON CONFLICT (tenant) DO UPDATE SET value = search_generations.value + 1"""
        )

    def api_keys(self) -> PostgresKeyStore:
        """The API keys in this database, on the store's pool (keys.py)."""
        return PostgresKeyStore(self)


    def tenants(self) -> list[str]:
        """Read on the login role's own connection: the RLS role sees one tenant only."""
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                bypasses = conn.execute(
                    "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
                ).fetchone()[0]  # type: ignore[index]
                if not bypasses:
                    raise StoreError(
                        f"listing every tenant of {self._where} needs a superuser or BYPASSRLS role "
                        f"(row-level security hides the others); name the tenant instead"
                    )
                rows = conn.execute(
                    "SELECT tenant FROM collections UNION SELECT tenant FROM chat_sessions "
                    "UNION SELECT tenant FROM chunk_contexts ORDER BY 1"
                ).fetchall()
        except psycopg.Error as exc:
            raise StoreError(f"Postgres store {self._where}: {exc}") from exc
        return [row[0] for row in rows]


    # Housekeeping --------------------------------------------------------
    # Housekeeping --------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self._read() as conn:
            by_status = self._status_counts(Sql(conn, POSTGRES))
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
            windows = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]  # type: ignore[index]
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
            version = schema_version(conn)
            graph = graph_counts(Sql(conn, POSTGRES), self.tenant)
        return {
            "backend": "postgres",
            "path": self._where,
            "tenant": self.tenant,
            "size_bytes": int(size),
            "schema_version": version,
            "documents": by_status,
            "chunks": chunks,
            "vectors": chunks,
            "window_vectors": windows,
            "graph": graph,
            "collections": [asdict(info) for info in self.collections()],
        }

    def compact(self) -> dict[str, int]:
        """See `Store.compact`: the tenant's unused cache rows. Postgres keeps no vocabulary
        table (postings go with their chunk by ON DELETE CASCADE), and autovacuum reclaims
        the space of deleted rows, so nothing else is needed here."""
        with self._read() as conn:
            before = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        with self._write() as conn:
            dropped = drop_unused_caches(Sql(conn, POSTGRES), self.tenant)
        with self._read() as conn:
            after = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        return {**dropped, "terms": 0, "size_bytes_before": int(before), "size_bytes_after": int(after)}


def open_postgres(url: str, tenant: str = DEFAULT_TENANT) -> PostgresStore:
    """`open_store`'s factory: a DSN whose query may also carry the store's own settings
    (``hnsw_m``, ``hnsw_ef_construction``, ``hnsw_ef_search``, ``pool_size``), which are
    taken out before the DSN reaches libpq."""
    parts = urlsplit(url)
    own = {"hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "pool_size"}
    query = parse_qsl(parts.query, keep_blank_values=True)
    settings = {key: value for key, value in query if key in own}
    try:
        numbers = {key: int(value) for key, value in settings.items()}
    except ValueError as exc:
        raise ConfigurationError(f"{sorted(settings)} in the Postgres URL must be integers: {exc}") from exc
    if any(value < 1 for value in numbers.values()):
        raise ConfigurationError(f"{sorted(settings)} in the Postgres URL must be positive")
    dsn = urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in query if k not in own])))
    defaults = HnswSettings()
    hnsw = HnswSettings(
        m=numbers.get("hnsw_m", defaults.m),
        ef_construction=numbers.get("hnsw_ef_construction", defaults.ef_construction),
        ef_search=numbers.get("hnsw_ef_search"),
    )
    return PostgresStore(dsn, tenant=tenant, hnsw=hnsw, pool_size=numbers.get("pool_size", 10))


def _redacted(dsn: str) -> str:
    """The DSN without its password, for messages and stats."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
