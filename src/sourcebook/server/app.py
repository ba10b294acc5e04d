"""The FastAPI application: routes, error handling, limits, CORS and observability, wired once.

`create_app(kb, settings, keys)` builds an app over an open `KnowledgeBase`; the caller
owns the knowledge base (and closes it). `sourcebook serve` (cli/service.py) is the usual
caller; tests and embedders call it directly.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

from ..apikeys import KeyStore
from ..errors import SourcebookError
from ..jobs import IngestionRunner
from ..kb import KnowledgeBase
from ..watching import FolderWatcher, Watchers
from .config import ServerSettings
from .context import Service
from .errors import PayloadTooLargeError, status_of
from .ingestion import UploadStore
from .limits import BodyLimitMiddleware
from .metrics import Metrics, QueryCacheCollector
from .metering import UsageMiddleware
from .observability import ObservabilityMiddleware
from .ratelimit import RateLimiter, RateLimits
from .routes import answers, chat, chat_stream, collections, documents, graph, reading, system, usage, web

logger = logging.getLogger(__name__)

_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
_HTTP_CODES = {
    404: "not_found", 405: "method_not_allowed", 406: "not_acceptable",
    413: PayloadTooLargeError.code, 415: "unsupported_media_type", 422: "invalid_request",
}


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    """FastAPI's error list as one readable line: `body.top_k: Input should be greater than 0; ...`."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request does not match the API schema"


def _allowed_methods(request: Request) -> list[str]:
    """The methods the Allow header of a 405 names: what the OpenAPI schema documents at the
    request's path, matched as OpenAPI matches paths (a concrete path item before a templated one:
    /v1/documents/urls is the POST of its own item, though the router would take GET and DELETE
    there as /v1/documents/{id}). A path the schema does not document (the web page) gets every
    method some route serves there: Starlette's 405 names only the first matching route's."""
    path = request.url.path
    items = request.app.openapi()["paths"]
    matched = [items[path]] if path in items else [
        item for template, item in items.items()
        if re.fullmatch("[^/]+".join(map(re.escape, re.split(r"\{[^/}]+\}", template))), path)
    ]
    if matched:
        return [method for method in _METHODS if any(method.lower() in item for item in matched)]
    routes = [route for route in request.app.router.routes if not isinstance(route, Mount)]  # static files take every method
    return [
        method for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SourcebookError)
    async def sourcebook_error(request: Request, exc: SourcebookError) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:
            logger.error("request failed: %s", exc, extra={"code": exc.code})
        return _error(status, exc.code, str(exc), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_request", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI answers 400 for a body it cannot even decode; to clients that is one more
        # request not matching the schema, so it gets the same status as the others (422).
        status = 422 if exc.status_code == 400 else exc.status_code
        code = _HTTP_CODES.get(status, "http_error")
        headers = getattr(exc, "headers", None)
        if exc.status_code == 400:
            message = f"body: {exc.detail} (not JSON or form data this server can read: malformed, or nested too deeply)"
        elif exc.status_code == 405 and (allowed := _allowed_methods(request)):
            message = f"{request.method} is not allowed on {request.url.path}; allowed: {', '.join(allowed)}"
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        else:
            message = str(exc.detail)
        return _error(status, code, message, headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error")
        return _error(500, "internal_error", "the server failed unexpectedly; the request id in X-Request-ID finds it in the logs")


def default_upload_dir(kb: KnowledgeBase) -> Path:
    """Beside a SQLite file (kb.db -> kb.db.uploads/), else ./sourcebook-uploads."""
    db = kb.settings.db
    return Path(f"{db}.uploads") if "://" not in db else Path("sourcebook-uploads")


def create_app(
    kb: KnowledgeBase,
    settings: ServerSettings | None = None,
    keys: KeyStore | None = None,
    queue: IngestionRunner | None = None,
) -> FastAPI:
    """The app over `kb`. With `settings.auth` (the default) callers need a key of `keys`, by default
    the key store in the knowledge base's own database; without it everyone is an admin of the
    knowledge base's tenant (for local use only). `queue` None uses the knowledge base's own
    ingestion runner (jobs/: a thread here on SQLite, procrastinate jobs on Postgres)."""
    settings = settings or ServerSettings()
    owned_keys = keys is None and settings.auth
    if not settings.auth:
        keys = None
    elif keys is None:
        keys = kb.api_keys()
    kb.enable_query_cache(settings.query_cache_entries)
    metrics = Metrics()
    metrics.registry.register(QueryCacheCollector(kb.query_cache_stats))
    uploads = UploadStore(settings.upload_dir or default_upload_dir(kb))
    service = Service(
        kb=kb, settings=settings, keys=keys, queue=queue or kb.ingestion_runner(), uploads=uploads,
        metrics=metrics, watchers=Watchers(FolderWatcher(kb, *watched) for watched in settings.watched_folders()),
        limits=RateLimits(
            RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst),
            RateLimiter(settings.tenant_rate_limit_per_second, settings.tenant_rate_limit_burst),
        ),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.queue.start()
        service.usage.start()
        if not service.queue.persistent:
            resumed = await run_in_threadpool(service.resume_ingestion)
            if resumed:
                logger.info("queued %d documents left unfinished by the previous run", resumed)
        service.watchers.start()
        try:
            yield
        finally:
            await run_in_threadpool(service.watchers.stop)
            service.queue.stop()
            service.usage.stop()
            if owned_keys and service.keys is not None:
                service.keys.close()

    app = FastAPI(
        title="Sourcebook",
        version="1",
        summary="Documents in, cited answers out: a knowledge base over HTTP.",
        description="Authenticate with `Authorization: Bearer <API key>` (`sourcebook keys create`). "
                    'Every error is `{"error": {"code", "message"}}` with a stable code.',
        lifespan=lifespan,
    )
    app.state.service = service
    _install_error_handlers(app)
    routers = (collections.router, documents.router, reading.router, answers.router, chat.router, graph.router,
               usage.router, system.router)
    for router in routers:
        app.include_router(router)
    app.include_router(chat_stream.router)
    web.install(app)
    app.add_middleware(BodyLimitMiddleware, max_request_bytes=settings.max_request_bytes, max_upload_bytes=settings.max_upload_bytes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
            allow_headers=["Authorization", "Content-Type", "X-API-Key", "X-Request-ID"],
            expose_headers=["X-Request-ID", "Retry-After"],
        )
    app.add_middleware(UsageMiddleware, buffer=service.usage)
    app.add_middleware(ObservabilityMiddleware, metrics=metrics)
    return app
