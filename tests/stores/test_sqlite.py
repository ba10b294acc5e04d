"""What only the SQLite store promises: the file format, several connections, threads.

The behaviour every store shares is in sourcebook.testing (run by tests/stores/test_sqlite_conformance.py).
"""

from __future__ import annotations

import sqlite3
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sourcebook import stores
from sourcebook.errors import ConfigurationError, InvalidQueryError, StoreError
from sourcebook.models import Chunk, DocumentStatus, SearchFilter
from sourcebook.stores import SQLiteStore, open_store
from sourcebook.stores.sqlite import documents as sqlite_documents
from sourcebook.stores.sqlite import schema as sqlite_schema
from sourcebook.stores.sqlite import terms as sqlite_terms

DIM = 4
EVERYTHING = SearchFilter()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "kb.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(db_path) as instance:
        instance.ensure_collection("docs", "model", DIM)
        yield instance


def put(store: SQLiteStore, document_id: str, texts: list[str], direction: int = 0, title: str = "Title") -> None:
    """Give a document these chunks, all with the unit vector along axis `direction`."""
    if store.get_document(document_id) is None:
        store.upsert_document(document_id, collection="docs", source=document_id, title=title,
                              media_type="text/plain", metadata={}, status=DocumentStatus.PROCESSING)
    chunks = [Chunk(i, text, 0, len(text), ("Part",), None, 2, "") for i, text in enumerate(texts)]
    vectors = np.zeros((len(texts), DIM), dtype=np.float32)
    vectors[:, direction] = 1.0
    store.replace_chunks(document_id, content_hash=str(texts), title=title, chunks=chunks, vectors=vectors)


def axis(direction: int, dimension: int = DIM) -> np.ndarray:
    vector = np.zeros(dimension, dtype=np.float32)
    vector[direction] = 1.0
    return vector


def raw(db_path: Path, sql: str) -> list[tuple]:
    """Look at the file with a plain connection, as another process would."""
    with sqlite3.connect(db_path) as conn:
        return conn.execute(sql).fetchall()


# The file ---------------------------------------------------------------------------------
def test_wal_mode_and_schema_version(store: SQLiteStore, db_path: Path) -> None:
    assert raw(db_path, "PRAGMA journal_mode") == [("wal",)]
    assert raw(db_path, "PRAGMA user_version") == [(sqlite_schema.SCHEMA_VERSION,)]
    assert raw(db_path, "PRAGMA application_id") == [(sqlite_schema.APPLICATION_ID,)]


def test_opening_reports_the_migrations_it_applied(db_path: Path) -> None:
    """What `sourcebook migrate` prints: every version for a new file, none once it is current."""
    with SQLiteStore(db_path) as first:
        assert first.migration.applied == tuple(range(1, sqlite_schema.SCHEMA_VERSION + 1))
        assert first.for_tenant("acme").migration == first.migration
    with SQLiteStore(db_path) as again:
        assert again.migration.applied == ()
        assert again.migration.version == sqlite_schema.SCHEMA_VERSION


def test_reopening_keeps_data(store: SQLiteStore, db_path: Path) -> None:
    put(store, "d1", ["kept text"])
    store.close()
    with SQLiteStore(db_path) as reopened:
        assert [c.text for c in reopened.document_chunks("d1")] == ["kept text"]


def test_corrupt_file_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(StoreError, match="corrupt.db"):
        SQLiteStore(path)


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreError, match="other.db.*not a Sourcebook database"):
        SQLiteStore(path)


