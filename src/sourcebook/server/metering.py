"""Usage per tenant and API key, and the quotas that read it (design document 004: "cost
monitoring and quotas per organization").

`UsageMiddleware` meters every authenticated request (usage.py counts its LLM and embedding
calls wherever they happen, streamed answers included: a pure ASGI middleware sees the response
through to its last byte) and adds the tally to the tenant's row of the day for the request's
key. `check_quota`, run when a request is authenticated, refuses a tenant over its quota with 429
and a message naming the quota and when it resets. A request the rate limit or a quota refuses is
not counted: it cost nothing, and counting it would keep a tenant over its quota for ever.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from ..kb import KnowledgeBase
from ..usage import metering
from .auth import Principal
from .config import ServerSettings
from .errors import RateLimitedError
from .ratelimit import retry_after_header

PRINCIPAL = "principal"
"""Where `get_call` leaves the authenticated caller in the request's scope state."""


class UsageMiddleware:
    """Meter each HTTP request and record it for its tenant and key once the response is sent."""

    def __init__(self, app: ASGIApp, kb_for: Callable[[str], KnowledgeBase]) -> None:
        self.app = app
        self.kb_for = kb_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with metering() as tally:
            try:
                await self.app(scope, receive, send)
            finally:
                principal: Principal | None = scope.get("state", {}).get(PRINCIPAL)
                if principal is not None:
                    tally.requests += 1
                    kb = self.kb_for(principal.tenant)
                    await anyio.to_thread.run_sync(kb.record_usage, principal.key.id, tally)


def check_quota(kb: KnowledgeBase, settings: ServerSettings) -> None:
    """Raise 429 when the tenant of `kb` has used up its requests of the day or tokens of the month."""
    quota = settings.quota_for(kb.tenant)
    if quota.requests_per_day is None and quota.tokens_per_month is None:
        return
    now = datetime.now(UTC)
    month = now.strftime("%Y-%m-01")
    rows = kb.usage(since=month)
    if quota.requests_per_day is not None:
        today = now.strftime("%Y-%m-%d")
        used = sum(int(row["requests"]) for row in rows if row["day"] == today)
        if used >= quota.requests_per_day:
            midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
            _refuse(f"tenant {kb.tenant!r} used its quota of {quota.requests_per_day} requests per day "
                    f"({used} today); it resets at 00:00 UTC", midnight - now)
    if quota.tokens_per_month is not None:
        used = sum(int(row["input_tokens"]) + int(row["output_tokens"]) for row in rows)
        if used >= quota.tokens_per_month:
            first = (now.replace(day=28) + timedelta(days=4)).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            _refuse(f"tenant {kb.tenant!r} used its quota of {quota.tokens_per_month} LLM tokens per month "
                    f"({used} this month); it resets on {first:%Y-%m-%d} UTC", first - now)


def _refuse(message: str, wait: timedelta) -> None:
    raise RateLimitedError(message, {"Retry-After": retry_after_header(wait.total_seconds())})
