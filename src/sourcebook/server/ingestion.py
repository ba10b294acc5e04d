"""Asynchronous ingestion for the HTTP API: uploads kept on disk, jobs handed to the runner.

An upload request saves the bytes durably (`UploadStore`), then marks each document pending
(`KnowledgeBase.enqueue`; in that order, so no recorded upload lacks its bytes) and submits one `IngestJob` to the knowledge base's ingestion
runner (jobs/: a background thread here on SQLite, procrastinate jobs that `sourcebook
worker` runs on Postgres), then answers 202 at once. `metrics_recorder` counts the outcomes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from ..errors import FileTooLargeError
from ..jobs import IngestItem, JobDone
from ..loaders import is_url
from ..loaders.sources import PIECE_BYTES
from ..models import DocumentRecord, IngestResult
from .metrics import Metrics




class UploadStore:
    """Uploaded files on disk, by tenant and document id: kept after ingestion so a document
    can be re-indexed from what was uploaded."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, tenant: str, document_id: str) -> Path:
        return self.root / tenant / document_id

    def save(self, tenant: str, document_id: str, data: BinaryIO, name: str, limit: int) -> Path:
        """Keep an upload's bytes durably; returns the file holding them.

        Copied from `data` in pieces of `PIECE_BYTES`, never held whole (issue 17: a 50 MB
        upload read at once was 50 MB of the server's memory per request in flight); more than
        `limit` bytes is a FileTooLargeError (for `name`) with nothing kept. Written to a
        temporary file, synced and renamed, then the folder synced: a reader never sees half a
        file, and once this returns a crash cannot lose the bytes (the document is recorded only
        after this, so a recorded upload always has its bytes)."""
        target = self.path(tenant, document_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{document_id}.", suffix=".part")
        try:
            with os.fdopen(handle, "wb") as out:
                while piece := data.read(PIECE_BYTES):
                    if out.tell() + len(piece) > limit:
                        raise FileTooLargeError(name, f"larger than the {limit} bytes a document may have")
                    out.write(piece)
                out.flush()
                os.fsync(out.fileno())
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        _sync_folder(target.parent)
        return target

    def find(self, tenant: str, document_id: str) -> Path | None:
        """The kept upload of a document, if there is one."""
        path = self.path(tenant, document_id)
        return path if path.is_file() else None

    def delete(self, tenant: str, document_id: str) -> None:
        self.path(tenant, document_id).unlink(missing_ok=True)

    def delete_many(self, tenant: str, document_ids: list[str]) -> None:
        for document_id in document_ids:
            self.delete(tenant, document_id)


def _sync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def server_may_read(source: str) -> bool:
    """Whether the server may read `source` itself: a URL, or an absolute path that `sourcebook
    add` recorded. An upload's source is a bare file name, which the server never resolves
    against its own working directory: its bytes are read from the `UploadStore` or not at all."""
    return is_url(source) or os.path.isabs(source)


def resume_item(uploads: UploadStore, tenant: str, record: DocumentRecord) -> IngestItem | None:
    """How to ingest again a document a previous run left unfinished: from its kept upload, or
    from its URL or absolute path; None when there is nothing the server may read (an upload
    whose bytes are gone), which the caller records as `UPLOAD_MISSING`."""
    upload = uploads.path(tenant, record.id)
    if upload.exists():
        return IngestItem(record.id, record.source, str(upload), record.media_type or None)
    if server_may_read(record.source):
        return IngestItem(record.id, record.source, None, record.media_type or None)
    return None


def metrics_recorder(metrics: Metrics) -> JobDone:
    """What a finished job reports: documents by outcome, failures by code, the job's duration."""

    def record(results: list[IngestResult], seconds: float) -> None:
        for result in results:
            metrics.ingested.labels(result.action).inc()
            if result.action == "failed":
                metrics.ingest_failures.labels(result.error_code or "error").inc()
        metrics.ingest_duration.observe(seconds)

    return record
