"""What only the Postgres store has: row-level security proven by hand-written SQL, HNSW
iterative scans, versioned migrations, sentence-window rows and its URL. The shared behaviour
is in sourcebook.testing (run by tests/stores/test_postgres_conformance.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from sourcebook.errors import StoreError
from sourcebook.models import DocumentStatus, SearchFilter
from sourcebook.stores import open_store
from sourcebook.stores.postgres import HnswSettings, PostgresStore, open_postgres, vector_query
from sourcebook.stores.postgres.vectors import candidates, ef_search_sql
from sourcebook.stores.postgres.schema import (
    GENERATION_TABLES,
    MIGRATIONS,
    RLS_ROLE,
    SCHEMA_VERSION,
    TENANT_TABLES,
    WINDOW_TABLES,
)
from sourcebook.testing.helpers import DIM, MODEL, add_document, make_chunks, unit

ROW_TABLES = (*TENANT_TABLES, *WINDOW_TABLES, *GENERATION_TABLES)


def add_windowed(store: PostgresStore, document_id: str, vectors: list[np.ndarray], windows: list[np.ndarray],
                 metadata: dict | None = None) -> None:
    """A ready document of one chunk per vector, `windows[i]` (k, DIM) being chunk i's windows."""
    add_document(store, document_id, [f"{document_id} {i}" for i in range(len(vectors))], vectors=vectors,
                 metadata=metadata)
    store.replace_chunks(
        document_id, content_hash=f"hash-{document_id}", title="A title",
        chunks=make_chunks([f"{document_id} {i}" for i in range(len(vectors))]),
        vectors=np.stack(vectors).astype(np.float32), windows=[w.astype(np.float32) for w in windows],
    )


def count_all(dsn: str, table: str) -> int:
    """Rows of every tenant (the superuser login, no row-level security): rows gone, not hidden."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]


@pytest.fixture
def two_tenants(migrated_postgres_dsn: str) -> Iterator[PostgresStore]:
    """A store whose tenants "acme" and "globex" each hold one document and one chat session."""
    store = PostgresStore(migrated_postgres_dsn, tenant="acme")
    for view in (store, store.for_tenant("globex")):
        view.ensure_collection("docs", MODEL, DIM)
        add_windowed(view, f"{view.tenant}-doc", [unit(1.0), unit(1.0)], [np.stack([unit(0.0, 1.0)] * 3), np.zeros((0, DIM))],
                     metadata={"team": "red"})
        view.create_chat_session("s1", f"{view.tenant} chat")
        view.add_chat_message("s1", "user", f"{view.tenant} question")
        view.put_chunk_contexts({"h": view.tenant}, "gen")
    yield store
    store.close()


def test_a_superuser_dsn_still_runs_under_row_level_security(two_tenants: PostgresStore) -> None:
    """Deliberately no WHERE clause: only the database can be keeping globex's rows out."""
    with two_tenants.transaction() as conn:
        assert conn.execute("SELECT current_user").fetchone() == (RLS_ROLE,)
        for table in ROW_TABLES:
            tenants = conn.execute(f"SELECT DISTINCT tenant FROM {table}").fetchall()
            assert tenants == [("acme",)], table
        assert conn.execute("SELECT count(*) FROM chunks").fetchone() == (2,)
        assert conn.execute("SELECT count(*) FROM chunk_windows").fetchone() == (3,)
    assert count_all(two_tenants.dsn, "chunk_windows") == 6
    assert two_tenants.stats()["window_vectors"] == 3


def test_rows_of_another_tenant_cannot_be_written_or_touched(two_tenants: PostgresStore) -> None:
    with two_tenants.transaction() as conn:
        assert conn.execute("UPDATE documents SET title = 'mine'").rowcount == 1
        assert conn.execute("DELETE FROM chat_sessions").rowcount == 1
        assert conn.execute("SELECT count(*) FROM chat_messages").fetchone() == (0,)  # cascaded
    with pytest.raises(StoreError, match="row-level security"), two_tenants.transaction() as conn:
        conn.execute("INSERT INTO chunk_contexts (tenant, chunk_hash, generator, context, created_at) "
                     "VALUES ('globex', 'x', 'g', 'planted', now())")
    with pytest.raises(StoreError, match="row-level security"), two_tenants.transaction() as conn:
        conn.execute("INSERT INTO chunk_windows (tenant, chunk_seq, number, dimension, embedding) "
                     "SELECT 'globex', seq, 99, dimension, embedding FROM chunks LIMIT 1")
    with two_tenants.transaction() as conn:
        assert conn.execute("DELETE FROM chunk_windows").rowcount == 3
    assert count_all(two_tenants.dsn, "chunk_windows") == 3  # globex's
    globex = two_tenants.for_tenant("globex")
    assert globex.get_document("globex-doc").title == "A title"  # type: ignore[union-attr]
    assert [s.message_count for s in globex.list_chat_sessions()] == [1]


