"""Request ids, structured JSON logs and request metrics, as one ASGI middleware.

Each request gets an id (the client's `X-Request-ID` when it is sane, else a new one),
echoed in the response header and attached to every log line written while it runs
(a context variable, so the worker thread's and the routes' logs carry it too). One access
log line per request, and the latency histogram labelled by route template
(`/v1/documents/{document_id}`, not the id: bounded cardinality).
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .metrics import Metrics

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
access_log = logging.getLogger("sourcebook.server.access")

_STANDARD_ATTRS = frozenset(vars(logging.makeLogRecord({})))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id and any `extra`."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": request_id.get(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS and not k.startswith("_")})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(as_json: bool, level: int = logging.INFO) -> None:
    """Send Sourcebook's and uvicorn's logs to stderr, as JSON lines or plain text."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if as_json else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    for name in ("sourcebook", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
    logging.getLogger("uvicorn.access").disabled = True  # our access log has the request id and route


class ObservabilityMiddleware:
    """Request id, access log and latency metrics around every HTTP request."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = incoming if _SANE_ID.match(incoming) else uuid.uuid4().hex
        token = request_id.set(rid)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = _route_template(scope)
            self.metrics.requests.labels(scope["method"], route, str(status)).observe(elapsed)
            access_log.info(
                "%s %s %d", scope["method"], scope["path"], status,
                extra={"route": route, "status": status, "duration_ms": round(elapsed * 1000, 2)},
            )
            request_id.reset(token)


def _route_template(scope: Scope) -> str:
    """The matched route's path template (the router records it in the scope), or "unmatched":
    never the raw path, whose ids would make the metric's labels unbounded."""
    return str(getattr(scope.get("route"), "path", None) or "unmatched")
