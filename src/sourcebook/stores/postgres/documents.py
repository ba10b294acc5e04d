"""Writing documents, chunks and their vectors in the Postgres store (reads: sql/documents.py).

`replace_chunks` locks the document row, deletes its chunks and COPYs the new ones
(binary, vectors and sentence-window vectors included) in one transaction: readers see
old or new, never a mix; concurrent writers of one document queue on the row lock.
COPY cannot write a table under row-level security, so rows are COPYed into session
staging tables (`STAGING_TABLES`, created per pooled connection) and moved with one
INSERT ... SELECT each, which the policies check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import psycopg

from ...models import Chunk
from ..bm25 import term_counts
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
from ..sql.dialect import POSTGRES, Sql
from ..sql.documents import UPSERT_DOCUMENT, CheckedBatch, SqlDocuments
from .vectors import window_matrix

_COPY_COLUMNS = (
    ("id", "text"), ("document_id", "text"), ("collection", "text"), ("position", "int4"), ("text", "text"),
    ("prefix", "text"), ("heading_path", "text[]"), ("page", "int4"), ("token_count", "int4"),
    ("content_hash", "text"), ("start", "int4"), ('"end"', "int4"), ("index_title", "text"),
    ("dimension", "int4"), ("embedding", "vector"), ("length", "int4"),
)
_TERM_COPY_COLUMNS = (("position", "int4"), ("term", "text"), ("tf", "int4"), ("length", "int4"))
_WINDOW_COPY_COLUMNS = (("position", "int4"), ("number", "int4"), ("embedding", "vector"))


def _staging_table(name: str, columns: tuple[tuple[str, str], ...]) -> str:
    typed = ", ".join(f"{column} {kind}" for column, kind in columns)
    return f"CREATE TEMP TABLE IF NOT EXISTS {name} ({typed}) ON COMMIT DELETE ROWS"


STAGING_TABLES = (
    _staging_table("chunk_staging", _COPY_COLUMNS),
    _staging_table("term_staging", _TERM_COPY_COLUMNS),
    _staging_table("window_staging", _WINDOW_COPY_COLUMNS),
)
"""What a pooled connection creates once: where `_copy_chunks` COPYs rows to."""


class PostgresDocuments(SqlDocuments):
    """The writes of the `DocumentStore` role, and `export_chunks`."""

    _ensure_hnsw_index: Callable[[int], None]
    """PostgresVectors's: the HNSW indexes of a dimension, created unless they exist."""

    def _upsert_document_row(self, sql: Sql, params: tuple[Any, ...]) -> None:
        """The upsert, with a clear error when another tenant holds the id: its row is invisible
        here, so the conflict's UPDATE fails the row-level security check instead."""
        try:
            with sql.conn.transaction():
                sql.execute(UPSERT_DOCUMENT, params)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise document_id_taken(params[0]) from exc

    def ensure_collection(self, name: str, embedding_model: str, dimension: int) -> None:
        """The collection row, then the HNSW indexes of its dimension unless they exist."""
        super().ensure_collection(name, embedding_model, dimension)
        self._ensure_hnsw_index(dimension)

    def delete_collection(self, name: str) -> None:
        """The collection, its documents (their chunks, vectors and postings by ON DELETE CASCADE)
        and their graph rows, in one transaction."""
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM collections WHERE name = %s", (name,)).fetchone() is None:
                raise collection_not_found(name)
            execute = Sql(conn, POSTGRES).execute
            for (document_id,) in conn.execute("SELECT id FROM documents WHERE collection = %s", (name,)).fetchall():
                graph_write.forget_document(execute, document_id)
            conn.execute("DELETE FROM documents WHERE collection = %s", (name,))
            conn.execute("DELETE FROM collections WHERE name = %s", (name,))
            self._searches_changed(Sql(conn, POSTGRES))

    # Documents -----------------------------------------------------------
    def _replace_chunks(self, document_id: str, content_hash: str, title: str, batches: Iterable[CheckedBatch]) -> None:
        with self._write() as conn:
            row = conn.execute(
                """SELECT d.collection, c.dimension FROM documents d JOIN collections c ON c.name = d.collection
                   WHERE d.id = %s FOR UPDATE OF d""",
                (document_id,),
            ).fetchone()
            if row is None:
                raise not_found(document_id)
            collection, dimension = row
            graph_write.forget_document(Sql(conn, POSTGRES).execute, document_id)
            conn.execute("DELETE FROM chunks WHERE document_id = %s", (document_id,))
            count = 0
            for chunks, vectors, windows in batches:
                check_vector_dimension(document_id, dimension, vectors)
                _copy_chunks(conn, document_id, collection, title, chunks, vectors, windows)
                count += len(chunks)
            conn.execute(
                """UPDATE documents SET status = 'ready', error = NULL, processing_owner = NULL, chunk_count = %s, content_hash = %s,
                          title = %s, updated_at = %s WHERE id = %s""",
                (count, content_hash, title, now(), document_id),
            )
            self._searches_changed(Sql(conn, POSTGRES))

    def delete_document(self, document_id: str) -> None:
        """Chunks (and their windows and postings) go by ON DELETE CASCADE, in the same
        statement's transaction."""
        with self._write() as conn:
            graph_write.forget_document(Sql(conn, POSTGRES).execute, document_id)
            deleted = conn.execute("DELETE FROM documents WHERE id = %s", (document_id,)).rowcount
            self._searches_changed(Sql(conn, POSTGRES))
        if not deleted:
            raise not_found(document_id)

    def export_chunks(self, document_id: str) -> tuple[list[Chunk], np.ndarray, list[np.ndarray]]:
        """One statement (one snapshot): each chunk's windows come as an array of float4[]."""
        with self._read() as conn:
            rows = conn.execute(
                """SELECT c.position, c.text, c.start, c."end", c.heading_path, c.page, c.token_count, c.prefix,
                          c.embedding,
                          (SELECT array_agg(w.embedding::real[] ORDER BY w.number) FROM chunk_windows w
                           WHERE w.chunk_seq = c.seq)
                   FROM chunks c WHERE c.document_id = %s ORDER BY c.position""",
                (document_id,),
            ).fetchall()
        chunks = [Chunk(position, text, start, end, tuple(path), page, tokens, prefix)
                  for position, text, start, end, path, page, tokens, prefix, _, _ in rows]
        vectors = np.stack([row[-2].to_numpy() for row in rows]) if rows else np.zeros((0, 0), np.float32)
        windows = [window_matrix(row[-1] or [], vectors.shape[1]) for row in rows]
        return chunks, vectors, windows



