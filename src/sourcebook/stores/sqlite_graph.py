"""The knowledge graph's tables and queries in the SQLite store (schema migration 5).

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

The functions take a connection inside the caller's transaction (SQLiteStore's lock); the
write path is graph_sql.py, shared with the Postgres store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ..graph.models import EntityRecord, RelationRecord

MIGRATION: tuple[str, ...] = (
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

_ENTITY_SELECT = """
    SELECT n.key, n.name, n.type, n.summary, sum(m.count), count(DISTINCT c.document_id),
           (SELECT json_group_array(a.alias) FROM graph_aliases a WHERE a.node_id = n.id)
    FROM graph_nodes n
    JOIN graph_mentions m ON m.node_id = n.id
    JOIN chunks c ON c.seq = m.chunk_seq"""
_RELATION_SELECT = """
    SELECT s.key, s.name, e.relation, t.key, t.name, sum(es.weight), json_group_array(c.id)
    FROM graph_edges e
    JOIN graph_nodes s ON s.id = e.source_id
    JOIN graph_nodes t ON t.id = e.target_id
    JOIN graph_edge_support es ON es.edge_id = e.id
    JOIN chunks c ON c.seq = es.chunk_seq"""


def _ids(values: Sequence[Any]) -> str:
    return json.dumps(list(values))


# Reading ---------------------------------------------------------------------------
def _entity(row: tuple[Any, ...]) -> EntityRecord:
    key, name, type_, summary, mentions, documents, aliases = row
    return EntityRecord(key, name, type_, summary, int(mentions), int(documents), tuple(sorted(json.loads(aliases))))


def _relation(row: tuple[Any, ...]) -> RelationRecord:
    source, source_name, relation, target, target_name, weight, chunk_ids = row
    return RelationRecord(source, source_name, relation, target, target_name, float(weight),
                          tuple(sorted(set(json.loads(chunk_ids)))))


def list_entities(
    conn: sqlite3.Connection, tenant: str, query: str | None, type_: str | None, limit: int | None, offset: int
) -> list[EntityRecord]:
    conditions, params = ["n.tenant = ?"], [tenant]
    if type_:
        conditions.append("n.type = ?")
        params.append(type_)
    if query:
        pattern = f"%{query.lower()}%"
        conditions.append(
            "(n.key LIKE ? OR lower(n.name) LIKE ? OR EXISTS "
            "(SELECT 1 FROM graph_aliases a WHERE a.node_id = n.id AND a.alias LIKE ?))"
        )
        params += [pattern, pattern, pattern]
    rows = conn.execute(
        f"""{_ENTITY_SELECT} WHERE {' AND '.join(conditions)}
            GROUP BY n.id ORDER BY sum(m.count) DESC, n.key LIMIT ? OFFSET ?""",
        (*params, -1 if limit is None else limit, offset),
    ).fetchall()
    return [_entity(row) for row in rows]


def find_entities(conn: sqlite3.Connection, tenant: str, keys: Sequence[str]) -> dict[str, EntityRecord]:
    """Entities by key or alias key, keyed by the key asked for."""
    rows = conn.execute(
        """WITH asked (k) AS (SELECT value FROM json_each(?)),
                hits (k, node_id) AS (
                  SELECT asked.k, n.id FROM asked JOIN graph_nodes n ON n.tenant = ? AND n.key = asked.k
                  UNION
                  SELECT asked.k, a.node_id FROM asked JOIN graph_aliases a ON a.tenant = ? AND a.alias = asked.k)
           SELECT hits.k, n.key, n.name, n.type, n.summary, sum(m.count), count(DISTINCT c.document_id),
                  (SELECT json_group_array(a.alias) FROM graph_aliases a WHERE a.node_id = n.id)
           FROM hits JOIN graph_nodes n ON n.id = hits.node_id
           JOIN graph_mentions m ON m.node_id = n.id JOIN chunks c ON c.seq = m.chunk_seq
           GROUP BY hits.k, n.id""",
        (_ids(dict.fromkeys(keys)), tenant, tenant),
    ).fetchall()
    return {row[0]: _entity(row[1:]) for row in rows}


def relations(conn: sqlite3.Connection, tenant: str, keys: Sequence[str] | None, limit: int | None) -> list[RelationRecord]:
    """Edges touching any of `keys` (all edges when None), heaviest first."""
    where, params = "s.tenant = ?", [tenant]
    if keys is not None:
        where += " AND (s.key IN (SELECT value FROM json_each(?)) OR t.key IN (SELECT value FROM json_each(?)))"
        params += [_ids(keys), _ids(keys)]
    rows = conn.execute(
        f"{_RELATION_SELECT} WHERE {where} GROUP BY e.id ORDER BY sum(es.weight) DESC, s.key, t.key, e.relation LIMIT ?",
        (*params, -1 if limit is None else limit),
    ).fetchall()
    return [_relation(row) for row in rows]


def entity_chunks(
    conn: sqlite3.Connection, tenant: str, keys: Sequence[str], allowed: list[str] | None
) -> list[tuple[str, str, str, int]]:
    """(entity key, chunk id, document id, mentions) for the entities' chunks in the allowed documents."""
    where, params = "", [tenant, _ids(keys)]
    if allowed is not None:
        where = "AND c.document_id IN (SELECT value FROM json_each(?))"
        params.append(_ids(allowed))
    rows = conn.execute(
        f"""SELECT n.key, c.id, c.document_id, m.count FROM graph_nodes n
            JOIN graph_mentions m ON m.node_id = n.id JOIN chunks c ON c.seq = m.chunk_seq
            WHERE n.tenant = ? AND n.key IN (SELECT value FROM json_each(?)) {where}
            ORDER BY n.key, m.count DESC, c.id""",
        params,
    ).fetchall()
    return [(key, chunk, document, int(count)) for key, chunk, document, count in rows]


