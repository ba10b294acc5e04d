"""/v1/graph: the tenant's knowledge graph (README "Knowledge graph"): the graph a view draws,
entities listed and searched, one entity with its passages and neighbours, exports, and a build.

The graph spans all of a tenant's collections (an entity merges mentions from every
document), so reading it needs a key that may read every collection, and building it one
that may write every collection; a key limited to some collections gets 403.
Routes are plain functions: FastAPI runs them in its threadpool, so a build (seconds offline,
minutes with an LLM) never blocks the event loop.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Response

from ...apikeys import Role
from ..context import Call, CallDep
from ..errors import ForbiddenError, LLMNotConfiguredError
from ..schemas import (
    EntityDetail,
    EntityList,
    Graph,
    GraphBuildReport,
    GraphExport,
    GraphText,
    error_responses,
    inline,
)

router = APIRouter(prefix="/v1/graph", tags=["knowledge graph"])
MEDIA_TYPES = {"json": "application/json", "graphml": "application/graphml+xml"}


def _require(call: Call, role: Role) -> None:
    """403 unless the key holds `role` on every collection: the graph mixes them all."""
    if not call.principal.key.allows(role, None):
        raise ForbiddenError(
            f"the knowledge graph spans every collection of the tenant, so it needs a key with the {role} role "
            f"on all collections; API key {call.principal.key.prefix or call.principal.key.id} is limited to some"
        )


@router.get("", response_model=Graph, responses=error_responses(403))
def get_graph(
    call: CallDep,
    limit: Annotated[int, Query(ge=1, le=2000, description="most entities: the most mentioned, with the relations among them")] = 200,
) -> dict[str, Any]:
    """The graph as a view draws it: nodes (entities with their mention counts) and edges (relations
    with their supporting chunk ids), with the whole graph's size and whether this key may build it."""
    _require(call, Role.READ)
    graph = call.kb.graph(limit)
    return {**graph, "stats": call.kb.graph_stats(), "can_build": call.principal.key.allows(Role.WRITE, None)}


@router.get("/entities", response_model=EntityList, responses=error_responses(403))
def list_entities(
    call: CallDep,
    q: Annotated[GraphText | None, Query(description="part of an entity's name or alias")] = None,
    type_filter: Annotated[GraphText | None, Query(alias="type", description="only entities of this type")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> dict[str, Any]:
    """Entities, most mentioned first, as `sourcebook graph list --json` (or `graph search`) prints them."""
    _require(call, Role.READ)
    entities = call.kb.entities(q, type=type_filter, limit=limit, offset=offset)
    return {"entities": [e.to_dict() for e in entities], "graph": call.kb.graph_stats()}


@router.get(
    "/export",
    response_class=Response,
    responses={
        200: {
            "description": "The whole graph: JSON (nodes and edges) or GraphML (for Gephi, yEd, Cytoscape, networkx)",
            "content": {MEDIA_TYPES["json"]: {"schema": inline(GraphExport)}, MEDIA_TYPES["graphml"]: {"schema": {"type": "string"}}},
        },
        **error_responses(403),
    },
)
def export_graph(
    call: CallDep,
    format_: Annotated[Literal["json", "graphml"], Query(alias="format", description="json or graphml")] = "json",
) -> Response:
    """The whole graph as a file, as `sourcebook graph export` writes it."""
    _require(call, Role.READ)
    return Response(
        call.kb.export_graph(format_), media_type=MEDIA_TYPES[format_],
        headers={"Content-Disposition": f'attachment; filename="graph.{format_}"'},
    )


@router.get("/entities/{name:path}", response_model=EntityDetail, responses=error_responses(403, 404))
def get_entity(
    call: CallDep,
    name: Annotated[GraphText, Path(min_length=1, description="an entity's name, alias, or a part of one only it has")],
    neighbours: Annotated[int, Query(ge=0, le=100, description="most relations to include")] = 20,
) -> dict[str, Any]:
    """An entity, the passages that mention it, and its neighbours, each with the relation and the
    passages that support it; 404 `entity_not_found` for no entity (or several) by that name."""
    _require(call, Role.READ)
    return call.kb.entity(name, neighbours=neighbours).to_dict()


@router.post("/build", response_model=GraphBuildReport, responses=error_responses(403, 409, 502, 503))
def build_graph(
    call: CallDep,
    force: Annotated[bool, Query(description="rebuild documents whose graph is current too")] = False,
    extractor: Annotated[
        Literal["auto", "offline", "llm"] | None,
        Query(description="default: the server's graph_extractor (auto: the LLM when one is set, else offline rules)"),
    ] = None,
) -> dict[str, Any]:
    """Extract the graph of every ready document whose graph is missing or stale, and answer when done
    (chunks extracted before come from the cache). One build per tenant at a time (409 meanwhile)."""
    _require(call, Role.WRITE)
    settings = call.kb.settings
    if (extractor or settings.graph_extractor) == "llm" and not (settings.graph_llm or settings.llm):
        raise LLMNotConfiguredError("the llm graph extractor needs an LLM and this server has none; use offline")
    with call.service.graph_build(call.principal.tenant):
        return call.kb.build_graph(extractor=extractor, force=force).to_dict()
