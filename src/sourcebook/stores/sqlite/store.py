"""The embedded store: one SQLite file holds documents, chunks, vectors and the keyword index.

Design choices, and why (each role's own are in its module: schema.py, documents.py,
vectors.py, keywords.py, graph.py, keys.py; the SQL both stores share is in stores/sql/):

* One writing connection per file, opened with ``check_same_thread=False`` and guarded by a
  lock, so the HTTP server's threads can share it, and reading connections of their own for
  read transactions (`_Database`), so concurrent searches do not queue at that lock; WAL mode
  so readers (and other processes: a CLI run next to a server) read while one writes.
* Every write is one ``BEGIN IMMEDIATE`` transaction: readers see the old chunks or the
  new ones, never a mix, and a failure rolls back to the old state.
* Searches do not filter on document status: chunks exist only once a document was
  ready, and `DocumentStore.upsert_document` promises that a document being re-processed
  (or whose re-processing failed) stays searchable with its old chunks.
* A store is one tenant's view; `for_tenant` gives another tenant's over the same
  connection, each view with its own in-memory indexes (vectors.py, keywords.py).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Self

from ...errors import StoreError
from ...index.keywords import KeywordIndex
from ...index.vector_index import TenantVectors
from ...tenants import DEFAULT_TENANT, check_tenant
from ..sql.caches import SqlContextCache, drop_unused_caches
from ..sql.chat import SqlChat
from ..sql.summaries import SqlSummaryCache
from ..sql.usage import SqlUsage
from ..sql.dialect import SQLITE, Dialect, Sql
from ..sql.graph_read import graph_counts
from ..sql.migrations import MigrationReport
from .changes import clear_deletion_log
from .documents import SQLiteDocuments
from .graph import SQLiteGraph
from .keys import SQLiteKeyStore
from .keywords import SQLiteKeywords
from .schema import SCHEMA_VERSION, bump_generation, connect, generation
from .terms import drop_unused_terms
from .vectors import SQLiteVectors


class _Database:
    """The writing connection and its lock, and idle reading connections, shared by the store's
    views of every tenant.

    Reads do not take the lock: each read transaction runs on a connection of its own from
    `idle_readers` (opened on demand, one per concurrent reader), so under 20 concurrent searches
    the threads no longer queue at one lock for every SELECT (27% of the server's thread samples
    waited there) and SQLite's C code of one read runs beside another thread's Python. WAL gives
    each its own snapshot. An in-memory database has only its one connection: reads take the lock.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None
        self.conn, self.migration = connect(path)
        self.views: dict[str, SQLiteStore] = {}
        self.views_lock = threading.Lock()  # guards views: finding a tenant's view never waits for a write
        self.idle_readers: list[sqlite3.Connection] = []
        self.readers_lock = threading.Lock()  # guards idle_readers

    def take_reader(self) -> sqlite3.Connection:
        with self.readers_lock:
            if self.conn is None:
                raise StoreError(f"the store {self.path} is closed; open it again")
            if self.idle_readers:
                return self.idle_readers.pop()
        try:
            reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            reader.execute("PRAGMA busy_timeout = 5000")
            reader.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.path} for reading: {exc}") from exc
        return reader

    def give_back(self, reader: sqlite3.Connection) -> None:
        with self.readers_lock:
            if self.conn is not None:
                self.idle_readers.append(reader)
                return
        reader.close()

    def close_readers(self) -> None:
        with self.readers_lock:
            readers, self.idle_readers = self.idle_readers, []
        for reader in readers:
            reader.close()


