"""What a route works with: the running service, and per request the caller and their tenant's KB."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from ..apikeys import KeyStore
from ..jobs import IngestionRunner, IngestJob
from ..jobs.base import UPLOAD_MISSING
from ..kb import KnowledgeBase
from ..models import DocumentStatus
from ..watching import Watchers
from .auth import Principal, authenticate
from .config import ServerSettings
from .errors import ConflictError, RateLimitedError
from .ingestion import UploadStore, metrics_recorder, resume_item
from .metrics import Metrics
from .ratelimit import RateLimits
from .metering import PRINCIPAL, UsageBuffer, check_quota


@dataclass
class Service:
    """Everything the app holds for its lifetime (app.state.service)."""

    kb: KnowledgeBase
    settings: ServerSettings
    keys: KeyStore | None
    queue: IngestionRunner
    uploads: UploadStore
    metrics: Metrics
    limits: RateLimits
    usage: UsageBuffer = field(init=False)
    """Requests' usage tallies on their way to the store (metering.py)."""
    watchers: Watchers = field(default_factory=lambda: Watchers(()))
    """The folders kept in sync for the served tenant (`ServerSettings.watch`), running with the app."""
    _tenants: dict[str, KnowledgeBase] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _graph_builds: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.usage = UsageBuffer(self.kb_for)

    def kb_for(self, tenant: str) -> KnowledgeBase:
        """The knowledge base scoped to `tenant` (one view per tenant, sharing model and database)."""
        with self._lock:
            if tenant not in self._tenants:
                self._tenants[tenant] = self.kb if tenant == self.kb.tenant else self.kb.for_tenant(tenant)
            return self._tenants[tenant]

    @contextmanager
    def graph_build(self, tenant: str) -> Iterator[None]:
        """Hold `tenant`'s one graph build slot; ConflictError (409) while another build runs."""
        with self._lock:
            if tenant in self._graph_builds:
                raise ConflictError("a graph build is already running for this tenant; try again when it ends")
            self._graph_builds.add(tenant)
        try:
            yield
        finally:
            with self._lock:
                self._graph_builds.discard(tenant)

    def submit(self, job: IngestJob) -> None:
        """Hand a job of pending documents to the ingestion runner; the metrics count its outcome."""
        self.queue.submit(job, metrics_recorder(self.metrics))

    def resume_ingestion(self) -> int:
        """Queue again what a previous run left pending or processing (its queue lived in its memory).

        Only right when the runner's jobs do not outlive it (the in-process thread): with a
        shared, persistent queue the jobs are still in it. An upload whose bytes are gone ends in
        `error` (`UPLOAD_MISSING`): its name is never read from the server's working directory.
        Returns how many documents were queued."""
        tenants = {self.kb.tenant} | ({key.tenant for key in self.keys.list()} if self.keys else set())
        count = 0
        for tenant in sorted(tenants):
            kb = self.kb_for(tenant)
            for status in (DocumentStatus.PENDING, DocumentStatus.PROCESSING, DocumentStatus.INTERRUPTED):
                for record in kb.documents(status=status):
                    item = resume_item(self.uploads, tenant, record)
                    if item is None:
                        kb.fail(record.id, UPLOAD_MISSING[1])
                        continue
                    self.submit(IngestJob(tenant, record.collection, (item,), record.metadata))
                    count += 1
        return count


@dataclass(frozen=True)
class Call:
    """One authenticated request: who calls, and the knowledge base of their tenant."""

    service: Service
    principal: Principal
    kb: KnowledgeBase


def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


async def get_call(request: Request) -> Call:
    """The caller and their tenant's knowledge base (401, 403 or 429 otherwise).

    A sync dependency would cost every request a trip to a worker thread and back (a queue hand-off
    and two GIL switches under load). A key store that `authenticates_locally` (the server's SQLite
    file: one indexed read on a connection of its own) is asked here, on the event loop, and
    finding the tenant's view takes no write lock; another (Postgres: a network round trip) is
    asked from a worker thread."""
    service = get_service(request)
    if getattr(service.keys, "authenticates_locally", False):
        return _authenticated_call(request, service)
    return await run_in_threadpool(_authenticated_call, request, service)


def _authenticated_call(request: Request, service: Service) -> Call:
    try:
        principal = authenticate(request, service.keys, service.limits, service.kb.tenant)
        kb = service.kb_for(principal.tenant)
        check_quota(kb, service.settings, service.usage)
    except RateLimitedError:
        service.metrics.rate_limited.inc()
        raise
    setattr(request.state, PRINCIPAL, principal)  # the usage middleware counts the request for its key
    return Call(service, principal, kb)


CallDep = Annotated[Call, Depends(get_call)]
ServiceDep = Annotated[Service, Depends(get_service)]
