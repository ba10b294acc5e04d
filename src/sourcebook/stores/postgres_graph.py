"""The knowledge graph's queries in the Postgres store (tables: postgres_schema.py, migration 2).

Reads only: the write path is graph_sql.py, shared with SQLite. No query names a tenant:
row-level security scopes every table, as everywhere in the Postgres store. Orderings
use the "C" collation so both stores list entities in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..graph.models import EntityRecord, RelationRecord
from .graph_sql import Execute

_ENTITY_COLUMNS = """n.key, n.name, n.type, n.summary, sum(m.count)::int, count(DISTINCT c.document_id)::int,
    coalesce((SELECT array_agg(a.alias ORDER BY a.alias COLLATE "C") FROM graph_aliases a WHERE a.node_id = n.id),
             '{}')"""
_MENTIONS = "JOIN graph_mentions m ON m.node_id = n.id JOIN chunks c ON c.seq = m.chunk_seq"


def execute_on(conn: psycopg.Connection) -> Execute:
    """graph_sql's `?`-placeholder statements run on a psycopg connection."""
    return lambda query, params=(): conn.execute(query.replace("?", "%s"), tuple(params))


def _entity(row: Sequence[Any]) -> EntityRecord:
    key, name, type_, summary, mentions, documents, aliases = row
    return EntityRecord(key, name, type_, summary, mentions, documents, tuple(aliases))


def list_entities(
    conn: psycopg.Connection, query: str | None, type_: str | None, limit: int | None, offset: int
) -> list[EntityRecord]:
    pattern = None if not query else f"%{query.lower()}%"
    rows = conn.execute(
        f"""SELECT {_ENTITY_COLUMNS} FROM graph_nodes n {_MENTIONS}
            WHERE (%(type)s::text IS NULL OR n.type = %(type)s)
              AND (%(pattern)s::text IS NULL OR n.key LIKE %(pattern)s OR lower(n.name) LIKE %(pattern)s
                   OR EXISTS (SELECT 1 FROM graph_aliases a WHERE a.node_id = n.id AND a.alias LIKE %(pattern)s))
            GROUP BY n.id ORDER BY sum(m.count) DESC, n.key COLLATE "C" LIMIT %(limit)s OFFSET %(offset)s""",
        {"type": type_, "pattern": pattern, "limit": limit, "offset": offset},
    ).fetchall()
    return [_entity(row) for row in rows]


def find_entities(conn: psycopg.Connection, keys: Sequence[str]) -> dict[str, EntityRecord]:
    rows = conn.execute(
        f"""WITH asked AS (SELECT unnest(%s::text[]) AS k),
                 hits AS (SELECT asked.k, n.id AS node_id FROM asked JOIN graph_nodes n ON n.key = asked.k
                          UNION
                          SELECT asked.k, a.node_id FROM asked JOIN graph_aliases a ON a.alias = asked.k)
            SELECT hits.k, {_ENTITY_COLUMNS} FROM hits JOIN graph_nodes n ON n.id = hits.node_id {_MENTIONS}
            GROUP BY hits.k, n.id""",
        (list(dict.fromkeys(keys)),),
    ).fetchall()
    return {row[0]: _entity(row[1:]) for row in rows}


def relations(conn: psycopg.Connection, keys: Sequence[str] | None, limit: int | None) -> list[RelationRecord]:
    rows = conn.execute(
        """SELECT s.key, s.name, e.relation, t.key, t.name, sum(es.weight), array_agg(DISTINCT c.id)
           FROM graph_edges e
           JOIN graph_nodes s ON s.id = e.source_id JOIN graph_nodes t ON t.id = e.target_id
           JOIN graph_edge_support es ON es.edge_id = e.id JOIN chunks c ON c.seq = es.chunk_seq
           WHERE %(keys)s::text[] IS NULL OR s.key = ANY(%(keys)s) OR t.key = ANY(%(keys)s)
           GROUP BY e.id, s.key, s.name, t.key, t.name
           ORDER BY sum(es.weight) DESC, s.key COLLATE "C", t.key COLLATE "C", e.relation COLLATE "C"
           LIMIT %(limit)s""",
        {"keys": None if keys is None else list(keys), "limit": limit},
    ).fetchall()
    return [RelationRecord(s, sn, rel, t, tn, float(w), tuple(sorted(ids))) for s, sn, rel, t, tn, w, ids in rows]


def entity_chunks(conn: psycopg.Connection, keys: Sequence[str], where: str, params: list[Any]) -> list[tuple[str, str, str, int]]:
    """`where`/`params`: postgres.filter_sql's conditions on `chunks c`."""
    rows = conn.execute(
        f"""SELECT n.key, c.id, c.document_id, m.count FROM graph_nodes n {_MENTIONS}
            WHERE n.key = ANY(%s) {where}
            ORDER BY n.key COLLATE "C", m.count DESC, c.id COLLATE "C" """,
        (list(keys), *params),
    ).fetchall()
    return [(key, chunk, document, int(count)) for key, chunk, document, count in rows]


def chunk_entities(conn: psycopg.Connection, chunk_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    rows = conn.execute(
        """SELECT c.id, n.key, m.count FROM chunks c
           JOIN graph_mentions m ON m.chunk_seq = c.seq JOIN graph_nodes n ON n.id = m.node_id
           WHERE c.id = ANY(%s)""",
        (list(chunk_ids),),
    )
    for chunk_id, key, count in rows:
        found.setdefault(chunk_id, {})[key] = int(count)
    return found


def graph_documents(conn: psycopg.Connection) -> dict[str, tuple[str, str]]:
    rows = conn.execute("SELECT document_id, extractor, content_hash FROM graph_documents").fetchall()
    return {doc: (extractor, content_hash) for doc, extractor, content_hash in rows}


def graph_counts(conn: psycopg.Connection) -> dict[str, int]:
    """Entities and relations with provenance (rows a bulk delete left unpruned do not count)."""
    row = conn.execute(
        """SELECT (SELECT count(*) FROM graph_nodes n
                   WHERE EXISTS (SELECT 1 FROM graph_mentions m WHERE m.node_id = n.id)),
                  (SELECT count(*) FROM graph_edges e
                   WHERE EXISTS (SELECT 1 FROM graph_edge_support s WHERE s.edge_id = e.id)),
                  (SELECT count(*) FROM graph_documents)"""
    ).fetchone()
    assert row is not None
    return {"entities": int(row[0]), "relations": int(row[1]), "documents": int(row[2])}


def get_extractions(conn: psycopg.Connection, hashes: Sequence[str], extractor: str) -> dict[str, dict[str, Any]]:
    rows = conn.execute(
        "SELECT chunk_hash, data FROM graph_extractions WHERE extractor = %s AND chunk_hash = ANY(%s)",
        (extractor, list(dict.fromkeys(hashes))),
    ).fetchall()
    return dict(rows)


def put_extractions(conn: psycopg.Connection, extractions: dict[str, dict[str, Any]], extractor: str, stamp: str) -> None:
    with conn.cursor() as cursor:
        cursor.executemany(
            """INSERT INTO graph_extractions (chunk_hash, extractor, data, created_at) VALUES (%s, %s, %s, %s)
               ON CONFLICT (tenant, chunk_hash, extractor) DO UPDATE SET data = excluded.data""",
            [(h, extractor, Jsonb(data), stamp) for h, data in extractions.items()],
        )
