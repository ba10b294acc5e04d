"""Vector search on the Postgres store: pgvector's HNSW index, one per dimension, and exact rescoring.

The partial HNSW index of a dimension holds each chunk's own vector in half precision
(halfvec: half the index of full vectors, for the same graph). A search takes an
oversampled candidate list from it (`candidates`), with ``hnsw.iterative_scan`` so that a
filtered query still finds them, and with ``hnsw.ef_search`` growing with the table
(`ef_search_sql`); then rescores every candidate exactly, from its full-precision vector
and its sentence windows, and keeps the k best. The score is the cosine similarity,
1 - distance, of the chunk's best vector. This is the embedded tier's design (index/ann.py:
one graph node per chunk, rescored from all its rows), for the same reasons: pgvector's index
alone measured recall@10 0.83 on 1M vectors (full precision, m 16, ef_search 100), and the
earlier windows' index held about four times the chunks' rows. At 300k chunks this search
measured recall@10 0.982 (README, "Postgres at scale"). Below ANN_MIN_ROWS vector rows the
index is not used: every chunk is scored exactly (`exact_query`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from ...errors import StoreError
from ...models import ScoredId, SearchFilter
from ...index.vector_index import ANN_MIN_ROWS
from ..common import check_k, query_dimension_mismatch, unit_query
from ..sql.base import SharedSql
from .filters import filter_sql
from .schema import ensure_hnsw_index, hnsw_index_name

OVERSAMPLE = 2
"""Candidates taken from the index per result asked for (at least MIN_CANDIDATES), to rescore:
at 300k chunks a pool of 200 for k = 10 measured recall@10 0.986 against 0.982 for 100
(bench/pg_rescore.py), so the floor matters and the factor barely does."""
MIN_CANDIDATES = 100
EF_SEARCH_MIN = 40
EF_SEARCH_PER_100K = 600
"""ef_search at 100,000 indexed rows; it grows with the square root of the rows beyond (1,000,
pgvector's maximum, from 280,000). At 300k chunks ef_search 400 measured recall@10 0.924 and
1,000 measured 0.982 (m 32, ef_construction 128, pool 100; README "Postgres at scale")."""
EF_SEARCH_MAX = 1000  # pgvector's limit


@dataclass(frozen=True)
class HnswSettings:
    """pgvector HNSW parameters: m and ef_construction shape an index when it is built
    (a dimension's first collection; 32 and 128 as the embedded tier's graph: at 300k chunks
    pgvector's 16 and 64 reached recall@10 0.946 at most, at ef_search 1,000); ef_search is
    set by every search: None (the default) grows it with the table (`ef_search_sql`), a
    number fixes it."""

    m: int = 32
    ef_construction: int = 128
    ef_search: int | None = None


def candidates(k: int) -> int:
    """How many chunks a search of k takes from the index to rescore exactly."""
    return max(k * OVERSAMPLE, MIN_CANDIDATES)




class PostgresVectors(SharedSql):
    """The vector half of the `SearchStore` role, the stored vectors ingestion reuses, and
    the HNSW indexes a new dimension needs."""

    dsn: str
    hnsw: HnswSettings
    ann_min_rows: int = ANN_MIN_ROWS  # vector rows from which searches use the index (tests lower it)
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
                f"cannot create the HNSW index {hnsw_index_name(dimension)} on {self._where}: {exc}; "
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
        """HNSW candidates (iterative scan) from the index of the query's dimension, rescored
        exactly: a chunk's score is the cosine similarity of its best vector, its own or a
        window's (`vector_query` on the approximation). ef_search is set first, in the same
        round trip (`ef_search_sql`)."""
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
            # One round trip: ef_search set (unused by an exact scan) and the vector rows read.
            _, rows_estimate = conn.execute(ef_search_sql(), (candidates(k), self.hnsw.ef_search)).fetchone()  # type: ignore[misc]
            if rows_estimate < self.ann_min_rows:
                rows = conn.execute(*exact_query(query, k, filters)).fetchall()
            else:
                rows = conn.execute(*vector_query(query, k, filters)).fetchall()
        return [ScoredId(id_, rank, float(score)) for rank, (id_, score) in enumerate(rows, 1)]



def exact_query(query: np.ndarray, k: int, filters: SearchFilter) -> tuple[str, tuple[Any, ...]]:
    """Every chunk under the filters scored exactly by its best vector, its own or a window's:
    below ANN_MIN_ROWS vector rows (the embedded tier's threshold, `index/vector_index.py`) a
    scan costs a few tens of milliseconds and has no approximation, where the index's
    candidates miss a chunk whose own vector ranks beyond them although a window would rank
    in the top k (on SciFact, windows lift vector nDCG@10 from 0.652 to 0.700: they often
    outrank their chunk)."""
    dimension = int(len(query))
    where, params = filter_sql(filters)
    sql = f"""SELECT id, 1 - distance FROM (
                  SELECT c.id, least(c.embedding <=> %s::vector, min(w.embedding <=> %s::vector)) AS distance
                  FROM chunks c LEFT JOIN chunk_windows w ON w.chunk_seq = c.seq
                  WHERE c.dimension = {dimension} {where}
                  GROUP BY c.seq, c.id, c.embedding) scored
              ORDER BY distance, id LIMIT %s"""
    return sql, (query, query, *params, k)


def ef_search_sql() -> str:
    """Sets this transaction's ``hnsw.ef_search`` (parameters: the candidates wanted, the fixed
    ef_search or None).

    Without a fixed value: EF_SEARCH_PER_100K at 100,000 rows, by the square root of the size
    beyond (the embedded tier's ef grows with size too), from the table's row estimate
    (pg_class.reltuples: free to read, as current as autovacuum's last ANALYZE; the index is
    shared by every tenant, so its size, not the tenant's, is what a search must cover).
    Either way never below EF_SEARCH_MIN or the candidates wanted, nor beyond pgvector's
    EF_SEARCH_MAX. Its second column is the vector rows (chunks' own and windows') by the same
    estimate, which `vector_search` compares with ann_min_rows (a table never analyzed counts
    0, so it is scanned)."""
    return f"""SELECT set_config('hnsw.ef_search', least({EF_SEARCH_MAX}, greatest({EF_SEARCH_MIN},
                   %s::int,
                   coalesce(%s::int, round({EF_SEARCH_PER_100K} * sqrt(greatest(reltuples, 0) / 100000.0)))))::int::text,
                   true),
                   greatest(reltuples, 0) + coalesce((SELECT greatest(w.reltuples, 0) FROM pg_class w
                                                      WHERE w.oid = 'chunk_windows'::regclass), 0)
               FROM pg_class WHERE oid = 'chunks'::regclass"""


def vector_query(query: np.ndarray, k: int, filters: SearchFilter, pool: int | None = None) -> tuple[str, tuple[Any, ...]]:
    """The nearest-neighbour query and its parameters.

    The `pool` (default `candidates(k)`) nearest chunks by half-precision cosine distance on the partial HNSW
    index of the query's dimension (spelled out, not a parameter, so the planner matches the
    index), under the filters; each is then scored exactly: the least full-precision
    distance of its own vector and its windows (read by the windows' primary key), and the
    k best are returned in exact order (iterative scans return candidates in relaxed order).

    The approximation, beside HNSW's own: a chunk of the true top k is missed when its own
    vector ranks beyond the candidates although a window of it ranks within the top k. The
    windows of the synthetic corpora seldom outscore their chunk by that much (README,
    "Postgres at scale"); a chunk found scores its true best.
    """
    dimension = int(len(query))
    where, params = filter_sql(filters)
    sql = f"""WITH found AS MATERIALIZED (
                  SELECT c.seq, c.id, c.embedding FROM chunks c
                  WHERE c.dimension = {dimension} {where}
                  ORDER BY c.embedding::halfvec({dimension}) <=> %s::halfvec({dimension}) LIMIT %s),
              scored AS MATERIALIZED (  -- else each candidate's windows are read twice
                  SELECT f.id, least(f.embedding <=> %s::vector,
                                     coalesce((SELECT min(w.embedding <=> %s::vector) FROM chunk_windows w
                                               WHERE w.chunk_seq = f.seq), 'Infinity')) AS distance
                  FROM found f)
              SELECT id, 1 - distance FROM scored ORDER BY distance, id LIMIT %s"""
    return sql, (*params, query, pool or candidates(k), query, query, k)


def indexed_dimensions(conn: psycopg.Connection) -> set[int]:
    """Dimensions with their HNSW index."""
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' AND indexname LIKE 'chunks_halfvec_hnsw_%'"
    ).fetchall()
    return {int(name.rsplit("_", 1)[1]) for (name,) in rows}


def window_matrix(rows: Sequence[Any], dimension: int) -> np.ndarray:
    """Window vectors as a (k, dimension) float32 array, k >= 0."""
    if not len(rows):
        return np.zeros((0, dimension), np.float32)
    return np.asarray(rows, dtype=np.float32).reshape(-1, dimension)