def test_every_table_but_those_the_readme_names_is_under_forced_row_level_security(migrated_postgres_dsn: str) -> None:
    """Issue 17 (smaller): the README lists the tables outside row-level security and why; a
    table added later without a policy would make that list wrong."""
    with psycopg.connect(migrated_postgres_dsn) as conn:
        tables = conn.execute(
            """SELECT c.relname, c.relrowsecurity AND c.relforcerowsecurity,
                      EXISTS (SELECT 1 FROM pg_policies p WHERE p.schemaname = n.nspname AND p.tablename = c.relname)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()"""
        ).fetchall()
    outside = {name for name, forced, policy in tables if not (forced and policy)}
    assert {name for name in outside if not name.startswith("procrastinate_")} == {"api_keys", "schema_migrations"}
    assert {"collections", "documents", "chunks", "usage", "summaries", "search_generations"} <= {
        name for name, *_ in tables} - outside


def test_a_connection_without_a_tenant_sees_nothing(two_tenants: PostgresStore) -> None:
    with psycopg.connect(two_tenants.dsn, autocommit=True) as conn:
        conn.execute(f"SET ROLE {RLS_ROLE}")
        for table in ROW_TABLES:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table


def test_an_owner_login_is_bound_by_forced_row_level_security(owned_database: tuple[str, str]) -> None:
    """The other deployment: the application logs in as the (non-superuser) owner of the schema."""
    owner_dsn, _ = owned_database
    store = PostgresStore(owner_dsn, tenant="acme")
    try:
        for view in (store, store.for_tenant("globex")):
            view.ensure_collection("docs", MODEL, DIM)
            add_document(view, f"{view.tenant}-doc", ["words"])
        with store.transaction() as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("sourcebook_owner_test",)
            assert conn.execute("SELECT DISTINCT tenant FROM chunks").fetchall() == [("acme",)]
    finally:
        store.close()


# HNSW -------------------------------------------------------------------------------------
@pytest.fixture
def crowded(migrated_postgres_dsn: str) -> Iterator[PostgresStore]:
    """3,000 chunks near the query direction and 60 far from it, in a document of their own."""
    store = PostgresStore(migrated_postgres_dsn)
    store.ensure_collection("docs", MODEL, DIM)
    rng = np.random.default_rng(7)
    near = [unit(1.0, *rng.normal(0, 0.2, DIM - 1)) for _ in range(3000)]
    far = [unit(-1.0, *rng.normal(0, 0.2, DIM - 1)) for _ in range(60)]
    add_document(store, "near", [f"near {i}" for i in range(len(near))], vectors=near, metadata={"side": "near"})
    add_document(store, "far", [f"far {i}" for i in range(len(far))], vectors=far, metadata={"side": "far"})
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute("ANALYZE chunks")
    store.ann_min_rows = 0  # searched through the index, as a table past the exact threshold is
    yield store
    store.close()


def _hnsw_rows(store: PostgresStore, k: int, iterative: bool) -> tuple[int, str]:
    """Run the store's vector query for the far side with the planner made to use the index."""
    sql, args = vector_query(unit(1.0), k, SearchFilter.build(metadata={"side": "far"}))
    with store.transaction() as conn:
        conn.execute("SET LOCAL enable_seqscan = off")
        if not iterative:
            conn.execute("SET LOCAL hnsw.iterative_scan = off")
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {sql}", args))
        return len(conn.execute(sql, args).fetchall()), plan


def test_filtered_vector_queries_still_return_k_rows(crowded: PostgresStore) -> None:
    found, plan = _hnsw_rows(crowded, 50, iterative=True)
    assert "chunks_halfvec_hnsw_4" in plan
    assert found == 50
    without, _ = _hnsw_rows(crowded, 50, iterative=False)
    assert without < 50  # what iterative scans fix: ef_search candidates, all filtered away
    results = crowded.vector_search(unit(1.0), 50, SearchFilter.build(metadata={"side": "far"}))
    assert len(results) == 50 and {r.chunk_id.split("#")[0] for r in results} == {"far"}


