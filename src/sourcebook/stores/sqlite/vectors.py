"""Vector search on the SQLite store: exact, with numpy, over matrices cached in memory.

Vectors live in their own table keyed by the chunk's ``seq``, a chunk's sentence-window
vectors (k x dimension float32) in the same row: loading the search matrix reads one
compact table of blobs, and a vector can be rewritten without touching the chunk row.
The matrices hold the tenant's chunks only and are reloaded when the schema's generation
moved; a search runs its numpy work on an immutable snapshot, outside the lock.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...models import ScoredId, SearchFilter
from ..common import check_k, unit_query
from ..sql.base import SharedSql
from .filters import allowed_documents, check_query_dimension
from .schema import generation


@dataclass(frozen=True)
class _VectorPartition:
    """All vectors of one dimension: a contiguous matrix and, per row, its chunk and document."""

    matrix: np.ndarray  # (n, dimension) float32, C-contiguous: each chunk's vector, then its windows'
    chunk_ids: tuple[str, ...]
    row_chunk: np.ndarray  # (n,) int32 index into chunk_ids, non-decreasing
    row_document: np.ndarray  # (n,) int32 values of _VectorIndex.document_codes


@dataclass(frozen=True)
class _VectorIndex:
    """An immutable snapshot of the vectors at one generation (searched without the lock)."""

    generation: int
    document_codes: dict[str, int]
    partitions: dict[int, _VectorPartition]


class SQLiteVectors(SharedSql):
    """The vector half of the `SearchStore` role, and the stored vectors ingestion reuses."""

    _index: _VectorIndex | None

    def vectors_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._vector_rows_for_hashes(collection, hashes)
        return {h: np.frombuffer(vector, dtype=np.float32).copy() for h, vector, _ in rows}

    def windows_for_hashes(self, collection: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._vector_rows_for_hashes(collection, hashes)
        return {h: window_matrix(windows, len(vector) // 4) for h, vector, windows in rows}

    def _vector_rows_for_hashes(self, collection: str, hashes: Sequence[str]) -> list[tuple[str, bytes, bytes | None]]:
        """(content hash, vector blob, windows blob) of the collection's chunks with these hashes."""
        with self._read() as conn:
            return conn.execute(
                """SELECT c.content_hash, v.vector, v.windows FROM chunks c
                   JOIN documents d ON d.id = c.document_id
                   JOIN vectors v ON v.chunk_seq = c.seq
                   WHERE d.tenant = ? AND d.collection = ? AND c.content_hash IN (SELECT value FROM json_each(?))""",
                (self.tenant, collection, json.dumps(list(dict.fromkeys(hashes)))),
            ).fetchall()

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilter) -> list[ScoredId]:
        """Exact dot products against the cached matrix, a chunk scoring the best of its own
        vector and its windows'; the numpy work runs outside the lock."""
        check_k(k)
        query = unit_query(vector)
        with self._read() as conn:
            check_query_dimension(conn, self.tenant, filters.collections, len(query))
            index = self._current_index(conn)
            allowed = allowed_documents(conn, self.tenant, filters)
        partition = index.partitions.get(len(query))
        if partition is None:
            return []
        rows = None if allowed is None else _allowed_rows(index, partition, allowed)
        scores = _scores(partition.matrix, query, rows)
        chunks, scores = _max_per_chunk(partition.row_chunk if rows is None else partition.row_chunk[rows], scores)
        top = _top_indices(scores, k)
        return [
            ScoredId(partition.chunk_ids[chunks[i]], rank, float(scores[i]))
            for rank, i in enumerate(top, 1)
        ]

    def _current_index(self, conn: sqlite3.Connection) -> _VectorIndex:
        """The cached vector index, reloaded when any connection has changed chunks since."""
        current = generation(conn)
        if self._index is None or self._index.generation != current:
            self._index = _load_index(conn, self.tenant, current)
        return self._index


def window_blob(windows: np.ndarray) -> bytes | None:
    return np.ascontiguousarray(windows).tobytes() if len(windows) else None


