"""Writing documents, chunks and their vectors in the SQLite store (reads: sql/documents.py).

``chunks`` has an INTEGER PRIMARY KEY ``seq`` besides its text ``id``
(``"<document_id>#<position>"``): vectors and term counts are keyed by it, and a declared
integer key survives VACUUM (an implicit rowid may not). AUTOINCREMENT keeps a deleted
chunk's ``seq`` from ever being reused. Every write is one ``BEGIN IMMEDIATE``
transaction that bumps the generation when chunks change: readers see the old chunks or
the new ones, never a mix, and a failure rolls back to the old state.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ...models import Chunk
from ..common import (
    check_vector_dimension,
    chunk_id,
    collection_not_found,
    document_id_taken,
    indexed_text,
    not_found,
    now,
)
from ..sql import graph_write
from ..sql.dialect import Sql
from ..sql.documents import UPSERT_DOCUMENT, CheckedBatch, SqlDocuments
from .terms import index_terms
from .schema import bump_generation
from .vectors import window_blob, window_matrix


class SQLiteDocuments(SqlDocuments):
    """The writes of the `DocumentStore` role, and `export_chunks`."""

    def _upsert_document_row(self, sql: Sql, params: tuple[Any, ...]) -> None:
        """Refuse a document id another tenant holds (ids are global; rows never change tenant)."""
        document_id = params[0]
        if sql.execute("SELECT 1 FROM documents WHERE id = ? AND tenant != ?", (document_id, self.tenant)).fetchone():
            raise document_id_taken(document_id)
        sql.execute(UPSERT_DOCUMENT, params)

    def delete_collection(self, name: str) -> None:
        with self._write() as conn:
            key = (self.tenant, name)
            if conn.execute("SELECT 1 FROM collections WHERE tenant = ? AND name = ?", key).fetchone() is None:
                raise collection_not_found(name)
            documents = conn.execute("SELECT id FROM documents WHERE tenant = ? AND collection = ?", key).fetchall()
            for (document_id,) in documents:
                graph_write.forget_document(conn.execute, document_id)
                _delete_chunk_rows(conn, document_id)
            conn.execute("DELETE FROM documents WHERE tenant = ? AND collection = ?", key)
            conn.execute("DELETE FROM collections WHERE tenant = ? AND name = ?", key)
            bump_generation(conn)

    def _replace_chunks(self, document_id: str, content_hash: str, title: str, batches: Iterable[CheckedBatch]) -> None:
        with self._write() as conn:
            dimension = _document_dimension(conn, self.tenant, document_id)
            graph_write.forget_document(conn.execute, document_id)
            _delete_chunk_rows(conn, document_id)
            count = 0
            for chunks, vectors, windows in batches:
                check_vector_dimension(document_id, dimension, vectors)
                _insert_chunk_rows(conn, document_id, title, chunks, vectors, windows)
                count += len(chunks)
            conn.execute(
                """UPDATE documents SET status = 'ready', error = NULL, processing_owner = NULL, chunk_count = ?, content_hash = ?,
                          title = ?, updated_at = ? WHERE id = ?""",
                (count, content_hash, title, now(), document_id),
            )
            bump_generation(conn)

    def delete_document(self, document_id: str) -> None:
        with self._write() as conn:
            _document_dimension(conn, self.tenant, document_id)  # raises unless it is this tenant's
            graph_write.forget_document(conn.execute, document_id)
            _delete_chunk_rows(conn, document_id)
            if not conn.execute("DELETE FROM documents WHERE id = ?", (document_id,)).rowcount:
                raise not_found(document_id)
            bump_generation(conn)

    def export_chunks(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[np.ndarray]]:
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.position, c.text, c.start, c."end", c.heading_path, c.page, c.token_count, c.prefix,
                          v.vector, v.windows
                   FROM chunks c JOIN documents d ON d.id = c.document_id JOIN vectors v ON v.chunk_seq = c.seq
                   WHERE d.tenant = ? AND c.document_id = ? ORDER BY c.position""",
                (self.tenant, document_id),
            ).fetchall()
        chunks = [Chunk(position, text, start, end, tuple(json.loads(path)), page, tokens, prefix)
                  for position, text, start, end, path, page, tokens, prefix, _, _ in rows]
        vectors = np.stack([np.frombuffer(row[-2], dtype=np.float32) for row in rows]) if rows else np.zeros((0, 0), np.float32)
        windows = [window_matrix(row[-1], vectors.shape[1]) for row in rows]
        return chunks, vectors, windows


def _document_dimension(conn: sqlite3.Connection, tenant: str, document_id: str) -> int:
    """The vector dimension of the tenant's document; DocumentNotFoundError when it has none by that id."""
    row = conn.execute(
        """SELECT c.dimension FROM documents d JOIN collections c ON c.tenant = d.tenant AND c.name = d.collection
           WHERE d.id = ? AND d.tenant = ?""",
        (document_id, tenant),
    ).fetchone()
    if row is None:
        raise not_found(document_id)
    return int(row[0])


def _delete_chunk_rows(conn: sqlite3.Connection, document_id: str) -> None:
    """Remove the document's chunks; their vectors and term counts go by cascade."""
    conn.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))


def _insert_chunk_rows(
    conn: sqlite3.Connection,
    document_id: str,
    title: str,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    windows: Sequence[np.ndarray],
) -> None:
    conn.executemany(
        """INSERT INTO chunks (id, document_id, position, text, prefix, heading_path, page,
                               token_count, content_hash, start, "end")
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [
            (chunk_id(document_id, c.position), document_id, c.position, c.text, c.prefix,
             json.dumps(list(c.heading_path)), c.page, c.token_count, c.content_hash, c.start, c.end)
            for c in chunks
        ],
    )
    if not chunks:
        return
    positions = [c.position for c in chunks]
    seqs = dict(conn.execute(  # this batch's rows (a document written in batches has others)
        "SELECT position, seq FROM chunks WHERE document_id = ? AND position BETWEEN ? AND ?",
        (document_id, min(positions), max(positions)),
    ))
    contiguous = np.ascontiguousarray(vectors)
    conn.executemany(
        "INSERT INTO vectors (chunk_seq, vector, windows) VALUES (?, ?, ?)",
        [(seqs[c.position], contiguous[i].tobytes(), window_blob(windows[i])) for i, c in enumerate(chunks)],
    )
    index_terms(conn, [(seqs[c.position], indexed_text(title, c.heading_path, c.text)) for c in chunks])