def test_hnsw_settings_come_from_the_url(migrated_postgres_dsn: str) -> None:
    store = open_postgres(f"{migrated_postgres_dsn}&hnsw_m=8&hnsw_ef_construction=32&hnsw_ef_search=100&pool_size=2")
    try:
        assert (store.hnsw.m, store.hnsw.ef_construction, store.hnsw.ef_search) == (8, 32, 100)
        store.ensure_collection("docs", MODEL, 12)
        with store.transaction() as conn:
            conn.execute(ef_search_sql(), (candidates(10), store.hnsw.ef_search))
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == ("100",)
            definition = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_halfvec_hnsw_12'"
            ).fetchone()[0]
        assert "m='8'" in definition and "ef_construction='32'" in definition
    finally:
        store.close()


def test_ef_search_covers_the_candidates_and_stays_within_pgvector(migrated_postgres_dsn: str) -> None:
    """A small table searches at the candidate count; a fixed value wins over the size rule
    (not over the candidates), and pgvector's maximum caps both."""
    store = PostgresStore(migrated_postgres_dsn)
    try:
        with store.transaction() as conn:
            for k, fixed, expected in ((10, None, 100), (50, None, 100), (10, 300, 300), (100, 40, 200),
                                       (10, 5000, 1000), (1000, None, 1000)):
                conn.execute(ef_search_sql(), (candidates(k), fixed))
                assert conn.execute("SHOW hnsw.ef_search").fetchone() == (str(expected),), (k, fixed)
    finally:
        store.close()


def test_each_dimension_gets_a_halfvec_index_on_chunks_and_none_on_windows(migrated_postgres_dsn: str) -> None:
    store = PostgresStore(migrated_postgres_dsn, hnsw=HnswSettings(m=8))
    try:
        store.ensure_collection("docs", MODEL, DIM)
        store.ensure_collection("wide", MODEL, 12)
        with store.transaction() as conn:
            rows = conn.execute(
                "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%hnsw%'"
            ).fetchall()
        definitions = {name: definition for table, name, definition in rows if table == "chunks"}
        assert set(definitions) == {"chunks_halfvec_hnsw_4", "chunks_halfvec_hnsw_12"}
        assert not [name for table, name, _ in rows if table == "chunk_windows"]
        for dimension in (4, 12):
            definition = definitions[f"chunks_halfvec_hnsw_{dimension}"]
            assert f"halfvec({dimension})" in definition and "halfvec_cosine_ops" in definition
            assert f"WHERE (dimension = {dimension})" in definition and "m='8'" in definition
    finally:
        store.close()


@pytest.fixture
def crowded_windows(migrated_postgres_dsn: str) -> Iterator[PostgresStore]:
    """2,000 chunks whose vectors and windows lie near the query direction, and 60 whose own
    vectors point away from it but whose one window is fairly close."""
    store = PostgresStore(migrated_postgres_dsn)
    store.ensure_collection("docs", MODEL, DIM)
    rng = np.random.default_rng(11)
    near = [unit(1.0, *rng.normal(0, 0.2, DIM - 1)) for _ in range(2000)]
    add_windowed(store, "near", near, [np.stack([unit(1.0, *rng.normal(0, 0.2, DIM - 1))]) for _ in near],
                 metadata={"side": "near"})
    far = [unit(-1.0, *rng.normal(0, 0.2, DIM - 1)) for _ in range(60)]
    add_windowed(store, "far", far, [np.stack([unit(1.0, 1.0, *rng.normal(0, 0.2, DIM - 2))]) for _ in far],
                 metadata={"side": "far"})
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute("ANALYZE chunks")
        conn.execute("ANALYZE chunk_windows")
    store.ann_min_rows = 0  # searched through the index, as a table past the exact threshold is
    yield store
    store.close()


def test_filtered_window_queries_still_return_k_rows(crowded_windows: PostgresStore) -> None:
    found, plan = _hnsw_rows(crowded_windows, 20, iterative=True)
    assert "chunks_halfvec_hnsw_4" in plan and "chunk_windows_pkey" in plan
    assert found == 20
    without, _ = _hnsw_rows(crowded_windows, 20, iterative=False)
    assert without < 20
    results = crowded_windows.vector_search(unit(1.0), 20, SearchFilter.build(metadata={"side": "far"}))
    assert len(results) == 20 and {r.chunk_id.split("#")[0] for r in results} == {"far"}
    assert len({r.chunk_id for r in results}) == 20 and [r.rank for r in results] == list(range(1, 21))
    assert all(r.score > 0.5 for r in results)  # scored by their windows: their own vectors point away
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)


