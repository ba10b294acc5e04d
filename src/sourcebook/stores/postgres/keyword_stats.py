"""BM25's corpus statistics on the Postgres store, kept as insert-only counter rows.

Why: a keyword query needs the tenant's chunk count N, their mean length and each query
term's document frequency n. Counted live (``count(*)``, ``avg(length) FROM chunks`` and
``count(*)`` over a term's postings) they cost a scan of every chunk row per query: about
three quarters of a keyword search at 100k chunks (README, "Postgres keyword search at
scale"). Here they are sums of small rows instead:

* ``keyword_totals`` (chunks, length) and ``keyword_frequencies`` (term, chunks) get one
  row per write statement and tenant (per term), signed: +count for inserted rows, -count
  for deleted ones. Statement-level triggers with transition tables write them, so every
  path that adds or deletes chunks or postings counts, ON DELETE CASCADE from a document or
  collection included, in the writer's own transaction: a reader's snapshot sees the
  counters and the postings they count together, so the statistics are exact (the same N, n
  and mean length as counted live, which `tests/stores/test_postgres_keywords.py` checks).
* Writers only insert, so no counter row serialises them (an UPDATE of one per-tenant row
  would: each writer would wait for the last one's commit).
* `fold` replaces a tenant's pending rows by their sums once they are many
  (`FOLD_AFTER` writes), so a query reads a few rows per term. It runs in a write's transaction
  under a per-tenant transaction advisory lock it only tries to take: a writer that finds
  another folding skips its turn instead of waiting, and two folds never delete the same rows.
  Rows of writers not yet committed are invisible to a fold and stay for the next one.
"""

from __future__ import annotations

import psycopg

STATISTICS_TABLES = ("keyword_totals", "keyword_frequencies")
FOLD_AFTER = 100
"""Rows of a tenant's ``keyword_totals`` (one per write statement: a document's chunks, a
delete) that make a write fold: a term then reads at most about this many rows, a write's
check reads at most this many small rows, and a fold's scan of the tenant's frequency rows
(no index marks the pending ones: it would cost every write one more index entry per term)
comes once per several dozen writes."""
_FOLD_LOCK = 0x53424B46  # "SBKF": the advisory lock class of folds (tenant hash as second key)

TABLE_COLUMNS = {
    "keyword_totals": "chunks bigint NOT NULL, length bigint NOT NULL",
    "keyword_frequencies": "term text NOT NULL, chunks bigint NOT NULL, folded boolean NOT NULL DEFAULT false",
}
INDEXES = (
    "CREATE INDEX IF NOT EXISTS keyword_totals_tenant ON keyword_totals (tenant) INCLUDE (chunks, length)",
    "CREATE INDEX IF NOT EXISTS keyword_frequencies_term ON keyword_frequencies (tenant, term) INCLUDE (chunks)",
)

_COUNTERS = {
    # table the trigger watches: the counter rows one changed (transition) table adds, signed by :sign
    "chunks": "INSERT INTO keyword_totals (tenant, chunks, length) "
              "SELECT tenant, sign * count(*), sign * sum(length) FROM changed GROUP BY tenant",
    "chunk_terms": "INSERT INTO keyword_frequencies (tenant, term, chunks) "
                   "SELECT tenant, term, sign * count(*) FROM changed GROUP BY tenant, term",
}


def _trigger_statements(table: str, counter: str) -> tuple[str, ...]:
    function = f"sourcebook_count_{table}"
    return (
        f"""CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
            BEGIN {counter}; RETURN NULL; END $$""",
        f"""CREATE OR REPLACE TRIGGER {table}_counted_in AFTER INSERT ON {table} REFERENCING NEW TABLE AS changed
            FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
        f"""CREATE OR REPLACE TRIGGER {table}_counted_out AFTER DELETE ON {table} REFERENCING OLD TABLE AS changed
            FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
    )


COUNTING = tuple(statement for table, counter in _COUNTERS.items() for statement in _trigger_statements(table, counter))
"""The triggers that keep the counters. Created before `BACKFILL` in one transaction: their
lock on chunks and chunk_terms holds other writers off until the counts commit with them.
Like every migration since the 4th, all of it may run again (schema.py)."""

_LIFTED = ("chunks", "chunk_terms", *STATISTICS_TABLES)
BACKFILL = (
    # The tables' owner is bound by FORCE ROW LEVEL SECURITY (schema.py) and the migration runs
    # with no tenant set: lifted for this transaction so every tenant's rows are counted.
    *(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY" for table in _LIFTED),
    *(f"DELETE FROM {table}" for table in STATISTICS_TABLES),  # run again (its record lost): counted anew
    "INSERT INTO keyword_totals (tenant, chunks, length) SELECT tenant, count(*), sum(length) FROM chunks GROUP BY tenant",
    "INSERT INTO keyword_frequencies (tenant, term, chunks, folded) "
    "SELECT tenant, term, count(*), true FROM chunk_terms GROUP BY tenant, term",
    *(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY" for table in _LIFTED),
)
"""Counts of what the database already holds, when the migration adds the counters."""

STATISTICS_CTE = """
    totals AS (SELECT coalesce(sum(chunks), 0)::float8 AS n,
                      coalesce(sum(length)::float8 / nullif(sum(chunks), 0), 1) AS mean FROM keyword_totals),
    frequencies AS (SELECT term, sum(chunks)::float8 AS df FROM keyword_frequencies
                    WHERE term = ANY(%s) GROUP BY term HAVING sum(chunks) > 0)"""
"""``totals`` (N, mean length) and ``frequencies`` (term, n > 0) of the tenant (row-level
security scopes both); one parameter: the query terms. The mean is sum / count in float8,
the quotient the SQLite store computes (index/keywords.py)."""


def fold(conn: psycopg.Connection) -> None:
    """Sum the tenant's pending counter rows into one row per term (and one total), if its
    total rows are `FOLD_AFTER` or more and no other transaction of the tenant is folding."""
    pending = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM keyword_totals LIMIT %s) p", (FOLD_AFTER,)
    ).fetchone()[0]  # type: ignore[index]
    if pending < FOLD_AFTER:
        return
    locked = conn.execute(
        "SELECT pg_try_advisory_xact_lock(%s, hashtext(current_setting('sourcebook.tenant')))", (_FOLD_LOCK,)
    ).fetchone()[0]  # type: ignore[index]
    if not locked:
        return
    conn.execute(
        """WITH gone AS (DELETE FROM keyword_totals RETURNING chunks, length)
           INSERT INTO keyword_totals (chunks, length) SELECT sum(chunks), sum(length) FROM gone HAVING count(*) > 0"""
    )
    conn.execute(
        """WITH gone AS (DELETE FROM keyword_frequencies
                         WHERE term IN (SELECT term FROM keyword_frequencies WHERE NOT folded)
                         RETURNING term, chunks)
           INSERT INTO keyword_frequencies (term, chunks, folded)
           SELECT term, sum(chunks), true FROM gone GROUP BY term HAVING sum(chunks) <> 0"""
    )
