"""Rate limiting: a token bucket per API key and one per tenant, both taken by every request.

A bucket holds up to `burst` tokens and refills at `rate` per second; a request takes one from
its key's bucket and one from its tenant's, or from neither (a request refused by one limit
does not spend the other's). The key's limit stops one runaway client; the tenant's caps what
all of a tenant's keys together take from a server that other tenants share, so a tenant
cannot get around its share by creating more keys. An empty bucket answers 429 with
Retry-After (the whole seconds until a token is back) and a message naming the limit.
In memory, per process: one server process per database is the SQLite deployment; several
Postgres-backed processes each limit on their own (the limits then scale with them).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """Token buckets by key; thread-safe."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float | None:
        """Take a token for `key`: None when allowed, else the seconds to wait before retrying."""
        with self._lock:
            wait = self.wait(key)
            if wait is None:
                self.take(key)
            return wait

    def wait(self, key: str) -> float | None:
        """Seconds until `key` has a token (None: it has one now), taking nothing."""
        bucket = self._refilled(key)
        return None if bucket.tokens >= 1 else (1 - bucket.tokens) / self.rate

    def take(self, key: str) -> None:
        """Spend one of `key`'s tokens (after `wait` said there is one)."""
        self._refilled(key).tokens -= 1

    def _refilled(self, key: str) -> _Bucket:
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        return bucket


@dataclass(frozen=True)
class Refusal:
    """Why a request is over a limit, and the seconds until it would pass."""

    wait: float
    message: str


class RateLimits:
    """The per-key and per-tenant limits a request must both pass; thread-safe."""

    def __init__(self, per_key: RateLimiter, per_tenant: RateLimiter) -> None:
        self.per_key = per_key
        self.per_tenant = per_tenant
        self._lock = threading.Lock()

    def acquire(self, key: str, tenant: str) -> Refusal | None:
        """Take a token of `key` and of `tenant`: None when allowed, else which limit refused."""
        with self._lock:
            key_wait = self.per_key.wait(key)
            tenant_wait = self.per_tenant.wait(tenant)
            if key_wait is None and tenant_wait is None:
                self.per_key.take(key)
                self.per_tenant.take(tenant)
                return None
        if tenant_wait is not None and (key_wait is None or tenant_wait >= key_wait):
            limit = self.per_tenant
            what = f"the rate limit of tenant {tenant!r} (shared by all its API keys)"
            wait = tenant_wait
        else:
            assert key_wait is not None
            limit, what, wait = self.per_key, "the API key's rate limit", key_wait
        return Refusal(wait, f"{what} of {limit.rate:g} requests/s (burst {limit.burst}) exceeded; retry in {wait:.2f} s")


def retry_after_header(wait: float) -> str:
    """Retry-After takes whole seconds; rounding up never invites a retry that fails again."""
    return str(max(1, math.ceil(wait)))
