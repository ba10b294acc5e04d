"""The server store: PostgreSQL + pgvector behind the `Store` protocol, for a team.

Design choices, and why (the schema's own are in postgres_schema.py):

* One `psycopg_pool.ConnectionPool` per database, shared by every tenant's view of it
  (`for_tenant`). Connections are autocommit; every method runs one explicit
  transaction that first sets ``sourcebook.tenant`` (and ``hnsw.ef_search``) with
  ``set_config(..., true)``, so the settings die with the transaction and a pooled
  connection never carries one tenant's scope into another's work.
* Tenant isolation is row-level security, not WHERE clauses: no query here names a
  tenant. Reads are pipelined (the settings and the query go in one round trip).
* `replace_chunks` locks the document row, deletes its chunks and COPYs the new ones
  (binary, vectors and sentence-window vectors included) in one transaction: readers
  see old or new, never a mix; concurrent writers of one document queue on the row lock.
* Vector search orders by pgvector's cosine distance on the partial HNSW indexes of the
  query's dimension (chunks' and windows'), with ``hnsw.iterative_scan`` so that a
  filtered query still returns k rows; the score is the cosine similarity, 1 - distance,
  of the chunk's best vector, its own or a window's (`vector_query` says how close to exact).
* Keyword search is Okapi BM25 computed in one SQL statement from the ``chunk_terms``
  postings of the query's terms (the SQLite store's analyser and formula, so both rank
  alike): document frequencies, chunk count and mean length are the tenant's own,
  counted live, so no shared statistics row serialises writers.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from ..errors import ConfigurationError, InvalidQueryError, StoreError
from ..graph.models import DocumentGraph, EntityRecord, RelationRecord
from ..models import Chunk, DocumentRecord, DocumentStatus, ScoredId, SearchFilter, StoredChunk
from ..tenants import DEFAULT_TENANT, check_tenant
from .base import ChatMessageRecord, ChatSessionRecord, CollectionInfo
from .common import (
    check_chunks_and_vectors,
    check_k,
    check_vector_dimension,
    check_windows,
    chunk_id,
    collection_not_found,
    indexed_text,
    missing_collection,
    model_mismatch,
    no_session,
    not_found,
    now,
    query_dimension_mismatch,
    session_taken,
    source_taken,
    unit_query,
)
from . import graph_sql, postgres_graph
from .keyword_index import B, K1, query_terms, term_counts
from .postgres_schema import (
    TENANT_SETTING,
    MigrationReport,
    ensure_hnsw_index,
    hnsw_index_name,
    migrate,
    restricted_role,
    schema_version,
    window_hnsw_index_name,
)

_SCOPE = (
    f"SELECT set_config('{TENANT_SETTING}', %s, true), set_config('hnsw.ef_search', %s, true), "
    "set_config('hnsw.iterative_scan', 'relaxed_order', true)"
)
_DOCUMENT_COLUMNS = (
    "id, collection, source, title, media_type, status, error, chunk_count, content_hash, "
    "metadata, created_at, updated_at"
)
_STORED_CHUNK_SELECT = (
    "SELECT c.id, c.document_id, d.collection, d.source, d.title, c.position, c.text, "
    "c.heading_path, c.page, c.prefix FROM chunks c JOIN documents d ON d.id = c.document_id"
)
_COPY_COLUMNS = (
    ("id", "text"), ("document_id", "text"), ("collection", "text"), ("position", "int4"), ("text", "text"),
    ("prefix", "text"), ("heading_path", "text[]"), ("page", "int4"), ("token_count", "int4"),
    ("content_hash", "text"), ("start", "int4"), ('"end"', "int4"), ("index_title", "text"),
    ("dimension", "int4"), ("embedding", "vector"), ("length", "int4"),
)
_TERM_COPY_COLUMNS = (("position", "int4"), ("term", "text"), ("tf", "int4"), ("length", "int4"))
_WINDOW_COPY_COLUMNS = (("position", "int4"), ("number", "int4"), ("embedding", "vector"))
WINDOW_ROWS_PER_RESULT = 4
"""Window rows the vector query takes per chunk asked for (`vector_query`)."""


@dataclass(frozen=True)
class HnswSettings:
    """pgvector HNSW parameters: m and ef_construction shape an index when it is built
    (a dimension's first collection); ef_search is read by every query."""

    m: int = 16
    ef_construction: int = 64
    ef_search: int = 40


class PostgresStore:
    """The `Store` protocol on a PostgreSQL database with pgvector (see the module docstring)."""

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
                self.migration = migrate(conn, self._where)
                self._role = restricted_role(conn)
                self._indexed_dimensions.update(_indexed_dimensions(conn))
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
        columns = ", ".join(f"{name} {'vector' if kind == 'vector' else kind}" for name, kind in _COPY_COLUMNS)
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS chunk_staging ({columns}) ON COMMIT DELETE ROWS")
        columns = ", ".join(f"{name} {kind}" for name, kind in _TERM_COPY_COLUMNS)
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS term_staging ({columns}) ON COMMIT DELETE ROWS")
        columns = ", ".join(f"{name} {kind}" for name, kind in _WINDOW_COPY_COLUMNS)
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS window_staging ({columns}) ON COMMIT DELETE ROWS")

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
                        conn.execute(_SCOPE, (self.tenant, str(self.hnsw.ef_search)))
                        yield conn
                else:
                    with conn.transaction():
                        conn.execute(_SCOPE, (self.tenant, str(self.hnsw.ef_search)))
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

    def _read(self) -> Any:
        return self.transaction(pipeline=True)

    # Collections ---------------------------------------------------------
    def ensure_collection(self, name: str, embedding_model: str, dimension: int) -> None:
        if not name or dimension <= 0:
            raise ValueError(f"a collection needs a name and a positive dimension, got {name!r}, {dimension}")
        with self.transaction(pipeline=True) as conn:
            conn.execute(
                "INSERT INTO collections (name, embedding_model, dimension, created_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (tenant, name) DO NOTHING",
                (name, embedding_model, dimension, now()),
            )
            row = conn.execute(
                "SELECT embedding_model, dimension FROM collections WHERE name = %s", (name,)
            ).fetchone()
        if row is not None and tuple(row) != (embedding_model, dimension):
            raise model_mismatch(name, (row[0], row[1]), embedding_model, dimension)
        if dimension not in self._indexed_dimensions:
            self._create_hnsw_index(dimension)

    def _create_hnsw_index(self, dimension: int) -> None:
        """Built on the login role's own connection: the RLS role may not run DDL."""
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                ensure_hnsw_index(conn, dimension, self.hnsw.m, self.hnsw.ef_construction)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot create the HNSW indexes {hnsw_index_name(dimension)} and "
                f"{window_hnsw_index_name(dimension)} on {self._where}: {exc}; "
                f"the owner of the schema can run `sourcebook migrate` and add the first collection"
            ) from exc
        self._indexed_dimensions.add(dimension)

    def collections(self) -> list[CollectionInfo]:
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.name, c.embedding_model, c.dimension,
                          count(d.id)::int, coalesce(sum(d.chunk_count), 0)::int
                   FROM collections c LEFT JOIN documents d ON d.collection = c.name
                   GROUP BY c.name, c.embedding_model, c.dimension ORDER BY c.name COLLATE "C" """
            ).fetchall()
        return [CollectionInfo(*row) for row in rows]

    def delete_collection(self, name: str) -> None:
        """The collection, its documents (their chunks, vectors and postings by ON DELETE CASCADE)
        and their graph rows, in one transaction."""
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM collections WHERE name = %s", (name,)).fetchone() is None:
                raise collection_not_found(name)
            execute = postgres_graph.execute_on(conn)
            for (document_id,) in conn.execute("SELECT id FROM documents WHERE collection = %s", (name,)).fetchall():
                graph_sql.forget_document(execute, document_id)
            conn.execute("DELETE FROM documents WHERE collection = %s", (name,))
            conn.execute("DELETE FROM collections WHERE name = %s", (name,))

    # Documents -----------------------------------------------------------
    def get_document(self, document_id: str) -> DocumentRecord | None:
        return self._one_document("id = %s", (document_id,))

    def find_document(self, collection: str, source: str) -> DocumentRecord | None:
        return self._one_document("collection = %s AND source = %s", (collection, source))

    def _one_document(self, where: str, params: tuple[Any, ...]) -> DocumentRecord | None:
        with self._read() as conn:
            row = conn.execute(f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE {where}", params).fetchone()
        return None if row is None else _document(row)

    def list_documents(
        self, collection: str | None = None, status: DocumentStatus | None = None
    ) -> list[DocumentRecord]:
        status_value = None if status is None else DocumentStatus(status).value
        with self._read() as conn:
            rows = conn.execute(
                f"""SELECT {_DOCUMENT_COLUMNS} FROM documents
                    WHERE (%(collection)s::text IS NULL OR collection = %(collection)s)
                      AND (%(status)s::text IS NULL OR status = %(status)s)
                    ORDER BY collection COLLATE "C", source COLLATE "C" """,
                {"collection": collection, "status": status_value},
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
        stamp = now()
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM collections WHERE name = %s", (collection,)).fetchone() is None:
                raise missing_collection(collection)
            taken = conn.execute(
                "SELECT id FROM documents WHERE collection = %s AND source = %s AND id <> %s",
                (collection, source, document_id),
            ).fetchone()
            if taken is not None:
                raise source_taken(source, collection, taken[0])
            _upsert_document_row(
                conn,
                """INSERT INTO documents (id, collection, source, title, media_type, status, error,
                                          metadata, created_at, updated_at)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (id) DO UPDATE SET
                       collection = excluded.collection, source = excluded.source,
                       title = excluded.title, media_type = excluded.media_type,
                       status = excluded.status, error = excluded.error,
                       metadata = excluded.metadata, updated_at = excluded.updated_at""",
                (document_id, collection, source, title, media_type, DocumentStatus(status).value, error,
                 json.dumps(metadata, default=str), stamp, stamp),
            )

    def set_status(self, document_id: str, status: DocumentStatus, error: str | None = None) -> None:
        with self.transaction() as conn:
            updated = conn.execute(
                "UPDATE documents SET status = %s, error = %s, updated_at = %s WHERE id = %s",
                (DocumentStatus(status).value, error, now(), document_id),
            ).rowcount
        if not updated:
            raise not_found(document_id)

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
        check_chunks_and_vectors(chunks, vectors)
        window_vectors = check_windows(chunks, vectors, windows)
        with self.transaction() as conn:
            row = conn.execute(
                """SELECT d.collection, c.dimension FROM documents d JOIN collections c ON c.name = d.collection
                   WHERE d.id = %s FOR UPDATE OF d""",
                (document_id,),
            ).fetchone()
            if row is None:
                raise not_found(document_id)
            collection, dimension = row
            check_vector_dimension(document_id, dimension, vectors)
            graph_sql.forget_document(postgres_graph.execute_on(conn), document_id)
            conn.execute("DELETE FROM chunks WHERE document_id = %s", (document_id,))
            _copy_chunks(conn, document_id, collection, title, chunks, vectors, window_vectors)
            conn.execute(
                """UPDATE documents SET status = 'ready', error = NULL, chunk_count = %s, content_hash = %s,
                          title = %s, updated_at = %s WHERE id = %s""",
                (len(chunks), content_hash, title, now(), document_id),
            )

    def delete_document(self, document_id: str) -> None:
        """Chunks (and their windows and postings) go by ON DELETE CASCADE, in the same
        statement's transaction."""
        with self.transaction() as conn:
            graph_sql.forget_document(postgres_graph.execute_on(conn), document_id)
            deleted = conn.execute("DELETE FROM documents WHERE id = %s", (document_id,)).rowcount
        if not deleted:
            raise not_found(document_id)

    # Chunks and vectors --------------------------------------------------
    def vectors_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM chunks "
                "WHERE collection = %s AND content_hash = ANY(%s)",
                (collection, list(dict.fromkeys(hashes))),
            ).fetchall()
        return {h: vector.to_numpy().copy() for h, vector in rows}

    def windows_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Of chunks sharing a hash, the one with the most windows speaks for it (a copy
        stored before windows existed has none)."""
        if not hashes:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.content_hash, c.seq, c.dimension, w.embedding
                   FROM chunks c LEFT JOIN chunk_windows w ON w.chunk_seq = c.seq
                   WHERE c.collection = %s AND c.content_hash = ANY(%s) ORDER BY c.seq, w.number""",
                (collection, list(dict.fromkeys(hashes))),
            ).fetchall()
        per_chunk: dict[int, tuple[str, int, list[np.ndarray]]] = {}
        for content_hash, seq, dimension, embedding in rows:
            found = per_chunk.setdefault(seq, (content_hash, dimension, []))[2]
            if embedding is not None:
                found.append(embedding.to_numpy())
        best: dict[str, np.ndarray] = {}
        for content_hash, dimension, found in per_chunk.values():
            if content_hash not in best or len(found) > len(best[content_hash]):
                best[content_hash] = _matrix(found, dimension)
        return best

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        if not chunk_ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(f"{_STORED_CHUNK_SELECT} WHERE c.id = ANY(%s)", (list(chunk_ids),)).fetchall()
        return {row[0]: _stored_chunk(row) for row in rows}

    def document_chunks(self, document_id: str) -> list[StoredChunk]:
        with self._read() as conn:
            rows = conn.execute(
                f"{_STORED_CHUNK_SELECT} WHERE c.document_id = %s ORDER BY c.position", (document_id,)
            ).fetchall()
        return [_stored_chunk(row) for row in rows]

    def export_chunks(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[np.ndarray]]:
        """One statement (one snapshot): each chunk's windows come as an array of float4[]."""
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.position, c.text, c.start, c."end", c.heading_path, c.page, c.token_count, c.prefix,
                          c.embedding,
                          (SELECT array_agg(w.embedding::real[] ORDER BY w.number) FROM chunk_windows w
                           WHERE w.chunk_seq = c.seq)
                   FROM chunks c WHERE c.document_id = %s ORDER BY c.position""",
                (document_id,),
            ).fetchall()
        chunks = [Chunk(position, text, start, end, tuple(path), page, tokens, prefix)
                  for position, text, start, end, path, page, tokens, prefix, _, _ in rows]
        vectors = np.stack([row[-2].to_numpy() for row in rows]) if rows else np.zeros((0, 0), np.float32)
        windows = [_matrix(row[-1] or [], vectors.shape[1]) for row in rows]
        return chunks, vectors, windows

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

    # Search --------------------------------------------------------------
    def keyword_search(self, query: str, k: int, filters: SearchFilter) -> list[ScoredId]:
        """BM25 over title, heading path and text; any-term (OR) matching."""
        check_k(k)
        terms = query_terms(query)
        if not terms:
            return []
        where, params = filter_sql(filters)
        with self._read() as conn:
            rows = conn.execute(keyword_sql(where), (terms, *params, k)).fetchall()
        return [ScoredId(id_, rank, float(score)) for rank, (id_, score) in enumerate(rows, 1)]

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilter) -> list[ScoredId]:
        """HNSW (iterative scan) on the chunks' and the windows' indexes of the query's
        dimension; a chunk's score is the cosine similarity of its best vector, its own or
        a window's (`vector_query` on the approximation)."""
        check_k(k)
        query = unit_query(vector)
        dimension = len(query)
        with self._read() as conn:
            if filters.collections:
                wrong = conn.execute(
                    "SELECT name, dimension FROM collections WHERE name = ANY(%s) AND dimension <> %s LIMIT 1",
                    (list(filters.collections), dimension),
                ).fetchone()
                if wrong is not None:
                    raise query_dimension_mismatch(wrong[0], wrong[1], dimension)
            rows = conn.execute(*vector_query(query, k, filters)).fetchall()
        return [ScoredId(id_, rank, float(score)) for rank, (id_, score) in enumerate(rows, 1)]

    # Chat sessions -------------------------------------------------------
    def create_chat_session(self, session_id: str, title: str) -> None:
        stamp = now()
        with self.transaction() as conn:
            created = conn.execute(
                "INSERT INTO chat_sessions (id, title, created_at, updated_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (tenant, id) DO NOTHING",
                (session_id, title, stamp, stamp),
            ).rowcount
        if not created:
            raise session_taken(session_id)

    def get_chat_session(self, session_id: str) -> ChatSessionRecord | None:
        sessions = self._chat_sessions("WHERE s.id = %s", (session_id,))
        return sessions[0] if sessions else None

    def list_chat_sessions(self) -> list[ChatSessionRecord]:
        return self._chat_sessions("", ())

    def _chat_sessions(self, where: str, params: tuple[Any, ...]) -> list[ChatSessionRecord]:
        with self._read() as conn:
            rows = conn.execute(
                f"""SELECT s.id, s.title, s.created_at, s.updated_at, count(m.seq)::int
                    FROM chat_sessions s LEFT JOIN chat_messages m ON m.session_id = s.id {where}
                    GROUP BY s.id, s.title, s.created_at, s.updated_at
                    ORDER BY s.updated_at DESC, s.id COLLATE "C" """,
                params,
            ).fetchall()
        return [ChatSessionRecord(id_, title, _iso(created), _iso(updated), count)
                for id_, title, created, updated, count in rows]

    def add_chat_message(self, session_id: str, role: str, content: str, data: dict[str, Any] | None = None) -> None:
        stamp = now()
        with self.transaction() as conn:
            if not conn.execute(
                "UPDATE chat_sessions SET updated_at = %s WHERE id = %s", (stamp, session_id)
            ).rowcount:
                raise no_session(session_id)
            conn.execute(
                "INSERT INTO chat_messages (session_id, role, content, data, created_at) VALUES (%s, %s, %s, %s, %s)",
                (session_id, role, content, None if data is None else json.dumps(data, default=str), stamp),
            )

    def chat_messages(self, session_id: str) -> list[ChatMessageRecord]:
        with self._read() as conn:
            exists = conn.execute("SELECT 1 FROM chat_sessions WHERE id = %s", (session_id,)).fetchone()
            rows = conn.execute(
                "SELECT session_id, role, content, data, created_at FROM chat_messages "
                "WHERE session_id = %s ORDER BY seq",
                (session_id,),
            ).fetchall()
        if exists is None:
            raise no_session(session_id)
        return [ChatMessageRecord(sid, role, content, data, _iso(created)) for sid, role, content, data, created in rows]

    def delete_chat_session(self, session_id: str) -> None:
        with self.transaction() as conn:
            deleted = conn.execute("DELETE FROM chat_sessions WHERE id = %s", (session_id,)).rowcount
        if not deleted:
            raise no_session(session_id)

    # Contextual enrichment cache ----------------------------------------
    def get_chunk_contexts(self, chunk_hashes: Sequence[str], generator: str) -> dict[str, str]:
        if not chunk_hashes:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT chunk_hash, context FROM chunk_contexts WHERE generator = %s AND chunk_hash = ANY(%s)",
                (generator, list(chunk_hashes)),
            ).fetchall()
        return dict(rows)

    def put_chunk_contexts(self, contexts: dict[str, str], generator: str) -> None:
        if not contexts:
            return
        stamp = now()
        with self.transaction() as conn, conn.cursor() as cursor:
            cursor.executemany(
                """INSERT INTO chunk_contexts (chunk_hash, generator, context, created_at) VALUES (%s, %s, %s, %s)
                   ON CONFLICT (tenant, chunk_hash, generator) DO UPDATE SET context = excluded.context""",
                [(h, generator, context, stamp) for h, context in contexts.items()],
            )

    # Knowledge graph (postgres_graph.py; writes in graph_sql.py) ---------
    def get_graph_extractions(self, chunk_hashes: Sequence[str], extractor: str) -> dict[str, dict[str, Any]]:
        with self._read() as conn:
            return postgres_graph.get_extractions(conn, chunk_hashes, extractor)

    def put_graph_extractions(self, extractions: dict[str, dict[str, Any]], extractor: str) -> None:
        with self.transaction() as conn:
            postgres_graph.put_extractions(conn, extractions, extractor, now())

    def replace_document_graph(self, graph: DocumentGraph) -> None:
        with self.transaction() as conn:
            if conn.execute(
                "SELECT 1 FROM documents WHERE id = %s FOR UPDATE", (graph.document_id,)
            ).fetchone() is None:
                raise not_found(graph.document_id)
            graph_sql.replace_document_graph(postgres_graph.execute_on(conn), self.tenant, graph, now())

    def graph_documents(self) -> dict[str, tuple[str, str]]:
        with self._read() as conn:
            return postgres_graph.graph_documents(conn)

    def list_entities(
        self, query: str | None = None, type: str | None = None, limit: int | None = 50, offset: int = 0
    ) -> list[EntityRecord]:
        with self._read() as conn:
            return postgres_graph.list_entities(conn, query, type, limit, offset)

    def find_entities(self, keys: Sequence[str]) -> dict[str, EntityRecord]:
        with self._read() as conn:
            return postgres_graph.find_entities(conn, keys)

    def entity_relations(self, keys: Sequence[str] | None = None, limit: int | None = None) -> list[RelationRecord]:
        with self._read() as conn:
            return postgres_graph.relations(conn, keys, limit)

    def entity_chunks(
        self, keys: Sequence[str], filters: SearchFilter = SearchFilter()
    ) -> list[tuple[str, str, str, int]]:
        where, params = filter_sql(filters)
        with self._read() as conn:
            return postgres_graph.entity_chunks(conn, keys, where, params)

    def chunk_entities(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        with self._read() as conn:
            return postgres_graph.chunk_entities(conn, chunk_ids)

    def graph_stats(self) -> dict[str, int]:
        with self._read() as conn:
            return postgres_graph.graph_counts(conn)

    # Housekeeping --------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        with self._read() as conn:
            by_status = dict(conn.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall())
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
            windows = conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]  # type: ignore[index]
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
            version = schema_version(conn)
            graph = postgres_graph.graph_counts(conn)
        return {
            "backend": "postgres",
            "path": self._where,
            "tenant": self.tenant,
            "size_bytes": int(size),
            "schema_version": version,
            "documents": {status.value: by_status.get(status.value, 0) for status in DocumentStatus},
            "chunks": chunks,
            "vectors": chunks,
            "window_vectors": windows,
            "graph": graph,
            "collections": [asdict(info) for info in self.collections()],
        }


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
    hnsw = HnswSettings(
        m=numbers.get("hnsw_m", 16),
        ef_construction=numbers.get("hnsw_ef_construction", 64),
        ef_search=numbers.get("hnsw_ef_search", 40),
    )
    return PostgresStore(dsn, tenant=tenant, hnsw=hnsw, pool_size=numbers.get("pool_size", 10))


