"""What every ingestion runner shares: what it is given, what it is handed, and its one thread.

A runner is given `IngestParts` (built by wiring.py): a store, the settings, the model and
the ingestion pipeline over them, so jobs/ never imports the facade. It is handed either
sources to ingest now (`add`, what `kb.add` calls) or an `IngestJob` to run in the
background (`submit`, what the HTTP API calls before answering 202).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
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
    """Work items of many tenants, handled by `workers` daemon threads of this process.

    One queue per tenant, served round robin, and at most one item of a tenant running at a
    time: a tenant's 2,000-page PDF holds one thread while the others serve every other tenant
    in turn, so nobody's one-paragraph upload waits behind it. A tenant's items run in order.
    """

    def __init__(self, handler: Callable[[Work], None], workers: int = 1) -> None:
        self._handler = handler
        self._workers = workers
        self._queues: dict[str, deque[Work]] = {}
        """Waiting items by tenant; the dict's order is the round's (a served tenant goes to its back)."""
        self._running: set[str] = set()
        self._changed = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False

    def put(self, tenant: str, item: Work) -> None:
        with self._changed:
            self._queues.setdefault(tenant, deque()).append(item)
            self._changed.notify()

    def depth(self) -> int:
        with self._changed:
            return sum(len(items) for items in self._queues.values()) + len(self._running)

    def start(self) -> None:
        with self._changed:
            if self._threads:
                return
            self._stopping = False
            self._threads = [
                threading.Thread(target=self._work, name=f"sourcebook-ingest-{n}", daemon=True) for n in range(self._workers)
            ]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the waiting items (up to `timeout` seconds in all), then stop the threads."""
        with self._changed:
            threads, self._threads = self._threads, []
            self._stopping = True
            self._changed.notify_all()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _next(self) -> tuple[str, Work] | None:
        """The next tenant's next item (None: stopping and nothing this thread may take)."""
        with self._changed:
            while True:
                tenant = next((t for t, items in self._queues.items() if items and t not in self._running), None)
                if tenant is not None:
                    items = self._queues.pop(tenant)
                    item = items.popleft()
                    if items:
                        self._queues[tenant] = items  # the back of the round
                    self._running.add(tenant)
                    return tenant, item
                if self._stopping:  # what is left belongs to running tenants: their threads take it
                    return None
                self._changed.wait()

    def _work(self) -> None:
        while (next_item := self._next()) is not None:
            tenant, item = next_item
            try:
                self._handler(item)
            except Exception:  # noqa: BLE001 - keep serving the next items
                logger.exception("ingestion worker error")
            finally:
                with self._changed:
                    self._running.discard(tenant)
                    self._changed.notify_all()


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
