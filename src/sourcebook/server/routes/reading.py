"""Summaries and related content: a document's or a collection's cited summary, and the documents
most like a document or one of its chunks, within what the key may read."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ...answering.summaries import DEFAULT_SENTENCES
from ...apikeys import Role
from ...errors import ChunkNotFoundError
from ..context import CallDep
from ..schemas import NAME_PATTERN, RelatedList, Summary, error_responses

router = APIRouter(prefix="/v1", tags=["summaries and related"])
Sentences = Annotated[int, Query(ge=1, le=50, description="most sentences in the summary")]
Refresh = Annotated[bool, Query(description="summarize anew instead of reading the cache")]


@router.get("/documents/{document_id}/summary", response_model=Summary, responses=error_responses(403, 404, 409, 502, 503))
def document_summary(
    document_id: str, call: CallDep, sentences: Sentences = DEFAULT_SENTENCES, refresh: Refresh = False
) -> dict[str, Any]:
    """The document's summary, every sentence cited (extractive without an LLM; written and checked
    with the server's LLM). Cached until the document changes; 409 while it is not ready."""
    record = call.kb.document(document_id)
    call.principal.require(Role.READ, record.collection)
    return call.kb.summarize(record.id, sentences=sentences, refresh=refresh).to_dict()


@router.get("/collections/{name}/summary", response_model=Summary, responses=error_responses(403, 404, 409, 502, 503))
def collection_summary(
    name: str, call: CallDep, sentences: Sentences = DEFAULT_SENTENCES, refresh: Refresh = False
) -> dict[str, Any]:
    """The collection's summary, drawn from its documents' summaries (each cited and cached)."""
    call.principal.require(Role.READ, name)
    return call.kb.summarize_collection(name, sentences=sentences, refresh=refresh).to_dict()


@router.get("/documents/{document_id}/related", response_model=RelatedList, responses=error_responses(403, 404))
def related_documents(
    document_id: str,
    call: CallDep,
    top_k: Annotated[int, Query(ge=1, le=100)] = 5,
    chunk_id: Annotated[str | None, Query(description="documents like this chunk of the document instead")] = None,
    collection: Annotated[list[Annotated[str, Query(pattern=NAME_PATTERN)]] | None, Query(
        description="only documents of these collections (repeat); default: every one the key may read")] = None,
) -> RelatedList:
    """More like this: the documents most like this one (or its chunk), itself left out."""
    record = call.kb.document(document_id)
    call.principal.require(Role.READ, record.collection)
    scope = call.principal.read_scope(collection)
    if chunk_id is None:
        found = call.kb.related(record.id, top_k=top_k, collections=scope)
    elif all(chunk.id != chunk_id for chunk in call.kb.chunks(record.id)):
        raise ChunkNotFoundError(f"document {record.id} has no chunk {chunk_id!r}")
    else:
        found = call.kb.related_to_chunk(chunk_id, top_k=top_k, collections=scope)
    return RelatedList.model_validate({"documents": [d.to_dict() for d in found]})
