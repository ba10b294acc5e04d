"""Which document a source is: its id, its identity as a path, and a moved file keeping its
document. Apart from ingest.py so that the facade, the job queue and the folder watcher share
one definition of "the same document" without reaching into the ingestion pipeline."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .errors import LoaderError
from .loaders import SourceIdentity, is_url
from .loaders.text import title_from_source
from .models import DocumentRecord, DocumentStatus
from .stores.base import DocumentStore
from .tenants import DEFAULT_TENANT


def document_id(collection: str, source: str, tenant: str = DEFAULT_TENANT) -> str:
    """Stable id: the same source in the same collection of a tenant is the same document.

    The default tenant's ids omit the tenant, so files written before tenants keep theirs.
    """
    key = f"{collection}\x00{source}" if tenant == DEFAULT_TENANT else f"{tenant}\x00{collection}\x00{source}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def normalize_source(source: str) -> str:
    """A file's identity: its resolved path (absolute, symlinks resolved), so `add docs/`, `add
    /home/me/docs` and a link to it name the same documents. URLs pass as they are. A `~user`
    prefix naming no user stays literal, as a shell leaves it (pathlib raises RuntimeError,
    which reached `DELETE /v1/documents/~%5B` as a 500)."""
    if is_url(source):
        return source
    path = Path(source)
    try:
        path = path.expanduser()
    except RuntimeError:
        pass
    return str(path.resolve())


def source_readable(record: DocumentRecord) -> bool:
    """Whether a document can be read again from its source: a URL, or a file stored under the
    resolved path its reader recorded; not an upload (its name is no path here) nor a BEIR record."""
    return is_url(record.source) or record.metadata.get("path") == record.source


def existing_document(store: DocumentStore, collection: str, source: str) -> tuple[str, DocumentRecord | None]:
    """The id `source` has in `collection`, and its record if stored: by the derived id, else by
    source (a document stored under another id keeps it, say one migrated to its resolved path)."""
    doc_id = document_id(collection, source, store.tenant)
    existing = store.get_document(doc_id) or store.find_document(collection, source)
    return (existing.id if existing else doc_id), existing


def move_document(store: DocumentStore, record: DocumentRecord, raw: SourceIdentity) -> None:
    """Point `record` at the file `raw` was read from, keeping its chunks and vectors: a moved
    or renamed file is the same document under a new path, so nothing is parsed or embedded
    again. Only for a file holding what was stored (LoaderError otherwise: add it instead); a
    document stored at the new path is replaced, as the move replaced its file. A title that was
    the old file's name follows the new name (the chunks' prefixes keep the old one until the
    file changes and is chunked again)."""
    source = normalize_source(raw.source)
    if record.status != DocumentStatus.READY or record.content_hash != raw.fingerprint:
        raise LoaderError(source, f"holds other content than {record.source} as stored; add it instead of moving it")
    displaced = store.find_document(record.collection, source)
    if displaced is not None and displaced.id != record.id:
        store.delete_document(displaced.id)
    title = title_from_source(source) if record.title == title_from_source(record.source) else record.title
    store.upsert_document(
        record.id, collection=record.collection, source=source, title=title, media_type=record.media_type,
        metadata={**record.metadata, **raw.metadata}, status=DocumentStatus.READY,
    )
