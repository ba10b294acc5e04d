"""Keyword search on the SQLite store: BM25 from the in-memory inverted index (keyword_index.py).

The index holds the tenant's chunks only, is built from the stored term counts inside a
read transaction, and is rebuilt when the schema's generation moved (any connection
changed chunks); the numpy scoring runs outside the connection's lock.
"""

from __future__ import annotations

import sqlite3

from ...models import ScoredId, SearchFilter
from ..common import check_k
from ..sql.base import SharedSql
from .filters import allowed_documents
from .keyword_index import KeywordIndex
from .schema import generation


class SQLiteKeywords(SharedSql):
    """The keyword half of the `SearchStore` role."""

    _keywords: KeywordIndex | None

    def keyword_search(self, query: str, k: int, filters: SearchFilter) -> list[ScoredId]:
        """BM25 over title, heading path and text (what a chunk's prefix + text hold).

        Terms are OR-ed: a chunk sharing any term with the query is a candidate.
        The numpy work runs outside the lock.
        """
        check_k(k)
        with self._read() as conn:
            current = generation(conn)
            if self._keywords is None or self._keywords.generation != current:
                self._keywords = _load_keyword_index(conn, self.tenant, current)
            index = self._keywords
            allowed = allowed_documents(conn, self.tenant, filters)
        if allowed == []:
            return []
        return [ScoredId(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(index.search(query, k, allowed), 1)]


def _load_keyword_index(conn: sqlite3.Connection, tenant: str, generation: int) -> KeywordIndex:
    """Read the vocabulary and the term counts of every chunk of `tenant` (inside the read
    transaction that read `generation`, so the snapshot and its number agree)."""
    vocabulary = dict(conn.execute("SELECT term, id FROM terms"))
    rows = conn.execute(
        """SELECT c.id, c.document_id, t.length, t.term_ids, t.counts
           FROM chunk_terms t JOIN chunks c ON c.seq = t.chunk_seq JOIN documents d ON d.id = c.document_id
           WHERE d.tenant = ?""",
        (tenant,),
    )
    return KeywordIndex.build(generation, vocabulary, rows)
