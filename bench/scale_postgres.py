"""`bench/scale.py --store postgres`: the same synthetic knowledge base in the Postgres store.

Why a module of its own: scale.py measures whatever store its steps open; only building the
database and reading back every stored vector differ by store, and these are here.

The corpus is bench/latency_100k.py's (`build`, the same parameters as the SQLite mode), written
through the product's `PostgresStore.replace_chunks` (binary COPY per document) into an embedded
PostgreSQL 18 + pgvector server whose data directory is cached under bench/.cache/pg-<key>/.
For speed, and as a user would bulk-load a big collection (PostgreSQL's "Populating a Database"):
the server runs without fsync or frequent checkpoints while it loads (BULK_SETTINGS),
WRITERS threads write documents while the generator makes the next ones; the HNSW index the
store created with the collection and the postings' two term-keyed btrees (DEFERRED_INDEXES) are
dropped before the load and built once after it from their own definitions (the HNSW one by
`schema.ensure_hnsw_index`, the product's DDL), and the foreign-key checks of the chunk tables
are off while it loads (CHECKED_TABLES; the keyword counters' triggers stay on); then VACUUM
ANALYZE, and the server restarts durable with `shared_buffers` raised so the index fits
(SHARED_BUFFERS; PostgreSQL's default of 128 MB holds a tenth of a 1M index).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from latency_100k import CACHE, COLLECTION, build, key_of, load, real_material

from sourcebook import KnowledgeBase
from sourcebook.stores.postgres import PostgresStore
from sourcebook.stores.postgres.embedded import EmbeddedPostgres
from sourcebook.stores.postgres.schema import ensure_hnsw_index, hnsw_index_name

DATABASE = "scale"
SHARED_BUFFERS = "3GB"  # the 1M halfvec index is about 1 GB, the chunk rows it rescores about 2 GB
MAINTENANCE_WORK_MEM = "3GB"  # the whole 1M graph is built in memory (else it spills and slows)
SORT_WORK_MEM = "8GB"
"""maintenance_work_mem for the postings' btrees rebuilt after the load: 87M postings at 1M chunks
sort in memory instead of spilling 5 GB of temporary files per index beside a 30 GB database."""
BLOCK_ROWS = 8192  # chunks per block of the exact scan
WRITERS = 4  # documents written at once (latency_100k.build's writer threads)
BULK_SETTINGS = {"max_wal_size": "1GB", "checkpoint_timeout": "30min"}
"""Server settings while the corpus loads (reset before the server restarts durable): fewer
checkpoints. Autovacuum stays on: the keyword counters' fold deletes and re-inserts a tenant's
pending frequency rows every 100 writes and scans the table to find them, so without it
keyword_frequencies held 27M dead rows (2 GB) at 600k chunks, a fold took 8 s and the load
slowed from about 330 to 130 chunks/s."""
DEFERRED_INDEXES = ("chunk_terms_pkey", "chunk_terms_impact")
"""The postings' two btrees keyed by term: every document's ~900 postings land at random places in
both, so they are dropped for the load and rebuilt by one sort each after it, from their own
definitions (pg_get_constraintdef / pg_get_indexdef: the product's DDL, whatever it is then)."""
CHECKED_TABLES = ("chunks", "chunk_terms", "chunk_windows")
"""Tables whose foreign-key checks (one per inserted row: 87M postings at 1M chunks) are off
during the load: their internal triggers are disabled, the user triggers that keep the keyword
statistics' counters stay on. The store's INSERT ... SELECT joins each row to its chunk or
document, so no row can dangle; the checks are enabled again before anything else writes."""


def cached_server(probe: KnowledgeBase, params: dict[str, Any], rebuild: bool,
                  log: Callable[[str], None]) -> tuple[EmbeddedPostgres, str, dict[str, Any]]:
    """The running server holding the corpus of `params` (built unless cached): (server, DSN of
    its database, the build's record). The caller stops the server."""
    directory = CACHE / f"pg-{key_of(params)}"
    meta = directory.with_name(directory.name + ".json")
    if rebuild or not meta.exists():
        shutil.rmtree(directory, ignore_errors=True)
        meta.write_text(json.dumps({"params": params, "build": load_corpus(probe, params, directory, log)}, indent=2))
    else:
        log(f"using cached {directory}")
    server = EmbeddedPostgres.start(directory)  # durable: the measured writes commit as a user's do
    return server, server.database_dsn(DATABASE), json.loads(meta.read_text())["build"]


def load_corpus(probe: KnowledgeBase, params: dict[str, Any], directory: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Write the corpus through the store with no HNSW index, then build the index once."""
    server = EmbeddedPostgres.start(directory, durable=False)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
        for name, value in BULK_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    server.stop()
    server = EmbeddedPostgres.start(directory, durable=False)  # shared_buffers needs a restart
    try:
        dsn = server.create_database(DATABASE)
        material = real_material(probe, params["n_real"], params["seed"])
        embedder = probe.embedder
        start = time.perf_counter()
        with PostgresStore(dsn) as store:
            store.ensure_collection(COLLECTION, embedder.name, embedder.dimension)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"DROP INDEX {hnsw_index_name(embedder.dimension)}")
                restore = defer_checks(conn)
            built = build(store, embedder, probe.settings, material, params["chunks"], params["per_doc"],
                          params["noise"], params["seed"], writers=WRITERS)
            built["write_s"] = time.perf_counter() - start
            built["writers"] = WRITERS
            log(f"wrote {built['chunks']:,} chunks in {built['write_s']:.0f} s (load {load()})")
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"SET maintenance_work_mem = '{SORT_WORK_MEM}'")
                conn.execute("SET max_parallel_maintenance_workers = 1")
                start = time.perf_counter()
                for statement in restore:
                    conn.execute(statement)
                built["deferred_indexes_s"] = time.perf_counter() - start
                conn.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
                log(f"postings' indexes rebuilt in {built['deferred_indexes_s']:.0f} s (load {load()})")
                start = time.perf_counter()
                conn.execute("VACUUM ANALYZE")
                built["vacuum_s"] = time.perf_counter() - start
                for name in BULK_SETTINGS:
                    conn.execute(f"ALTER SYSTEM RESET {name}")
                built["load_before_index"] = load()
                start = time.perf_counter()
                ensure_hnsw_index(conn, embedder.dimension, store.hnsw.m, store.hnsw.ef_construction)
                built["index_build_s"] = time.perf_counter() - start
                size = conn.execute("SELECT pg_relation_size(%s)", (hnsw_index_name(embedder.dimension),)).fetchone()
                built["index_mb"] = (size[0] if size else 0) / 1e6
                conn.execute("CHECKPOINT")
            log(f"HNSW index built in {built['index_build_s']:.0f} s, {built['index_mb']:.0f} MB (load {load()})")
    finally:
        server.stop()
    built["load_after_index"] = load()
    return built


def defer_checks(conn: psycopg.Connection) -> list[str]:
    """Drop `DEFERRED_INDEXES` and disable the foreign-key checks of `CHECKED_TABLES`; return the
    statements that restore both (the indexes from their definitions as they stand now)."""
    restore = []
    for name in DEFERRED_INDEXES:
        row = conn.execute(
            """SELECT i.indrelid::regclass::text, con.conname IS NOT NULL,
                      coalesce(pg_get_constraintdef(con.oid), pg_get_indexdef(i.indexrelid))
               FROM pg_index i LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid
               WHERE i.indexrelid = to_regclass(%s)""", (name,)).fetchone()
        if row is None:
            raise AssertionError(f"index {name} not found: the store's schema changed; update DEFERRED_INDEXES")
        table, constraint, definition = row
        if constraint:
            conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
            restore.append(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
        else:
            conn.execute(f"DROP INDEX {name}")
            restore.append(definition)
    for table in CHECKED_TABLES:
        conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER ALL")
        conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
        restore.append(f"ALTER TABLE {table} ENABLE TRIGGER ALL")
    return restore


def stored_blocks(dsn: str) -> Iterator[tuple[list[str], np.ndarray, np.ndarray]]:
    """Every chunk's stored vectors, in blocks: (chunk ids, their rows, each chunk's row count),
    a chunk's own vector first, then its windows, as scale.py's exact scan reads them."""
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        conn.execute("SET enable_sort = off")  # a merge join of both primary keys: never a 7 GB sort
        conn.execute("SET enable_hashjoin = off")
        cursor = conn.cursor("every_vector", binary=True)
        cursor.itersize = 20_000
        cursor.execute("SELECT c.id, c.embedding, w.embedding FROM chunks c LEFT JOIN chunk_windows w "
                       "ON w.chunk_seq = c.seq ORDER BY c.seq, w.number")
        ids: list[str] = []
        rows: list[np.ndarray] = []
        counts: list[int] = []
        for chunk_id, own, window in cursor:
            if not ids or ids[-1] != chunk_id:
                if len(ids) >= BLOCK_ROWS:
                    yield ids, np.stack(rows).astype(np.float32), np.array(counts)
                    ids, rows, counts = [], [], []
                ids.append(chunk_id)
                rows.append(own.to_numpy())
                counts.append(1)
            if window is not None:
                rows.append(window.to_numpy())
                counts[-1] += 1
        if ids:
            yield ids, np.stack(rows).astype(np.float32), np.array(counts)


def database_mb(dsn: str) -> float:
    """The database's size on disk (tables, indexes, TOAST), as pg_database_size counts it."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return (row[0] if row else 0) / 1e6
