"""/v1/documents: upload (multipart) or add by URL, asynchronously; list, get, delete, reindex;
a server-sent event stream of one document's status changes."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO

from fastapi import APIRouter, File, Form, Query, Response, UploadFile, status
from pydantic import StringConstraints
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ...apikeys import Role
from ...errors import DocumentNotFoundError, FileTooLargeError
from ...loaders import is_url
from ...models import DocumentRecord, DocumentStatus, parse_metadata_value
from ..context import Call, CallDep
from ..errors import ConflictError, InvalidRequestError, PayloadTooLargeError
from ..ingestion import server_may_read
from ...jobs import IngestItem, IngestJob
from ..schemas import (
    NAME_OR_EMPTY_PATTERN,
    NAME_PATTERN,
    Chunk,
    DocumentDetail,
    DocumentList,
    DocumentsQueued,
    StatusEvent,
    UrlAdd,
    component,
    error_responses,
    event_stream,
    inline,
)

router = APIRouter(prefix="/v1/documents", tags=["documents"])
META_PATTERN = r"^[^=\x00]+=[^\x00]*$"
"""key=value with no NUL character anywhere (no store keeps one): the schema says what `_metadata` refuses."""
FINAL = (DocumentStatus.READY, DocumentStatus.ERROR)


def _readable(call: Call, document_id: str) -> DocumentRecord:
    """The document by id, if the key may read its collection (404 for another tenant's: the store never sees it)."""
    record = call.kb.document(document_id)
    call.principal.require(Role.READ, record.collection)
    return record


def _queue(call: Call, collection: str, metadata: dict[str, Any], entries: list[tuple[str, BinaryIO | Path | None, str | None]]) -> DocumentsQueued:
    """Keep each (source, upload, media type)'s bytes, then mark it pending, then submit one job.
    An upload is a stream to save, or the file where it is already kept (a reindex); None for a
    URL. Bytes first: a restart between the two finds a recorded upload with its bytes, never one
    without (which the server would otherwise have to guess how to read)."""
    records: list[DocumentRecord] = []
    items: list[IngestItem] = []
    for source, data, media_type in entries:
        upload = str(data) if isinstance(data, Path) else None if data is None else _save_upload(call, collection, source, data)
        record = call.kb.enqueue(source, collection, metadata=metadata)
        records.append(record)
        items.append(IngestItem(record.id, source, upload, media_type))
    call.service.submit(IngestJob(call.principal.tenant, collection, tuple(items), metadata))
    return DocumentsQueued(documents=records)


def _save_upload(call: Call, collection: str, source: str, data: BinaryIO) -> str:
    """Save an upload's bytes (streamed, at most max_file_bytes) under the id its document will
    have; the file holding them."""
    document_id = call.kb.document_id(source, collection)
    limit = call.kb.settings.max_file_bytes
    return str(call.service.uploads.save(call.principal.tenant, document_id, data, source, limit))


def _metadata(pairs: list[str]) -> dict[str, Any]:
    """`key=value` form fields (as the CLI's --meta): values that parse as JSON keep their type."""
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        parsed[key] = parse_metadata_value(value)
    return parsed


def _file_name(upload: UploadFile) -> str:
    """The uploaded file's own name, without any directory a client sent along."""
    name = os.path.basename((upload.filename or "").replace("\\", "/")).strip()
    if not name or name in (".", ".."):
        raise InvalidRequestError("every uploaded file needs a file name (the multipart part's filename)")
    return name


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=DocumentsQueued, responses=error_responses(403, 409, 413))
def upload_documents(
    call: CallDep,
    files: Annotated[list[UploadFile], File(min_length=1, description="one or more files (Markdown, HTML, PDF, text)")],
    collection: Annotated[
        str, Form(pattern=NAME_OR_EMPTY_PATTERN, description="letters, digits, '_', '.', '-'; at most 64; empty or absent: default")
    ] = "default",
    meta: Annotated[
        list[Annotated[str, StringConstraints(pattern=META_PATTERN)]], Form(description="key=value metadata for every document (repeat); JSON values keep their type")
    ] = [],  # noqa: B006 - FastAPI copies defaults
) -> DocumentsQueued:
    """Upload files; answers 202 at once with the documents pending. A file's name identifies its
    document: uploading a name again replaces that document (re-embedding only changed chunks)."""
    call.principal.require(Role.WRITE, collection)
    if len(files) > call.service.settings.max_upload_files:
        raise PayloadTooLargeError(f"{len(files)} files in one upload; at most {call.service.settings.max_upload_files}")
    limit = call.kb.settings.max_file_bytes
    entries: dict[str, tuple[str, BinaryIO | Path | None, str | None]] = {}
    for upload in files:
        name = _file_name(upload)  # a name given twice: the later file wins, as if uploaded after the first
        if upload.size is not None and upload.size > limit:  # refused before any file is kept
            raise FileTooLargeError(name, f"larger than the {limit} bytes a document may have")
        entries[name] = (name, upload.file, upload.content_type)
    return _queue(call, collection, _metadata(meta), list(entries.values()))


