"""Collections, documents and chunk reads: the same SQL on SQLite and Postgres.

What differs between the stores stays in their own documents.py: how chunks and vectors
are written (SQLite rows and blobs, Postgres COPY), deleting (SQLite bumps the in-memory
indexes' generation; Postgres cascades), and how another tenant's document id is told
apart (`_upsert_document_row`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ...models import Chunk, DocumentRecord, DocumentStatus, StoredChunk
from ...owners import interrupted_reason, owner_gone
from ..base import ChunkBatch, CollectionInfo
from ..common import (
    check_chunks_and_vectors,
    check_windows,
    missing_collection,
    model_mismatch,
    not_found,
    now,
    source_taken,
)
from .base import SharedSql
from .dialect import Sql, decoded, iso

DOCUMENT_COLUMNS = (
    "id, collection, source, title, media_type, status, error, chunk_count, content_hash, "
    "metadata, created_at, updated_at, processing_owner"
)
STORED_CHUNK_SELECT = (
    "SELECT c.id, c.document_id, d.collection, d.source, d.title, c.position, c.text, "
    "c.heading_path, c.page, c.prefix FROM chunks c CROSS JOIN documents d WHERE d.id = c.document_id"
)
"""Chunks with their document's fields; callers add ``AND`` conditions on the chunks. The CROSS JOIN
makes SQLite look chunks up first (by id, or by document) and each one's document by key: with a
plain JOIN and no table statistics it started from all of the tenant's documents and read every
chunk row on every fetch (32-50x slower keyword search at 100,000 chunks, same hits). Postgres
plans a CROSS JOIN with a WHERE condition as any inner join."""
UPSERT_DOCUMENT = """INSERT INTO documents (id, tenant, collection, source, title, media_type, status, error,
                                            metadata, created_at, updated_at, processing_owner)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (id) DO UPDATE SET
        collection = excluded.collection, source = excluded.source,
        title = excluded.title, media_type = excluded.media_type,
        status = excluded.status, error = excluded.error,
        metadata = excluded.metadata, updated_at = excluded.updated_at,
        processing_owner = excluded.processing_owner"""
"""The upsert `_upsert_document_row` runs (parameters in its column order)."""
UPDATE_DOCUMENT = """UPDATE documents SET collection = ?, source = ?, title = ?, media_type = ?, status = ?, error = ?,
                                          metadata = ?, updated_at = ?, processing_owner = ?
    WHERE id = ? AND tenant = ?"""
"""`upsert_document(create=False)`: UPSERT_DOCUMENT's update alone, which never creates the row."""


UNFINISHED = (DocumentStatus.PENDING.value, DocumentStatus.PROCESSING.value)
"""The stored statuses an owner process holds until the document is ready or failed."""


def owned_status(status: str, owner: str | None) -> str | None:
    """The owner to store with `status`: only an unfinished document has one (else None)."""
    return owner if DocumentStatus(status).value in UNFINISHED else None


def document_record(row: Sequence[Any]) -> DocumentRecord:
    """A row of DOCUMENT_COLUMNS; an unfinished document whose owner has ended reads `interrupted`."""
    (id_, collection, source, title, media_type, status, error, chunk_count, content_hash,
     metadata, created_at, updated_at, owner) = row
    if status in UNFINISHED and owner_gone(owner):
        status, error = DocumentStatus.INTERRUPTED, interrupted_reason(owner)
    return DocumentRecord(
        id=id_, collection=collection, source=source, title=title, media_type=media_type,
        status=DocumentStatus(status), error=error, chunk_count=chunk_count, content_hash=content_hash,
        metadata=decoded(metadata), created_at=iso(created_at), updated_at=iso(updated_at),
    )


CheckedBatch = tuple[Sequence[Chunk], np.ndarray, list[np.ndarray]]
"""A `ChunkBatch` whose shapes were checked, with one window matrix per chunk."""


def checked_batch(batch: ChunkBatch) -> CheckedBatch:
    """The batch, refused with ValueError when malformed (a caller bug)."""
    chunks, vectors, windows = batch
    check_chunks_and_vectors(chunks, vectors)
    return chunks, vectors, check_windows(chunks, vectors, windows)


