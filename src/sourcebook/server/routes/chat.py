"""/v1/chat/sessions: stored conversations; each message is answered with the history in mind."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import TYPE_CHECKING

from fastapi import APIRouter, Response, status

from ...apikeys import Role
from ...chat import scope_collections
from ..context import Call, CallDep
from ..schemas import (
    Answer,
    ChatHistory,
    ChatMessage,
    ChatMessageCreate,
    ChatReply,
    ChatSession,
    ChatSessionCreate,
    ChatSessionList,
    error_responses,
)
from .answers import check_answer_mode

if TYPE_CHECKING:
    from ...stores.base import ChatSessionRecord

router = APIRouter(prefix="/v1/chat/sessions", tags=["chat"])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=ChatSession, responses=error_responses())
def create_session(body: ChatSessionCreate, call: CallDep) -> ChatSession:
    """Start an empty conversation, used in the collections the key may read (so a key granted
    less does not see it)."""
    scope = scope_collections(call.principal.read_scope(None))
    return ChatSession(**asdict(call.kb.create_chat_session(body.title, scope)))


@router.get("", response_model=ChatSessionList, responses=error_responses())
def list_sessions(call: CallDep) -> ChatSessionList:
    """The tenant's conversations whose collections the key may all read, most recently updated first."""
    visible = [s for s in call.kb.chat_sessions() if call.principal.may_see_session(s)]
    return ChatSessionList(sessions=[ChatSession(**asdict(s)) for s in visible])


def usable_session(call: Call, session_id: str, role: Role = Role.READ) -> ChatSessionRecord:
    """The session, if the key holds `role` on every collection it was used in (else 403; 404 if none)."""
    session = call.kb.chat_session(session_id)
    call.principal.require_session(role, session)
    return session


@router.get("/{session_id}", response_model=ChatHistory, responses=error_responses(403, 404))
def history(session_id: str, call: CallDep) -> ChatHistory:
    """A conversation and its turns in order; assistant turns carry their full answer."""
    session = usable_session(call, session_id)
    messages = [
        ChatMessage(
            role=m.role, content=m.content, created_at=m.created_at,  # type: ignore[arg-type]
            answer=Answer(**m.data) if m.data else None,
        )
        for m in call.kb.chat(session_id).messages()
    ]
    return ChatHistory(session=ChatSession(**asdict(session)), messages=messages)


@router.post("/{session_id}/messages", response_model=ChatReply, responses=error_responses(400, 403, 404, 409, 502, 503))
def post_message(session_id: str, body: ChatMessageCreate, call: CallDep) -> ChatReply:
    """Ask the next question of a conversation; a follow-up ("and in Germany?") builds on the earlier turns."""
    usable_session(call, session_id)
    check_answer_mode(call.kb, body.mode)
    scope = call.principal.read_scope(body.collection)
    started = time.perf_counter()
    answer = call.kb.chat(session_id, mode=body.mode, collection=scope).ask(body.content)
    call.service.metrics.observe_answer(answer, time.perf_counter() - started)
    return ChatReply(session_id=session_id, answer=Answer(**answer.to_dict()))


@router.delete(
    "/{session_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response, responses=error_responses(403, 404)
)
def delete_session(session_id: str, call: CallDep) -> Response:
    """Delete a conversation (a writer's right on every collection it was used in: it removes what others may read)."""
    usable_session(call, session_id, Role.WRITE)
    call.kb.delete_chat_session(session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
