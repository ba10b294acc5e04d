"""The knowledge graph in the SQLite store: its tables (schema migration 5) and chunk filter.

Why this shape:
* Nodes and edges are merged across documents (one node per tenant and key), but their
  provenance is per chunk: `graph_mentions` (node, chunk) and `graph_edge_support` (edge,
  chunk) reference `chunks.seq`. Removing or re-chunking a document deletes its provenance
  rows, then every node or edge it touched that has no provenance left is pruned: what
  only that document supported disappears, what others support stays.
* Aliases ("dcp" -> the node "data collection pipeline") are resolved when mentions are
  written, so reads never chase aliases; learning an alias for a key that already has a
  node merges that node into the canonical one.
* `graph_extractions` caches each chunk's extraction by chunk hash and extractor, so
  re-ingesting a document (or building its graph again) pays for new chunks only.
* Every table has a tenant column (nodes, aliases, cache, built documents) or reaches one
  through its node or chunk, and every query filters on it.

The reads and the write path are shared with the Postgres store (sql/graph_read.py,
sql/graph_write.py); what is SQLite's own is how an entity's chunks are filtered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...models import SearchFilter
from ..sql.dialect import Sql
from ..sql.graph_read import SqlGraph
from .filters import allowed_documents

GRAPH_TABLES: tuple[str, ...] = (
    # the schema's migration add_knowledge_graph
    """CREATE TABLE graph_nodes (
        id INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        key TEXT NOT NULL,
        name TEXT NOT NULL,
        type TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        UNIQUE (tenant, key))""",
    """CREATE TABLE graph_mentions (
        node_id INTEGER NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
        chunk_seq INTEGER NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
        count INTEGER NOT NULL,
        PRIMARY KEY (node_id, chunk_seq))""",
    "CREATE INDEX graph_mentions_chunk ON graph_mentions (chunk_seq)",
    """CREATE TABLE graph_edges (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
        target_id INTEGER NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
        relation TEXT NOT NULL,
        UNIQUE (source_id, target_id, relation))""",
    "CREATE INDEX graph_edges_target ON graph_edges (target_id)",
    """CREATE TABLE graph_edge_support (
        edge_id INTEGER NOT NULL REFERENCES graph_edges (id) ON DELETE CASCADE,
        chunk_seq INTEGER NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
        weight REAL NOT NULL,
        PRIMARY KEY (edge_id, chunk_seq))""",
    "CREATE INDEX graph_edge_support_chunk ON graph_edge_support (chunk_seq)",
    """CREATE TABLE graph_aliases (
        tenant TEXT NOT NULL,
        alias TEXT NOT NULL,
        node_id INTEGER NOT NULL REFERENCES graph_nodes (id) ON DELETE CASCADE,
        PRIMARY KEY (tenant, alias))""",
    "CREATE INDEX graph_aliases_node ON graph_aliases (node_id)",
    """CREATE TABLE graph_documents (
        document_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        extractor TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        built_at TEXT NOT NULL,
        PRIMARY KEY (tenant, document_id))""",
    """CREATE TABLE graph_extractions (
        tenant TEXT NOT NULL,
        chunk_hash TEXT NOT NULL,
        extractor TEXT NOT NULL,
        data TEXT NOT NULL CHECK (json_valid(data)),
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant, chunk_hash, extractor))""",
)


class SQLiteGraph(SqlGraph):
    """The `GraphStore` role (sql/graph_read.py) with SQLite's chunk filter."""

    def _lock_document(self, sql: Sql, document_id: str) -> bool:
        query = "SELECT 1 FROM documents WHERE id = ? AND tenant = ?"
        return sql.execute(query, (document_id, self.tenant)).fetchone() is not None

    def entity_chunks(
        self, keys: Sequence[str], filters: SearchFilter = SearchFilter()
    ) -> list[tuple[str, str, str, int]]:
        """(entity key, chunk id, document id, mentions) for the entities' chunks in the allowed documents."""
        with self._read() as conn:
            allowed = allowed_documents(conn, self.tenant, filters)
            if allowed == []:
                return []
            where, params = "", [self.tenant, json.dumps(list(keys))]
            if allowed is not None:
                where = "AND c.document_id IN (SELECT value FROM json_each(?))"
                params.append(json.dumps(allowed))
            rows = conn.execute(
                f"""SELECT n.key, c.id, c.document_id, m.count FROM graph_nodes n
                    JOIN graph_mentions m ON m.node_id = n.id JOIN chunks c ON c.seq = m.chunk_seq
                    WHERE n.tenant = ? AND n.key IN (SELECT value FROM json_each(?)) {where}
                    ORDER BY n.key, m.count DESC, c.id""",
                params,
            ).fetchall()
        return [(key, chunk, document, int(count)) for key, chunk, document, count in rows]
