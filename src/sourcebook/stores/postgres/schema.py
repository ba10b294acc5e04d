"""The Postgres store's schema: versioned migrations, row-level security and the HNSW indexes.

Why it looks like this:

* Migrations are named lists of SQL (sql/migrations.py), their version their place in
  MIGRATIONS, recorded in ``schema_migrations``; `migrate` applies the missing ones,
  each in its own transaction, under an advisory lock so two
  processes opening a new database at once do not both apply them.
* Every table has a ``tenant`` column whose default is the transaction's
  ``sourcebook.tenant`` setting, and a policy that shows and accepts only rows of that
  tenant. ``FORCE ROW LEVEL SECURITY`` makes the policies bind the tables' owner too.
  Superusers (and BYPASSRLS roles) skip every policy, so a store connected as one runs
  its sessions as the unprivileged role ``sourcebook_rls`` (`restricted_role`): tenant
  isolation is the database's job whichever DSN the user gives.
* Vectors of every dimension share one ``vector`` column; each dimension gets its own
  partial HNSW index on ``embedding::vector(d)`` (pgvector's way to index mixed
  dimensions), created when a collection of that dimension first appears.
* A chunk's sentence-window vectors (chunking/windows.py) are rows of ``chunk_windows``, which
  goes with its chunk by ON DELETE CASCADE and has the same per-dimension partial HNSW
  indexes, created together with the chunks' (`ensure_hnsw_index`). Its btree on
  (tenant, dimension, collection) tells a search whether any windows can match at all.
* Keyword search is BM25 over postings, ``chunk_terms`` (term, chunk, tf, chunk length),
  written with the chunk from the same analyser as the SQLite store (Porter stems,
  stopwords kept in the index), so both stores rank alike. The first design, a
  generated ``tsvector`` with a GIN index ranked by ts_rank / ts_rank_cd, measured
  SciFact nDCG@10 0.42-0.59 against SQLite BM25's 0.68, at 216 ms p50 per query
  (bench/postgres_scifact.py): ts_rank has no IDF, and an OR query ranks every
  matching chunk's whole tsvector. The postings' primary key (tenant, term,
  chunk) INCLUDE (tf, length) answers the exhaustive statement with index-only scans of its
  terms and looks a chunk's postings up; ``chunk_terms_impact`` orders each term's postings
  by BM25 term weight, so an unfiltered query reads only its terms' heads (keywords.py).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from ...errors import StoreError
from ..sql.migrations import Migration, MigrationReport
from .keyword_stats import BACKFILL, COUNTING, INDEXES, STATISTICS_TABLES, TABLE_COLUMNS
from .keywords import IMPACT_INDEX

RLS_ROLE = "sourcebook_rls"
TENANT_SETTING = "sourcebook.tenant"
_LOCK_KEY = 0x53424F4B  # "SBOK": the advisory lock migrations and index builds take
TENANT_TABLES = (
    "collections", "documents", "chunks", "chunk_terms", "chat_sessions", "chat_messages", "chunk_contexts",
)
GRAPH_TABLES = (
    "graph_nodes", "graph_mentions", "graph_edges", "graph_edge_support", "graph_aliases", "graph_documents",
    "graph_extractions",
)
WINDOW_TABLES = ("chunk_windows",)
GENERATION_TABLES = ("search_generations",)
SUMMARY_TABLES = ("summaries",)
USAGE_TABLES = ("usage",)
ROLE_TABLES = (
    *TENANT_TABLES, *GRAPH_TABLES, *WINDOW_TABLES, *GENERATION_TABLES, *SUMMARY_TABLES, *USAGE_TABLES,
    *STATISTICS_TABLES, "api_keys",
)
"""Every table the store's sessions read and write (`restricted_role` grants them)."""

_TENANT = f"tenant text NOT NULL DEFAULT current_setting('{TENANT_SETTING}')"


def _row_level_security(tables: tuple[str, ...]) -> tuple[str, ...]:
    """Statements that let each table show and accept only the rows of the transaction's tenant."""
    return tuple(
        statement
        for table in tables
        for statement in (
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
            f"""CREATE POLICY tenant_isolation ON {table}
                USING (tenant = current_setting('{TENANT_SETTING}', true))
                WITH CHECK (tenant = current_setting('{TENANT_SETTING}', true))""",
        )
    )


