"""Move a knowledge base between stores (SQLite <-> Postgres) without re-embedding.

Why through the `Store` protocol and not SQL: the two schemas differ (term counts vs
tsvector, blobs vs pgvector), and every store already knows how to write its own rows
atomically. `export_chunks` hands back exactly what `replace_chunks` took, vectors
included, so nothing is embedded again.

Idempotent: a document whose target copy has the same content hash, status, title and
chunk count is skipped; a chat session whose target copy has as many turns is skipped.
Rows only the target has are left alone (a copy, not a mirror). Cached contextual
sentences (an LLM cost saver, not data) are not copied. Timestamps are the copy's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .models import DocumentRecord, DocumentStatus
from .stores import open_store
from .stores.base import Store

ProgressCallback = Callable[[str, int, int], None]
"""Called as (tenant, documents done, documents of that tenant) after each document."""


@dataclass
class CopyReport:
    """Counts per outcome, over every tenant copied."""

    tenants: list[str] = field(default_factory=list)
    documents_copied: int = 0
    documents_unchanged: int = 0
    chunks_copied: int = 0
    chat_sessions_copied: int = 0
    chat_sessions_unchanged: int = 0


def copy_store(
    source: Store, target: Store, tenants: Sequence[str] | None = None, progress: ProgressCallback | None = None
) -> CopyReport:
    """Copy `tenants` (default: every tenant of `source`) from `source` into `target`."""
    report = CopyReport(tenants=list(tenants) if tenants is not None else source.tenants())
    for tenant in report.tenants:
        _copy_tenant(source.for_tenant(tenant), target.for_tenant(tenant), report, progress)
    return report


def copy_into(source: Store, target: str, tenants: Sequence[str] | None = None,
              progress: ProgressCallback | None = None) -> CopyReport:
    """`copy_store` into the database at `target` (created if missing), opened for the copy only."""
    destination = open_store(target)
    try:
        return copy_store(source, destination, tenants, progress)
    finally:
        destination.close()


def _copy_tenant(source: Store, target: Store, report: CopyReport, progress: ProgressCallback | None) -> None:
    for info in source.collections():
        target.ensure_collection(info.name, info.embedding_model, info.dimension)
    dimensions = {info.name: info.dimension for info in source.collections()}
    documents = source.list_documents()
    for done, record in enumerate(documents, 1):
        if _same(record, target.get_document(record.id)):
            report.documents_unchanged += 1
        else:
            report.chunks_copied += _copy_document(source, target, record, dimensions[record.collection])
            report.documents_copied += 1
        if progress is not None:
            progress(source.tenant, done, len(documents))
    for session in source.list_chat_sessions():
        existing = target.get_chat_session(session.id)
        if existing is not None and existing.message_count == session.message_count:
            report.chat_sessions_unchanged += 1
            continue
        if existing is not None:
            target.delete_chat_session(session.id)
        target.create_chat_session(session.id, session.title)
        for message in source.chat_messages(session.id):
            target.add_chat_message(session.id, message.role, message.content, message.data)
        report.chat_sessions_copied += 1


def _copy_document(source: Store, target: Store, record: DocumentRecord, dimension: int) -> int:
    """Write the document row, then its chunks and vectors (windows included) in one transaction; returns the chunk count.

    An interrupted document is copied as an error with its reason: no process of the
    target will ever finish it, and `add` there ingests it again."""
    status = DocumentStatus.ERROR if record.status == DocumentStatus.INTERRUPTED else record.status
    target.upsert_document(
        record.id, collection=record.collection, source=record.source, title=record.title,
        media_type=record.media_type, metadata=record.metadata, status=status, error=record.error,
    )
    chunks, vectors, windows = source.export_chunks(record.id)
    if record.content_hash is not None:  # it was indexed once (perhaps into no chunks at all)
        if not chunks:
            vectors = np.zeros((0, dimension), dtype=np.float32)
        target.replace_chunks(record.id, content_hash=record.content_hash, title=record.title,
                              chunks=chunks, vectors=vectors, windows=windows)
    if status != DocumentStatus.READY:
        # replace_chunks marks the document ready; a failed re-index keeps its old chunks.
        target.set_status(record.id, status, record.error)
    return len(chunks)


def _same(record: DocumentRecord, copy: DocumentRecord | None) -> bool:
    return copy is not None and (
        copy.content_hash, copy.status, copy.title, copy.chunk_count, copy.metadata, copy.collection, copy.source
    ) == (record.content_hash, record.status, record.title, record.chunk_count, record.metadata,
          record.collection, record.source)
