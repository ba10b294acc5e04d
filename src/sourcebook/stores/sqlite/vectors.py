"""Vector search on the SQLite store: the glue between the file and the tenant's vector index.

Vectors live in their own table keyed by the chunk's ``seq``, a chunk's sentence-window
vectors (k x dimension float32) in the same row. The index over them (index/vector_index.py:
exact rows in memory for small collections, a memory-mapped approximate base plus an exact
delta for large ones) catches up with the file through `changes.py`'s mark at the start of
each search, inside the read transaction, so another process's writes are seen at once and a
write costs its own size. `_SqliteRows` is what the index reads: rows after a mark and the
deletion log. The hits' ids are read from the file last, so a chunk it no longer holds is
never returned.

The whole search runs under the view's vector lock: catching up mutates the index, and the
approximate search is a few milliseconds. A due rebuild of an approximate base runs on the
index's own thread over a read-only connection of its own (`_rebuild_rows`), never inside a
search.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ...index.vector_index import ANN_MIN_ROWS, Mark, TenantVectors
from ...index.vectors import RowBatch
from ...models import ScoredId, SearchFilter
from ..common import check_k, unit_query
from ..sql.base import SharedSql
from .changes import ChangeMark, current_mark, deletions_since
from .filters import allowed_documents, check_query_dimension

ROW_BATCH_CHUNKS = 4096  # chunks per batch handed to the index while it reads rows


class SQLiteVectors(SharedSql):
    """The vector half of the `SearchStore` role, and the stored vectors ingestion reuses."""

    _index: TenantVectors | None
    _vector_lock: threading.Lock
    ann_min_rows: int = ANN_MIN_ROWS  # rows above which a dimension gets an approximate index (tests lower it)

    @property
    def path(self) -> str:
        raise NotImplementedError

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
        """The k best chunks, a chunk scoring the best of its own vector and its windows'."""
        check_k(k)
        query = unit_query(vector)
        with self._vector_lock, self._read() as conn:
            check_query_dimension(conn, self.tenant, filters.collections, len(query))
            source = _SqliteRows(conn, self.tenant)
            index = self._vector_index()
            index.catch_up(source)
            allowed = allowed_documents(conn, self.tenant, filters)
            found = index.search(source, query, k, allowed)
            ids = _chunk_ids(conn, found.seqs)
        kept = [(ids[int(seq)], float(score)) for seq, score in zip(found.seqs, found.scores) if int(seq) in ids]
        return [ScoredId(chunk, rank, score) for rank, (chunk, score) in enumerate(kept, 1)]

    def _vector_index(self) -> TenantVectors:
        """This view's index; its files live beside the database, in ``<path>.indexes/<tenant>/``."""
        if self._index is None:
            if self.path == ":memory:":
                self._index = TenantVectors(None, self.ann_min_rows)
            else:
                self._index = TenantVectors(Path(self.path + ".indexes") / self.tenant, self.ann_min_rows, self._rebuild_rows)
        return self._index

    @contextmanager
    def _rebuild_rows(self) -> Iterator[_SqliteRows]:
        """The tenant's rows in one read snapshot on a connection of the rebuild thread's own, so
        the store's connection (and its lock) stays free for searches and writes meanwhile."""
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("BEGIN")
            yield _SqliteRows(conn, self.tenant)
        finally:
            conn.close()


def window_blob(windows: np.ndarray) -> bytes | None:
    return np.ascontiguousarray(windows).tobytes() if len(windows) else None


def window_matrix(blob: bytes | None, dimension: int) -> np.ndarray:
    if not blob:
        return np.zeros((0, dimension), np.float32)
    return np.frombuffer(blob, dtype=np.float32).reshape(-1, dimension).copy()