def _copy_chunks(
    conn: psycopg.Connection, document_id: str, collection: str, title: str, chunks: Sequence[Chunk],
    vectors: np.ndarray, windows: Sequence[np.ndarray],
) -> None:
    """Binary COPY of the chunk rows (vectors included), their BM25 postings and their
    window vectors into the session's staging tables, then one INSERT ... SELECT each
    under the tenant's policies (ON COMMIT DELETE ROWS empties the staging tables; a
    rollback discards their rows; each call empties them first, for the next batch of a document)."""
    for staging in ("chunk_staging", "term_staging", "window_staging"):
        conn.execute(f"DELETE FROM {staging}")
    names = ", ".join(name for name, _ in _COPY_COLUMNS)
    dimension = vectors.shape[1]
    analysed = {c.position: term_counts(indexed_text(title, c.heading_path, c.text)) for c in chunks}
    with conn.cursor() as cursor:
        with cursor.copy(f"COPY chunk_staging ({names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _COPY_COLUMNS])
            for i in range(len(chunks)):
                c = chunks[i]
                copy.write_row((
                    chunk_id(document_id, c.position), document_id, collection, c.position, c.text, c.prefix,
                    list(c.heading_path), c.page, c.token_count, c.content_hash, c.start, c.end, title,
                    dimension, vectors[i], analysed[c.position][1],
                ))
        cursor.execute(f"INSERT INTO chunks ({names}) SELECT {names} FROM chunk_staging")
        term_names = ", ".join(name for name, _ in _TERM_COPY_COLUMNS)
        with cursor.copy(f"COPY term_staging ({term_names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _TERM_COPY_COLUMNS])
            for position, (counts, length) in analysed.items():
                for term, tf in counts.items():
                    copy.write_row((position, term, tf, length))
        cursor.execute(
            """INSERT INTO chunk_terms (term, chunk_seq, tf, length)
               SELECT s.term, c.seq, s.tf, s.length FROM term_staging s
               JOIN chunks c ON c.document_id = %s AND c.position = s.position""",
            (document_id,),
        )
        if not any(len(matrix) for matrix in windows):
            return
        window_names = ", ".join(name for name, _ in _WINDOW_COPY_COLUMNS)
        with cursor.copy(f"COPY window_staging ({window_names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in _WINDOW_COPY_COLUMNS])
            for c, matrix in zip(chunks, windows):
                for number, window in enumerate(matrix):
                    copy.write_row((c.position, number, window))
        cursor.execute(
            """INSERT INTO chunk_windows (chunk_seq, number, collection, dimension, embedding)
               SELECT c.seq, s.number, %s, %s, s.embedding FROM window_staging s
               JOIN chunks c ON c.document_id = %s AND c.position = s.position""",
            (collection, dimension, document_id),
        )
