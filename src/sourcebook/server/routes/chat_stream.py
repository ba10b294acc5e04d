"""POST /v1/chat/sessions/{id}/messages/stream: a chat turn streamed as it is written.

The web page's conversation view needs both what /v1/ask/stream gives (the answer as it is
written) and what /v1/chat/sessions/{id}/messages gives (a stored turn that later follow-ups
build on); this route is the two together, with the same events as /v1/ask/stream.
"""

from __future__ import annotations

import time

from fastapi import APIRouter
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ...answering.llm import AnswerStream
from ..context import Call, CallDep
from ..schemas import ChatMessageCreate, error_responses, event_stream
from .answers import ANSWER_EVENTS, answer_events, check_answer_mode
from .chat import usable_session

router = APIRouter(prefix="/v1/chat/sessions", tags=["chat"])


def _start_turn(session_id: str, body: ChatMessageCreate, call: Call) -> AnswerStream:
    usable_session(call, session_id)  # 403, 404 and 409 before any event is sent
    check_answer_mode(call.kb, body.mode)
    scope = call.principal.read_scope(body.collection)
    return call.kb.chat(session_id, mode=body.mode, collection=scope).ask_stream(body.content)


@router.post(
    "/{session_id}/messages/stream",
    response_class=EventSourceResponse,
    responses={
        **event_stream(
            "as POST /v1/ask/stream: `token` events as the answer is written, then one `answer` event (the turn "
            "is stored in the session), or one `error` event",
            ANSWER_EVENTS,
        ),
        **error_responses(400, 403, 404, 409),
    },
)
async def post_message_stream(session_id: str, body: ChatMessageCreate, call: CallDep) -> EventSourceResponse:
    """Ask the next question of a conversation and stream its answer."""
    started = time.perf_counter()
    stream = await run_in_threadpool(_start_turn, session_id, body, call)
    return EventSourceResponse(answer_events(stream, call, started))