class _SqliteRows:
    """The index's view of the file, inside one read transaction (index/vector_index.RowSource)."""

    def __init__(self, conn: sqlite3.Connection, tenant: str) -> None:
        self.conn = conn
        self.tenant = tenant

    def mark(self) -> Mark:
        mark = current_mark(self.conn)
        return (mark.chunk_seq, mark.deletion_id)

    def deleted_since(self, mark: Mark) -> np.ndarray | None:
        deleted = deletions_since(self.conn, ChangeMark(*mark))
        return None if deleted is None else np.unique(deleted)

    def dimensions(self) -> list[int]:
        rows = self.conn.execute("SELECT DISTINCT dimension FROM collections WHERE tenant = ?", (self.tenant,))
        return [int(dimension) for (dimension,) in rows]

    def rows(self, after: int, upto: int, dimension: int | None) -> Iterator[tuple[int, RowBatch]]:
        """Rows of the tenant's chunks in (after, upto], in seq order, a few thousand chunks a batch.

        The range is on the chunks' primary key, so catching up reads only the new rows."""
        condition = "" if dimension is None else " AND length(v.vector) = ?"
        params: tuple[int | str, ...] = (self.tenant, after, upto) + (() if dimension is None else (4 * dimension,))
        cursor = self.conn.execute(
            f"""SELECT c.seq, c.document_id, v.vector, v.windows FROM chunks c
                JOIN vectors v ON v.chunk_seq = c.seq JOIN documents d ON d.id = c.document_id
                WHERE d.tenant = ? AND c.seq > ? AND c.seq <= ?{condition} ORDER BY c.seq""",
            params,
        )
        while block := cursor.fetchmany(ROW_BATCH_CHUNKS):
            yield from _batches(block)

    def live_seqs(self, upto: int) -> np.ndarray:
        rows = self.conn.execute(
            """SELECT c.seq FROM chunks c JOIN documents d ON d.id = c.document_id
               WHERE d.tenant = ? AND c.seq <= ? ORDER BY c.seq""",
            (self.tenant, upto),
        ).fetchall()
        return np.fromiter((seq for (seq,) in rows), dtype=np.int64, count=len(rows))

    def row_count(self, dimension: int) -> int:
        """length() of a blob reads its size from the record header, not the vectors."""
        row = self.conn.execute(
            """SELECT coalesce(sum(1 + coalesce(length(v.windows), 0) / length(v.vector)), 0) FROM chunks c
               JOIN vectors v ON v.chunk_seq = c.seq JOIN documents d ON d.id = c.document_id
               WHERE d.tenant = ? AND length(v.vector) = ?""",
            (self.tenant, 4 * dimension),
        ).fetchone()
        return int(row[0])

    def chunk_id(self, seq: int) -> str | None:
        row = self.conn.execute("SELECT id FROM chunks WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])


def _batches(block: Sequence[tuple[int, str, bytes, bytes | None]]) -> Iterator[tuple[int, RowBatch]]:
    """Rows (seq, document, vector, windows), one batch per dimension, each chunk's vector then its windows'."""
    by_dimension: dict[int, tuple[list[bytes], list[int], list[str]]] = {}
    for seq, document, vector, windows in block:
        blobs, seqs, documents = by_dimension.setdefault(len(vector) // 4, ([], [], []))
        count = 1 + len(windows or b"") // len(vector)
        blobs.append(vector)
        if windows:
            blobs.append(windows)
        seqs.extend([seq] * count)
        documents.extend([document] * count)
    for dimension, (blobs, seqs, documents) in by_dimension.items():
        vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, dimension)
        yield dimension, RowBatch(vectors, np.array(seqs, dtype=np.int64), documents)


def _chunk_ids(conn: sqlite3.Connection, seqs: np.ndarray) -> dict[int, str]:
    """The ids of the chunks with these seqs (those the file still holds)."""
    rows = conn.execute("SELECT seq, id FROM chunks WHERE seq IN (SELECT value FROM json_each(?))",
                        (json.dumps([int(seq) for seq in seqs]),))
    return {int(seq): str(id_) for seq, id_ in rows}