def chunk_entities(conn: sqlite3.Connection, tenant: str, chunk_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """chunk id -> {entity key: mentions} for the chunks that mention any entity."""
    found: dict[str, dict[str, int]] = {}
    rows = conn.execute(
        """SELECT c.id, n.key, m.count FROM chunks c
           JOIN graph_mentions m ON m.chunk_seq = c.seq JOIN graph_nodes n ON n.id = m.node_id
           WHERE n.tenant = ? AND c.id IN (SELECT value FROM json_each(?))""",
        (tenant, _ids(chunk_ids)),
    )
    for chunk_id, key, count in rows:
        found.setdefault(chunk_id, {})[key] = int(count)
    return found


def graph_documents(conn: sqlite3.Connection, tenant: str) -> dict[str, tuple[str, str]]:
    rows = conn.execute(
        "SELECT document_id, extractor, content_hash FROM graph_documents WHERE tenant = ?", (tenant,)
    ).fetchall()
    return {doc: (extractor, content_hash) for doc, extractor, content_hash in rows}


def graph_counts(conn: sqlite3.Connection, tenant: str) -> dict[str, int]:
    """Entities and relations with provenance (rows a bulk delete left unpruned do not count)."""
    nodes = conn.execute(
        """SELECT count(*) FROM graph_nodes n WHERE n.tenant = ?
           AND EXISTS (SELECT 1 FROM graph_mentions m WHERE m.node_id = n.id)""",
        (tenant,),
    ).fetchone()[0]
    edges = conn.execute(
        """SELECT count(*) FROM graph_edges e JOIN graph_nodes s ON s.id = e.source_id WHERE s.tenant = ?
           AND EXISTS (SELECT 1 FROM graph_edge_support es WHERE es.edge_id = e.id)""",
        (tenant,),
    ).fetchone()[0]
    documents = conn.execute("SELECT count(*) FROM graph_documents WHERE tenant = ?", (tenant,)).fetchone()[0]
    return {"entities": int(nodes), "relations": int(edges), "documents": int(documents)}


def get_extractions(
    conn: sqlite3.Connection, tenant: str, hashes: Sequence[str], extractor: str
) -> dict[str, dict[str, Any]]:
    rows = conn.execute(
        """SELECT chunk_hash, data FROM graph_extractions
           WHERE tenant = ? AND extractor = ? AND chunk_hash IN (SELECT value FROM json_each(?))""",
        (tenant, extractor, _ids(dict.fromkeys(hashes))),
    )
    return {chunk_hash: json.loads(data) for chunk_hash, data in rows}


def put_extractions(
    conn: sqlite3.Connection, tenant: str, extractions: dict[str, dict[str, Any]], extractor: str, now: str
) -> None:
    conn.executemany(
        """INSERT INTO graph_extractions (tenant, chunk_hash, extractor, data, created_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (tenant, chunk_hash, extractor) DO UPDATE SET data = excluded.data""",
        [(tenant, h, extractor, json.dumps(data), now) for h, data in extractions.items()],
    )
