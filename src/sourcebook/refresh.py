"""Refreshing the documents added from URLs (`sourcebook refresh`, `KnowledgeBase.refresh`).

Each URL is fetched again with a conditional GET carrying the validators its last fetch
recorded in the document's metadata (`etag`, `last_modified`; no schema change), through
`loaders.url`, so every hop is checked against private addresses as on the first fetch.
304 Not Modified changes nothing. A 200 whose bytes hash to the stored content hash changes
nothing but the validators kept for next time. Other bytes are ingested again, which embeds
only the chunks whose text changed (ingest.py). A failed fetch leaves the document as it was.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import SourcebookError
from .ingest import Ingestor
from .loaders import READER_METADATA, RawSource, is_url, parse
from .loaders.url import fetch_if_changed
from .models import DocumentRecord, DocumentStatus, IngestResult
from .settings import Settings
from .stores.base import DocumentStore

_VALIDATORS = ("etag", "last_modified")


def refresh_urls(
    store: DocumentStore, ingestor: Callable[[], Ingestor], settings: Settings, collection: str | None = None
) -> list[IngestResult]:
    """Refresh every URL document (of `collection`, else of all): one result each, "unchanged"
    when nothing changed (304 or the same bytes). `ingestor` is called only when something
    changed, so a refresh that finds nothing new never loads the embedding model."""
    return [_refresh(store, ingestor, settings, record) for record in store.list_documents(collection) if is_url(record.source)]


def _refresh(store: DocumentStore, ingestor: Callable[[], Ingestor], settings: Settings, record: DocumentRecord) -> IngestResult:
    ready = record.status == DocumentStatus.READY
    try:
        # a document that is not ready has no content to keep: fetch it whole
        etag, last_modified = (record.metadata.get(key) if ready else None for key in _VALIDATORS)
        raw = fetch_if_changed(record.source, settings, _text(etag), _text(last_modified))
        if raw is not None and not (ready and raw.fingerprint == record.content_hash):
            return _ingest(ingestor(), record, raw)
    except SourcebookError as exc:
        return IngestResult(record.source, "failed", record.id, str(record.status), record.chunk_count, 0, str(exc), exc.code)
    if raw is not None:  # the same bytes: keep this answer's validators for the next refresh
        kept = {key: value for key, value in record.metadata.items() if key not in _VALIDATORS}
        store.upsert_document(
            record.id, collection=record.collection, source=record.source, title=record.title,
            media_type=record.media_type, metadata={**kept, **raw.metadata}, status=DocumentStatus.READY,
        )
    return IngestResult(record.source, "unchanged", record.id, str(DocumentStatus.READY), record.chunk_count, 0)


def _ingest(ingestor: Ingestor, record: DocumentRecord, raw: RawSource) -> IngestResult:
    """Ingest the new bytes, keeping the metadata the user gave: what the record holds beyond
    what reading and parsing write (the new parse's own values win over the old ones)."""
    parsed = parse(raw)
    given = {key: value for key, value in record.metadata.items() if key not in READER_METADATA and key not in parsed.metadata}
    item = (record.source, lambda: (raw.fingerprint, parsed, None))
    return ingestor.add_loaded([item], record.collection, given)[0]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
