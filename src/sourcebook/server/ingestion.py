"""Asynchronous ingestion for the HTTP API: requests queue jobs, a worker runs them.

An upload request saves the bytes (`UploadStore`), marks each document pending
(`KnowledgeBase.enqueue`) and submits one `IngestJob`, then answers 202 at once. The seam is
`IngestQueue`: `ThreadQueue` runs jobs in one in-process thread (right for SQLite, which
has one writer anyway); a Postgres deployment swaps in a queue whose workers run on other
machines. A job is plain JSON-able data, and `run_job` is what any worker calls with it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import SourcebookError
from ..kb import KnowledgeBase
from ..loaders import RawSource
from .metrics import Metrics

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestItem:
    """One document of a job: its id, its name (file name or URL) and, for uploads, where its bytes are."""

    document_id: str
    source: str
    uploaded: bool = False
    media_type: str | None = None


@dataclass(frozen=True)
class IngestJob:
    tenant: str
    collection: str
    items: tuple[IngestItem, ...]
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IngestJob:
        items = tuple(IngestItem(**item) for item in data["items"])
        return cls(data["tenant"], data["collection"], items, data.get("metadata") or {})


class UploadStore:
    """Uploaded files on disk, by tenant and document id: kept after ingestion so a document
    can be re-indexed from what was uploaded."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, tenant: str, document_id: str) -> Path:
        return self.root / tenant / document_id

    def save(self, tenant: str, document_id: str, data: bytes) -> None:
        target = self.path(tenant, document_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(target)  # a reader never sees half a file

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


def run_job(kb: KnowledgeBase, uploads: UploadStore, job: IngestJob, metrics: Metrics | None = None) -> None:
    """Ingest a job's documents with `kb` (already scoped to the job's tenant).

    Failures of single documents are recorded on them by the ingestor (status error, with
    the reason); a failure of the whole job (say, the collection's embedding model differs)
    is recorded on each of its documents, so no client polls a pending document forever.
    """
    started = time.perf_counter()
    raws: list[RawSource] = []
    sources: list[str] = []
    for item in job.items:
        if not item.uploaded:
            sources.append(item.source)
            continue
        data = uploads.read(job.tenant, item.document_id)
        if data is None:
            _fail(kb, item.document_id, "upload_missing", "the uploaded file is gone from the server; upload it again", metrics)
            continue
        raws.append(RawSource.from_bytes(item.source, data, item.media_type))
    try:
        results = kb.add_raw(raws, job.collection, metadata=job.metadata) if raws else []
        if sources:
            results += kb.add(sources, job.collection, metadata=job.metadata)
    except Exception as exc:  # noqa: BLE001 - the worker must outlive any one job
        code = exc.code if isinstance(exc, SourcebookError) else "internal_error"
        logger.exception("ingestion job failed", extra={"tenant": job.tenant, "collection": job.collection})
        for item in job.items:
            _fail(kb, item.document_id, code, str(exc), metrics)
        return
    if metrics is not None:
        for result in results:
            metrics.ingested.labels(result.action).inc()
            if result.action == "failed":
                metrics.ingest_failures.labels(result.error_code or "error").inc()
        metrics.ingest_duration.observe(time.perf_counter() - started)


def _fail(kb: KnowledgeBase, document_id: str, code: str, message: str, metrics: Metrics | None) -> None:
    try:
        kb.fail(document_id, message)
    except SourcebookError:  # deleted meanwhile: nobody waits for it
        pass
    if metrics is not None:
        metrics.ingested.labels("failed").inc()
        metrics.ingest_failures.labels(code).inc()


class IngestQueue(Protocol):
    """Where the API hands ingestion work (the seam a Postgres-backed job queue fills)."""

    def submit(self, job: IngestJob) -> None: ...

    def depth(self) -> int:
        """Jobs waiting or running (for /healthz and the queue gauge)."""

    def start(self) -> None: ...

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the queued jobs (waiting up to `timeout` seconds), then stop."""


class ThreadQueue:
    """Jobs run one at a time in one daemon thread of this process."""

    def __init__(self, handler: Callable[[IngestJob], None]) -> None:
        self._handler = handler
        self._jobs: queue.Queue[IngestJob | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._running = 0
        self._lock = threading.Lock()

    def submit(self, job: IngestJob) -> None:
        self._jobs.put(job)

    def depth(self) -> int:
        with self._lock:
            return self._jobs.qsize() + self._running

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="sourcebook-ingest", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        if self._thread is None:
            return
        self._jobs.put(None)
        self._thread.join(timeout)
        self._thread = None

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            with self._lock:
                self._running = 1
            try:
                self._handler(job)
            except Exception:  # noqa: BLE001 - keep serving the next jobs
                logger.exception("ingestion worker error")
            finally:
                with self._lock:
                    self._running = 0