def test_newer_schema_is_refused(store: SQLiteStore, db_path: Path) -> None:
    store.close()
    raw(db_path, f"PRAGMA user_version = {sqlite_schema.SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="upgrade Sourcebook"):
        SQLiteStore(db_path)


def test_opening_does_not_wait_for_a_writer(store: SQLiteStore, db_path: Path) -> None:
    """An up-to-date file is opened without the write lock another process may hold."""
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        start = time.perf_counter()
        SQLiteStore(db_path).close()
        assert time.perf_counter() - start < 2.0
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_closed_store_raises(store: SQLiteStore) -> None:
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.collections()


# The keyword index ---------------------------------------------------------------------------
def term_rows(db_path: Path, term: str | None = None) -> list[int]:
    """Chunk seqs with stored term counts (containing `term`, when given)."""
    rows = raw(db_path, "SELECT chunk_seq, term_ids FROM chunk_terms")
    if term is None:
        return sorted(seq for seq, _ in rows)
    found = raw(db_path, f"SELECT id FROM terms WHERE term = '{term}'")
    if not found:
        return []
    wanted = found[0][0]
    return sorted(seq for seq, blob in rows if wanted in np.frombuffer(blob, dtype=np.int32))


def test_keyword_rows_follow_chunks_exactly(store: SQLiteStore, db_path: Path) -> None:
    put(store, "d1", ["alpha", "beta", "gamma"])
    put(store, "d2", ["delta"])
    put(store, "d1", ["epsilon"])
    assert term_rows(db_path) == sorted(row[0] for row in raw(db_path, "SELECT seq FROM chunks"))
    store.delete_document("d2")
    assert len(term_rows(db_path)) == 1
    assert term_rows(db_path, "gamma") == term_rows(db_path, "delta") == []
    assert store.keyword_search("gamma delta", 5, EVERYTHING) == []


def test_compact_drops_terms_no_chunk_holds_and_shrinks_the_file(store: SQLiteStore, db_path: Path) -> None:
    """Deleting keeps the term list (ids stay stable); compact drops the unused terms, and
    a term added afterwards (maybe under a freed id) is searched right."""
    put(store, "d1", ["alpha beta"])
    put(store, "d2", ["gamma delta " * 2000])
    store.delete_document("d2")
    assert raw(db_path, "SELECT count(*) FROM terms WHERE term IN ('gamma', 'delta')") == [(2,)]
    dropped = store.compact()
    assert dropped["terms"] >= 2 and dropped["size_bytes_after"] <= dropped["size_bytes_before"]
    assert raw(db_path, "SELECT count(*) FROM terms WHERE term IN ('gamma', 'delta')") == [(0,)]
    assert [r.chunk_id for r in store.keyword_search("alpha", 5, EVERYTHING)] == ["d1#0"]
    put(store, "d3", ["epsilon"])
    assert [r.chunk_id for r in store.keyword_search("epsilon", 5, EVERYTHING)] == ["d3#0"]
    assert [r.chunk_id for r in store.keyword_search("beta", 5, EVERYTHING)] == ["d1#0"]


def test_renamed_document_leaves_no_old_title_in_the_index(store: SQLiteStore, db_path: Path) -> None:
    put(store, "d1", ["body text"], title="Aardvark")
    store.upsert_document("d1", collection="docs", source="d1", title="Badger", media_type="text/plain",
                          metadata={}, status=DocumentStatus.PROCESSING)
    put(store, "d1", ["body text"], title="Badger")
    assert term_rows(db_path, "aardvark") == []
    assert store.keyword_search("aardvark", 5, EVERYTHING) == []
    assert [r.chunk_id for r in store.keyword_search("badger", 5, EVERYTHING)] == ["d1#0"]


def test_title_given_to_replace_chunks_is_what_keyword_search_matches(store: SQLiteStore) -> None:
    put(store, "d1", ["body text"], title="Aardvark")
    put(store, "d1", ["body text"], title="Badger")  # renamed by the write itself, no upsert first
    assert store.keyword_search("aardvark", 5, EVERYTHING) == []
    assert [r.chunk_id for r in store.keyword_search("badger", 5, EVERYTHING)] == ["d1#0"]


def test_version_one_database_is_migrated_with_its_keyword_index(tmp_path: Path) -> None:
    """A file written by schema 1 (FTS5) gains stored term counts for its existing chunks."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    sqlite_schema.MIGRATIONS[0].apply(conn)
    conn.execute("PRAGMA user_version = 1")
    now = "2026-01-01T00:00:00+00:00"
    conn.execute("INSERT INTO collections VALUES ('docs', 'm', 2, ?)", (now,))
    conn.execute(
        "INSERT INTO documents (id, collection, source, title, media_type, status, chunk_count, metadata, created_at, updated_at)"
        " VALUES ('d1', 'docs', 'd1', 'Zebra facts', 'text/plain', 'ready', 1, '{}', ?, ?)", (now, now))
    conn.execute(
        "INSERT INTO chunks (id, document_id, position, text, prefix, heading_path, page, token_count, content_hash, start, \"end\")"
        " VALUES ('d1#0', 'd1', 0, 'Stripes confuse flies.', '', '[]', NULL, 4, 'h', 0, 22)")
    conn.execute("INSERT INTO vectors VALUES (1, ?)", (np.array([1, 0], dtype=np.float32).tobytes(),))
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        assert [r.chunk_id for r in store.keyword_search("zebra stripes", 5, EVERYTHING)] == ["d1#0"]
    assert raw(path, "PRAGMA user_version") == [(sqlite_schema.SCHEMA_VERSION,)]


def test_version_three_database_moves_to_the_default_tenant_intact(tmp_path: Path) -> None:
    """Migration 4 rebuilds tables with foreign keys off: no chunk, vector or chat turn is lost."""
    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    for migration in sqlite_schema.MIGRATIONS[:3]:
        migration.apply(conn)
    conn.execute("PRAGMA user_version = 3")
    now = "2026-01-01T00:00:00+00:00"
    conn.execute("INSERT INTO collections VALUES ('docs', 'm', 2, ?)", (now,))
    conn.execute(
        "INSERT INTO documents (id, collection, source, title, media_type, status, chunk_count, metadata, created_at, updated_at)"
        " VALUES ('d1', 'docs', 'd1', 'Zebra facts', 'text/plain', 'ready', 1, '{}', ?, ?)", (now, now))
    conn.execute(
        "INSERT INTO chunks (id, document_id, position, text, prefix, heading_path, page, token_count, content_hash, start, \"end\")"
        " VALUES ('d1#0', 'd1', 0, 'Stripes confuse flies.', '', '[]', NULL, 4, 'h', 0, 22)")
    conn.execute("INSERT INTO vectors VALUES (1, ?)", (np.array([1, 0], dtype=np.float32).tobytes(),))
    sqlite_terms.backfill_terms(conn)
    conn.execute("INSERT INTO chat_sessions VALUES ('s1', 'Old chat', ?, ?)", (now, now))
    conn.execute("INSERT INTO chat_messages (session_id, role, content, created_at) VALUES ('s1', 'user', 'hi', ?)", (now,))
    conn.execute("INSERT INTO chat_sessions VALUES ('s2', 'Never asked', ?, ?)", (now, now))
    conn.execute("INSERT INTO chunk_contexts VALUES ('h', 'gen', 'context', ?)", (now,))
    conn.close()
    with SQLiteStore(path) as store:
        assert store.migration.applied == tuple(range(4, sqlite_schema.SCHEMA_VERSION + 1))
        assert [r.chunk_id for r in store.vector_search(np.array([1, 0], dtype=np.float32), 5, EVERYTHING)] == ["d1#0"]
        assert [r.chunk_id for r in store.keyword_search("zebra stripes", 5, EVERYTHING)] == ["d1#0"]
        assert [m.content for m in store.chat_messages("s1")] == ["hi"]
        # a turn taken before sessions recorded their collections may have searched any of them
        assert [store.get_chat_session(s).collections for s in ("s1", "s2")] == [("*",), ()]
        assert store.get_chunk_contexts(["h"], "gen") == {"h": "context"}
        assert store.for_tenant("other").list_documents() == []
        store.delete_document("d1")  # the rebuilt foreign keys still cascade
    assert raw(path, "SELECT count(*) FROM vectors") == [(0,)]
    assert raw(path, "PRAGMA user_version") == [(sqlite_schema.SCHEMA_VERSION,)]


def test_failure_after_the_old_rows_are_gone_rolls_back(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    put(store, "d1", ["old alpha", "old beta"])
    real_insert = sqlite_documents._insert_chunk_rows

    def insert_then_fail(*args: Any) -> None:
        real_insert(*args)
        raise RuntimeError("disk full, say")

    monkeypatch.setattr(sqlite_documents, "_insert_chunk_rows", insert_then_fail)
    with pytest.raises(RuntimeError):
        put(store, "d1", ["new text"])
    assert [c.text for c in store.document_chunks("d1")] == ["old alpha", "old beta"]
    assert {r.chunk_id for r in store.keyword_search("alpha beta", 5, EVERYTHING)} == {"d1#0", "d1#1"}
    assert store.keyword_search("new", 5, EVERYTHING) == []


# Several connections, several threads ----------------------------------------------------------
def test_second_instance_sees_writes_in_vector_search(store: SQLiteStore, db_path: Path) -> None:
    put(store, "d1", ["one"], direction=0)
    with SQLiteStore(db_path) as other:
        assert [r.chunk_id for r in other.vector_search(axis(1), 5, EVERYTHING)] == ["d1#0"]
        put(store, "d2", ["two"], direction=1)
        assert [r.chunk_id for r in other.vector_search(axis(1), 5, EVERYTHING)] == ["d2#0", "d1#0"]
        store.delete_document("d2")
        assert [r.chunk_id for r in other.vector_search(axis(1), 5, EVERYTHING)] == ["d1#0"]


def test_vectors_load_once_then_catch_up_with_writes(store: SQLiteStore) -> None:
    """A write costs its own size: the index reads every row once, then only what changed."""
    put(store, "d1", ["one"])
    store.vector_search(axis(0), 5, EVERYTHING)
    store.vector_search(axis(1), 5, EVERYTHING)
    store.set_status("d1", DocumentStatus.PROCESSING)
    put(store, "d2", ["two"], direction=1)
    assert [r.chunk_id for r in store.vector_search(axis(1), 5, EVERYTHING)] == ["d2#0", "d1#0"]
    put(store, "d1", ["three", "four"], direction=1)
    store.delete_document("d2")
    assert [r.chunk_id for r in store.vector_search(axis(1), 5, EVERYTHING)] == ["d1#0", "d1#1"]
    assert store._index is not None and store._index.full_loads == 1


def test_readers_see_old_or_new_never_a_mix(store: SQLiteStore, db_path: Path) -> None:
    """Versions of 5 and 3 chunks alternate; any other result seen by a reader is a torn read."""
    versions = {5: ("alpha words",) * 5, 3: ("beta words",) * 3}
    put(store, "d1", list(versions[5]))
    other = SQLiteStore(db_path)
    chunk_texts: set[tuple[str, ...]] = set()
    result_counts: set[int] = set()
    done = threading.Event()

    def read(reader: SQLiteStore) -> None:
        while not done.is_set():
            chunk_texts.add(tuple(c.text for c in reader.document_chunks("d1")))
            result_counts.add(len(reader.keyword_search("alpha beta", 10, EVERYTHING)))
            result_counts.add(len(reader.vector_search(axis(0), 10, EVERYTHING)))

    # Two threads share the writer's instance (its lock), one reads through its own connection.
    readers = [threading.Thread(target=read, args=(reader,)) for reader in (store, store, other)]
    for thread in readers:
        thread.start()
    for i in range(40):
        put(store, "d1", list(versions[3 if i % 2 == 0 else 5]))
    done.set()
    for thread in readers:
        thread.join()
    other.close()
    assert chunk_texts and chunk_texts <= set(versions.values())
    assert result_counts and result_counts <= {3, 5}


# Searching ---------------------------------------------------------------------------------------
def test_collections_of_other_dimensions_are_searched_apart(store: SQLiteStore) -> None:
    store.ensure_collection("wide", "wide-model", 8)
    put(store, "narrow", ["text"])
    store.upsert_document("w", collection="wide", source="w", title="W", media_type="text/plain",
                          metadata={}, status=DocumentStatus.PROCESSING)
    store.replace_chunks("w", content_hash="h", title="W", chunks=[Chunk(0, "t", 0, 1, (), None, 1, "")],
                         vectors=axis(0, 8)[None, :])
    assert [r.chunk_id for r in store.vector_search(axis(0, 8), 5, EVERYTHING)] == ["w#0"]
    assert [r.chunk_id for r in store.vector_search(axis(0), 5, EVERYTHING)] == ["narrow#0"]
    with pytest.raises(InvalidQueryError, match="wide"):
        store.vector_search(axis(0), 5, SearchFilter.build(collections="wide"))


def plans_of_statements(store: SQLiteStore, call: Any) -> list[list[str]]:
    """EXPLAIN QUERY PLAN of every SELECT that `call(store)` runs, as SQLite would run it now."""
    statements: list[str] = []
    assert store._db.conn is not None
    database = store._db
    take_reader = database.take_reader
    traced: list[sqlite3.Connection] = [database.conn]

    def traced_reader() -> sqlite3.Connection:  # reads run on connections of their own
        reader = take_reader()
        reader.set_trace_callback(statements.append)
        traced.append(reader)
        return reader

    database.conn.set_trace_callback(statements.append)
    database.take_reader = traced_reader  # type: ignore[method-assign]
    try:
        call(store)
    finally:
        del database.take_reader
        for conn in traced:
            conn.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    with sqlite3.connect(store.path) as conn:
        return [[row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {s}")] for s in selects]


def test_fetching_chunks_by_id_reads_those_chunks_not_every_document(store: SQLiteStore) -> None:
    """The hit fetch of every search: chunks by id first, each one's document by key (with no
    statistics SQLite used to start from all of the tenant's documents and read every chunk)."""
    for i in range(3):
        put(store, f"d{i}", ["alpha", "beta"])
    (plan,) = plans_of_statements(store, lambda s: s.get_chunks(["d1#0", "d2#1"]))
    assert plan[0].startswith("SEARCH c USING INDEX") and "(id=?)" in plan[0]
    assert not any(step.startswith("SCAN") and "json_each" not in step for step in plan)
    assert any(step.startswith("SEARCH d USING") and "(id=?)" in step for step in plan)


@pytest.mark.parametrize("call", [
    lambda s: s.keyword_search("x", 0, EVERYTHING),
    lambda s: s.vector_search(axis(0), 0, EVERYTHING),
    lambda s: s.vector_search(np.zeros(DIM), 5, EVERYTHING),
    lambda s: s.keyword_search("x", 5, SearchFilter.build(metadata={"tags": ["a"]})),
    lambda s: s.keyword_search("x", 5, SearchFilter.build(metadata={'a"b': 1})),
])
def test_malformed_searches_are_refused(store: SQLiteStore, call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidQueryError):
        call(store)


def test_document_writes_are_checked(store: SQLiteStore) -> None:
    with pytest.raises(StoreError, match="ensure_collection"):
        store.upsert_document("d", collection="nope", source="s", title="T", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PENDING)
    put(store, "d1", ["x"])
    with pytest.raises(StoreError, match="already in collection"):
        store.upsert_document("d2", collection="docs", source="d1", title="T", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PENDING)


def test_vector_search_latency_is_measured(store: SQLiteStore, db_path: Path) -> None:
    """Prints p50 on 20,000 x 384 (run with -s to see it); bench/store_latency.py does 100,000."""
    store.ensure_collection("bench", "model", 384)
    rng = np.random.default_rng(0)
    for d in range(20):
        store.upsert_document(f"b{d}", collection="bench", source=f"b{d}", title="T", media_type="text/plain",
                              metadata={}, status=DocumentStatus.PROCESSING)
        vectors = rng.standard_normal((1000, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        chunks = [Chunk(i, "x", 0, 1, (), None, 1, "") for i in range(1000)]
        store.replace_chunks(f"b{d}", content_hash="h", title="T", chunks=chunks, vectors=vectors)
    queries = rng.standard_normal((30, 384)).astype(np.float32)
    store.vector_search(queries[0], 10, EVERYTHING)  # first load
    timings = []
    for query in queries:
        start = time.perf_counter()
        assert len(store.vector_search(query, 10, EVERYTHING)) == 10
        timings.append(time.perf_counter() - start)
    print(f"vector_search p50 at 20,000 x 384: {statistics.median(timings) * 1000:.2f} ms")


# The registry ------------------------------------------------------------------------------------
def test_open_store_takes_paths_and_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cases: list[tuple[str | Path, Path]] = [
        (tmp_path / "a.db", tmp_path / "a.db"),
        ("b.db", tmp_path / "b.db"),
        ("sqlite:///c.db", tmp_path / "c.db"),
        (f"sqlite:///{tmp_path / 'd.db'}", tmp_path / "d.db"),
    ]
    for target, expected in cases:
        opened = open_store(target)
        assert isinstance(opened, SQLiteStore)
        opened.close()
        assert expected.exists()


@pytest.mark.parametrize(("url", "message"), [
    ("mongodb://host/db", "no store handles mongodb://"),
    ("sqlite://", "bad SQLite URL"),
])
def test_open_store_refuses_what_it_cannot_open(url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        open_store(url)


def test_registered_factories_receive_the_url(store: SQLiteStore) -> None:
    received: list[str] = []

    def factory(url: str) -> SQLiteStore:
        received.append(url)
        return store

    with stores.STORES.isolated():
        stores.register_store("memo", factory)
        assert open_store("memo://anything") is store
    assert received == ["memo://anything"]