class SQLiteStore(SQLiteDocuments, SQLiteVectors, SQLiteKeywords, SqlChat, SqlContextCache, SqlSummaryCache, SqlUsage, SQLiteGraph):
    """The `Store` protocol on one SQLite file (see the module docstring for the design).

    A store is scoped to one tenant: every statement it runs names `self.tenant`, and its
    in-memory indexes hold only that tenant's chunks. `for_tenant` gives the view of
    another tenant over the same connection.
    """

    dialect: ClassVar[Dialect] = SQLITE
    concurrent_searches: bool = False
    """Searched one after the other (`SearchStore.concurrent_searches`): its searches are thread-safe
    and give the same hits overlapped, but they run in this process and mostly hold the GIL (CPU
    time equals wall time). Side by side at 100k chunks, overlapping was 1-12% faster only at
    load 12-16 on 2 cores, where a second runnable thread buys a larger share of the CPU, and
    no faster at load 3 (paired ratios 0.99-1.02) for more CPU (README, "Overlapped keyword and
    vector retrieval")."""

    def __init__(self, path: str | Path, tenant: str = DEFAULT_TENANT) -> None:
        """Open (creating and migrating if needed) the database at `path`, scoped to `tenant`."""
        check_tenant(tenant)
        self._attach(_Database(str(path)), tenant)

    def _attach(self, database: _Database, tenant: str) -> None:
        self._db = database
        self.tenant = tenant
        self._index: TenantVectors | None = None
        self._keywords: KeywordIndex | None = None
        # Catching an index up mutates it: one search at a time per index, each taking the lock
        # before its read transaction begins, so the snapshots an index catches up to only move on.
        self._vector_lock = threading.Lock()
        self._keyword_lock = threading.Lock()
        database.views[tenant] = self

    def for_tenant(self, tenant: str) -> SQLiteStore:
        """The same database scoped to `tenant`; views are cached, so their indexes are reused."""
        check_tenant(tenant)
        with self._db.views_lock:
            view = self._db.views.get(tenant)
            if view is None:
                view = object.__new__(SQLiteStore)
                view._attach(self._db, tenant)
        return view

    @property
    def path(self) -> str:
        return self._db.path

    @property
    def migration(self) -> MigrationReport:
        """The migrations opening the file applied (as `PostgresStore.migration`)."""
        return self._db.migration

    def api_keys(self) -> SQLiteKeyStore:
        """The API keys in this file, on a connection of their own (keys.py says why)."""
        return SQLiteKeyStore(self.path)

    # Connection and transactions ------------------------------------------
    def close(self) -> None:
        """Close the database: every tenant's view of it."""
        with self._db.lock:
            if self._db.conn is not None:
                self._db.conn.close()
            with self._db.readers_lock:
                self._db.conn = None
            self._db.close_readers()
            with self._db.views_lock:
                views = list(self._db.views.values())
            for view in views:
                if view._index is not None:
                    view._index.close()
                view._index = None
                view._keywords = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        """Run the block in one transaction under the lock; sqlite errors become StoreError."""
        with self._db.lock:
            if self._db.conn is None:
                raise StoreError(f"the store {self.path} is closed; open it again")
            conn = self._db.conn
            try:
                conn.execute(begin)
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path}: {exc}") from exc
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read transaction: several SELECTs see one consistent snapshot (on a reading
        connection of its own, see `_Database`; under the lock for an in-memory database)."""
        if self.path == ":memory:":
            return self._transaction("BEGIN")
        return self._reading_transaction()

    @contextmanager
    def _reading_transaction(self) -> Iterator[sqlite3.Connection]:
        reader = self._db.take_reader()
        try:
            reader.execute("BEGIN")
            yield reader
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {self.path}: {exc}") from exc
        finally:
            try:
                if reader.in_transaction:
                    reader.execute("ROLLBACK")
            finally:
                self._db.give_back(reader)

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction, taking the write lock up front so it cannot fail halfway on BUSY."""
        return self._transaction("BEGIN IMMEDIATE")

    # Search generation --------------------------------------------------
    def search_generation(self) -> int:
        """See `SearchStore.search_generation`: the file's generation (schema.py), which every
        write of any tenant moves on, so it also tells the in-memory indexes to catch up."""
        with self._read() as conn:
            return generation(conn)

    def _searches_changed(self, sql: Sql) -> None:
        bump_generation(sql.conn)

    # Housekeeping --------------------------------------------------------
    def tenants(self) -> list[str]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT tenant FROM collections UNION SELECT tenant FROM chat_sessions "
                "UNION SELECT tenant FROM chunk_contexts ORDER BY 1"
            ).fetchall()
        return [row[0] for row in rows]

    def stats(self) -> dict[str, Any]:
        with self._read() as conn:
            by_status = self._status_counts(Sql(conn, SQLITE))
            chunks, vectors, windows = conn.execute(
                """SELECT count(c.seq), count(v.chunk_seq), coalesce(sum(length(v.windows) / length(v.vector)), 0) FROM chunks c
                   JOIN documents d ON d.id = c.document_id LEFT JOIN vectors v ON v.chunk_seq = c.seq
                   WHERE d.tenant = ?""",
                (self.tenant,),
            ).fetchone()
            graph = graph_counts(Sql(conn, SQLITE), self.tenant)
        return {
            "backend": "sqlite",
            "tenant": self.tenant,
            "path": self.path,
            "size_bytes": _file_size(self.path),
            "schema_version": SCHEMA_VERSION,
            "documents": by_status,
            "chunks": chunks,
            "vectors": vectors,
            "window_vectors": windows,
            "graph": graph,
            "collections": [asdict(info) for info in self.collections()],
        }

    def compact(self) -> dict[str, int]:
        """See `Store.compact`: the tenant's unused cache rows, the file's unused terms and its
        chunk-deletion log (changes.py: indexes older than that rebuild once), then VACUUM (and a WAL checkpoint) so the file shrinks by what deletions freed."""
        before = _file_size(self.path)
        with self._write() as conn:
            dropped = drop_unused_caches(Sql(conn, SQLITE), self.tenant)
            dropped["terms"] = drop_unused_terms(conn)
            clear_deletion_log(conn)
            bump_generation(conn)
        with self._db.lock:
            if self._db.conn is None:
                raise StoreError(f"the store {self.path} is closed; open it again")
            try:
                self._db.conn.execute("VACUUM")
                self._db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path}: VACUUM failed: {exc}") from exc
        return {**dropped, "size_bytes_before": before, "size_bytes_after": _file_size(self.path)}


def _file_size(path: str) -> int:
    """Bytes on disk, the WAL included (it can hold recent writes not yet checkpointed)."""
    files = (Path(path), Path(path + "-wal"))
    return sum(f.stat().st_size for f in files if f.is_file())
