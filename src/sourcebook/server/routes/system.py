"""/healthz and /metrics: for load balancers and Prometheus, without an API key."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..context import ServiceDep
from ..schemas import Health

router = APIRouter(tags=["system"])


def _version() -> str:
    try:
        return version("sourcebook")
    except PackageNotFoundError:
        return "unknown"


@router.get("/healthz", response_model=Health)
def healthz(service: ServiceDep) -> Health:
    """The service is up; `queue_depth` is the ingestion jobs waiting or running."""
    depth = service.queue.depth()
    service.metrics.queue_depth.set(depth)
    return Health(status="ok", version=_version(), auth=service.keys is not None, queue_depth=depth)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"description": "Prometheus text exposition format", "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
def metrics(service: ServiceDep) -> Response:
    """Request latency by route, retrieval, answer and LLM latency, tokens, ingestion counts and failures."""
    service.metrics.queue_depth.set(service.queue.depth())
    return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)
