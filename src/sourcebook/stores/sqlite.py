"""The embedded store: one SQLite file holds documents, chunks, vectors and the keyword index.

Design choices, and why:

* One connection per store, opened with ``check_same_thread=False`` and guarded by a
  lock, so the HTTP server's threads can share it; WAL mode so other processes (a CLI
  run next to a server) read while one writes.
* Every write is one ``BEGIN IMMEDIATE`` transaction: readers see the old chunks or the
  new ones, never a mix, and a failure rolls back to the old state.
* ``chunks`` has an INTEGER PRIMARY KEY ``seq`` besides its text ``id``
  (``"<document_id>#<position>"``): vectors and term counts are keyed by it, and a
  declared integer key survives VACUUM (an implicit rowid may not). AUTOINCREMENT keeps
  a deleted chunk's ``seq`` from ever being reused.
* Vectors live in their own table keyed by ``seq``: loading the in-memory search matrix
  reads one compact table of blobs, and a vector can be rewritten (re-embedding) without
  touching the chunk row.
* Keyword search: each chunk's analysed term counts (title, heading path and text) are
  stored in ``chunk_terms`` in the chunk's own transaction, and searched from an
  in-memory inverted index (stores/keyword_index.py, which says why not FTS5).
* Searches do not filter on document status: chunks exist only once a document was
  ready, and `Store.upsert_document` promises that a document being re-processed (or
  whose re-processing failed) stays searchable with its old chunks.
* Vector search is exact, with numpy over a matrix cached in memory. A ``generation``
  counter in ``meta``, bumped by every transaction that changes chunks, tells both
  in-memory indexes (cheaply, one SELECT per search) when to reload, also after another
  process's writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

from ..errors import InvalidQueryError, StoreError
from ..graph.models import DocumentGraph, EntityRecord, RelationRecord
from ..models import (
    Chunk,
    DocumentRecord,
    DocumentStatus,
    ScoredId,
    SearchFilter,
    StoredChunk,
)
from ..tenants import DEFAULT_TENANT, check_tenant
from . import graph_sql, sqlite_graph
from .base import ChatMessageRecord, ChatSessionRecord, CollectionInfo
from .common import check_chunks_and_vectors as _check_chunks_and_vectors
from .common import check_windows
from .common import check_k as _check_k
from .common import check_vector_dimension, chunk_id, collection_not_found, missing_collection, model_mismatch
from .common import query_dimension_mismatch
from .common import indexed_text as _indexed_text
from .common import no_session as _no_session
from .common import not_found as _not_found
from .common import now as _now
from .common import session_taken, source_taken
from .common import unit_query as _unit_query
from .keyword_index import KeywordIndex, term_counts

APPLICATION_ID = 0x53424F4B  # "SBOK": marks a file as a Sourcebook database
BATCH_SIZE = 500  # parameters per IN (...) query, well under SQLite's limit

_V3_DOCUMENT_COLUMNS = (
    "id, collection, source, title, media_type, status, error, chunk_count, content_hash, "
    "metadata, created_at, updated_at"
)

# A step is SQL, or a function for what SQL alone cannot do (backfilling derived rows).
MIGRATIONS: tuple[tuple[str | Callable[[sqlite3.Connection], None], ...], ...] = (
    # 1: initial schema
    (
        f"PRAGMA application_id = {APPLICATION_ID}",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT INTO meta (key, value) VALUES ('generation', 0)",
        """CREATE TABLE collections (
            name TEXT PRIMARY KEY,
            embedding_model TEXT NOT NULL,
            dimension INTEGER NOT NULL CHECK (dimension > 0),
            created_at TEXT NOT NULL)""",
        """CREATE TABLE documents (
            id TEXT PRIMARY KEY,
            collection TEXT NOT NULL REFERENCES collections (name),
            source TEXT NOT NULL,
            title TEXT NOT NULL,
            media_type TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'ready', 'error')),
            error TEXT,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            content_hash TEXT,
            keyword_title TEXT NOT NULL DEFAULT '',
            metadata TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (collection, source))""",
        "CREATE INDEX documents_status ON documents (status)",
        """CREATE TABLE chunks (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            text TEXT NOT NULL,
            prefix TEXT NOT NULL,
            heading_path TEXT NOT NULL,
            page INTEGER,
            token_count INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            start INTEGER NOT NULL,
            "end" INTEGER NOT NULL,
            UNIQUE (document_id, position))""",
        "CREATE INDEX chunks_content_hash ON chunks (content_hash)",
        """CREATE TABLE vectors (
            chunk_seq INTEGER PRIMARY KEY REFERENCES chunks (seq) ON DELETE CASCADE,
            vector BLOB NOT NULL)""",
        """CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            title, section, body,
            content = '',
            tokenize = 'porter unicode61 remove_diacritics 2')""",
    ),
    # 2: chat sessions; the contextual-enrichment cache (situating sentences by chunk hash)
    (
        """CREATE TABLE chat_sessions (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
        """CREATE TABLE chat_messages (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES chat_sessions (id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content TEXT NOT NULL,
            data TEXT CHECK (data IS NULL OR json_valid(data)),
            created_at TEXT NOT NULL)""",
        "CREATE INDEX chat_messages_session ON chat_messages (session_id, seq)",
        """CREATE TABLE chunk_contexts (
            chunk_hash TEXT NOT NULL,
            generator TEXT NOT NULL,
            context TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (chunk_hash, generator))""",
    ),
    # 3: keyword search from stored term counts (stores/keyword_index.py) instead of FTS5
    (
        "CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE)",
        """CREATE TABLE chunk_terms (
            chunk_seq INTEGER PRIMARY KEY REFERENCES chunks (seq) ON DELETE CASCADE,
            length INTEGER NOT NULL,
            term_ids BLOB NOT NULL,
            counts BLOB NOT NULL)""",
        lambda conn: _backfill_terms(conn),
        "DROP TABLE chunks_fts",
        "ALTER TABLE documents DROP COLUMN keyword_title",
    ),
    # 4: tenants. Every collection, document, chat session and cached context belongs to one;
    # existing rows go to the default tenant. SQLite cannot change a primary key in place, so
    # the tables are rebuilt (with foreign keys off, as SQLite's ALTER TABLE guide says).
    (
        """CREATE TABLE collections_v4 (
            tenant TEXT NOT NULL,
            name TEXT NOT NULL,
            embedding_model TEXT NOT NULL,
            dimension INTEGER NOT NULL CHECK (dimension > 0),
            created_at TEXT NOT NULL,
            PRIMARY KEY (tenant, name))""",
        "INSERT INTO collections_v4 SELECT 'default', name, embedding_model, dimension, created_at FROM collections",
        """CREATE TABLE documents_v4 (
            id TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            collection TEXT NOT NULL,
            source TEXT NOT NULL,
            title TEXT NOT NULL,
            media_type TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'ready', 'error')),
            error TEXT,
            chunk_count INTEGER NOT NULL DEFAULT 0,
            content_hash TEXT,
            metadata TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (tenant, collection, source),
            FOREIGN KEY (tenant, collection) REFERENCES collections (tenant, name))""",
        f"INSERT INTO documents_v4 (tenant, {_V3_DOCUMENT_COLUMNS}) SELECT 'default', {_V3_DOCUMENT_COLUMNS} FROM documents",
        """CREATE TABLE chat_sessions_v4 (
            tenant TEXT NOT NULL,
            id TEXT NOT NULL,
            title TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (tenant, id))""",
        "INSERT INTO chat_sessions_v4 SELECT 'default', id, title, created_at, updated_at FROM chat_sessions",
        """CREATE TABLE chat_messages_v4 (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant TEXT NOT NULL,
            session_id TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content TEXT NOT NULL,
            data TEXT CHECK (data IS NULL OR json_valid(data)),
            created_at TEXT NOT NULL,
            FOREIGN KEY (tenant, session_id) REFERENCES chat_sessions (tenant, id) ON DELETE CASCADE)""",
        """INSERT INTO chat_messages_v4 (seq, tenant, session_id, role, content, data, created_at)
           SELECT seq, 'default', session_id, role, content, data, created_at FROM chat_messages""",
        """CREATE TABLE chunk_contexts_v4 (
            tenant TEXT NOT NULL,
            chunk_hash TEXT NOT NULL,
            generator TEXT NOT NULL,
            context TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (tenant, chunk_hash, generator))""",
        "INSERT INTO chunk_contexts_v4 SELECT 'default', chunk_hash, generator, context, created_at FROM chunk_contexts",
        *(
            statement
            for table in ("chat_messages", "chat_sessions", "chunk_contexts", "documents", "collections")
            for statement in (f"DROP TABLE {table}", f"ALTER TABLE {table}_v4 RENAME TO {table}")
        ),
        "CREATE INDEX documents_status ON documents (tenant, status)",
        "CREATE INDEX chat_messages_session ON chat_messages (tenant, session_id, seq)",
    ),
    # 5: the knowledge graph, tenant-scoped (stores/sqlite_graph.py)
    sqlite_graph.MIGRATION,
    # 6: API keys of the HTTP service (stores/sqlite_keys.py)
    (
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            prefix TEXT NOT NULL,
            secret_hash TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            tenant TEXT NOT NULL,
            grants TEXT NOT NULL CHECK (json_valid(grants)),
            created_at TEXT NOT NULL,
            revoked_at TEXT)""",
    ),
    # 7: a chunk's sentence-window vectors (windows.py), k x dimension float32; NULL = none
    ("ALTER TABLE vectors ADD COLUMN windows BLOB",),
)
SCHEMA_VERSION = len(MIGRATIONS)

_DOCUMENT_COLUMNS = _V3_DOCUMENT_COLUMNS
# BM25's top k is taken inside the FTS query, before any join: joining every match
# (a query with common words matches most chunks) costs more than scoring them.
_STORED_CHUNK_SELECT = (
    "SELECT c.id, c.document_id, d.collection, d.source, d.title, c.position, c.text, "
    "c.heading_path, c.page, c.prefix FROM chunks c JOIN documents d ON d.id = c.document_id"
)


@dataclass(frozen=True)
class _VectorPartition:
    """All vectors of one dimension: a contiguous matrix and, per row, its chunk and document."""

    matrix: np.ndarray  # (n, dimension) float32, C-contiguous: each chunk's vector, then its windows'
    chunk_ids: tuple[str, ...]
    row_chunk: np.ndarray  # (n,) int32 index into chunk_ids, non-decreasing
    row_document: np.ndarray  # (n,) int32 values of _VectorIndex.document_codes


@dataclass(frozen=True)
class _VectorIndex:
    """An immutable snapshot of the vectors at one generation (searched without the lock)."""

    generation: int
    document_codes: dict[str, int]
    partitions: dict[int, _VectorPartition]


class _Database:
    """One SQLite connection and its lock, shared by the store's views of every tenant."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = _open(path)
        self.views: dict[str, SQLiteStore] = {}


