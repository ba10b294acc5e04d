"""The token bucket, on a clock the test moves."""

from __future__ import annotations

from sourcebook.server.ratelimit import RateLimiter, retry_after_header


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_refill_per_key() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.acquire("a") for _ in range(3)] == [None, None, None]
    wait = limiter.acquire("a")
    assert wait is not None and abs(wait - 0.5) < 1e-9
    assert limiter.acquire("b") is None  # another key has its own bucket
    clock.now += 0.5
    assert limiter.acquire("a") is None
    assert limiter.acquire("a") is not None
    clock.now += 60  # refills, but never beyond the burst
    assert [limiter.acquire("a") for _ in range(4)][-1] is not None


def test_retry_after_rounds_up_to_whole_seconds() -> None:
    assert retry_after_header(0.01) == "1"
    assert retry_after_header(1.2) == "2"