def stored_chunk(row: Sequence[Any]) -> StoredChunk:
    id_, document_id, collection, source, title, position, text, heading_path, page, prefix = row
    return StoredChunk(
        id=id_, document_id=document_id, collection=collection, source=source, title=title,
        position=position, text=text, heading_path=tuple(decoded(heading_path)), page=page, prefix=prefix,
    )


class SqlDocuments(SharedSql):
    """The reads of the `DocumentStore` role, and the document row's own writes."""

    def _upsert_document_row(self, sql: Sql, params: tuple[Any, ...]) -> None:
        """Run UPSERT_DOCUMENT, refusing with `common.document_id_taken` an id another tenant holds."""
        raise NotImplementedError

    def _replace_chunks(self, document_id: str, content_hash: str, title: str, batches: Iterable[CheckedBatch]) -> None:
        """`replace_chunks_in_batches` on batches checked as they are read: each store writes
        chunks its own way, in one transaction that reads `batches` as it goes."""
        raise NotImplementedError

    def ensure_collection(self, name: str, embedding_model: str, dimension: int) -> None:
        if not name or dimension <= 0:
            raise ValueError(f"a collection needs a name and a positive dimension, got {name!r}, {dimension}")
        with self._writing() as sql:
            sql.execute(
                """INSERT INTO collections (tenant, name, embedding_model, dimension, created_at) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (tenant, name) DO NOTHING""",
                (self.tenant, name, embedding_model, dimension, now()),
            )
            row = sql.execute(
                "SELECT embedding_model, dimension FROM collections WHERE tenant = ? AND name = ?", (self.tenant, name)
            ).fetchone()
        if tuple(row) != (embedding_model, dimension):
            raise model_mismatch(name, (row[0], row[1]), embedding_model, dimension)

    def collections(self) -> list[CollectionInfo]:
        with self._reading() as sql:
            rows = sql.execute(
                f"""SELECT c.name, c.embedding_model, c.dimension,
                           count(d.id), coalesce(sum(d.chunk_count), 0)
                    FROM collections c LEFT JOIN documents d ON d.tenant = c.tenant AND d.collection = c.name
                    WHERE c.tenant = ? GROUP BY c.tenant, c.name ORDER BY c.name{sql.dialect.collate}""",
                (self.tenant,),
            ).fetchall()
        return [CollectionInfo(name, model, dimension, int(documents), int(chunks))
                for name, model, dimension, documents, chunks in rows]

    def get_document(self, document_id: str) -> DocumentRecord | None:
        return self._one_document("id = ?", (document_id,))

    def find_document(self, collection: str, source: str) -> DocumentRecord | None:
        return self._one_document("collection = ? AND source = ?", (collection, source))

    def _one_document(self, where: str, params: tuple[Any, ...]) -> DocumentRecord | None:
        with self._reading() as sql:
            row = sql.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE tenant = ? AND {where}", (self.tenant, *params)
            ).fetchone()
        return None if row is None else document_record(row)

    def list_documents(
        self, collection: str | None = None, status: DocumentStatus | None = None
    ) -> list[DocumentRecord]:
        """Filtering by `status` reads the status as `document_record` derives it: `interrupted`
        selects the unfinished documents whose owner has ended, `processing` the others."""
        wanted = None if status is None else DocumentStatus(status)
        stored = UNFINISHED if wanted in (DocumentStatus.INTERRUPTED, *UNFINISHED) else (wanted,)
        with self._reading() as sql:
            conditions = {
                "tenant = ?": self.tenant,
                "collection = ?": collection,
                sql.dialect.any_of("status"): None if wanted is None else sql.dialect.values(stored),
            }
            used = {condition: value for condition, value in conditions.items() if value is not None}
            collate = sql.dialect.collate
            rows = sql.execute(
                f"""SELECT {DOCUMENT_COLUMNS} FROM documents WHERE {' AND '.join(used)}
                    ORDER BY collection{collate}, source{collate}""",
                tuple(used.values()),
            ).fetchall()
        records = [document_record(row) for row in rows]
        return records if wanted is None else [r for r in records if r.status == wanted]

    def _status_counts(self, sql: Sql) -> dict[str, int]:
        """Documents of the tenant by status, as `document_record` reads them (for `stats`)."""
        counts = {status.value: 0 for status in DocumentStatus}
        for status, count in sql.execute(
            "SELECT status, count(*) FROM documents WHERE tenant = ? GROUP BY status", (self.tenant,)
        ).fetchall():
            counts[status] += int(count)
        owners = sql.execute(
            "SELECT status, processing_owner FROM documents WHERE tenant = ? AND processing_owner IS NOT NULL",
            (self.tenant,),
        ).fetchall()
        for status, owner in owners:
            if status in UNFINISHED and owner_gone(owner):
                counts[status] -= 1
                counts[DocumentStatus.INTERRUPTED.value] += 1
        return counts

    def upsert_document(
        self,
        document_id: str,
        *,
        collection: str,
        source: str,
        title: str,
        media_type: str,
        metadata: dict[str, Any],
        status: DocumentStatus,
        error: str | None = None,
        owner: str | None = None,
        create: bool = True,
    ) -> None:
        """See `DocumentStore.upsert_document`; metadata values JSON cannot hold (dates) are stored as text."""
        stamp = now()
        with self._writing() as sql:
            if sql.execute(
                "SELECT 1 FROM collections WHERE tenant = ? AND name = ?", (self.tenant, collection)
            ).fetchone() is None:
                raise missing_collection(collection)
            taken = sql.execute(
                "SELECT id FROM documents WHERE tenant = ? AND collection = ? AND source = ? AND id <> ?",
                (self.tenant, collection, source, document_id),
            ).fetchone()
            if taken is not None:
                raise source_taken(source, collection, taken[0])
            row = (
                document_id, self.tenant, collection, source, title, media_type, DocumentStatus(status).value,
                error, json.dumps(metadata, default=str), stamp, stamp, owned_status(status, owner),
            )
            if create:
                self._upsert_document_row(sql, row)
            elif not sql.execute(UPDATE_DOCUMENT, (*row[2:9], *row[10:], document_id, self.tenant)).rowcount:
                raise not_found(document_id)
            self._searches_changed(sql)  # title, source and metadata are what hits show and filters match

    def replace_chunks(
        self,
        document_id: str,
        *,
        content_hash: str,
        title: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        windows: Sequence[np.ndarray] | None = None,
    ) -> None:
        """See `DocumentStore.replace_chunks`: malformed input is refused before any transaction."""
        self._replace_chunks(document_id, content_hash, title, [checked_batch((chunks, vectors, windows))])

    def replace_chunks_in_batches(
        self, document_id: str, *, content_hash: str, title: str, batches: Iterable[ChunkBatch]
    ) -> None:
        """See `DocumentStore.replace_chunks_in_batches`: a malformed batch rolls the transaction back."""
        self._replace_chunks(document_id, content_hash, title, map(checked_batch, batches))

    def set_status(
        self, document_id: str, status: DocumentStatus, error: str | None = None, owner: str | None = None
    ) -> None:
        with self._writing() as sql:
            updated = sql.execute(
                """UPDATE documents SET status = ?, error = ?, processing_owner = ?, updated_at = ?
                   WHERE id = ? AND tenant = ?""",
                (DocumentStatus(status).value, error, owned_status(status, owner), now(), document_id, self.tenant),
            ).rowcount
        if not updated:
            raise not_found(document_id)

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        with self._reading() as sql:
            rows = sql.execute(
                f"{STORED_CHUNK_SELECT} AND d.tenant = ? AND {sql.dialect.any_of('c.id')}",
                (self.tenant, sql.dialect.values(dict.fromkeys(chunk_ids))),
            ).fetchall()
        return {row[0]: stored_chunk(row) for row in rows}

    def document_chunks(self, document_id: str) -> list[StoredChunk]:
        with self._reading() as sql:
            rows = sql.execute(
                f"{STORED_CHUNK_SELECT} AND d.tenant = ? AND c.document_id = ? ORDER BY c.position",
                (self.tenant, document_id),
            ).fetchall()
        return [stored_chunk(row) for row in rows]
