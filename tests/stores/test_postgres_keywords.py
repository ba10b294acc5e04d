"""The Postgres store's keyword search (postgres/keywords.py, keyword_stats.py): its counter rows
stay exactly the live counts through every write, it ranks as the SQLite store does, a query
reads no chunk row but its hits', and an older database gains the counters in place."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sourcebook.models import SearchFilter
from sourcebook.stores import SQLiteStore, Store
from sourcebook.stores.bm25 import query_terms
from sourcebook.stores.postgres import PostgresStore, keyword_stats
from sourcebook.stores.postgres.keywords import keyword_sql
from sourcebook.stores.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from sourcebook.tenants import DEFAULT_TENANT
from sourcebook.testing.helpers import DIM, MODEL, add_document

EVERYTHING = SearchFilter()
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
QUERIES = ("alpha", "beta gamma", "mu lambda alpha", "zeta theta iota kappa", "eta", "title")
STATISTICS_VERSION = next(i for i, m in enumerate(MIGRATIONS, 1) if m.name == "keyword_statistics")


def random_texts(rng: random.Random) -> list[str]:
    """One to four chunks of one to twelve words from a vocabulary of rng's choosing (so
    frequencies, lengths and term counts vary)."""
    return [" ".join(rng.choice(WORDS[: rng.randint(3, len(WORDS))]) for _ in range(rng.randint(1, 12)))
            for _ in range(rng.randint(1, 4))]


def random_writes(stores: list[Store], seed: int, steps: int) -> Iterator[None]:
    """The same random adds, re-ingests, deletes and collection deletes on every store; yields
    after each write. Document ids are global: a tenant's but the default's carry its name."""

    def own(store: Store, document_id: str) -> str:
        return document_id if store.tenant == DEFAULT_TENANT else f"{store.tenant}-{document_id}"

    rng = random.Random(seed)
    for store in stores:
        store.ensure_collection("docs", MODEL, DIM)
        store.ensure_collection("other", MODEL, DIM)
    live: dict[str, str] = {}
    for step in range(steps):
        action = rng.random()
        if live and action < 0.2:
            document_id = rng.choice(sorted(live))
            for store in stores:
                store.delete_document(own(store, document_id))
            del live[document_id]
        elif action < 0.25 and "other" in live.values():
            for store in stores:
                store.delete_collection("other")
                store.ensure_collection("other", MODEL, DIM)
            live = {d: c for d, c in live.items() if c != "other"}
        else:  # a new document, or a re-ingest of one (its chunks replaced)
            document_id = rng.choice(sorted(live)) if live and action < 0.4 else f"d{step}"
            collection = live.get(document_id) or rng.choice(["docs", "other"])
            texts = random_texts(rng)
            for store in stores:
                add_document(store, own(store, document_id), texts, collection=collection, title=f"Title {document_id}")
            live[document_id] = collection
        yield


def counters_and_live_counts(dsn: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per tenant, (chunks, length sum, {term: n}) from the counter rows and counted live, read
    by the superuser login (every tenant) in one snapshot."""
    with psycopg.connect(dsn) as conn:
        counted = {
            tenant: (int(n), int(length), {}) for tenant, n, length in conn.execute(
                "SELECT tenant, sum(chunks), sum(length) FROM keyword_totals GROUP BY tenant HAVING sum(chunks) <> 0")
        }
        for tenant, term, n in conn.execute(
                "SELECT tenant, term, sum(chunks) FROM keyword_frequencies GROUP BY 1, 2 HAVING sum(chunks) <> 0"):
            counted[tenant][2][term] = int(n)
        live = {tenant: (int(n), int(length), {}) for tenant, n, length in conn.execute(
            "SELECT tenant, count(*), sum(length) FROM chunks GROUP BY tenant")}
        for tenant, term, n in conn.execute("SELECT tenant, term, count(*) FROM chunk_terms GROUP BY 1, 2"):
            live[tenant][2][term] = int(n)
    return counted, live


@pytest.mark.parametrize("fold_after", [keyword_stats.FOLD_AFTER, 1, 7])
def test_counters_stay_the_live_counts_through_every_write(
    migrated_postgres_dsn: str, monkeypatch: pytest.MonkeyPatch, fold_after: int
) -> None:
    """Two tenants writing alike, folded never, at every write or now and then: after each write
    the counters are the live chunk count, length sum and document frequencies."""
    monkeypatch.setattr(keyword_stats, "FOLD_AFTER", fold_after)
    with PostgresStore(migrated_postgres_dsn, tenant="acme") as store:
        for _ in random_writes([store, store.for_tenant("globex")], seed=fold_after, steps=40):
            counted, live = counters_and_live_counts(migrated_postgres_dsn)
            assert counted == live
            with psycopg.connect(migrated_postgres_dsn) as conn:
                rows = conn.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM keyword_totals GROUP BY tenant)").fetchone()[0]  # type: ignore[index]
            assert rows < max(fold_after, 2)  # folded when due


