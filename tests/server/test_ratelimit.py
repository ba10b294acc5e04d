"""The token buckets (per key, per tenant), on a clock the test moves."""

from __future__ import annotations

from sourcebook.server.ratelimit import RateLimiter, RateLimits, retry_after_header


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


def test_a_request_passes_both_limits_or_spends_neither() -> None:
    clock = Clock()
    limits = RateLimits(RateLimiter(rate=1.0, burst=2, clock=clock), RateLimiter(rate=1.0, burst=3, clock=clock))
    assert [limits.acquire(key, "acme") for key in ("k1", "k1", "k2")] == [None, None, None]
    refused = limits.acquire("k2", "acme")  # k2 has a token left; acme has none
    assert refused is not None and refused.message.startswith("the rate limit of tenant 'acme' (shared by all its API keys) of 1 requests/s") and abs(refused.wait - 1.0) < 1e-9
    assert limits.acquire("k3", "globex") is None  # another tenant has its own bucket
    clock.now += 1.0
    assert limits.acquire("k2", "acme") is None  # the refusal did not spend k2's token: one is still there


def test_the_refusal_names_the_limit_that_refused() -> None:
    limits = RateLimits(RateLimiter(rate=2.0, burst=1, clock=Clock()), RateLimiter(rate=5.0, burst=10, clock=Clock()))
    assert limits.acquire("k1", "acme") is None
    refused = limits.acquire("k1", "acme")
    assert refused is not None
    assert refused.message == "the API key's rate limit of 2 requests/s (burst 1) exceeded; retry in 0.50 s"
