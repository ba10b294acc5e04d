"""The knowledge graph in the Postgres store: what is not shared SQL (sql/graph_read.py).

The tables are postgres/schema.py's migration add_knowledge_graph, the same as SQLite's
(sqlite/graph.py says why), under the same row-level security as every other table.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...models import SearchFilter
from ..sql.dialect import Sql
from ..sql.graph_read import SqlGraph
from .filters import filter_sql


class PostgresGraph(SqlGraph):
    """The `GraphStore` role (sql/graph_read.py) with Postgres's row lock and chunk filter."""

    def _lock_document(self, sql: Sql, document_id: str) -> bool:
        """Lock the document row, so that a concurrent re-chunking waits for this graph."""
        return sql.execute("SELECT 1 FROM documents WHERE id = ? FOR UPDATE", (document_id,)).fetchone() is not None

    def entity_chunks(
        self, keys: Sequence[str], filters: SearchFilter = SearchFilter()
    ) -> list[tuple[str, str, str, int]]:
        """(entity key, chunk id, document id, mentions) for the entities' chunks within `filters`."""
        where, params = filter_sql(filters)
        with self._read() as conn:
            rows = conn.execute(
                f"""SELECT n.key, c.id, c.document_id, m.count FROM graph_nodes n
                    JOIN graph_mentions m ON m.node_id = n.id JOIN chunks c ON c.seq = m.chunk_seq
                    WHERE n.key = ANY(%s) {where}
                    ORDER BY n.key COLLATE "C", m.count DESC, c.id COLLATE "C" """,
                (list(keys), *params),
            ).fetchall()
        return [(key, chunk, document, int(count)) for key, chunk, document, count in rows]
