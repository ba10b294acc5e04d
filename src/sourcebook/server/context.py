"""What a route works with: the running service, and per request the caller and their tenant's KB."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from ..apikeys import KeyStore
from ..kb import KnowledgeBase
from .auth import Principal, authenticate
from .config import ServerSettings
from .errors import RateLimitedError
from .ingestion import IngestQueue, UploadStore
from .metrics import Metrics
from .ratelimit import RateLimiter


@dataclass
class Service:
    """Everything the app holds for its lifetime (app.state.service)."""

    kb: KnowledgeBase
    settings: ServerSettings
    keys: KeyStore | None
    queue: IngestQueue
    uploads: UploadStore
    metrics: Metrics
    limiter: RateLimiter
    _tenants: dict[str, KnowledgeBase] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def kb_for(self, tenant: str) -> KnowledgeBase:
        """The knowledge base scoped to `tenant` (one view per tenant, sharing model and database)."""
        with self._lock:
            if tenant not in self._tenants:
                self._tenants[tenant] = self.kb if tenant == self.kb.tenant else self.kb.for_tenant(tenant)
            return self._tenants[tenant]


@dataclass(frozen=True)
class Call:
    """One authenticated request: who calls, and the knowledge base of their tenant."""

    service: Service
    principal: Principal
    kb: KnowledgeBase


def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


def get_call(request: Request) -> Call:
    service = get_service(request)
    try:
        principal = authenticate(request, service.keys, service.limiter)
    except RateLimitedError:
        service.metrics.rate_limited.inc()
        raise
    return Call(service, principal, service.kb_for(principal.tenant))


CallDep = Annotated[Call, Depends(get_call)]
ServiceDep = Annotated[Service, Depends(get_service)]
