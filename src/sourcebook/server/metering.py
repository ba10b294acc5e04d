"""Usage per tenant and API key, and the quotas that read it (design document 004: "cost
monitoring and quotas per organization").

`UsageMiddleware` meters every authenticated request (usage.py counts its LLM and embedding
calls wherever they happen, streamed answers included: a pure ASGI middleware sees the response
through to its last byte) and adds the tally to the tenant's row of the day for the request's
key, through a `UsageBuffer`: one write per tenant, day and key a second rather than a write
transaction (and a trip to a worker thread) per request, which under 20 clients was a queue of
its own at the store's write lock. `check_quota`, run when a request is authenticated, refuses a tenant over its quota with 429
and a message naming the quota and when it resets. A request the rate limit or a quota refuses is
not counted: it cost nothing, and counting it would keep a tenant over its quota for ever.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import SourcebookError
from ..kb import KnowledgeBase
from ..usage import UsageTally, metering, today
from .auth import Principal
from .config import ServerSettings
from .errors import RateLimitedError
from .ratelimit import retry_after_header

PRINCIPAL = "principal"
"""Where `get_call` leaves the authenticated caller in the request's scope state."""


_log = logging.getLogger("sourcebook.server")
_Row = tuple[str, str, str]
"""(tenant, day, API key id): one row of the usage table."""


class UsageBuffer:
    """Tallies of finished requests not yet written, summed per tenant, day and key, and the
    thread that writes them every `interval` seconds and once more when the server stops.

    A tally counts once: it is written, or (when the write fails) kept to be added to the next
    write. Readers that must see every request so far (`GET /v1/usage`) call `flush`; a quota
    check adds `pending` to what is stored instead, so checking costs no write.
    """

    def __init__(self, kb_for: Callable[[str], KnowledgeBase], interval: float = 1.0) -> None:
        self._kb_for = kb_for
        self._interval = interval
        self._pending: dict[_Row, UsageTally] = {}
        self._lock = threading.Lock()  # guards _pending
        self._writing = threading.Lock()  # one flush at a time, so rows are written in order
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, tenant: str, api_key: str, tally: UsageTally, day: str | None = None) -> None:
        """Count `tally` for `tenant` and key on `day` (today by default)."""
        with self._lock:
            self._pending.setdefault((tenant, day or today(), api_key), UsageTally()).add(tally)

    def pending(self, tenant: str) -> list[dict[str, int | str]]:
        """The tenant's unwritten tallies, as rows of `KnowledgeBase.usage`."""
        with self._lock:
            return [{"tenant": tenant, "day": day, "api_key": key, **tally.counts()}
                    for (owner, day, key), tally in self._pending.items() if owner == tenant]

    def flush(self) -> None:
        """Write every pending tally now; one that fails to write stays pending (and is logged)."""
        with self._writing:
            with self._lock:
                taken, self._pending = self._pending, {}
            for (tenant, day, key), tally in taken.items():
                try:
                    self._kb_for(tenant).record_usage(key, tally, day=day)
                except SourcebookError as exc:
                    _log.warning("usage of tenant %s not written yet (%s); it is kept for the next write", tenant, exc)
                    self.add(tenant, key, tally, day)

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="sourcebook-usage", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and write what is left."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            self.flush()


class UsageMiddleware:
    """Meter each HTTP request and hand its tally, for its tenant and key, to the buffer once the
    response is sent."""

    def __init__(self, app: ASGIApp, buffer: UsageBuffer) -> None:
        self.app = app
        self.buffer = buffer

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
                    self.buffer.add(principal.tenant, principal.key.id, tally)


def check_quota(kb: KnowledgeBase, settings: ServerSettings, buffer: UsageBuffer) -> None:
    """Raise 429 when the tenant of `kb` has used up its requests of the day or tokens of the month
    (what is stored and what the buffer has not written yet)."""
    quota = settings.quota_for(kb.tenant)
    if quota.requests_per_day is None and quota.tokens_per_month is None:
        return
    now = datetime.now(UTC)
    month = now.strftime("%Y-%m-01")
    rows = kb.usage(since=month) + [row for row in buffer.pending(kb.tenant) if str(row["day"]) >= month]
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