class SQLiteStore:
    """The `Store` protocol on one SQLite file (see the module docstring for the design).

    A store is scoped to one tenant: every statement it runs names `self.tenant`, and its
    in-memory indexes hold only that tenant's chunks. `for_tenant` gives the view of
    another tenant over the same connection.
    """

    def __init__(self, path: str | Path, tenant: str = DEFAULT_TENANT) -> None:
        """Open (creating and migrating if needed) the database at `path`, scoped to `tenant`."""
        check_tenant(tenant)
        self._attach(_Database(str(path)), tenant)

    def _attach(self, database: _Database, tenant: str) -> None:
        self._db = database
        self.tenant = tenant
        self._index: _VectorIndex | None = None
        self._keywords: KeywordIndex | None = None
        database.views[tenant] = self

    def for_tenant(self, tenant: str) -> SQLiteStore:
        """The same database scoped to `tenant`; views are cached, so their indexes are reused."""
        check_tenant(tenant)
        with self._db.lock:
            view = self._db.views.get(tenant)
            if view is None:
                view = object.__new__(SQLiteStore)
                view._attach(self._db, tenant)
        return view

    @property
    def path(self) -> str:
        return self._db.path

    # Connection and transactions ------------------------------------------
    def close(self) -> None:
        """Close the database: every tenant's view of it."""
        with self._db.lock:
            if self._db.conn is not None:
                self._db.conn.close()
            self._db.conn = None
            for view in self._db.views.values():
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
        """A read transaction: several SELECTs see one consistent snapshot."""
        return self._transaction("BEGIN")

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction, taking the write lock up front so it cannot fail halfway on BUSY."""
        return self._transaction("BEGIN IMMEDIATE")

    # Collections ---------------------------------------------------------
    def ensure_collection(self, name: str, embedding_model: str, dimension: int) -> None:
        if not name or dimension <= 0:
            raise ValueError(f"a collection needs a name and a positive dimension, got {name!r}, {dimension}")
        with self._write() as conn:
            row = conn.execute(
                "SELECT embedding_model, dimension FROM collections WHERE tenant = ? AND name = ?", (self.tenant, name)
            ).fetchone()
            if row is None:
                conn.execute(
                    """INSERT INTO collections (tenant, name, embedding_model, dimension, created_at)
                       VALUES (?, ?, ?, ?, ?)""",
                    (self.tenant, name, embedding_model, dimension, _now()),
                )
            elif tuple(row) != (embedding_model, dimension):
                raise model_mismatch(name, tuple(row), embedding_model, dimension)

    def collections(self) -> list[CollectionInfo]:
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.name, c.embedding_model, c.dimension,
                          count(d.id), coalesce(sum(d.chunk_count), 0)
                   FROM collections c LEFT JOIN documents d ON d.tenant = c.tenant AND d.collection = c.name
                   WHERE c.tenant = ? GROUP BY c.name ORDER BY c.name""",
                (self.tenant,),
            ).fetchall()
        return [CollectionInfo(*row) for row in rows]

    def delete_collection(self, name: str) -> None:
        with self._write() as conn:
            key = (self.tenant, name)
            if conn.execute("SELECT 1 FROM collections WHERE tenant = ? AND name = ?", key).fetchone() is None:
                raise collection_not_found(name)
            documents = conn.execute("SELECT id FROM documents WHERE tenant = ? AND collection = ?", key).fetchall()
            for (document_id,) in documents:
                graph_sql.forget_document(conn.execute, document_id)
                _delete_chunk_rows(conn, document_id)
            conn.execute("DELETE FROM documents WHERE tenant = ? AND collection = ?", key)
            conn.execute("DELETE FROM collections WHERE tenant = ? AND name = ?", key)
            _bump_generation(conn)

    # Documents -----------------------------------------------------------
    def get_document(self, document_id: str) -> DocumentRecord | None:
        return self._one_document("id = ?", (document_id,))

    def find_document(self, collection: str, source: str) -> DocumentRecord | None:
        return self._one_document("collection = ? AND source = ?", (collection, source))

    def _one_document(self, where: str, params: tuple[Any, ...]) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE tenant = ? AND {where}", (self.tenant, *params)
            ).fetchone()
        return None if row is None else _document(row)

    def list_documents(
        self, collection: str | None = None, status: DocumentStatus | None = None
    ) -> list[DocumentRecord]:
        conditions = {
            "tenant = ?": self.tenant,
            "collection = ?": collection,
            "status = ?": None if status is None else DocumentStatus(status).value,
        }
        used = {sql: value for sql, value in conditions.items() if value is not None}
        where = " AND ".join(used)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE {where} ORDER BY collection, source",
                tuple(used.values()),
            ).fetchall()
        return [_document(row) for row in rows]

    def upsert_document(
        self,
        document_id: str,
        *,
        collection: str,
        source: str,
        title: str,
        media_type: str,
        metadata: dict[str, Any],
        status: DocumentStatus,
        error: str | None = None,
    ) -> None:
        """See `Store.upsert_document`; metadata values JSON cannot hold (dates) are stored as text."""
        now = _now()
        with self._write() as conn:
            _require_collection(conn, self.tenant, collection)
            _require_free_source(conn, self.tenant, document_id, collection, source)
            _require_own_document(conn, self.tenant, document_id)
            conn.execute(
                """INSERT INTO documents (id, tenant, collection, source, title, media_type, status, error,
                                          metadata, created_at, updated_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (id) DO UPDATE SET
                       collection = excluded.collection, source = excluded.source,
                       title = excluded.title, media_type = excluded.media_type,
                       status = excluded.status, error = excluded.error,
                       metadata = excluded.metadata, updated_at = excluded.updated_at""",
                (document_id, self.tenant, collection, source, title, media_type, DocumentStatus(status).value,
                 error, json.dumps(metadata, default=str), now, now),
            )

    def set_status(self, document_id: str, status: DocumentStatus, error: str | None = None) -> None:
        with self._write() as conn:
            updated = conn.execute(
                "UPDATE documents SET status = ?, error = ?, updated_at = ? WHERE id = ? AND tenant = ?",
                (DocumentStatus(status).value, error, _now(), document_id, self.tenant),
            ).rowcount
            if not updated:
                raise _not_found(document_id)

    def replace_chunks(
        self,
        document_id: str,
        *,
        content_hash: str,
        title: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        windows: Sequence[np.ndarray] | None = None,
    ) -> None:
        _check_chunks_and_vectors(chunks, vectors)
        window_vectors = check_windows(chunks, vectors, windows)
        with self._write() as conn:
            dimension = _document_dimension(conn, self.tenant, document_id)
            check_vector_dimension(document_id, dimension, vectors)
            graph_sql.forget_document(conn.execute, document_id)
            _delete_chunk_rows(conn, document_id)
            _insert_chunk_rows(conn, document_id, title, chunks, vectors, window_vectors)
            conn.execute(
                """UPDATE documents SET status = 'ready', error = NULL, chunk_count = ?, content_hash = ?,
                          title = ?, updated_at = ? WHERE id = ?""",
                (len(chunks), content_hash, title, _now(), document_id),
            )
            _bump_generation(conn)

    def delete_document(self, document_id: str) -> None:
        with self._write() as conn:
            _document_dimension(conn, self.tenant, document_id)  # raises unless it is this tenant's
            graph_sql.forget_document(conn.execute, document_id)
            _delete_chunk_rows(conn, document_id)
            if not conn.execute("DELETE FROM documents WHERE id = ?", (document_id,)).rowcount:
                raise _not_found(document_id)
            _bump_generation(conn)

    # Chunks and vectors --------------------------------------------------
    def vectors_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._vector_rows_for_hashes(collection, hashes)
        return {h: np.frombuffer(vector, dtype=np.float32).copy() for h, vector, _ in rows}

    def windows_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._vector_rows_for_hashes(collection, hashes)
        return {h: _window_matrix(windows, len(vector) // 4) for h, vector, windows in rows}

    def _vector_rows_for_hashes(self, collection: str, hashes: Sequence[str]) -> list[tuple[str, bytes, bytes | None]]:
        """(content hash, vector blob, windows blob) of the collection's chunks with these hashes."""
        found: list[tuple[str, bytes, bytes | None]] = []
        with self._read() as conn:
            for batch in _batched(list(dict.fromkeys(hashes)), BATCH_SIZE):
                found += conn.execute(
                    f"""SELECT c.content_hash, v.vector, v.windows FROM chunks c
                        JOIN documents d ON d.id = c.document_id
                        JOIN vectors v ON v.chunk_seq = c.seq
                        WHERE d.tenant = ? AND d.collection = ? AND c.content_hash IN ({_placeholders(batch)})""",
                    (self.tenant, collection, *batch),
                ).fetchall()
        return found

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        found: dict[str, StoredChunk] = {}
        with self._read() as conn:
            for batch in _batched(list(dict.fromkeys(chunk_ids)), BATCH_SIZE):
                rows = conn.execute(
                    f"{_STORED_CHUNK_SELECT} WHERE d.tenant = ? AND c.id IN ({_placeholders(batch)})",
                    (self.tenant, *batch),
                )
                found.update((row[0], _stored_chunk(row)) for row in rows)
        return found

    def document_chunks(self, document_id: str) -> list[StoredChunk]:
        with self._read() as conn:
            rows = conn.execute(
                f"{_STORED_CHUNK_SELECT} WHERE d.tenant = ? AND c.document_id = ? ORDER BY c.position",
                (self.tenant, document_id),
            ).fetchall()
        return [_stored_chunk(row) for row in rows]

    def export_chunks(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[np.ndarray]]:
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.position, c.text, c.start, c."end", c.heading_path, c.page, c.token_count, c.prefix,
                          v.vector, v.windows
                   FROM chunks c JOIN documents d ON d.id = c.document_id JOIN vectors v ON v.chunk_seq = c.seq
                   WHERE d.tenant = ? AND c.document_id = ? ORDER BY c.position""",
                (self.tenant, document_id),
            ).fetchall()
        chunks = [Chunk(position, text, start, end, tuple(json.loads(path)), page, tokens, prefix)
                  for position, text, start, end, path, page, tokens, prefix, _, _ in rows]
        vectors = np.stack([np.frombuffer(row[-2], dtype=np.float32) for row in rows]) if rows else np.zeros((0, 0), np.float32)
        windows = [_window_matrix(row[-1], vectors.shape[1]) for row in rows]
        return chunks, vectors, windows

    def tenants(self) -> list[str]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT tenant FROM collections UNION SELECT tenant FROM chat_sessions "
                "UNION SELECT tenant FROM chunk_contexts ORDER BY 1"
            ).fetchall()
        return [row[0] for row in rows]

    # Search --------------------------------------------------------------
    def keyword_search(self, query: str, k: int, filters: SearchFilter) -> list[ScoredId]:
        """BM25 over title, heading path and text (what a chunk's prefix + text hold).

        Terms are OR-ed: a chunk sharing any term with the query is a candidate.
        The numpy work runs outside the lock.
        """
        _check_k(k)
        with self._read() as conn:
            generation = _generation(conn)
            if self._keywords is None or self._keywords.generation != generation:
                self._keywords = _load_keyword_index(conn, self.tenant, generation)
            index = self._keywords
            allowed = _allowed_documents(conn, self.tenant, filters)
        if allowed == []:
            return []
        return [ScoredId(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(index.search(query, k, allowed), 1)]

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilter) -> list[ScoredId]:
        """Exact dot products against the cached matrix, a chunk scoring the best of its own
        vector and its windows'; the numpy work runs outside the lock."""
        _check_k(k)
        query = _unit_query(vector)
        with self._read() as conn:
            _check_query_dimension(conn, self.tenant, filters.collections, len(query))
            index = self._current_index(conn)
            allowed = _allowed_documents(conn, self.tenant, filters)
        partition = index.partitions.get(len(query))
        if partition is None:
            return []
        rows = None if allowed is None else _allowed_rows(index, partition, allowed)
        scores = _scores(partition.matrix, query, rows)
        chunks, scores = _max_per_chunk(partition.row_chunk if rows is None else partition.row_chunk[rows], scores)
        top = _top_indices(scores, k)
        return [
            ScoredId(partition.chunk_ids[chunks[i]], rank, float(scores[i]))
            for rank, i in enumerate(top, 1)
        ]

    def _current_index(self, conn: sqlite3.Connection) -> _VectorIndex:
        """The cached vector index, reloaded when any connection has changed chunks since."""
        generation = _generation(conn)
        if self._index is None or self._index.generation != generation:
            self._index = _load_index(conn, self.tenant, generation)
        return self._index

    # Chat sessions -------------------------------------------------------
    def create_chat_session(self, session_id: str, title: str) -> None:
        now = _now()
        with self._write() as conn:
            if self._has_session(conn, session_id):
                raise session_taken(session_id)
            conn.execute(
                "INSERT INTO chat_sessions (tenant, id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (self.tenant, session_id, title, now, now),
            )

    def _has_session(self, conn: sqlite3.Connection, session_id: str) -> bool:
        query = "SELECT 1 FROM chat_sessions WHERE tenant = ? AND id = ?"
        return conn.execute(query, (self.tenant, session_id)).fetchone() is not None

    def get_chat_session(self, session_id: str) -> ChatSessionRecord | None:
        sessions = self._chat_sessions("AND s.id = ?", (session_id,))
        return sessions[0] if sessions else None

    def list_chat_sessions(self) -> list[ChatSessionRecord]:
        return self._chat_sessions("", ())

    def _chat_sessions(self, where: str, params: tuple[Any, ...]) -> list[ChatSessionRecord]:
        with self._read() as conn:
            rows = conn.execute(
                f"""SELECT s.id, s.title, s.created_at, s.updated_at, count(m.seq)
                    FROM chat_sessions s
                    LEFT JOIN chat_messages m ON m.tenant = s.tenant AND m.session_id = s.id
                    WHERE s.tenant = ? {where}
                    GROUP BY s.id ORDER BY s.updated_at DESC, s.id""",
                (self.tenant, *params),
            ).fetchall()
        return [ChatSessionRecord(*row) for row in rows]

    def add_chat_message(self, session_id: str, role: str, content: str, data: dict[str, Any] | None = None) -> None:
        now = _now()
        with self._write() as conn:
            touched = conn.execute(
                "UPDATE chat_sessions SET updated_at = ? WHERE tenant = ? AND id = ?", (now, self.tenant, session_id)
            ).rowcount
            if not touched:
                raise _no_session(session_id)
            conn.execute(
                """INSERT INTO chat_messages (tenant, session_id, role, content, data, created_at)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (self.tenant, session_id, role, content, None if data is None else json.dumps(data, default=str), now),
            )

    def chat_messages(self, session_id: str) -> list[ChatMessageRecord]:
        with self._read() as conn:
            if not self._has_session(conn, session_id):
                raise _no_session(session_id)
            rows = conn.execute(
                """SELECT session_id, role, content, data, created_at FROM chat_messages
                   WHERE tenant = ? AND session_id = ? ORDER BY seq""",
                (self.tenant, session_id),
            ).fetchall()
        return [ChatMessageRecord(sid, role, content, None if data is None else json.loads(data), created)
                for sid, role, content, data, created in rows]

    def delete_chat_session(self, session_id: str) -> None:
        with self._write() as conn:
            deleted = conn.execute(
                "DELETE FROM chat_sessions WHERE tenant = ? AND id = ?", (self.tenant, session_id)
            ).rowcount
            if not deleted:
                raise _no_session(session_id)

    # Contextual enrichment cache ----------------------------------------
    def get_chunk_contexts(self, chunk_hashes: Sequence[str], generator: str) -> dict[str, str]:
        found: dict[str, str] = {}
        with self._read() as conn:
            for batch in _batched(list(dict.fromkeys(chunk_hashes)), BATCH_SIZE):
                rows = conn.execute(
                    f"""SELECT chunk_hash, context FROM chunk_contexts
                        WHERE tenant = ? AND generator = ? AND chunk_hash IN ({_placeholders(batch)})""",
                    (self.tenant, generator, *batch),
                )
                found.update(rows)
        return found

    def put_chunk_contexts(self, contexts: dict[str, str], generator: str) -> None:
        now = _now()
        with self._write() as conn:
            conn.executemany(
                """INSERT INTO chunk_contexts (tenant, chunk_hash, generator, context, created_at)
                   VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (tenant, chunk_hash, generator) DO UPDATE SET context = excluded.context""",
                [(self.tenant, h, generator, context, now) for h, context in contexts.items()],
            )

    # Knowledge graph (stores/sqlite_graph.py) -----------------------------
    def get_graph_extractions(self, chunk_hashes: Sequence[str], extractor: str) -> dict[str, dict[str, Any]]:
        with self._read() as conn:
            return sqlite_graph.get_extractions(conn, self.tenant, chunk_hashes, extractor)

    def put_graph_extractions(self, extractions: dict[str, dict[str, Any]], extractor: str) -> None:
        with self._write() as conn:
            sqlite_graph.put_extractions(conn, self.tenant, extractions, extractor, _now())

    def replace_document_graph(self, graph: DocumentGraph) -> None:
        with self._write() as conn:
            if conn.execute(
                "SELECT 1 FROM documents WHERE id = ? AND tenant = ?", (graph.document_id, self.tenant)
            ).fetchone() is None:
                raise _not_found(graph.document_id)
            graph_sql.replace_document_graph(conn.execute, self.tenant, graph, _now())

    def graph_documents(self) -> dict[str, tuple[str, str]]:
        with self._read() as conn:
            return sqlite_graph.graph_documents(conn, self.tenant)

    def list_entities(
        self, query: str | None = None, type: str | None = None, limit: int | None = 50, offset: int = 0
    ) -> list[EntityRecord]:
        with self._read() as conn:
            return sqlite_graph.list_entities(conn, self.tenant, query, type, limit, offset)

    def find_entities(self, keys: Sequence[str]) -> dict[str, EntityRecord]:
        with self._read() as conn:
            return sqlite_graph.find_entities(conn, self.tenant, keys)

    def entity_relations(self, keys: Sequence[str] | None = None, limit: int | None = None) -> list[RelationRecord]:
        with self._read() as conn:
            return sqlite_graph.relations(conn, self.tenant, keys, limit)

    def entity_chunks(
        self, keys: Sequence[str], filters: SearchFilter = SearchFilter()
    ) -> list[tuple[str, str, str, int]]:
        with self._read() as conn:
            allowed = _allowed_documents(conn, self.tenant, filters)
            if allowed == []:
                return []
            return sqlite_graph.entity_chunks(conn, self.tenant, keys, allowed)

    def chunk_entities(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        with self._read() as conn:
            return sqlite_graph.chunk_entities(conn, self.tenant, chunk_ids)

    def graph_stats(self) -> dict[str, int]:
        with self._read() as conn:
            return sqlite_graph.graph_counts(conn, self.tenant)

    # Housekeeping --------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self._read() as conn:
            by_status = dict(
                conn.execute("SELECT status, count(*) FROM documents WHERE tenant = ? GROUP BY status", (self.tenant,))
            )
            chunks, vectors, windows = conn.execute(
                """SELECT count(c.seq), count(v.chunk_seq), coalesce(sum(length(v.windows) / length(v.vector)), 0) FROM chunks c
                   JOIN documents d ON d.id = c.document_id LEFT JOIN vectors v ON v.chunk_seq = c.seq
                   WHERE d.tenant = ?""",
                (self.tenant,),
            ).fetchone()
            graph = sqlite_graph.graph_counts(conn, self.tenant)
        return {
            "backend": "sqlite",
            "tenant": self.tenant,
            "path": self.path,
            "size_bytes": _file_size(self.path),
            "schema_version": SCHEMA_VERSION,
            "documents": {status.value: by_status.get(status.value, 0) for status in DocumentStatus},
            "chunks": chunks,
            "vectors": vectors,
            "window_vectors": windows,
            "graph": graph,
            "collections": [asdict(info) for info in self.collections()],
        }


# Opening and migrating --------------------------------------------------------
def _open(path: str) -> sqlite3.Connection:
    """Connect, configure and migrate; any failure names the file and closes the connection."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open SQLite store {path}: {exc}") from exc
    try:
        for pragma in ("busy_timeout = 5000", "foreign_keys = ON", "journal_mode = WAL", "synchronous = NORMAL"):
            conn.execute(f"PRAGMA {pragma}")
        _check_identity(conn, path)
        _migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(
            f"cannot open {path} as a Sourcebook database: {exc}; "
            f"if the file is corrupt or another program's, point Sourcebook at another file"
        ) from exc
    except StoreError:
        conn.close()
        raise
    return conn


def _check_identity(conn: sqlite3.Connection, path: str) -> None:
    """Refuse files that hold another application's data, or a schema newer than this code knows."""
    application_id = conn.execute("PRAGMA application_id").fetchone()[0]
    has_objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    if application_id != APPLICATION_ID and (application_id != 0 or has_objects):
        raise StoreError(f"{path} is an SQLite database of another application, not a Sourcebook database")
    version = _user_version(conn)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has schema version {version} but this Sourcebook knows up to {SCHEMA_VERSION}; "
            f"upgrade Sourcebook"
        )


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    """Apply pending migrations in order, one transaction each (user_version is transactional).

    An up-to-date file is only read: opening it never waits for another process's write.
    Foreign keys are off while a migration runs (a rebuilt table would otherwise cascade
    deletes into its children) and checked before it commits.
    """
    for version, statements in enumerate(MIGRATIONS, 1):
        if _user_version(conn) >= version:
            continue
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            _apply_migration(conn, path, version, statements)
        finally:
            conn.execute("PRAGMA foreign_keys = ON")


def _apply_migration(
    conn: sqlite3.Connection, path: str, version: int, statements: Sequence[str | Callable[[sqlite3.Connection], None]]
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        if _user_version(conn) < version:
            for statement in statements:
                if callable(statement):
                    statement(conn)
                else:
                    conn.execute(statement)
            if violation := conn.execute("PRAGMA foreign_key_check").fetchone():
                raise sqlite3.IntegrityError(f"foreign key violation in table {violation[0]}")
            conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreError(f"migrating {path} to schema version {version} failed: {exc}") from exc


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


# Writing chunks ------------------------------------------------------------------
def _document_dimension(conn: sqlite3.Connection, tenant: str, document_id: str) -> int:
    """The vector dimension of the tenant's document; DocumentNotFoundError when it has none by that id."""
    row = conn.execute(
        """SELECT c.dimension FROM documents d JOIN collections c ON c.tenant = d.tenant AND c.name = d.collection
           WHERE d.id = ? AND d.tenant = ?""",
        (document_id, tenant),
    ).fetchone()
    if row is None:
        raise _not_found(document_id)
    return int(row[0])


def _delete_chunk_rows(conn: sqlite3.Connection, document_id: str) -> None:
    """Remove the document's chunks; their vectors and term counts go by cascade."""
    conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))


def _insert_chunk_rows(
    conn: sqlite3.Connection,
    document_id: str,
    title: str,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    windows: Sequence[np.ndarray],
) -> None:
    conn.executemany(
        """INSERT INTO chunks (id, document_id, position, text, prefix, heading_path, page,
                               token_count, content_hash, start, "end")
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [
            (chunk_id(document_id, c.position), document_id, c.position, c.text, c.prefix,
             json.dumps(list(c.heading_path)), c.page, c.token_count, c.content_hash, c.start, c.end)
            for c in chunks
        ],
    )
    seqs = dict(conn.execute("SELECT position, seq FROM chunks WHERE document_id = ?", (document_id,)))
    contiguous = np.ascontiguousarray(vectors)
    conn.executemany(
        "INSERT INTO vectors (chunk_seq, vector, windows) VALUES (?, ?, ?)",
        [(seqs[c.position], contiguous[i].tobytes(), _window_blob(windows[i])) for i, c in enumerate(chunks)],
    )
    _index_terms(conn, [(seqs[c.position], _indexed_text(title, c.heading_path, c.text)) for c in chunks])


def _window_blob(windows: np.ndarray) -> bytes | None:
    return np.ascontiguousarray(windows).tobytes() if len(windows) else None


def _window_matrix(blob: bytes | None, dimension: int) -> np.ndarray:
    if not blob:
        return np.zeros((0, dimension), np.float32)
    return np.frombuffer(blob, dtype=np.float32).reshape(-1, dimension).copy()


def _backfill_terms(conn: sqlite3.Connection) -> None:
    """Term counts for chunks written before keyword search used them (migration 3)."""
    rows = conn.execute(
        "SELECT c.seq, d.title, c.heading_path, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
    ).fetchall()
    _index_terms(conn, [(seq, _indexed_text(title, tuple(json.loads(path)), text)) for seq, title, path, text in rows])


def _index_terms(conn: sqlite3.Connection, texts: Sequence[tuple[int, str]]) -> None:
    """Store the analysed term counts of chunks, given as (chunk seq, indexed text)."""
    rows = [(seq, *term_counts(text)) for seq, text in texts]
    vocabulary = _term_ids(conn, {term for _, counts, _ in rows for term in counts})
    conn.executemany(
        "INSERT INTO chunk_terms (chunk_seq, length, term_ids, counts) VALUES (?, ?, ?, ?)",
        [
            (seq, length, np.array([vocabulary[t] for t in counts], dtype=np.int32).tobytes(),
             np.array(list(counts.values()), dtype=np.int32).tobytes())
            for seq, counts, length in rows
        ],
    )


def _term_ids(conn: sqlite3.Connection, terms: set[str]) -> dict[str, int]:
    """Ids of `terms` in the vocabulary table, adding the new ones."""
    conn.executemany("INSERT OR IGNORE INTO terms (term) VALUES (?)", [(t,) for t in terms])
    ids: dict[str, int] = {}
    for batch in _batched(sorted(terms), BATCH_SIZE):
        ids.update(conn.execute(f"SELECT term, id FROM terms WHERE term IN ({_placeholders(batch)})", batch))
    return ids


def _load_keyword_index(conn: sqlite3.Connection, tenant: str, generation: int) -> KeywordIndex:
    """Read the vocabulary and the term counts of every chunk of `tenant` (inside the read
    transaction that read `generation`, so the snapshot and its number agree)."""
    vocabulary = dict(conn.execute("SELECT term, id FROM terms"))
    rows = conn.execute(
        """SELECT c.id, c.document_id, t.length, t.term_ids, t.counts
           FROM chunk_terms t JOIN chunks c ON c.seq = t.chunk_seq JOIN documents d ON d.id = c.document_id
           WHERE d.tenant = ?""",
        (tenant,),
    )
    return KeywordIndex.build(generation, vocabulary, rows)


def _bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")


def _generation(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def _require_collection(conn: sqlite3.Connection, tenant: str, collection: str) -> None:
    query = "SELECT 1 FROM collections WHERE tenant = ? AND name = ?"
    if conn.execute(query, (tenant, collection)).fetchone() is None:
        raise missing_collection(collection)


def _require_own_document(conn: sqlite3.Connection, tenant: str, document_id: str) -> None:
    """Refuse a document id another tenant holds (ids are global; rows never change tenant)."""
    if conn.execute("SELECT 1 FROM documents WHERE id = ? AND tenant != ?", (document_id, tenant)).fetchone():
        raise StoreError(f"document id {document_id!r} is taken; derive ids with sourcebook.ingest.document_id")


def _require_free_source(
    conn: sqlite3.Connection, tenant: str, document_id: str, collection: str, source: str
) -> None:
    row = conn.execute(
        "SELECT id FROM documents WHERE tenant = ? AND collection = ? AND source = ? AND id != ?",
        (tenant, collection, source, document_id),
    ).fetchone()
    if row is not None:
        raise source_taken(source, collection, row[0])


# Searching -------------------------------------------------------------------------
def _filter_sql(tenant: str, filters: SearchFilter) -> tuple[str, list[Any]]:
    """A WHERE condition on `documents d` for the tenant and filters (one place, so both searches agree)."""
    conditions: list[str] = ["d.tenant = ?"]
    params: list[Any] = [tenant]
    for column, values in (("d.collection", filters.collections), ("d.id", filters.document_ids)):
        if values:
            # One JSON parameter instead of one per value: no limit on the list's length.
            conditions.append(f"{column} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(values)))
    for key, value in filters.metadata:
        condition, condition_params = _metadata_condition(key, value)
        conditions.append(condition)
        params.extend(condition_params)
    return " AND ".join(conditions), params


def _metadata_condition(key: str, value: Any) -> tuple[str, list[Any]]:
    """Equality on one metadata field; JSON types are compared too, so True never equals 1."""
    if not key or '"' in key or "\x00" in key:
        raise InvalidQueryError(f"metadata filter key {key!r} must be non-empty and contain no double quote or NUL")
    path = f'$."{key}"'
    if isinstance(value, bool):
        return "json_type(d.metadata, ?) = ?", [path, "true" if value else "false"]
    if isinstance(value, int | float):
        return "json_type(d.metadata, ?) IN ('integer', 'real') AND json_extract(d.metadata, ?) = ?", [path, path, value]
    if isinstance(value, str):
        return "json_type(d.metadata, ?) = 'text' AND json_extract(d.metadata, ?) = ?", [path, path, value]
    raise InvalidQueryError(
        f"metadata filter {key!r} has a {type(value).__name__} value; use a string, number or boolean"
    )


def _allowed_documents(conn: sqlite3.Connection, tenant: str, filters: SearchFilter) -> list[str] | None:
    """Ids of the tenant's documents passing `filters`, or None when every one of them passes
    (the in-memory indexes hold only the tenant's chunks).

    Both searches restrict by this list, so they agree by construction; None (no filter,
    or a collection filter on a one-collection store, the common case) skips the work.
    """
    if not (filters.collections or filters.document_ids or filters.metadata):
        return None
    where, params = _filter_sql(tenant, filters)
    allowed = [row[0] for row in conn.execute(f"SELECT d.id FROM documents d WHERE {where}", params)]
    total = conn.execute("SELECT count(*) FROM documents WHERE tenant = ?", (tenant,)).fetchone()[0]
    return None if len(allowed) == total else allowed


def _check_query_dimension(conn: sqlite3.Connection, tenant: str, collections: Sequence[str], dimension: int) -> None:
    if not collections:
        return
    wrong = conn.execute(
        """SELECT name, dimension FROM collections
           WHERE tenant = ? AND name IN (SELECT value FROM json_each(?)) AND dimension != ?""",
        (tenant, json.dumps(list(collections)), dimension),
    ).fetchall()
    if wrong:
        name, expected = wrong[0]
        raise query_dimension_mismatch(name, expected, dimension)


def _load_index(conn: sqlite3.Connection, tenant: str, generation: int) -> _VectorIndex:
    """Read every vector of `tenant` into per-dimension matrices (called inside the read
    transaction that read `generation`, so the snapshot and its number agree).

    Rows stream into one growing buffer per dimension, so the load never holds the
    vectors twice (a list of blobs plus the matrix).
    """
    document_codes: dict[str, int] = {}
    builders: dict[int, _PartitionBuilder] = {}
    rows = conn.execute(
        """SELECT c.id, c.document_id, v.vector, v.windows FROM vectors v JOIN chunks c ON c.seq = v.chunk_seq
           JOIN documents d ON d.id = c.document_id WHERE d.tenant = ?""",
        (tenant,),
    )
    for id_, document_id, blob, windows in rows:
        builder = builders.setdefault(len(blob) // 4, _PartitionBuilder())
        builder.add(id_, document_codes.setdefault(document_id, len(document_codes)), blob, windows)
    partitions = {dimension: builder.build(dimension) for dimension, builder in builders.items()}
    return _VectorIndex(generation, document_codes, partitions)


class _PartitionBuilder:
    """One dimension's rows, accumulated while the index loads."""

    def __init__(self) -> None:
        self.vectors = bytearray()
        self.chunk_ids: list[str] = []
        self.documents: list[int] = []
        self.rows_per_chunk: list[int] = []

    def add(self, id_: str, document: int, vector: bytes, windows: bytes | None) -> None:
        self.vectors += vector
        if windows:
            self.vectors += windows
        self.chunk_ids.append(id_)
        self.documents.append(document)
        self.rows_per_chunk.append(1 + len(windows or b"") // len(vector))

    def build(self, dimension: int) -> _VectorPartition:
        matrix = np.frombuffer(self.vectors, dtype=np.float32).reshape(-1, dimension)
        counts = np.array(self.rows_per_chunk, dtype=np.int64)
        row_chunk = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        row_document = np.repeat(np.array(self.documents, dtype=np.int32), counts)
        return _VectorPartition(matrix, tuple(self.chunk_ids), row_chunk, row_document)


def _allowed_rows(index: _VectorIndex, partition: _VectorPartition, allowed: list[str]) -> np.ndarray:
    """Row numbers of `partition` whose document passed the filters (a boolean mask per document)."""
    mask = np.zeros(len(index.document_codes), dtype=bool)
    mask[[index.document_codes[d] for d in allowed if d in index.document_codes]] = True
    return np.flatnonzero(mask[partition.row_document])


def _scores(matrix: np.ndarray, query: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Dot products for `rows` (all rows when None). Gathering a small subset first is cheaper
    than a full pass; gathering most of the matrix would copy more than the pass reads."""
    if rows is None:
        return matrix @ query
    if 2 * len(rows) < len(matrix):
        return matrix[rows] @ query
    return (matrix @ query)[rows]


def _max_per_chunk(row_chunk: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chunk of each group, its best score) for scores whose rows come grouped by chunk
    (`row_chunk` non-decreasing): a chunk scores the best of its vector and its windows'."""
    if len(row_chunk) == 0:
        return row_chunk, scores
    starts = np.flatnonzero(np.concatenate(([True], row_chunk[1:] != row_chunk[:-1])))
    if len(starts) == len(row_chunk):  # no windows among these rows
        return row_chunk, scores
    return row_chunk[starts], np.maximum.reduceat(scores, starts)


def _top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first: argpartition, then sort only those k."""
    if k < len(scores):
        candidates = np.argpartition(scores, len(scores) - k)[-k:]
    else:
        candidates = np.arange(len(scores))
    return candidates[np.argsort(-scores[candidates], kind="stable")]


# Rows to values ----------------------------------------------------------------------
def _document(row: tuple[Any, ...]) -> DocumentRecord:
    (id_, collection, source, title, media_type, status, error, chunk_count, content_hash,
     metadata, created_at, updated_at) = row
    return DocumentRecord(
        id=id_, collection=collection, source=source, title=title, media_type=media_type,
        status=DocumentStatus(status), error=error, chunk_count=chunk_count, content_hash=content_hash,
        metadata=json.loads(metadata), created_at=created_at, updated_at=updated_at,
    )


def _stored_chunk(row: tuple[Any, ...]) -> StoredChunk:
    id_, document_id, collection, source, title, position, text, heading_path, page, prefix = row
    return StoredChunk(
        id=id_, document_id=document_id, collection=collection, source=source, title=title,
        position=position, text=text, heading_path=tuple(json.loads(heading_path)), page=page, prefix=prefix,
    )


def _placeholders(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _batched(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    return (items[i : i + size] for i in range(0, len(items), size))


def _file_size(path: str) -> int:
    """Bytes on disk, the WAL included (it can hold recent writes not yet checkpointed)."""
    files = (Path(path), Path(path + "-wal"))
    return sum(f.stat().st_size for f in files if f.is_file())