def migrate_postgres(url: str) -> MigrationReport:
    """Apply pending migrations to the database at `url` (`sourcebook migrate`)."""
    store = open_postgres(url)
    store.close()
    return store.migration


# Writing and filtering ------------------------------------------------------------
def _upsert_document_row(conn: psycopg.Connection, query: str, params: tuple[Any, ...]) -> None:
    """The upsert, with a clear error when another tenant holds the id: its row is invisible
    here, so the conflict's UPDATE fails the row-level security check instead."""
    try:
        with conn.transaction():
            conn.execute(query, params)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StoreError(
            f"document id {params[0]!r} is taken; derive ids with sourcebook.ingest.document_id"
        ) from exc


def _copy_chunks(
    conn: psycopg.Connection, document_id: str, collection: str, title: str, chunks: Sequence[Chunk],
    vectors: np.ndarray, windows: Sequence[np.ndarray],
) -> None:
    """Binary COPY of the chunk rows (vectors included), their BM25 postings and their
    window vectors into the session's staging tables, then one INSERT ... SELECT each
    under the tenant's policies (ON COMMIT DELETE ROWS empties the staging tables; a
    rollback discards their rows)."""
    names = ", ".join(name for name, _ in _COPY_COLUMNS)
    dimension = vectors.shape[1]
    analysed = {c.position: term_counts(indexed_text(title, c.heading_path, c.text)) for c in chunks}
    with conn.cursor() as cursor:
        with cursor.copy(f"COPY chunk_staging ({names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _COPY_COLUMNS])
            for i in range(len(chunks)):
                c = chunks[i]
                copy.write_row((
                    chunk_id(document_id, c.position), document_id, collection, c.position, c.text, c.prefix,
                    list(c.heading_path), c.page, c.token_count, c.content_hash, c.start, c.end, title,
                    dimension, vectors[i], analysed[c.position][1],
                ))
        cursor.execute(f"INSERT INTO chunks ({names}) SELECT {names} FROM chunk_staging")
        term_names = ", ".join(name for name, _ in _TERM_COPY_COLUMNS)
        with cursor.copy(f"COPY term_staging ({term_names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _TERM_COPY_COLUMNS])
            for position, (counts, length) in analysed.items():
                for term, tf in counts.items():
                    copy.write_row((position, term, tf, length))
        cursor.execute(
            """INSERT INTO chunk_terms (term, chunk_seq, tf, length)
               SELECT s.term, c.seq, s.tf, s.length FROM term_staging s
               JOIN chunks c ON c.document_id = %s AND c.position = s.position""",
            (document_id,),
        )
        if not any(len(matrix) for matrix in windows):
            return
        window_names = ", ".join(name for name, _ in _WINDOW_COPY_COLUMNS)
        with cursor.copy(f"COPY window_staging ({window_names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _WINDOW_COPY_COLUMNS])
            for c, matrix in zip(chunks, windows):
                for number, window in enumerate(matrix):
                    copy.write_row((c.position, number, window))
        cursor.execute(
            """INSERT INTO chunk_windows (chunk_seq, number, collection, dimension, embedding)
               SELECT c.seq, s.number, %s, %s, s.embedding FROM window_staging s
               JOIN chunks c ON c.document_id = %s AND c.position = s.position""",
            (collection, dimension, document_id),
        )


def filter_sql(filters: SearchFilter) -> tuple[str, list[Any]]:
    """AND-conditions on `chunks c` for the filters (one place, so both searches agree)."""
    conditions: list[str] = []
    params: list[Any] = []
    if filters.collections:
        conditions.append("c.collection = ANY(%s)")
        params.append(list(filters.collections))
    if filters.document_ids:
        conditions.append("c.document_id = ANY(%s)")
        params.append(list(filters.document_ids))
    if filters.metadata:
        for key, value in filters.metadata:
            if not key or "\x00" in key:
                raise InvalidQueryError(f"metadata filter key {key!r} must be non-empty and hold no NUL character")
            if not isinstance(value, (str, int, float, bool)) or (isinstance(value, float) and not math.isfinite(value)):
                raise InvalidQueryError(
                    f"metadata filter {key!r} has a {type(value).__name__} value; use a string, finite number or boolean"
                )
        if any(isinstance(value, str) and "\x00" in value for _, value in filters.metadata):
            conditions.append("false")  # stored metadata (jsonb) cannot hold NUL: nothing matches
        else:
            # jsonb containment compares JSON types (true is not 1) and numbers by value (2021 = 2021.0).
            conditions.append(
                "EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id AND d.metadata @> %s::jsonb)"
            )
            params.append(json.dumps(dict(filters.metadata)))
    return "".join(f" AND {condition}" for condition in conditions), params


def keyword_sql(where: str) -> str:
    """Okapi BM25 as the SQLite store computes it (parameters: query terms, filter values, k).

    idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6; N, n and the mean length are
    the tenant's (row-level security scopes every table read here). Ties go to the
    earlier-written chunk, as in the SQLite store.
    """
    filtered = f"JOIN chunks c ON c.seq = p.chunk_seq WHERE true {where}" if where else ""
    return f"""
        WITH stats AS (SELECT count(*)::float8 AS n, coalesce(avg(length), 1)::float8 AS mean FROM chunks),
        idf AS (
            SELECT t.term, greatest(ln((stats.n - count(*) + 0.5) / (count(*) + 0.5)), 1e-6) AS idf
            FROM chunk_terms t, stats WHERE t.term = ANY(%s) GROUP BY t.term, stats.n),
        scored AS (
            SELECT p.chunk_seq, sum(idf.idf * p.tf * {K1 + 1}
                                    / (p.tf + {K1} * (1 - {B} + {B} * p.length / stats.mean))) AS score
            FROM chunk_terms p JOIN idf ON idf.term = p.term CROSS JOIN stats {filtered}
            GROUP BY p.chunk_seq ORDER BY score DESC, p.chunk_seq LIMIT %s)
        SELECT c.id, s.score FROM scored s JOIN chunks c ON c.seq = s.chunk_seq
        ORDER BY s.score DESC, s.chunk_seq"""


def vector_query(query: np.ndarray, k: int, filters: SearchFilter) -> tuple[str, tuple[Any, ...]]:
    """The nearest-neighbour query and its parameters.

    Two nearest-neighbour scans, each on its partial HNSW index of the query's dimension
    (spelled out, not a parameter, so the planner matches the index) and under the same
    filters: the k nearest chunk vectors, and the k * WINDOW_ROWS_PER_RESULT nearest
    window vectors (joined to their chunks for the filters). A chunk scores its best
    distance among the rows found; the k best chunks are returned. The inner ORDER BYs
    walk the indexes (iterative scans return rows in relaxed order); the outer one
    restores the exact order. The windows' scan runs only if the tenant has windows of
    that dimension (in the filtered collections): with none to find, an iterative scan
    would walk the index up to hnsw.max_scan_tuples.

    The approximation, beside HNSW's own: a chunk of the true top k is found when its best
    vector is its own (fewer than k chunks beat that); when it is a window, it is found
    unless the nearer window rows crowd into fewer than k chunks, which takes chunks with
    more than WINDOW_ROWS_PER_RESULT windows each nearer than it (SciFact averages about
    five windows a chunk, most far from any one query). A chunk found by one scan only may
    score below its true best (its other vectors lay beyond both scans), but then it is
    outside the true top k anyway.
    """
    dimension = int(len(query))
    where, params = filter_sql(filters)
    distance = "{}.embedding::vector({}) <=> %s::vector({})"
    own = f"""SELECT c.id, {distance.format("c", dimension, dimension)} AS distance FROM chunks c
              WHERE c.dimension = {dimension} {where} ORDER BY distance LIMIT %s"""
    probe = "x.dimension = " + str(dimension) + (" AND x.collection = ANY(%s)" if filters.collections else "")
    windows = f"""SELECT c.id, {distance.format("w", dimension, dimension)} AS distance
                  FROM chunk_windows w JOIN chunks c ON c.seq = w.chunk_seq
                  WHERE w.dimension = {dimension} {where}
                    AND EXISTS (SELECT 1 FROM chunk_windows x WHERE {probe})
                  ORDER BY distance LIMIT %s"""
    sql = f"""WITH own AS MATERIALIZED ({own}), windows AS MATERIALIZED ({windows})
              SELECT id, 1 - min(distance) FROM (SELECT * FROM own UNION ALL SELECT * FROM windows) found
              GROUP BY id ORDER BY min(distance), id LIMIT %s"""
    probe_params = [list(filters.collections)] if filters.collections else []
    return sql, (query, *params, k, query, *params, *probe_params, k * WINDOW_ROWS_PER_RESULT, k)


def _indexed_dimensions(conn: psycopg.Connection) -> set[int]:
    """Dimensions with both HNSW indexes (chunks' and windows')."""
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE (tablename = 'chunks' AND indexname LIKE 'chunks_embedding_hnsw_%') "
        "OR (tablename = 'chunk_windows' AND indexname LIKE 'chunk_windows_embedding_hnsw_%')"
    ).fetchall()
    found = [(name.startswith("chunk_windows"), int(name.rsplit("_", 1)[1])) for (name,) in rows]
    return {dimension for window, dimension in found if not window} & {dimension for window, dimension in found if window}


def _matrix(rows: Sequence[Any], dimension: int) -> np.ndarray:
    """Window vectors as a (k, dimension) float32 array, k >= 0."""
    if not len(rows):
        return np.zeros((0, dimension), np.float32)
    return np.asarray(rows, dtype=np.float32).reshape(-1, dimension)


# Rows to values ----------------------------------------------------------------------
def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _document(row: tuple[Any, ...]) -> DocumentRecord:
    (id_, collection, source, title, media_type, status, error, chunk_count, content_hash,
     metadata, created_at, updated_at) = row
    return DocumentRecord(
        id=id_, collection=collection, source=source, title=title, media_type=media_type,
        status=DocumentStatus(status), error=error, chunk_count=chunk_count, content_hash=content_hash,
        metadata=metadata, created_at=_iso(created_at), updated_at=_iso(updated_at),
    )


def _stored_chunk(row: tuple[Any, ...]) -> StoredChunk:
    id_, document_id, collection, source, title, position, text, heading_path, page, prefix = row
    return StoredChunk(
        id=id_, document_id=document_id, collection=collection, source=source, title=title,
        position=position, text=text, heading_path=tuple(heading_path), page=page, prefix=prefix,
    )


def _redacted(dsn: str) -> str:
    """The DSN without its password, for messages and stats."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