def window_matrix(blob: bytes | None, dimension: int) -> np.ndarray:
    if not blob:
        return np.zeros((0, dimension), np.float32)
    return np.frombuffer(blob, dtype=np.float32).reshape(-1, dimension).copy()


def _load_index(conn: sqlite3.Connection, tenant: str, generation: int) -> _VectorIndex:
    """Read every vector of `tenant` into per-dimension matrices (called inside the read
    transaction that read `generation`, so the snapshot and its number agree).

    Rows stream into one growing buffer per dimension, so the load never holds the
    vectors twice (a list of blobs plus the matrix).
    """
    document_codes: dict[str, int] = {}
    builders: dict[int, _PartitionBuilder] = {}
    rows = conn.execute(
        """SELECT c.id, c.document_id, v.vector, v.windows FROM vectors v JOIN chunks c ON c.seq = v.chunk_seq
           JOIN documents d ON d.id = c.document_id WHERE d.tenant = ?""",
        (tenant,),
    )
    for id_, document_id, blob, windows in rows:
        builder = builders.setdefault(len(blob) // 4, _PartitionBuilder())
        builder.add(id_, document_codes.setdefault(document_id, len(document_codes)), blob, windows)
    partitions = {dimension: builder.build(dimension) for dimension, builder in builders.items()}
    return _VectorIndex(generation, document_codes, partitions)


class _PartitionBuilder:
    """One dimension's rows, accumulated while the index loads."""

    def __init__(self) -> None:
        self.vectors = bytearray()
        self.chunk_ids: list[str] = []
        self.documents: list[int] = []
        self.rows_per_chunk: list[int] = []

    def add(self, id_: str, document: int, vector: bytes, windows: bytes | None) -> None:
        self.vectors += vector
        if windows:
            self.vectors += windows
        self.chunk_ids.append(id_)
        self.documents.append(document)
        self.rows_per_chunk.append(1 + len(windows or b"") // len(vector))

    def build(self, dimension: int) -> _VectorPartition:
        matrix = np.frombuffer(self.vectors, dtype=np.float32).reshape(-1, dimension)
        counts = np.array(self.rows_per_chunk, dtype=np.int64)
        row_chunk = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        row_document = np.repeat(np.array(self.documents, dtype=np.int32), counts)
        return _VectorPartition(matrix, tuple(self.chunk_ids), row_chunk, row_document)


def _allowed_rows(index: _VectorIndex, partition: _VectorPartition, allowed: list[str]) -> np.ndarray:
    """Row numbers of `partition` whose document passed the filters (a boolean mask per document)."""
    mask = np.zeros(len(index.document_codes), dtype=bool)
    mask[[index.document_codes[d] for d in allowed if d in index.document_codes]] = True
    return np.flatnonzero(mask[partition.row_document])


def _scores(matrix: np.ndarray, query: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Dot products for `rows` (all rows when None). Gathering a small subset first is cheaper
    than a full pass; gathering most of the matrix would copy more than the pass reads."""
    if rows is None:
        return matrix @ query
    if 2 * len(rows) < len(matrix):
        return matrix[rows] @ query
    return (matrix @ query)[rows]


def _max_per_chunk(row_chunk: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chunk of each group, its best score) for scores whose rows come grouped by chunk
    (`row_chunk` non-decreasing): a chunk scores the best of its vector and its windows'."""
    if len(row_chunk) == 0:
        return row_chunk, scores
    starts = np.flatnonzero(np.concatenate(([True], row_chunk[1:] != row_chunk[:-1])))
    if len(starts) == len(row_chunk):  # no windows among these rows
        return row_chunk, scores
    return row_chunk[starts], np.maximum.reduceat(scores, starts)


def _top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first: argpartition, then sort only those k."""
    if k < len(scores):
        candidates = np.argpartition(scores, len(scores) - k)[-k:]
    else:
        candidates = np.arange(len(scores))
    return candidates[np.argsort(-scores[candidates], kind="stable")]
