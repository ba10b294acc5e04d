"""Keyword search on the Postgres store: Okapi BM25 in one SQL statement over the postings.

``chunk_terms`` holds each chunk's postings (term, tf, chunk length), written with the
chunk from the analyser the SQLite store uses (stores/bm25.py), so both rank alike.
Document frequencies, chunk count and mean length are the tenant's own, read from the
counter rows triggers keep (keyword_stats.py): a query reads a few small rows for them
instead of scanning every chunk, and no shared statistics row serialises writers.
"""

from __future__ import annotations

from ...models import ScoredId, SearchFilter, TermStatistics
from ..bm25 import B, K1, query_terms
from ..common import check_k
from ..sql.base import SharedSql
from .filters import filter_sql
from .keyword_stats import STATISTICS_CTE


class PostgresKeywords(SharedSql):
    """The keyword half of the `SearchStore` role."""

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


def keyword_sql(where: str) -> str:
    """Okapi BM25 as the SQLite store computes it (parameters: query terms, filter values, k).

    idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6; N, n and the mean length are
    the tenant's counters (keyword_stats.py; row-level security scopes every table read
    here). Ties go to the earlier-written chunk, as in the SQLite store. The length is
    multiplied as float8, not numeric (as ``0.75 * integer`` would be): the same value, since
    b times an integer is exact in both, without a numeric operation per posting.
    """
    filtered = f"JOIN chunks c ON c.seq = p.chunk_seq WHERE true {where}" if where else ""
    return f"""
        WITH {STATISTICS_CTE},
        idf AS (
            SELECT f.term, greatest(ln((totals.n - f.df + 0.5) / (f.df + 0.5)), 1e-6) AS idf
            FROM frequencies f, totals),
        scored AS (
            SELECT p.chunk_seq, sum(idf.idf * p.tf * {K1 + 1}
                                    / (p.tf + {K1} * (1 - {B} + {B} * p.length::float8 / totals.mean))) AS score
            FROM chunk_terms p JOIN idf ON idf.term = p.term CROSS JOIN totals {filtered}
            GROUP BY p.chunk_seq ORDER BY score DESC, p.chunk_seq LIMIT %s)
        SELECT c.id, s.score FROM scored s JOIN chunks c ON c.seq = s.chunk_seq
        ORDER BY s.score DESC, s.chunk_seq"""
