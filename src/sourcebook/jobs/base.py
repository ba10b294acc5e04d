"""What every ingestion runner shares: what it is given, what it is handed, and its one thread.

A runner is given `IngestParts` (built by wiring.py): a store, the settings, the model and
the ingestion pipeline over them, so jobs/ never imports the facade. It is handed either
sources to ingest now (`add`, what `kb.add` calls) or an `IngestJob` to run in the
background (`submit`, what the HTTP API calls before answering 202).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from ..embedders.base import Embedder
from ..errors import SourcebookError
from ..ingest import Ingestor, ProgressHandler
from ..loaders import RawSource
from ..models import DocumentStatus, IngestResult
from ..settings import Settings
from ..stores.base import Store

logger = logging.getLogger(__name__)

UPLOAD_MISSING = ("upload_missing", "the uploaded file is gone from the server; upload it again")


class IngestParts(Protocol):
    """What a runner needs (wiring.Components is one): a store, its settings and model, the pipeline."""

    store: Store
    settings: Settings

    @property
    def embedder(self) -> Embedder: ...

    def ingestor(self, progress: ProgressHandler | None = None) -> Ingestor: ...

    def for_tenant(self, tenant: str) -> IngestParts: ...


@dataclass(frozen=True)
class IngestItem:
    """One document of a job: its id, its name (file name or URL) and, for an upload, the file
    on this machine holding its bytes (None: `source` itself is read, a URL or a path)."""

    document_id: str
    source: str
    upload: str | None = None
    media_type: str | None = None


@dataclass(frozen=True)
class IngestJob:
    """Documents already marked pending (`KnowledgeBase.enqueue`) to ingest in the background, in one tenant."""

    tenant: str
    collection: str
    items: tuple[IngestItem, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


JobDone = Callable[[list[IngestResult], float], None]
"""Called with a submitted job's results and its duration in seconds, once it is over (metrics)."""


class IngestionRunner(Protocol):
    """Turns sources into documents of a collection; one result per source."""

    persistent: bool
    """Whether submitted jobs outlive this process (else a restart must submit pending documents again)."""

    def add(
        self,
        sources: Sequence[str],
        collection: str,
        metadata: dict[str, Any] | None,
        fmt: str,
        progress: ProgressHandler | None,
        wait: bool,
    ) -> list[IngestResult]:
        """Ingest (or queue) `sources`. With `wait` False a queue returns "queued" results at once."""

    def submit(self, job: IngestJob, done: JobDone | None = None) -> None:
        """Ingest `job` in the background; returns at once (`start` must have been called)."""

    def depth(self) -> int:
        """Submitted jobs waiting or running (for /healthz and the queue gauge)."""

    def start(self) -> None:
        """Start the background thread that runs submitted jobs."""

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the submitted jobs (waiting up to `timeout` seconds), then stop."""


Work = TypeVar("Work")


class JobThread(Generic[Work]):
    """Work items handled one at a time, in order, by one daemon thread of this process."""

    def __init__(self, handler: Callable[[Work], None]) -> None:
        self._handler = handler
        self._items: queue.Queue[Work | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._running = 0
        self._lock = threading.Lock()

    def put(self, item: Work) -> None:
        self._items.put(item)

    def depth(self) -> int:
        with self._lock:
            return self._items.qsize() + self._running

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="sourcebook-ingest", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        if self._thread is None:
            return
        self._items.put(None)
        self._thread.join(timeout)
        self._thread = None

    def _work(self) -> None:
        while (item := self._items.get()) is not None:
            with self._lock:
                self._running = 1
            try:
                self._handler(item)
            except Exception:  # noqa: BLE001 - keep serving the next items
                logger.exception("ingestion worker error")
            finally:
                with self._lock:
                    self._running = 0


def read_uploads(store: Store, job: IngestJob) -> tuple[list[RawSource], list[str], list[IngestResult]]:
    """A job's uploads as bytes, its other sources (URLs, paths), and a failed result for each
    upload whose file is gone (recorded on its document, so no client polls it forever)."""
    raws: list[RawSource] = []
    sources: list[str] = []
    failed: list[IngestResult] = []
    for item in job.items:
        if item.upload is None:
            sources.append(item.source)
            continue
        try:
            data = Path(item.upload).read_bytes()
        except FileNotFoundError:
            code, message = UPLOAD_MISSING
            failed += fail_documents(store, (item,), code, f"{item.source}: {message}")
            continue
        raws.append(RawSource.from_bytes(item.source, data, item.media_type))
    return raws, sources, failed


def fail_documents(store: Store, items: Sequence[IngestItem], code: str, message: str) -> list[IngestResult]:
    """Record that processing these queued documents failed; their failed results."""
    for item in items:
        try:
            store.set_status(item.document_id, DocumentStatus.ERROR, message)
        except SourcebookError:  # deleted meanwhile: nobody waits for it
            pass
    return [IngestResult(i.source, "failed", i.document_id, str(DocumentStatus.ERROR), 0, 0, message, code) for i in items]


def fail_job(store: Store, job: IngestJob, exc: Exception) -> list[IngestResult]:
    """A failure of a whole job (say, the collection's embedding model differs), on each of its documents."""
    code = exc.code if isinstance(exc, SourcebookError) else "internal_error"
    logger.exception("ingestion job failed", extra={"tenant": job.tenant, "collection": job.collection})
    return fail_documents(store, job.items, code, str(exc))