def test_a_small_table_is_searched_exactly_windows_included(migrated_postgres_dsn: str) -> None:
    """Below ann_min_rows vector rows every chunk is scored, so a chunk whose own vector ranks
    beyond the index's candidates is still found by its window; through the index it is not."""
    store = PostgresStore(migrated_postgres_dsn)
    try:
        store.ensure_collection("docs", MODEL, DIM)
        rng = np.random.default_rng(5)
        near = [unit(1.0, *rng.normal(0, 0.3, DIM - 1)) for _ in range(candidates(1) + 50)]
        add_document(store, "near", [f"near {i}" for i in range(len(near))], vectors=near)
        add_windowed(store, "hidden", [unit(-1.0)], [np.stack([unit(1.0)])])
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute("ANALYZE chunks")
            conn.execute("ANALYZE chunk_windows")
        [best] = store.vector_search(unit(1.0), 1, SearchFilter())
        assert best.chunk_id == "hidden#0" and best.score == pytest.approx(1.0, abs=1e-6)
        store.ann_min_rows = 0
        [through_index] = store.vector_search(unit(1.0), 1, SearchFilter())
        assert through_index.chunk_id != "hidden#0"  # the approximation the threshold avoids
    finally:
        store.close()


def test_candidates_are_rescored_exactly_from_their_vectors_and_windows(migrated_postgres_dsn: str) -> None:
    """The index ranks by half precision; the scores are the full-precision cosine of each
    chunk's best vector, a window's when it beats the chunk's own."""
    store = PostgresStore(migrated_postgres_dsn)
    store.ann_min_rows = 0  # through the index (a table this small is otherwise scanned exactly)
    try:
        store.ensure_collection("docs", MODEL, DIM)
        store.ensure_collection("plain", MODEL, DIM)
        add_windowed(store, "windowed", [unit(0.0, 1.0)], [np.stack([unit(1.0)])])
        precise = unit(1.0, 0.0123456, 0.0007)
        add_document(store, "plain", ["no windows"], vectors=[precise], collection="plain")
        hits = store.vector_search(unit(1.0), 5, SearchFilter())
        assert [h.chunk_id for h in hits] == ["windowed#0", "plain#0"]
        assert hits[0].score == pytest.approx(1.0, abs=1e-6)
        assert hits[1].score == pytest.approx(float(precise[0]), abs=1e-6)  # halfvec alone errs by about 1e-4
        assert [h.chunk_id for h in store.vector_search(unit(1.0), 5, SearchFilter(collections=("plain",)))] == [
            "plain#0"]
    finally:
        store.close()


def test_replacing_or_deleting_a_document_drops_its_window_rows(migrated_postgres_dsn: str) -> None:
    store = PostgresStore(migrated_postgres_dsn)
    try:
        store.ensure_collection("docs", MODEL, DIM)
        add_windowed(store, "d1", [unit(1.0)] * 2, [np.stack([unit(0.0, 1.0)] * 4), np.stack([unit(1.0)])])
        add_windowed(store, "d2", [unit(1.0)], [np.stack([unit(0.0, 1.0)] * 2)])
        assert count_all(store.dsn, "chunk_windows") == 7
        add_windowed(store, "d1", [unit(1.0)], [np.stack([unit(0.0, 0.0, 1.0)])])
        assert count_all(store.dsn, "chunk_windows") == 3
        _, _, windows = store.export_chunks("d1")
        assert len(windows) == 1 and np.allclose(windows[0], [unit(0.0, 0.0, 1.0)])
        store.delete_document("d1")
        assert count_all(store.dsn, "chunk_windows") == 2
        store.delete_collection("docs")
        assert count_all(store.dsn, "chunk_windows") == 0
    finally:
        store.close()


# Migrations and opening ------------------------------------------------------------------------
def test_migrations_are_recorded_and_applied_once(fresh_postgres_dsn: str) -> None:
    first = PostgresStore(fresh_postgres_dsn)
    first.close()
    again = PostgresStore(fresh_postgres_dsn)
    again.close()
    assert first.migration.applied == tuple(range(1, SCHEMA_VERSION + 1))
    assert again.migration.applied == ()
    with psycopg.connect(fresh_postgres_dsn) as conn:
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (SCHEMA_VERSION,)