@router.post("/urls", status_code=status.HTTP_202_ACCEPTED, response_model=DocumentsQueued, responses=error_responses(403, 409))
def add_urls(body: UrlAdd, call: CallDep) -> DocumentsQueued:
    """Fetch and add web pages; answers 202 at once with the documents pending."""
    call.principal.require(Role.WRITE, body.collection)
    entries = [(url, None, None) for url in dict.fromkeys(body.urls)]
    return _queue(call, body.collection, body.metadata, entries)


@router.get("", response_model=DocumentList, responses=error_responses(403))
def list_documents(
    call: CallDep,
    collection: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
    status_filter: Annotated[DocumentStatus | None, Query(alias="status")] = None,
) -> DocumentList:
    """Documents with their status and chunk count, in the collections the key may read."""
    scope = call.principal.read_scope(collection)
    if scope is None:
        records = call.kb.documents(None, status_filter)
    else:
        records = [r for name in scope for r in call.kb.documents(name, status_filter)]
    return DocumentList(documents=records)


@router.get("/{document_id}", response_model=DocumentRecord, responses=error_responses(403, 404))
def get_document(document_id: str, call: CallDep) -> DocumentRecord:
    """One document: poll its `status` (pending, processing, ready, error) after an upload."""
    return _readable(call, document_id)


@router.get("/{document_id}/chunks", response_model=DocumentDetail, responses=error_responses(403, 404))
def get_document_chunks(document_id: str, call: CallDep) -> DocumentDetail:
    """A document and its chunks in order (what a citation's chunk_id points into)."""
    record = _readable(call, document_id)
    chunks = [
        Chunk(
            chunk_id=c.id, position=c.position, heading_path=list(c.heading_path), page=c.page, location=c.location, text=c.text,
        )
        for c in call.kb.chunks(record.id)
    ]
    return DocumentDetail(document=record, chunks=chunks)


@router.delete(
    "/{document_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response, responses=error_responses(403, 404)
)
def delete_document(document_id: str, call: CallDep) -> Response:
    """Remove a document with its chunks, vectors and uploaded file."""
    record = call.kb.document(document_id)
    call.principal.require(Role.WRITE, record.collection)
    call.kb.remove(record.id)
    call.service.uploads.delete(call.principal.tenant, record.id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{document_id}/reindex", status_code=status.HTTP_202_ACCEPTED, response_model=DocumentsQueued,
    responses=error_responses(403, 404, 409),
)
def reindex_document(document_id: str, call: CallDep) -> DocumentsQueued:
    """Process a document again from its uploaded file, URL or absolute path (say, after a chunking change)."""
    record = call.kb.document(document_id)
    call.principal.require(Role.WRITE, record.collection)
    data = call.service.uploads.find(call.principal.tenant, record.id)
    if data is None and not (server_may_read(record.source) and (is_url(record.source) or os.path.exists(record.source))):
        raise ConflictError(f"cannot reindex {record.source!r}: the server has neither its upload nor its file")
    entry = (record.source, data, record.media_type or None)
    return _queue(call, record.collection, record.metadata, [entry])


@router.get(
    "/{document_id}/events",
    responses={
        **event_stream(
            "`status` events until the document is ready or in error; an `error` event if it is deleted meanwhile",
            {"status": inline(StatusEvent), "error": component("ErrorBody")},
        ),
        **error_responses(403, 404),
    },
    response_class=EventSourceResponse,
)
async def document_events(document_id: str, call: CallDep) -> EventSourceResponse:
    """Server-sent events: one `status` event per change of the document's status, ending at ready or error."""
    await run_in_threadpool(_readable, call, document_id)
    poll = call.service.settings.status_poll_seconds

    async def events() -> AsyncIterator[dict[str, str]]:
        last: StatusEvent | None = None
        while True:
            try:
                record = await run_in_threadpool(call.kb.document, document_id)
            except DocumentNotFoundError as exc:
                yield {"event": "error", "data": json.dumps({"error": {"code": exc.code, "message": str(exc)}})}
                return
            event = StatusEvent(id=record.id, status=record.status, error=record.error, chunk_count=record.chunk_count)
            if event != last:
                yield {"event": "status", "data": event.model_dump_json()}
                last = event
            if record.status in FINAL:
                return
            await asyncio.sleep(poll)

    return EventSourceResponse(events())
