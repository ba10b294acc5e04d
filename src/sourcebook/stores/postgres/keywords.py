"""Keyword search on the Postgres store: Okapi BM25 in one SQL statement over the postings.

``chunk_terms`` holds each chunk's postings (term, tf, chunk length), written with the
chunk from the analyser the SQLite store uses (stores/bm25.py), so both rank alike.
Document frequencies, chunk count and mean length are the tenant's own, read from the
counter rows triggers keep (keyword_stats.py): a query reads a few small rows for them
instead of scanning every chunk, and no shared statistics row serialises writers.

Why two statements: summing every posting of the query's terms (`keyword_sql`) costs time in
proportion to the corpus (59k postings per query at 100k chunks, 228k at most). An unfiltered
query instead reads each term's `HEAD` postings of highest BM25 term weight from the
``chunk_terms_impact`` index (`impact_sql`) and scores every chunk they name exactly, with all
the query's terms. A term of `HEAD` postings or fewer is read whole, so a query of only such
terms is exact; a chunk in no term's head is not found, which README "Postgres keyword search
at scale" measures as recall against the exhaustive statement. A filtered query keeps the
exhaustive statement: a term's head need not hold a chunk the filter lets through.
"""

from __future__ import annotations

from typing import Any

from ...models import ScoredId, SearchFilter, TermStatistics
from ..bm25 import B, K1, query_terms
from ..common import check_k
from ..sql.base import SharedSql
from .filters import filter_sql
from .keyword_stats import STATISTICS_CTE

HEAD = 2000
"""Postings read per query term, highest impact first (README: recall against exhaustive)."""
REFERENCE_LENGTH = 130
"""The mean chunk length (terms) the impact order assumes. The order is BM25's term weight
under this mean, not the tenant's live one (an index expression must be immutable); the
exact score of a hit uses the live mean. Chunks of at most 256 model tokens (settings'
chunk_max_tokens) measured a mean of 130 terms (bench/scale.py's 100k SciFact-derived chunks)."""
IMPACT = f"(tf::float8 / (tf::float8 + {K1 * (1 - B)!r} + {K1 * B / REFERENCE_LENGTH!r} * length::float8))"
"""A posting's BM25 term weight over (k1 + 1), with `REFERENCE_LENGTH` for the mean length:
the order of ``chunk_terms_impact`` (schema.py), and the ORDER BY that reads it."""
IMPACT_INDEX = (
    f"CREATE INDEX IF NOT EXISTS chunk_terms_impact ON chunk_terms (tenant, term, ({IMPACT}) DESC) "
    "INCLUDE (chunk_seq, tf, length)"
)
"""tf and length are included although a head reads only chunk_seq: without them in the index the
planner cannot read the ORDER BY's expression from it (no index-only scan), and it measured
sorting every posting of the term off the primary key instead."""


def weight(p: str) -> str:
    """BM25's weight of posting `p` for its term, with the live `idf` and `totals` rows. The
    length is multiplied as float8, not numeric (as ``0.75 * integer`` would be): the same
    value, since b times an integer is exact in both, without a numeric operation per posting."""
    return f"idf.idf * {p}.tf * {K1 + 1} / ({p}.tf + {K1} * (1 - {B} + {B} * {p}.length::float8 / totals.mean))"


class PostgresKeywords(SharedSql):
    """The keyword half of the `SearchStore` role."""

    def keyword_search(self, query: str, k: int, filters: SearchFilter) -> list[ScoredId]:
        """BM25 over title, heading path and text; any-term (OR) matching."""
        check_k(k)
        terms = query_terms(query)
        if not terms:
            return []
        statement, values = keyword_statement(terms, k, filters)
        with self._read() as conn:
            rows = conn.execute(statement, values).fetchall()
        return [ScoredId(id_, rank, float(score)) for rank, (id_, score) in enumerate(rows, 1)]

    def term_statistics(self, query: str) -> TermStatistics:
        """The tenant's live chunk count and each query term's document frequency, from the
        counters `keyword_sql` reads (row-level security scopes them to the tenant)."""
        terms = query_terms(query)
        with self._read() as conn:
            rows = conn.execute(
                f"""WITH {STATISTICS_CTE}
                    SELECT NULL, totals.n FROM totals UNION ALL SELECT term, df FROM frequencies""", (terms,)
            ).fetchall()
        counts = {term: int(n) for term, n in rows}
        return TermStatistics(counts.pop(None), {t: counts.get(t, 0) for t in terms})


