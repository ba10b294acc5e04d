"""/v1/search and /v1/ask: the CLI's JSON contract over HTTP, and an answer streamed as it is written."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from ...answering.llm import AnswerStream
from ...errors import SourcebookError
from ...kb import KnowledgeBase
from ..context import Call, CallDep
from ..errors import LLMNotConfiguredError, status_of
from ..schemas import (
    Answer,
    AskRequest,
    SearchRequest,
    SearchResponse,
    TokenEvent,
    component,
    error_responses,
    event_stream,
    inline,
)

router = APIRouter(prefix="/v1", tags=["search and answers"])
ANSWER_EVENTS = {"token": inline(TokenEvent), "answer": component("Answer"), "error": component("ErrorBody")}
"""The events of a streamed answer (`answer_events`), for the OpenAPI schema."""


@router.post("/search", response_model=SearchResponse, responses=error_responses(400, 403))
def search(body: SearchRequest, call: CallDep) -> JSONResponse:
    """Ranked hits, as `sourcebook search --json` prints them; by default over every collection the key may read."""
    # The hits' to_dict() is the shape SearchResponse documents (the schema fuzz run checks every
    # answer against it). Returned as a dict, FastAPI would validate it into the model and dump it
    # again, on one more trip to a worker thread (bench/load_http.py, README "Search throughput").
    scope = call.principal.read_scope(body.collection)
    if scope == []:
        return JSONResponse({"query": body.query, "hits": []})
    started = time.perf_counter()
    hits = call.kb.search(
        body.query, mode=body.mode, top_k=body.top_k, collection=scope, document_ids=body.document_ids,
        metadata=body.metadata, min_score=body.min_score, per_document=body.per_document,
    )
    call.service.metrics.retrieval.labels(body.mode or call.kb.settings.retrieval_mode).observe(time.perf_counter() - started)
    return JSONResponse({"query": body.query, "hits": [hit.to_dict() for hit in hits]})


def check_answer_mode(kb: KnowledgeBase, mode: str | None) -> None:
    """409 before any work when the request asks for what only an LLM can do and none is configured."""
    if mode == "full-context" and kb.generator() is None:
        raise LLMNotConfiguredError("full-context answers need an LLM, and this server has none configured; use mode auto")


def _ask_options(body: AskRequest, call: Call) -> dict[str, Any]:
    check_answer_mode(call.kb, body.mode)
    return {
        "collection": call.principal.read_scope(body.collection), "document_ids": body.document_ids,
        "metadata": body.metadata, "top_k": body.top_k, "mode": body.mode, "rewrite": body.rewrite,
    }


@router.post("/ask", response_model=Answer, responses=error_responses(400, 403, 409, 502, 503))
def ask(body: AskRequest, call: CallDep) -> dict[str, Any]:
    """A cited answer (or an abstention), as `sourcebook ask --json` prints it."""
    started = time.perf_counter()
    answer = call.kb.ask(body.question, **_ask_options(body, call))
    call.service.metrics.observe_answer(answer, time.perf_counter() - started)
    return answer.to_dict()


@router.post(
    "/ask/stream",
    response_class=EventSourceResponse,
    responses={
        **event_stream(
            "`token` events as the answer is written, then one `answer` event (the answer after the citation "
            "check), or one `error` event",
            ANSWER_EVENTS,
        ),
        **error_responses(400, 403, 409),
    },
)
async def ask_stream(body: AskRequest, call: CallDep) -> EventSourceResponse:
    """The answer's text as the LLM writes it, then the finished answer object."""
    options = await run_in_threadpool(_ask_options, body, call)
    started = time.perf_counter()
    stream = await run_in_threadpool(call.kb.ask_stream, body.question, **options)
    return EventSourceResponse(answer_events(stream, call, started))


async def answer_events(stream: AnswerStream, call: Call, started: float) -> AsyncIterator[dict[str, str]]:
    """`token` events as `stream` yields text, then the `answer` (or one `error`): what every
    streamed answer sends (POST /v1/ask/stream, and chat messages in routes/chat_stream.py)."""
    try:
        async for delta in iterate_in_threadpool(iter(stream)):
            yield {"event": "token", "data": TokenEvent(text=delta).model_dump_json()}
        answer = stream.answer
    except SourcebookError as exc:  # headers are sent: the error becomes the last event
        error = {"error": {"code": exc.code, "message": str(exc), "status": status_of(exc)}}
        yield {"event": "error", "data": json.dumps(error)}
        return
    call.service.metrics.observe_answer(answer, time.perf_counter() - started)
    yield {"event": "answer", "data": json.dumps(answer.to_dict())}
