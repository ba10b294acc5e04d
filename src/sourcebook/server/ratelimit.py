"""Per-key rate limiting: a token bucket per API key (per client address without auth).

A bucket holds up to `burst` tokens and refills at `rate` per second; a request takes one.
An empty bucket answers 429 with Retry-After, the whole seconds until a token is back.
In memory, per process: one server process per database is the SQLite deployment; several
Postgres-backed processes each limit on their own (the limit then scales with them).
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
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return None
            return (1 - bucket.tokens) / self.rate


def retry_after_header(wait: float) -> str:
    """Retry-After takes whole seconds; rounding up never invites a retry that fails again."""
    return str(max(1, math.ceil(wait)))
