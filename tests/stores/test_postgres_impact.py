"""The Postgres keyword query reads each term's head of impact-ordered postings (keywords.py,
`impact_sql`): its work is bounded by the head, not by the postings of its terms; its hits
carry their exact BM25 scores; where the heads hold every posting it is the exhaustive
statement; tenants see only their own postings; an older database gains the index on open."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest

from sourcebook.models import ScoredId, SearchFilter
from sourcebook.stores.bm25 import query_terms
from sourcebook.stores.postgres import PostgresStore, keywords
from sourcebook.stores.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from sourcebook.testing.helpers import DIM, MODEL, add_document

EVERYTHING = SearchFilter()
IMPACT_VERSION = next(i for i, m in enumerate(MIGRATIONS, 1) if m.name == "keyword_impact_order")
QUERIES = ("alpha", "alpha beta", "beta gamma delta", "alpha gamma title", "delta")


def fill(store: PostgresStore, documents: int, seed: int) -> None:
    """Documents of three chunks where "alpha" is in every chunk, "beta" in about half, with
    varying counts and lengths (so impact order, BM25 order and chunk order all differ)."""
    rng = random.Random(seed)
    store.ensure_collection("docs", MODEL, DIM)
    for d in range(documents):
        texts = []
        for _ in range(3):
            words = ["alpha"] * rng.randint(1, 4) + ["beta"] * rng.choice([0, 0, 1, 3])
            words += rng.choices(["gamma", "delta", "filler", "other", "words"], k=rng.randint(0, 25))
            rng.shuffle(words)
            texts.append(" ".join(words))
        add_document(store, f"{store.tenant}-d{d}", texts)


def analyze(dsn: str) -> None:
    """Table statistics, as autovacuum keeps them: without them the planner guesses one row per
    table and may look a chunk's postings up through the impact index instead of the key."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE chunk_terms")


def exhaustive(store: PostgresStore, query: str, k: int) -> list[tuple[str, float]]:
    with store.transaction() as conn:
        return conn.execute(keywords.keyword_sql(""), (query_terms(query), k)).fetchall()


def assert_same(hits: list[ScoredId], expected: list[tuple[str, float]]) -> None:
    """The same chunks in the same order, scores equal but for the order of summing."""
    assert [h.chunk_id for h in hits] == [id_ for id_, _ in expected]
    assert [h.score for h in hits] == pytest.approx([score for _, score in expected], rel=1e-12)


def postings_read(store: PostgresStore, statement: str, values: tuple[Any, ...]) -> tuple[int, set[str]]:
    """Rows the statement's plan read from ``chunk_terms`` (over all loops), and the indexes it used."""
    def walk(node: dict[str, Any]) -> tuple[int, set[str]]:
        rows = node["Actual Rows"] * node["Actual Loops"] if node.get("Relation Name") == "chunk_terms" else 0
        used = {node["Index Name"]} if "Index Name" in node else set()
        for child in node.get("Plans", []):
            more, names = walk(child)
            rows, used = rows + more, used | names
        return int(rows), used

    with store.transaction() as conn:
        plan = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", values).fetchone()[0]  # type: ignore[index]
    return walk(plan[0]["Plan"])


def test_a_frequent_term_reads_its_head_not_every_posting(
    migrated_postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"alpha" is in all 90 chunks; with heads of 5 the query reads at most 5 postings per term
    and each term's postings of the at most 10 chunks the heads name, where the exhaustive
    statement reads 90."""
    monkeypatch.setattr(keywords, "HEAD", 5)
    with PostgresStore(migrated_postgres_dsn) as store:
        fill(store, 30, seed=1)
        analyze(migrated_postgres_dsn)
        terms, k = query_terms("alpha beta"), 3
        read, indexes = postings_read(store, *keywords.keyword_statement(terms, k, EVERYTHING))
        assert "chunk_terms_impact" in indexes
        assert read <= 5 * len(terms) + 5 * len(terms) * len(terms)
        everything, _ = postings_read(store, keywords.keyword_sql(""), (terms, k))
        assert everything >= 90


def test_hits_carry_exact_scores_and_full_heads_are_the_exhaustive_ranking(
    migrated_postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With heads cut short, every hit's score is its exact BM25 score (every query term's
    postings of the chunks the heads name read); with heads that hold every posting, ids, order and scores are the
    exhaustive statement's."""
    with PostgresStore(migrated_postgres_dsn) as store:
        fill(store, 20, seed=2)
        for query in QUERIES:
            for k in (1, 5, 60):
                assert_same(store.keyword_search(query, k, EVERYTHING), exhaustive(store, query, k))
        monkeypatch.setattr(keywords, "HEAD", 4)
        for query in QUERIES:
            exact = dict(exhaustive(store, query, 1000))
            hits = store.keyword_search(query, 5, EVERYTHING)
            assert len(hits) == 5
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            assert all(h.score == pytest.approx(exact[h.chunk_id], rel=1e-12) for h in hits)


def test_a_tenant_reads_only_its_own_heads(migrated_postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another tenant's postings of higher impact never fill a tenant's heads (row-level
    security scopes the index scan): with heads of 3 a tenant still gets its own best chunks."""
    monkeypatch.setattr(keywords, "HEAD", 3)
    with PostgresStore(migrated_postgres_dsn, tenant="acme") as acme:
        globex = acme.for_tenant("globex")
        assert isinstance(globex, PostgresStore)
        globex.ensure_collection("docs", MODEL, DIM)
        for d in range(10):
            add_document(globex, f"globex-{d}", ["delta " * 8])
        acme.ensure_collection("docs", MODEL, DIM)
        add_document(acme, "acme-1", ["delta words", "other delta delta"])
        hits = acme.keyword_search("delta", 5, EVERYTHING)
        assert_same(hits, exhaustive(acme, "delta", 5))
        assert {h.chunk_id.split("#")[0] for h in hits} == {"acme-1"}


def test_an_older_database_gains_the_impact_index_on_open(migrated_postgres_dsn: str) -> None:
    """A database written before migration keyword_impact_order (made by undoing it): opening
    applies it, the index orders the postings already there, and searches are unchanged."""
    with PostgresStore(migrated_postgres_dsn) as store:
        fill(store, 10, seed=3)
        before = [[(h.chunk_id, h.score) for h in store.keyword_search(q, 10, EVERYTHING)] for q in QUERIES]
    with psycopg.connect(migrated_postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP INDEX chunk_terms_impact")
        conn.execute("DELETE FROM schema_migrations WHERE version >= %s", (IMPACT_VERSION,))
    with PostgresStore(migrated_postgres_dsn) as store:
        assert store.migration.applied == tuple(range(IMPACT_VERSION, SCHEMA_VERSION + 1))
        for query, hits in zip(QUERIES, before):
            assert_same(store.keyword_search(query, 10, EVERYTHING), hits)
    with psycopg.connect(migrated_postgres_dsn) as conn:
        valid = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = 'chunk_terms_impact'::regclass")
        assert valid.fetchone() == (True,)
