"""Asynchronous ingestion for the HTTP API: uploads kept on disk, jobs handed to the runner.

An upload request saves the bytes (`UploadStore`), marks each document pending
(`KnowledgeBase.enqueue`) and submits one `IngestJob` to the knowledge base's ingestion
runner (jobs/: a background thread here on SQLite, procrastinate jobs that `sourcebook
worker` runs on Postgres), then answers 202 at once. `metrics_recorder` counts the outcomes.
"""

from __future__ import annotations

from pathlib import Path

from ..jobs import JobDone
from ..models import IngestResult
from .metrics import Metrics


class UploadStore:
    """Uploaded files on disk, by tenant and document id: kept after ingestion so a document
    can be re-indexed from what was uploaded."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, tenant: str, document_id: str) -> Path:
        return self.root / tenant / document_id

    def save(self, tenant: str, document_id: str, data: bytes) -> Path:
        """Keep an upload's bytes; returns the file holding them."""
        target = self.path(tenant, document_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(target)  # a reader never sees half a file
        return target

    def read(self, tenant: str, document_id: str) -> bytes | None:
        try:
            return self.path(tenant, document_id).read_bytes()
        except FileNotFoundError:
            return None

    def delete(self, tenant: str, document_id: str) -> None:
        self.path(tenant, document_id).unlink(missing_ok=True)

    def delete_many(self, tenant: str, document_ids: list[str]) -> None:
        for document_id in document_ids:
            self.delete(tenant, document_id)


def metrics_recorder(metrics: Metrics) -> JobDone:
    """What a finished job reports: documents by outcome, failures by code, the job's duration."""

    def record(results: list[IngestResult], seconds: float) -> None:
        for result in results:
            metrics.ingested.labels(result.action).inc()
            if result.action == "failed":
                metrics.ingest_failures.labels(result.error_code or "error").inc()
        metrics.ingest_duration.observe(seconds)

    return record