def test_concurrent_writers_and_folds_keep_the_counters_exact(
    migrated_postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers of one tenant at once, each folding after every write: a fold skips rows of writers
    not yet committed and never waits for another fold, and nothing is counted twice or lost."""
    monkeypatch.setattr(keyword_stats, "FOLD_AFTER", 1)
    with PostgresStore(migrated_postgres_dsn) as store:
        store.ensure_collection("docs", MODEL, DIM)

        def writer(number: int) -> None:
            rng = random.Random(number)
            for i in range(12):
                add_document(store, f"w{number}-{i % 5}", random_texts(rng))  # re-ingests too
                if i % 4 == 3:
                    store.delete_document(f"w{number}-{i % 5}")

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(writer, range(4)))
        counted, live = counters_and_live_counts(migrated_postgres_dsn)
        assert counted == live


@pytest.mark.parametrize("seed", range(3))
def test_ranking_and_statistics_are_the_sqlite_stores(migrated_postgres_dsn: str, tmp_path: Path, seed: int) -> None:
    """The same writes into both stores: every query returns the same chunks in the same order
    (ties to the earlier-written chunk), with the same scores and term statistics."""
    with PostgresStore(migrated_postgres_dsn) as postgres, SQLiteStore(tmp_path / "kb.db") as sqlite:
        for step, _ in enumerate(random_writes([postgres, sqlite], seed=seed, steps=30)):
            if step % 5:
                continue
            for query in QUERIES:
                for filters in (EVERYTHING, SearchFilter.build(collections="other")):
                    theirs = sqlite.keyword_search(query, 8, filters)
                    ours = postgres.keyword_search(query, 8, filters)
                    assert [h.chunk_id for h in ours] == [h.chunk_id for h in theirs]
                    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], rel=1e-5)
                assert postgres.term_statistics(query) == sqlite.term_statistics(query)


def aggregated_relations(store: PostgresStore, query: str, k: int) -> set[str]:
    """The tables read below an Aggregate node of the keyword statement's plan (what it counts or
    sums; the hits' chunk rows are joined above the aggregates)."""
    def read(node: dict[str, Any], aggregated: bool) -> set[str]:
        aggregated = aggregated or node["Node Type"] == "Aggregate"
        own = {node["Relation Name"]} if aggregated and "Relation Name" in node else set()
        return own.union(*(read(child, aggregated) for child in node.get("Plans", [])))

    with store.transaction() as conn:
        plan = conn.execute(f"EXPLAIN (FORMAT JSON) {keyword_sql('')}", (query_terms(query), k)).fetchone()[0]  # type: ignore[index]
    return read(plan[0]["Plan"], False)


def test_a_query_counts_no_chunk_rows(migrated_postgres_dsn: str) -> None:
    """The statistics come from counter rows; before migration keyword_statistics a query
    counted every chunk row (``count(*)``, ``avg(length) FROM chunks``)."""
    with PostgresStore(migrated_postgres_dsn) as store:
        store.ensure_collection("docs", MODEL, DIM)
        for i in range(20):
            add_document(store, f"d{i}", [f"alpha beta {i}", f"gamma {i}", "delta"])
        assert len(store.keyword_search("alpha delta", 3, EVERYTHING)) == 3
        assert aggregated_relations(store, "alpha delta", 3) == {"chunk_terms", *keyword_stats.STATISTICS_TABLES}


def test_an_older_database_gains_exact_counters_and_ranks_the_same(owned_database: tuple[str, str]) -> None:
    """A database written before migration keyword_statistics (made by undoing it), opened by
    the (non-superuser) owner of the schema, whom FORCE ROW LEVEL SECURITY binds: the
    migration counts every tenant's rows, and searches and statistics are what they were."""
    dsn, admin_dsn = owned_database
    with PostgresStore(dsn, tenant="acme") as store:
        views: list[Store] = [store, store.for_tenant("globex")]
        for _ in random_writes(views, seed=11, steps=25):
            pass
        before = [(view.keyword_search(q, 10, EVERYTHING), view.term_statistics(q)) for view in views for q in QUERIES]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("chunks", "chunk_terms"):
            for suffix in ("in", "out"):
                conn.execute(f"DROP TRIGGER {table}_counted_{suffix} ON {table}")
            conn.execute(f"DROP FUNCTION sourcebook_count_{table}()")
        conn.execute("DROP TABLE keyword_totals, keyword_frequencies")
        conn.execute("DELETE FROM schema_migrations WHERE version >= %s", (STATISTICS_VERSION,))
    with PostgresStore(dsn, tenant="acme") as store:
        assert store.migration.applied == tuple(range(STATISTICS_VERSION, SCHEMA_VERSION + 1))
        views = [store, store.for_tenant("globex")]
        after = [(view.keyword_search(q, 10, EVERYTHING), view.term_statistics(q)) for view in views for q in QUERIES]
        assert after == before
        counted, live = counters_and_live_counts(admin_dsn)
        assert counted == live and set(counted) == {"acme", "globex"}
        add_document(store, "later", ["alpha alpha"])  # the triggers count new writes
        counted, live = counters_and_live_counts(admin_dsn)
        assert counted == live
