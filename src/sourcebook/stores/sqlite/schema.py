"""The SQLite store's schema: its named migrations, and opening a file (checked, migrated).

The schema version is SQLite's ``user_version``: the number of MIGRATIONS applied, each in
one transaction (``user_version`` is transactional), so a crash leaves a file at a whole
version. ``application_id`` marks a file as Sourcebook's, so another program's database
is refused rather than altered. The ``meta`` table's ``generation``, bumped by every
transaction that changes chunks, tells the in-memory vector index (vectors.py) when to reload,
also after another process's writes; the keyword index catches up from the change log instead
(changes.py, keywords.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...errors import StoreError
from ..sql.migrations import Migration, MigrationReport
from .graph import GRAPH_TABLES
from .terms import backfill_terms

APPLICATION_ID = 0x53424F4B  # "SBOK": marks a file as a Sourcebook database

_V3_DOCUMENT_COLUMNS = (
    "id, collection, source, title, media_type, status, error, chunk_count, content_hash, "
    "metadata, created_at, updated_at"
)

MIGRATIONS: tuple[Migration, ...] = (
    # 1: initial schema
    Migration("initial_schema", (
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
    )),
    # 2: chat sessions; the contextual-enrichment cache (situating sentences by chunk hash)
    Migration("add_chat_and_context_cache", (
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
    )),
    # 3: keyword search from stored term counts (sqlite/keywords.py) instead of FTS5
    Migration("keyword_terms_instead_of_fts5", (
        "CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE)",
        """CREATE TABLE chunk_terms (
            chunk_seq INTEGER PRIMARY KEY REFERENCES chunks (seq) ON DELETE CASCADE,
            length INTEGER NOT NULL,
            term_ids BLOB NOT NULL,
            counts BLOB NOT NULL)""",
        backfill_terms,
        "DROP TABLE chunks_fts",
        "ALTER TABLE documents DROP COLUMN keyword_title",
    )),
    # 4: tenants. Every collection, document, chat session and cached context belongs to one;
    # existing rows go to the default tenant. SQLite cannot change a primary key in place, so
    # the tables are rebuilt (with foreign keys off, as SQLite's ALTER TABLE guide says).
    Migration("add_tenants", (
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
    )),
    # 5: the knowledge graph, tenant-scoped (sqlite/graph.py)
    Migration("add_knowledge_graph", GRAPH_TABLES),
    # 6: API keys of the HTTP service (sqlite/keys.py)
    Migration("add_api_keys", (
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            prefix TEXT NOT NULL,
            secret_hash TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            tenant TEXT NOT NULL,
            grants TEXT NOT NULL CHECK (json_valid(grants)),
            created_at TEXT NOT NULL,
            revoked_at TEXT)""",
    )),
    # 7: a chunk's sentence-window vectors (chunking/windows.py), k x dimension float32; NULL = none
    Migration("add_window_vectors", ("ALTER TABLE vectors ADD COLUMN windows BLOB",)),
    # 8: the collections a chat session searched (a JSON list; "*" = every collection), so a
    # collection-scoped API key sees only its own sessions; sessions that already have turns
    # searched who knows what: "*", visible only to keys that may read every collection
    Migration("chat_session_collections", (
        "ALTER TABLE chat_sessions ADD COLUMN collections TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(collections))",
        """UPDATE chat_sessions SET collections = '["*"]'
           WHERE EXISTS (SELECT 1 FROM chat_messages m WHERE m.tenant = chat_sessions.tenant AND m.session_id = chat_sessions.id)""",
    )),
    # 9: the process ingesting an unfinished document (owners.py): one that ended reads `interrupted`
    Migration("document_processing_owner", ("ALTER TABLE documents ADD COLUMN processing_owner TEXT",)),
    # 10: a file's identity is its resolved path (identity.normalize_source): documents stored under
    # the spelling the user typed take the resolved path their reader recorded, unless another
    # document of the collection already has it (a folder stored twice keeps both rows).
    Migration("file_source_resolved_path", (
        """UPDATE documents SET source = json_extract(metadata, '$.path')
           WHERE id IN (
               SELECT min(id) FROM documents
               WHERE json_extract(metadata, '$.path') IS NOT NULL AND source NOT LIKE '%://%'
               GROUP BY tenant, collection, json_extract(metadata, '$.path')
               HAVING sum(source = json_extract(metadata, '$.path')) = 0)
           AND NOT EXISTS (SELECT 1 FROM documents other WHERE other.tenant = documents.tenant
                           AND other.collection = documents.collection
                           AND other.source = json_extract(documents.metadata, '$.path'))""",
    )),
    # 11: every deleted chunk logged (changes.py), so the indexes derived from the file catch up
    # with a write by reading what it added and removed instead of rebuilding from every row
    Migration("chunk_deletion_log", (
        "CREATE TABLE IF NOT EXISTS chunk_deletions (id INTEGER PRIMARY KEY AUTOINCREMENT, chunk_seq INTEGER NOT NULL)",
        """CREATE TRIGGER IF NOT EXISTS chunks_deleted AFTER DELETE ON chunks
           BEGIN INSERT INTO chunk_deletions (chunk_seq) VALUES (old.seq); END""",
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('deletion_log_floor', 0)",
    )),
    # 12: summaries (answering/summaries.py) by subject (a document id or "collection:NAME") and
    # summarizer, with the content hash they were made from: a changed document misses (sql/summaries.py)
    Migration("summary_cache", (
        """CREATE TABLE IF NOT EXISTS summaries (
            tenant TEXT NOT NULL,
            subject TEXT NOT NULL,
            summarizer TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            data TEXT NOT NULL CHECK (json_valid(data)),
            created_at TEXT NOT NULL,
            PRIMARY KEY (tenant, subject, summarizer))""",
    )),
    # 13: requests and model calls per tenant, day and API key (usage.py): the usage report and quotas
    Migration("usage_counts", (
        """CREATE TABLE IF NOT EXISTS usage (
            tenant TEXT NOT NULL,
            day TEXT NOT NULL,
            api_key TEXT NOT NULL,
            requests INTEGER NOT NULL DEFAULT 0,
            llm_calls INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            embedding_calls INTEGER NOT NULL DEFAULT 0,
            embedded_texts INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (tenant, day, api_key))""",
    )),
)
SCHEMA_VERSION = len(MIGRATIONS)


