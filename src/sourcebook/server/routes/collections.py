"""/v1/collections: list the ones the key may read; create and delete (admin)."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Response, status

from ...apikeys import Role
from ..context import CallDep
from ..errors import ConflictError
from ..schemas import Collection, CollectionCreate, CollectionList, error_responses

router = APIRouter(prefix="/v1/collections", tags=["collections"])


@router.get("", response_model=CollectionList, responses=error_responses())
def list_collections(call: CallDep) -> CollectionList:
    """The tenant's collections this key may read, with document and chunk counts."""
    infos = [info for info in call.kb.collections() if call.principal.key.allows(Role.READ, info.name)]
    return CollectionList(collections=[Collection(**asdict(info)) for info in infos])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=Collection, responses=error_responses(403, 409))
def create_collection(body: CollectionCreate, call: CallDep) -> Collection:
    """Create an empty collection for the server's embedding model (admin)."""
    call.principal.require(Role.ADMIN, body.name)
    if any(info.name == body.name for info in call.kb.collections()):
        raise ConflictError(f"collection {body.name!r} exists already")
    return Collection(**asdict(call.kb.create_collection(body.name)))


@router.delete(
    "/{name}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response, responses=error_responses(403, 404)
)
def delete_collection(name: str, call: CallDep) -> Response:
    """Delete a collection with all its documents (admin)."""
    call.principal.require(Role.ADMIN, name)
    documents = [record.id for record in call.kb.documents(name)]
    call.kb.delete_collection(name)
    call.service.uploads.delete_many(call.principal.tenant, documents)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
