"""Vector search on the Postgres store: pgvector's HNSW indexes, one per dimension.

Vector search orders by pgvector's cosine distance on the partial HNSW indexes of the
query's dimension (chunks' and windows'), with ``hnsw.iterative_scan`` so that a filtered
query still returns k rows; the score is the cosine similarity, 1 - distance, of the
chunk's best vector, its own or a window's (`vector_query` says how close to exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from ...errors import StoreError
from ...models import ScoredId, SearchFilter
from ..common import check_k, query_dimension_mismatch, unit_query
from ..sql.base import SharedSql
from .filters import filter_sql
from .schema import ensure_hnsw_index, hnsw_index_name, window_hnsw_index_name

WINDOW_ROWS_PER_RESULT = 4
"""Window rows the vector query takes per chunk asked for (`vector_query`)."""


@dataclass(frozen=True)
class HnswSettings:
    """pgvector HNSW parameters: m and ef_construction shape an index when it is built
    (a dimension's first collection); ef_search is read by every query."""

    m: int = 16
    ef_construction: int = 64
    ef_search: int = 40


class PostgresVectors(SharedSql):
    """The vector half of the `SearchStore` role, the stored vectors ingestion reuses, and
    the HNSW indexes a new dimension needs."""

    dsn: str
    hnsw: HnswSettings
    _where: str
    _indexed_dimensions: set[int]

    def _ensure_hnsw_index(self, dimension: int) -> None:
        if dimension not in self._indexed_dimensions:
            self._create_hnsw_index(dimension)

    def _create_hnsw_index(self, dimension: int) -> None:
        """Built on the login role's own connection: the RLS role may not run DDL."""
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                ensure_hnsw_index(conn, dimension, self.hnsw.m, self.hnsw.ef_construction)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot create the HNSW indexes {hnsw_index_name(dimension)} and "
                f"{window_hnsw_index_name(dimension)} on {self._where}: {exc}; "
                f"the owner of the schema can run `sourcebook migrate` and add the first collection"
            ) from exc
        self._indexed_dimensions.add(dimension)

    def vectors_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM chunks "
                "WHERE collection = %s AND content_hash = ANY(%s)",
                (collection, list(dict.fromkeys(hashes))),
            ).fetchall()
        return {h: vector.to_numpy().copy() for h, vector in rows}

    def windows_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Of chunks sharing a hash, the one with the most windows speaks for it (a copy
        stored before windows existed has none)."""
        if not hashes:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.content_hash, c.seq, c.dimension, w.embedding
                   FROM chunks c LEFT JOIN chunk_windows w ON w.chunk_seq = c.seq
                   WHERE c.collection = %s AND c.content_hash = ANY(%s) ORDER BY c.seq, w.number""",
                (collection, list(dict.fromkeys(hashes))),
            ).fetchall()
        per_chunk: dict[int, tuple[str, int, list[np.ndarray]]] = {}
        for content_hash, seq, dimension, embedding in rows:
            found = per_chunk.setdefault(seq, (content_hash, dimension, []))[2]
            if embedding is not None:
                found.append(embedding.to_numpy())
        best: dict[str, np.ndarray] = {}
        for content_hash, dimension, found in per_chunk.values():
            if content_hash not in best or len(found) > len(best[content_hash]):
                best[content_hash] = window_matrix(found, dimension)
        return best

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilter) -> list[ScoredId]:
        """HNSW (iterative scan) on the chunks' and the windows' indexes of the query's
        dimension; a chunk's score is the cosine similarity of its best vector, its own or
        a window's (`vector_query` on the approximation)."""
        check_k(k)
        query = unit_query(vector)
        dimension = len(query)
        with self._read() as conn:
            if filters.collections:
                wrong = conn.execute(
                    "SELECT name, dimension FROM collections WHERE name = ANY(%s) AND dimension <> %s LIMIT 1",
                    (list(filters.collections), dimension),
                ).fetchone()
                if wrong is not None:
                    raise query_dimension_mismatch(wrong[0], wrong[1], dimension)
            rows = conn.execute(*vector_query(query, k, filters)).fetchall()
        return [ScoredId(id_, rank, float(score)) for rank, (id_, score) in enumerate(rows, 1)]