def _tenant_table(table: str, columns: str) -> tuple[str, ...]:
    """A tenant table and its row-level security, idempotently (as every migration after the 4th:
    a database whose record of them was lost runs them again)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ({_TENANT}, {columns})",
        f"DROP POLICY IF EXISTS tenant_isolation ON {table}",
        *_row_level_security((table,)),
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "initial_schema",
        (
            f"""CREATE TABLE collections (
                {_TENANT},
                name text NOT NULL,
                embedding_model text NOT NULL,
                dimension integer NOT NULL CHECK (dimension > 0 AND dimension <= 16000),
                created_at timestamptz NOT NULL,
                PRIMARY KEY (tenant, name))""",
            f"""CREATE TABLE documents (
                {_TENANT},
                id text NOT NULL,
                collection text NOT NULL,
                source text NOT NULL,
                title text NOT NULL,
                media_type text NOT NULL,
                status text NOT NULL CHECK (status IN ('pending', 'processing', 'ready', 'error')),
                error text,
                chunk_count integer NOT NULL DEFAULT 0,
                content_hash text,
                metadata jsonb NOT NULL DEFAULT '{{}}',
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL,
                PRIMARY KEY (id),  -- ids are global (identity.document_id hashes the tenant in)
                UNIQUE (tenant, id),
                UNIQUE (tenant, collection, source),
                FOREIGN KEY (tenant, collection) REFERENCES collections (tenant, name))""",
            "CREATE INDEX documents_status ON documents (tenant, status)",
            f"""CREATE TABLE chunks (
                {_TENANT},
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id text NOT NULL,
                document_id text NOT NULL,
                collection text NOT NULL,
                position integer NOT NULL,
                text text NOT NULL,
                prefix text NOT NULL,
                heading_path text[] NOT NULL,
                page integer,
                token_count integer NOT NULL,
                content_hash text NOT NULL,
                start integer NOT NULL,
                "end" integer NOT NULL,
                index_title text NOT NULL,
                dimension integer NOT NULL,
                embedding vector NOT NULL CHECK (vector_dims(embedding) = dimension),
                length integer NOT NULL,
                UNIQUE (tenant, id),
                UNIQUE (tenant, document_id, position),
                FOREIGN KEY (tenant, document_id) REFERENCES documents (tenant, id) ON DELETE CASCADE)""",
            "CREATE INDEX chunks_content_hash ON chunks (tenant, collection, content_hash)",
            f"""CREATE TABLE chunk_terms (
                {_TENANT},
                term text NOT NULL,
                chunk_seq bigint NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
                tf integer NOT NULL,
                length integer NOT NULL,
                PRIMARY KEY (tenant, term, chunk_seq) INCLUDE (tf, length))""",
            "CREATE INDEX chunk_terms_chunk ON chunk_terms (chunk_seq)",
            f"""CREATE TABLE chunk_contexts (
                {_TENANT},
                chunk_hash text NOT NULL,
                generator text NOT NULL,
                context text NOT NULL,
                created_at timestamptz NOT NULL,
                PRIMARY KEY (tenant, chunk_hash, generator))""",
            f"""CREATE TABLE chat_sessions (
                {_TENANT},
                id text NOT NULL,
                title text NOT NULL,
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL,
                PRIMARY KEY (tenant, id))""",
            f"""CREATE TABLE chat_messages (
                {_TENANT},
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                session_id text NOT NULL,
                role text NOT NULL CHECK (role IN ('user', 'assistant')),
                content text NOT NULL,
                data jsonb,
                created_at timestamptz NOT NULL,
                FOREIGN KEY (tenant, session_id) REFERENCES chat_sessions (tenant, id) ON DELETE CASCADE)""",
            "CREATE INDEX chat_messages_session ON chat_messages (tenant, session_id, seq)",
            *_row_level_security(TENANT_TABLES),
        ),
        about="initial schema with tenants and row-level security",
    ),
    Migration(
        # The same tables as SQLite's migration 5 (sqlite/graph.py says why), under
        # the same row-level security as every other table.
        "add_knowledge_graph",
        (
            f"""CREATE TABLE graph_nodes (
                {_TENANT},
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                key text NOT NULL,
                name text NOT NULL,
                type text NOT NULL,
                summary text NOT NULL DEFAULT '',
                UNIQUE (tenant, key))""",
            f"""CREATE TABLE graph_mentions (
                {_TENANT},
                node_id bigint NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
                chunk_seq bigint NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
                count integer NOT NULL,
                PRIMARY KEY (node_id, chunk_seq))""",
            "CREATE INDEX graph_mentions_chunk ON graph_mentions (chunk_seq)",
            f"""CREATE TABLE graph_edges (
                {_TENANT},
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                source_id bigint NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
                target_id bigint NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
                relation text NOT NULL,
                UNIQUE (source_id, target_id, relation))""",
            "CREATE INDEX graph_edges_target ON graph_edges (target_id)",
            f"""CREATE TABLE graph_edge_support (
                {_TENANT},
                edge_id bigint NOT NULL REFERENCES graph_edges (id) ON DELETE CASCADE,
                chunk_seq bigint NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
                weight double precision NOT NULL,
                PRIMARY KEY (edge_id, chunk_seq))""",
            "CREATE INDEX graph_edge_support_chunk ON graph_edge_support (chunk_seq)",
            f"""CREATE TABLE graph_aliases (
                {_TENANT},
                alias text NOT NULL,
                node_id bigint NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
                PRIMARY KEY (tenant, alias))""",
            "CREATE INDEX graph_aliases_node ON graph_aliases (node_id)",
            f"""CREATE TABLE graph_documents (
                {_TENANT},
                document_id text NOT NULL,
                extractor text NOT NULL,
                content_hash text NOT NULL,
                built_at timestamptz NOT NULL,
                PRIMARY KEY (tenant, document_id),
                FOREIGN KEY (tenant, document_id) REFERENCES documents (tenant, id) ON DELETE CASCADE)""",
            f"""CREATE TABLE graph_extractions (
                {_TENANT},
                chunk_hash text NOT NULL,
                extractor text NOT NULL,
                data jsonb NOT NULL,
                created_at timestamptz NOT NULL,
                PRIMARY KEY (tenant, chunk_hash, extractor))""",
            *_row_level_security(GRAPH_TABLES),
        ),
        about="knowledge graph",
    ),
    Migration(
        "add_api_keys",
        (
            """CREATE TABLE api_keys (
                id text PRIMARY KEY,
                prefix text NOT NULL,
                secret_hash text NOT NULL UNIQUE,
                name text NOT NULL,
                tenant text NOT NULL,
                grants jsonb NOT NULL,
                created_at timestamptz NOT NULL,
                revoked_at timestamptz)""",
            "CREATE INDEX api_keys_prefix ON api_keys (prefix)",
        ),
        about="API keys of the HTTP service (global: a key is what tells which tenant a request is)",
    ),
    Migration(
        "add_window_vectors",
        (
            f"""CREATE TABLE chunk_windows (
                {_TENANT},
                chunk_seq bigint NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
                number integer NOT NULL,
                collection text NOT NULL,
                dimension integer NOT NULL,
                embedding vector NOT NULL CHECK (vector_dims(embedding) = dimension),
                PRIMARY KEY (chunk_seq, number))""",
            # Whether any windows can match: vector search skips the windows' HNSW scan when
            # none do, which would otherwise walk the index to hnsw.max_scan_tuples.
            "CREATE INDEX chunk_windows_presence ON chunk_windows (tenant, dimension, collection)",
            *_row_level_security(WINDOW_TABLES),
            # The windows' HNSW index of every dimension already indexed, with that index's m
            # and ef_construction (later dimensions get both indexes from ensure_hnsw_index).
            r"""DO $$
            DECLARE
                existing record;
            BEGIN
                FOR existing IN
                    SELECT substring(c.relname FROM '^chunks_embedding_hnsw_([0-9]+)$')::integer AS dimension,
                           coalesce(' WITH (' || array_to_string(c.reloptions, ', ') || ')', '') AS options
                    FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                    WHERE i.indrelid = 'chunks'::regclass AND c.relname ~ '^chunks_embedding_hnsw_[0-9]+$'
                LOOP
                    EXECUTE format(
                        'CREATE INDEX %I ON chunk_windows USING hnsw ((embedding::vector(%s)) vector_cosine_ops)%s '
                        'WHERE dimension = %s',
                        'chunk_windows_embedding_hnsw_' || existing.dimension, existing.dimension,
                        existing.options, existing.dimension);
                END LOOP;
            END $$""",
        ),
        about="sentence-window vectors of chunks",
    ),
    Migration(
        "chat_session_collections",
        (
            "ALTER TABLE chat_sessions ADD COLUMN collections text NOT NULL DEFAULT '[]'",
            # sessions that already have turns searched who knows what: every collection
            """UPDATE chat_sessions SET collections = '["*"]'
           WHERE EXISTS (SELECT 1 FROM chat_messages m WHERE m.tenant = chat_sessions.tenant AND m.session_id = chat_sessions.id)""",
        ),
        about="the collections a chat session searched (JSON list, '*' = every one), for collection-scoped keys",
    ),
    Migration(
        "document_processing_owner",
        ("ALTER TABLE documents ADD COLUMN IF NOT EXISTS processing_owner text",),
        about="the process ingesting an unfinished document (owners.py): one that ended reads interrupted",
    ),
    Migration(
        "file_source_resolved_path",
        (
            """UPDATE documents SET source = metadata->>'path'
               WHERE id IN (
                   SELECT min(id) FROM documents
                   WHERE metadata->>'path' IS NOT NULL AND source NOT LIKE '%://%'
                   GROUP BY tenant, collection, metadata->>'path'
                   HAVING bool_and(source <> metadata->>'path'))
               AND NOT EXISTS (SELECT 1 FROM documents other WHERE other.tenant = documents.tenant
                               AND other.collection = documents.collection
                               AND other.source = documents.metadata->>'path')""",
        ),
        about="a file's identity is its resolved path: documents stored under a typed spelling take it",
    ),
    Migration(
        "search_generations",
        _tenant_table("search_generations", "value bigint NOT NULL, PRIMARY KEY (tenant)"),
        about="a number per tenant every write that changes search results moves on (the query cache's key)",
    ),
    Migration(
        "summary_cache",
        _tenant_table("summaries", """subject text NOT NULL, summarizer text NOT NULL, content_hash text NOT NULL,
            data jsonb NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (tenant, subject, summarizer)"""),
        about="summaries by subject (document or collection) and summarizer, with the content hash they cite",
    ),
    Migration(
        "usage_counts",
        _tenant_table("usage", """day text NOT NULL, api_key text NOT NULL, requests bigint NOT NULL DEFAULT 0,
            llm_calls bigint NOT NULL DEFAULT 0, input_tokens bigint NOT NULL DEFAULT 0,
            output_tokens bigint NOT NULL DEFAULT 0, embedding_calls bigint NOT NULL DEFAULT 0,
            embedded_texts bigint NOT NULL DEFAULT 0, PRIMARY KEY (tenant, day, api_key)"""),
        about="requests and model calls per tenant, day and API key (usage.py): the usage report and quotas",
    ),
    Migration(
        # Half the index (halfvec) for the same graph, and none on the windows: at 1M vectors a
        # full-precision index measured recall@10 0.83 at ef_search 100, while candidates from
        # the chunks' own vectors, rescored exactly with their windows, measured 0.98 at 300k
        # chunks (vectors.py, README "Postgres at scale"). Each dimension keeps its m and
        # ef_construction.
        "halfvec_hnsw",
        (
            r"""DO $$
            DECLARE
                existing record;
            BEGIN
                FOR existing IN
                    SELECT substring(c.relname FROM '^chunks_embedding_hnsw_([0-9]+)$')::integer AS dimension,
                           coalesce(' WITH (' || array_to_string(c.reloptions, ', ') || ')', '') AS options
                    FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                    WHERE i.indrelid = 'chunks'::regclass AND c.relname ~ '^chunks_embedding_hnsw_[0-9]+$'
                LOOP
                    EXECUTE format(
                        'CREATE INDEX IF NOT EXISTS %I ON chunks USING hnsw ((embedding::halfvec(%s)) halfvec_cosine_ops)%s '
                        'WHERE dimension = %s',
                        'chunks_halfvec_hnsw_' || existing.dimension, existing.dimension, existing.options,
                        existing.dimension);
                    EXECUTE format('DROP INDEX %I', 'chunks_embedding_hnsw_' || existing.dimension);
                    EXECUTE format('DROP INDEX IF EXISTS %I', 'chunk_windows_embedding_hnsw_' || existing.dimension);
                END LOOP;
            END $$""",
        ),
        about="HNSW on halfvec of the chunks' own vectors, none on windows (candidates rescored exactly)",
    ),
    Migration(
        "keyword_statistics",
        (
            *(statement for table, columns in TABLE_COLUMNS.items() for statement in _tenant_table(table, columns)),
            *INDEXES, *COUNTING, *BACKFILL,
        ),
        about="BM25's chunk count, length sum and document frequencies as counter rows (keyword_stats.py)",
    ),
    Migration(
        "keyword_impact_order",
        (IMPACT_INDEX,),
        about="each term's postings by BM25 term weight, so a query reads only its terms' heads (keywords.py)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: psycopg.Connection, where: str) -> MigrationReport:
    """Bring the database behind `conn` (autocommit, not RLS-restricted) to SCHEMA_VERSION."""
    with _locked(conn):
        _ensure_vector_extension(conn, where)
        conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   description text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{where} has schema version {current} but this Sourcebook knows up to {SCHEMA_VERSION}; "
                f"upgrade Sourcebook"
            )
        applied = []
        for version, migration in enumerate(MIGRATIONS, 1):
            if version <= current:
                continue
            with conn.transaction():
                migration.apply(conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, description) VALUES (%s, %s)", (version, migration.about)
                )
            applied.append(version)
    return MigrationReport(tuple(applied), SCHEMA_VERSION)


def schema_version(conn: psycopg.Connection) -> int:
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:  # type: ignore[index]
        return 0
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0])  # type: ignore[index]


def restricted_role(conn: psycopg.Connection) -> str | None:
    """The role the store's sessions must `SET ROLE` to so that row-level security applies.

    None when the connecting role is already subject to it (neither superuser nor
    BYPASSRLS: FORCE ROW LEVEL SECURITY binds even the tables' owner). Otherwise
    `RLS_ROLE`, created (NOLOGIN, no privileges beyond these tables) and granted here.
    """
    bypasses = conn.execute(
        "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()[0]  # type: ignore[index]
    if not bypasses:
        return None
    # Every table, not one: a migration that adds a table leaves it to be granted here.
    granted = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s) "
        "AND (SELECT bool_and(has_table_privilege(%s, t, 'SELECT, INSERT, UPDATE, DELETE')) FROM unnest(%s::text[]) t)",
        (RLS_ROLE, RLS_ROLE, list(ROLE_TABLES)),
    ).fetchone()[0]  # type: ignore[index]
    if not granted:
        with _locked(conn), conn.transaction():
            role = sql.Identifier(RLS_ROLE)
            # Roles are cluster-wide: another database's store may create it at the same moment.
            conn.execute(sql.SQL(
                "DO $$ BEGIN CREATE ROLE {} NOLOGIN NOSUPERUSER NOBYPASSRLS; "
                "EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
            ).format(role))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
            conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
                sql.SQL(", ").join(map(sql.Identifier, ROLE_TABLES)), role))
            conn.execute(sql.SQL("GRANT SELECT ON schema_migrations TO {}").format(role))
    return RLS_ROLE


def hnsw_index_name(dimension: int) -> str:
    return f"chunks_halfvec_hnsw_{dimension}"


def ensure_hnsw_index(conn: psycopg.Connection, dimension: int, m: int, ef_construction: int) -> None:
    """Create the partial HNSW index (cosine, half precision) of the chunks' own vectors of
    `dimension` unless it exists. Windows have none: vector search rescores each candidate
    chunk with its windows (vectors.py)."""
    with _locked(conn):
        name = hnsw_index_name(dimension)
        if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None:  # type: ignore[index]
            return
        conn.execute(
            sql.SQL(
                "CREATE INDEX {} ON chunks USING hnsw ((embedding::halfvec({})) halfvec_cosine_ops) "
                "WITH (m = {}, ef_construction = {}) WHERE dimension = {}"
            ).format(sql.Identifier(name), sql.Literal(dimension), sql.Literal(m),
                     sql.Literal(ef_construction), sql.Literal(dimension))
        )


class _locked:
    """The session advisory lock that serialises schema changes across processes."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))

    def __exit__(self, *exc_info: object) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))


def _ensure_vector_extension(conn: psycopg.Connection, where: str) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StoreError(
            f"{where} lacks the pgvector extension and this role cannot create it ({exc}); "
            f"have a superuser run CREATE EXTENSION vector in that database"
        ) from exc