def connect(path: str) -> tuple[sqlite3.Connection, MigrationReport]:
    """Connect, configure and migrate; any failure names the file and closes the connection.

    Returns the connection with the migrations it applied (`sourcebook migrate` reports them)."""
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
        report = _migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(
            f"cannot open {path} as a Sourcebook database: {exc}; "
            f"if the file is corrupt or another program's, point Sourcebook at another file"
        ) from exc
    except StoreError:
        conn.close()
        raise
    return conn, report


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


def _migrate(conn: sqlite3.Connection, path: str) -> MigrationReport:
    """Apply pending migrations in order, one transaction each (user_version is transactional).

    An up-to-date file is only read: opening it never waits for another process's write.
    Foreign keys are off while a migration runs (a rebuilt table would otherwise cascade
    deletes into its children) and checked before it commits.
    """
    applied = []
    for version, migration in enumerate(MIGRATIONS, 1):
        if _user_version(conn) >= version:
            continue
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            if _apply_migration(conn, path, version, migration):
                applied.append(version)
        finally:
            conn.execute("PRAGMA foreign_keys = ON")
    return MigrationReport(tuple(applied), SCHEMA_VERSION)


def _apply_migration(conn: sqlite3.Connection, path: str, version: int, migration: Migration) -> bool:
    """Apply `migration` as `version`; False when another process applied it first."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        pending = _user_version(conn) < version
        if pending:
            migration.apply(conn)
            if violation := conn.execute("PRAGMA foreign_key_check").fetchone():
                raise sqlite3.IntegrityError(f"foreign key violation in table {violation[0]}")
            conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
        return pending
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreError(f"migrating {path} to schema version {version} failed: {exc}") from exc


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def generation(conn: sqlite3.Connection) -> int:
    """The chunks' generation: the in-memory indexes built at another one are stale."""
    return int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def bump_generation(conn: sqlite3.Connection) -> None:
    """Mark every in-memory index stale (inside the transaction that changed chunks)."""
    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