def vector_query(query: np.ndarray, k: int, filters: SearchFilter) -> tuple[str, tuple[Any, ...]]:
    """The nearest-neighbour query and its parameters.

    Two nearest-neighbour scans, each on its partial HNSW index of the query's dimension
    (spelled out, not a parameter, so the planner matches the index) and under the same
    filters: the k nearest chunk vectors, and the k * WINDOW_ROWS_PER_RESULT nearest
    window vectors (joined to their chunks for the filters). A chunk scores its best
    distance among the rows found; the k best chunks are returned. The inner ORDER BYs
    walk the indexes (iterative scans return rows in relaxed order); the outer one
    restores the exact order. The windows' scan runs only if the tenant has windows of
    that dimension (in the filtered collections): with none to find, an iterative scan
    would walk the index up to hnsw.max_scan_tuples.

    The approximation, beside HNSW's own: a chunk of the true top k is found when its best
    vector is its own (fewer than k chunks beat that); when it is a window, it is found
    unless the nearer window rows crowd into fewer than k chunks, which takes chunks with
    more than WINDOW_ROWS_PER_RESULT windows each nearer than it (SciFact averages about
    five windows a chunk, most far from any one query). A chunk found by one scan only may
    score below its true best (its other vectors lay beyond both scans), but then it is
    outside the true top k anyway.
    """
    dimension = int(len(query))
    where, params = filter_sql(filters)
    distance = "{}.embedding::vector({}) <=> %s::vector({})"
    own = f"""SELECT c.id, {distance.format("c", dimension, dimension)} AS distance FROM chunks c
              WHERE c.dimension = {dimension} {where} ORDER BY distance LIMIT %s"""
    probe = "x.dimension = " + str(dimension) + (" AND x.collection = ANY(%s)" if filters.collections else "")
    windows = f"""SELECT c.id, {distance.format("w", dimension, dimension)} AS distance
                  FROM chunk_windows w JOIN chunks c ON c.seq = w.chunk_seq
                  WHERE w.dimension = {dimension} {where}
                    AND EXISTS (SELECT 1 FROM chunk_windows x WHERE {probe})
                  ORDER BY distance LIMIT %s"""
    sql = f"""WITH own AS MATERIALIZED ({own}), windows AS MATERIALIZED ({windows})
              SELECT id, 1 - min(distance) FROM (SELECT * FROM own UNION ALL SELECT * FROM windows) found
              GROUP BY id ORDER BY min(distance), id LIMIT %s"""
    probe_params = [list(filters.collections)] if filters.collections else []
    return sql, (query, *params, k, query, *params, *probe_params, k * WINDOW_ROWS_PER_RESULT, k)


def indexed_dimensions(conn: psycopg.Connection) -> set[int]:
    """Dimensions with both HNSW indexes (chunks' and windows')."""
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE (tablename = 'chunks' AND indexname LIKE 'chunks_embedding_hnsw_%') "
        "OR (tablename = 'chunk_windows' AND indexname LIKE 'chunk_windows_embedding_hnsw_%')"
    ).fetchall()
    found = [(name.startswith("chunk_windows"), int(name.rsplit("_", 1)[1])) for (name,) in rows]
    return {dimension for window, dimension in found if not window} & {dimension for window, dimension in found if window}


def window_matrix(rows: Sequence[Any], dimension: int) -> np.ndarray:
    """Window vectors as a (k, dimension) float32 array, k >= 0."""
    if not len(rows):
        return np.zeros((0, dimension), np.float32)
    return np.asarray(rows, dtype=np.float32).reshape(-1, dimension)
