"""The knowledge graph's reads, the same SQL on SQLite and Postgres (`GraphStore`).

The tables and their reasons are in sqlite/graph.py; the write path is graph_write.py.
Every query names the tenant (Postgres's row-level security checks it again). Lists are
sorted by code point in both stores (the dialect's collation, and Python's `sorted`).
Which chunks of an entity pass a search's filters is each store's own (graph.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...graph.models import DocumentGraph, EntityRecord, RelationRecord
from ..common import not_found, now
from .base import SharedSql
from .caches import SqlExtractionCache
from .dialect import Sql, decoded
from .graph_write import replace_document_graph

_MENTIONS = "JOIN graph_mentions m ON m.node_id = n.id JOIN chunks c ON c.seq = m.chunk_seq"


def _entity_columns(sql: Sql) -> str:
    aliases = sql.dialect.list_agg("a.alias")
    return f"""n.key, n.name, n.type, n.summary, sum(m.count), count(DISTINCT c.document_id),
               (SELECT {aliases} FROM graph_aliases a WHERE a.node_id = n.id)"""


def _entity(row: Sequence[Any]) -> EntityRecord:
    key, name, type_, summary, mentions, documents, aliases = row
    return EntityRecord(key, name, type_, summary, int(mentions), int(documents), tuple(sorted(decoded(aliases) or ())))


def graph_counts(sql: Sql, tenant: str) -> dict[str, int]:
    """Entities and relations with provenance (rows a bulk delete left unpruned do not count)."""
    row = sql.execute(
        """SELECT (SELECT count(*) FROM graph_nodes n WHERE n.tenant = ?
                   AND EXISTS (SELECT 1 FROM graph_mentions m WHERE m.node_id = n.id)),
                  (SELECT count(*) FROM graph_edges e JOIN graph_nodes s ON s.id = e.source_id WHERE s.tenant = ?
                   AND EXISTS (SELECT 1 FROM graph_edge_support es WHERE es.edge_id = e.id)),
                  (SELECT count(*) FROM graph_documents WHERE tenant = ?)""",
        (tenant, tenant, tenant),
    ).fetchone()
    return {"entities": int(row[0]), "relations": int(row[1]), "documents": int(row[2])}


class SqlGraph(SqlExtractionCache, SharedSql):
    """The `GraphStore` role but for `entity_chunks` (each store filters chunks its own way)
    and the check that `replace_document_graph`'s document exists (`_lock_document`)."""

    def _lock_document(self, sql: Sql, document_id: str) -> bool:
        """Whether the tenant has the document; Postgres also locks its row for the transaction."""
        raise NotImplementedError

    def replace_document_graph(self, graph: DocumentGraph) -> None:
        with self._writing() as sql:
            if not self._lock_document(sql, graph.document_id):
                raise not_found(graph.document_id)
            replace_document_graph(sql.execute, self.tenant, graph, now())
            self._searches_changed(sql)  # graph-mode searches rank by it

    def graph_documents(self) -> dict[str, tuple[str, str]]:
        with self._reading() as sql:
            rows = sql.execute(
                "SELECT document_id, extractor, content_hash FROM graph_documents WHERE tenant = ?", (self.tenant,)
            ).fetchall()
        return {doc: (extractor, content_hash) for doc, extractor, content_hash in rows}

    def list_entities(
        self, query: str | None = None, type: str | None = None, limit: int | None = 50, offset: int = 0
    ) -> list[EntityRecord]:
        conditions, params = ["n.tenant = ?"], [self.tenant]
        if type:
            conditions.append("n.type = ?")
            params.append(type)
        if query:
            pattern = f"%{query.lower()}%"
            conditions.append(
                "(n.key LIKE ? OR lower(n.name) LIKE ? OR EXISTS "
                "(SELECT 1 FROM graph_aliases a WHERE a.node_id = n.id AND a.alias LIKE ?))"
            )
            params += [pattern, pattern, pattern]
        with self._reading() as sql:
            rows = sql.execute(
                f"""SELECT {_entity_columns(sql)} FROM graph_nodes n {_MENTIONS} WHERE {' AND '.join(conditions)}
                    GROUP BY n.id ORDER BY sum(m.count) DESC, n.key{sql.dialect.collate} LIMIT ? OFFSET ?""",
                (*params, sql.dialect.limit(limit), offset),
            ).fetchall()
        return [_entity(row) for row in rows]

    def find_entities(self, keys: Sequence[str]) -> dict[str, EntityRecord]:
        asked = list(dict.fromkeys(keys))
        with self._reading() as sql:
            rows = sql.execute(
                f"""WITH hits AS (
                      SELECT n.key AS k, n.id AS node_id FROM graph_nodes n
                      WHERE n.tenant = ? AND {sql.dialect.any_of("n.key")}
                      UNION
                      SELECT a.alias AS k, a.node_id FROM graph_aliases a
                      WHERE a.tenant = ? AND {sql.dialect.any_of("a.alias")})
                    SELECT hits.k, {_entity_columns(sql)} FROM hits JOIN graph_nodes n ON n.id = hits.node_id {_MENTIONS}
                    GROUP BY hits.k, n.id""",
                (self.tenant, sql.dialect.values(asked), self.tenant, sql.dialect.values(asked)),
            ).fetchall()
        return {row[0]: _entity(row[1:]) for row in rows}

    def entity_relations(self, keys: Sequence[str] | None = None, limit: int | None = None) -> list[RelationRecord]:
        with self._reading() as sql:
            where, params = "s.tenant = ?", [self.tenant]
            if keys is not None:
                where += f" AND ({sql.dialect.any_of('s.key')} OR {sql.dialect.any_of('t.key')})"
                params += [sql.dialect.values(keys), sql.dialect.values(keys)]
            collate = sql.dialect.collate
            rows = sql.execute(
                f"""SELECT s.key, s.name, e.relation, t.key, t.name, sum(es.weight), {sql.dialect.list_agg("c.id")}
                    FROM graph_edges e
                    JOIN graph_nodes s ON s.id = e.source_id JOIN graph_nodes t ON t.id = e.target_id
                    JOIN graph_edge_support es ON es.edge_id = e.id JOIN chunks c ON c.seq = es.chunk_seq
                    WHERE {where} GROUP BY e.id, s.key, s.name, t.key, t.name
                    ORDER BY sum(es.weight) DESC, s.key{collate}, t.key{collate}, e.relation{collate} LIMIT ?""",
                (*params, sql.dialect.limit(limit)),
            ).fetchall()
        return [RelationRecord(s, sn, rel, t, tn, float(w), tuple(sorted(set(decoded(ids)))))
                for s, sn, rel, t, tn, w, ids in rows]

    def chunk_entities(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        with self._reading() as sql:
            rows = sql.execute(
                f"""SELECT c.id, n.key, m.count FROM chunks c
                    JOIN graph_mentions m ON m.chunk_seq = c.seq JOIN graph_nodes n ON n.id = m.node_id
                    WHERE n.tenant = ? AND {sql.dialect.any_of("c.id")}""",
                (self.tenant, sql.dialect.values(chunk_ids)),
            ).fetchall()
        for chunk_id, key, count in rows:
            found.setdefault(chunk_id, {})[key] = int(count)
        return found

    def graph_stats(self) -> dict[str, int]:
        with self._reading() as sql:
            return graph_counts(sql, self.tenant)