def test_a_database_at_migration_3_migrates_to_windows(migrated_postgres_dsn: str) -> None:
    """Made by undoing migration 4 (it only adds chunk_windows): the old chunks keep their
    search, the dimension already indexed gets its windows index (with the chunks' m), and
    the restricted role is granted the new table."""
    assert SCHEMA_VERSION >= 4
    old = PostgresStore(migrated_postgres_dsn, hnsw=HnswSettings(m=8))
    old.ensure_collection("docs", MODEL, DIM)
    chunks = add_document(old, "old", ["before windows"], vectors=[unit(0.0, 1.0)])
    old.create_chat_session("asked", "t")
    old.add_chat_message("asked", "user", "hi", collections=["docs"])
    old.close()
    with psycopg.connect(migrated_postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE chunk_windows")
        conn.execute("ALTER TABLE chat_sessions DROP COLUMN collections")  # undo chat_session_collections too
        conn.execute("DELETE FROM schema_migrations WHERE version > 3")

    store = PostgresStore(migrated_postgres_dsn)
    try:
        assert store.migration.applied == tuple(range(4, SCHEMA_VERSION + 1))
        with psycopg.connect(migrated_postgres_dsn) as conn:
            definition = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_halfvec_hnsw_4'"
            ).fetchone()[0]  # type: ignore[index]
            old_indexes = conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexname LIKE '%embedding_hnsw%'").fetchone()[0]  # type: ignore[index]
        assert "m='8'" in definition and "WHERE (dimension = 4)" in definition and "halfvec" in definition
        assert old_indexes == 0  # the full-precision pair went with migration halfvec_hnsw
        assert [h.chunk_id for h in store.vector_search(unit(1.0), 5, SearchFilter())] == ["old#0"]
        assert store.windows_for_hashes("docs", [chunks[0].content_hash])[chunks[0].content_hash].shape == (0, DIM)
        add_windowed(store, "new", [unit(0.0, 0.0, 1.0)], [np.stack([unit(1.0), unit(0.0, 0.0, 0.0, 1.0)])])
        hits = store.vector_search(unit(1.0), 5, SearchFilter())
        assert [h.chunk_id for h in hits] == ["new#0", "old#0"] and hits[0].score == pytest.approx(1.0)
        assert store.stats()["window_vectors"] == 2 and store.stats()["schema_version"] == SCHEMA_VERSION
        # a turn taken before sessions recorded their collections may have searched any of them
        assert store.get_chat_session("asked").collections == ("*",)
    finally:
        store.close()


def test_a_newer_schema_is_refused(fresh_postgres_dsn: str) -> None:
    PostgresStore(fresh_postgres_dsn).close()
    with psycopg.connect(fresh_postgres_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (version, description) VALUES (%s, 'future')", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="upgrade Sourcebook"):
        PostgresStore(fresh_postgres_dsn)


def test_open_store_takes_postgres_urls_and_a_tenant(migrated_postgres_dsn: str) -> None:
    store = open_store(migrated_postgres_dsn, tenant="acme")
    try:
        assert isinstance(store, PostgresStore) and store.tenant == "acme"
        assert store.stats()["backend"] == "postgres"
    finally:
        store.close()


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot open Postgres store") as caught:
        open_store("postgresql://me:secret@/db?host=/nonexistent-socket-dir&connect_timeout=2")
    assert "secret" not in str(caught.value)


def test_file_documents_stored_under_a_typed_spelling_migrate_to_their_resolved_path(migrated_postgres_dsn: str) -> None:
    """Migration file_source_resolved_path: a file's source becomes the path its reader recorded,
    its id kept; a URL and a path another document already holds stay as they are."""
    store = PostgresStore(migrated_postgres_dsn)
    store.ensure_collection("docs", MODEL, DIM)
    rows = {  # id -> (source typed, metadata)
        "typed": ("notes/a.md", {"path": "/srv/notes/a.md"}),
        "url": ("https://example.org/a", {"path": "/srv/notes/url"}),
        "twice-typed": ("notes/b.md", {"path": "/srv/notes/b.md"}),
        "twice-resolved": ("/srv/notes/b.md", {"path": "/srv/notes/b.md"}),
    }
    for doc_id, (source, metadata) in rows.items():
        add_document(store, doc_id, ["text"], metadata=metadata)
        store.upsert_document(doc_id, collection="docs", source=source, title="T", media_type="text/markdown",
                              metadata=metadata, status=DocumentStatus.READY)
    store.close()
    version = next(i for i, m in enumerate(MIGRATIONS, 1) if m.name == "file_source_resolved_path")
    with psycopg.connect(migrated_postgres_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version >= %s", (version,))

    store = PostgresStore(migrated_postgres_dsn)
    try:
        assert version in store.migration.applied
        sources = {doc_id: store.get_document(doc_id).source for doc_id in rows}  # type: ignore[union-attr]
        assert sources == {"typed": "/srv/notes/a.md", "url": "https://example.org/a",
                           "twice-typed": "notes/b.md", "twice-resolved": "/srv/notes/b.md"}
    finally:
        store.close()
