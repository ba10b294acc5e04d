"""/v1/usage: what a tenant used, by day and API key (server/usage.py counts it), for its admins."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ...apikeys import Role
from ..context import CallDep
from ..schemas import UsageResponse, error_responses

router = APIRouter(prefix="/v1/usage", tags=["usage"])
Day = Annotated[str | None, Query(pattern=r"^\d{4}-\d{2}-\d{2}$", description="a UTC day, YYYY-MM-DD (inclusive)")]


@router.get("", response_model=UsageResponse, responses=error_responses(403))
def usage(call: CallDep, since: Day = None, until: Day = None) -> dict[str, Any]:
    """The tenant's requests, LLM calls and tokens, and embedding calls per day and key, as
    `sourcebook usage --json` prints them. Admins of every collection only: it names every key."""
    call.principal.require(Role.ADMIN)
    call.service.usage.flush()  # every request so far, this one aside (it is counted when it ends)
    return {"tenant": call.kb.tenant, "usage": call.kb.usage(since, until)}