def keyword_statement(terms: list[str], k: int, filters: SearchFilter) -> tuple[str, tuple[Any, ...]]:
    """The statement `keyword_search` runs and its parameters: `impact_sql` unless filtered,
    with heads of at least k postings (so a one-term query has k hits to give)."""
    where, params = filter_sql(filters)
    if where:
        return keyword_sql(where), (terms, *params, k)
    return impact_sql(max(HEAD, k)), (terms, k)


_IDF = f"""{STATISTICS_CTE},
        idf AS (
            SELECT f.term, f.df, greatest(ln((totals.n - f.df + 0.5) / (f.df + 0.5)), 1e-6) AS idf
            FROM frequencies f, totals)"""
_HITS = "SELECT c.id, s.score FROM scored s JOIN chunks c ON c.seq = s.chunk_seq ORDER BY s.score DESC, s.chunk_seq"


def keyword_sql(where: str) -> str:
    """Okapi BM25 as the SQLite store computes it, summed over every posting of the query's
    terms (parameters: query terms, filter values, k).

    idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6; N, n and the mean length are
    the tenant's counters (keyword_stats.py; row-level security scopes every table read
    here). Ties go to the earlier-written chunk, as in the SQLite store.
    """
    filtered = f"JOIN chunks c ON c.seq = p.chunk_seq WHERE true {where}" if where else ""
    return f"""
        WITH {_IDF},
        scored AS (
            SELECT p.chunk_seq, sum({weight('p')}) AS score
            FROM chunk_terms p JOIN idf ON idf.term = p.term CROSS JOIN totals {filtered}
            GROUP BY p.chunk_seq ORDER BY score DESC, p.chunk_seq LIMIT %s)
        {_HITS}"""


def impact_sql(head: int) -> str:
    """BM25 of the chunks the query terms' heads name (parameters: query terms, k): the same
    scores as `keyword_sql` for the chunks it returns.

    ``named``: the chunks (sorted) of each term's `head` postings of highest `IMPACT` (``h``,
    an index-only scan of ``chunk_terms_impact``); ``scored``: every query term's postings of
    those chunks (``p``), read by one scan of the postings' primary key per term with
    ``chunk_seq = ANY`` (a btree skips between the chunks asked for, so the scan reads at most
    the leaf pages those chunks are on, however many postings the term has); OFFSET 0 keeps
    the planner from joining the whole terms' postings instead.
    """
    return f"""
        WITH {_IDF},
        named AS MATERIALIZED (
            SELECT array_agg(DISTINCT h.chunk_seq ORDER BY h.chunk_seq) AS seqs FROM idf CROSS JOIN LATERAL (
                SELECT chunk_seq FROM chunk_terms WHERE term = idf.term
                ORDER BY {IMPACT} DESC LIMIT {int(head)}) h),
        scored AS (
            SELECT p.chunk_seq, sum({weight('p')}) AS score
            FROM idf CROSS JOIN named CROSS JOIN LATERAL (
                SELECT chunk_seq, tf, length FROM chunk_terms
                WHERE term = idf.term AND chunk_seq = ANY(named.seqs) OFFSET 0) p CROSS JOIN totals
            GROUP BY p.chunk_seq ORDER BY score DESC, p.chunk_seq LIMIT %s)
        {_HITS}"""
