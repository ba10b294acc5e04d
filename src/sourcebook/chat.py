"""Chat sessions: conversations kept in the store, answered turn by turn.

A follow-up ("and for trips to Germany?") means little to a search engine, so before
retrieval it is rewritten into a standalone question from the history: by the LLM when
there is one, else by putting the previous question in front of a follow-up that is short
or refers back ("it", "that", "there"...). The LLM also reads the recent turns, trimmed to
`chat_history_tokens`, estimated at 4 characters a token (the English average; each
provider's tokenizer differs, and an estimate keeps trimming free of any of them).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .answering.citations import strip_citations
from .apikeys import ALL_COLLECTIONS
from .answering.lexical import content_terms
from .answering.llm import AnswerStream, UsageLog
from .answering.prompts import standalone_request
from .errors import GeneratorError
from .generators import Message
from .models import Answer
from .settings import AnswerMode
from .stores.base import ChatMessageRecord, ChatSessionRecord

if TYPE_CHECKING:
    from .kb import KnowledgeBase

CHARS_PER_TOKEN = 4
TITLE_CHARS = 80
_REFERS_BACK = re.compile(r"\b(it|its|that|this|these|those|they|them|there|same|also|else)\b", re.IGNORECASE)
_SHORT_FOLLOW_UP_TERMS = 3


class ChatStore(Protocol):
    """Where sessions and their turns are kept: the part of a store a session uses."""

    def get_chat_session(self, session_id: str) -> ChatSessionRecord | None: ...

    def create_chat_session(self, session_id: str, title: str, collections: Sequence[str] = ()) -> None: ...

    def add_chat_message(
        self, session_id: str, role: str, content: str, data: dict[str, Any] | None = None, collections: Sequence[str] = ()
    ) -> None: ...

    def chat_messages(self, session_id: str) -> list[ChatMessageRecord]: ...


def trim_history(messages: Sequence[Message], budget_tokens: int) -> tuple[Message, ...]:
    """The most recent turns that fit the budget, starting with a user turn."""
    kept: list[Message] = []
    used = 0
    for message in reversed(messages):
        cost = len(message.content) // CHARS_PER_TOKEN + 1
        if used + cost > budget_tokens:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    while kept and kept[0].role != "user":
        kept.pop(0)
    return tuple(kept)


def scope_collections(collection: str | Sequence[str] | None) -> tuple[str, ...]:
    """What a session records of the collections a turn may search: the names, or "*" for every
    collection (None), so a key scoped to some collections is shown only sessions within them."""
    if collection is None:
        return (ALL_COLLECTIONS,)
    return (collection,) if isinstance(collection, str) else tuple(collection)


def offline_standalone(history: Sequence[Message], question: str) -> str:
    """Without an LLM: the previous question plus a follow-up that cannot stand alone."""
    previous = next((m.content for m in reversed(history) if m.role == "user"), None)
    if previous and (len(content_terms(question)) <= _SHORT_FOLLOW_UP_TERMS or _REFERS_BACK.search(question)):
        return f"{previous} {question}"
    return question


class ChatSession:
    """One conversation. Created in the store at its first question; resumed by id.

    Each turn adds the collections it searched to the stored session (`scope_collections`).

    The knowledge base answers each turn; `chats` keeps the turns (the knowledge base's own store).
    """

    def __init__(
        self, kb: KnowledgeBase, chats: ChatStore, session_id: str, *, llm: str | None, mode: AnswerMode | None,
        collection: str | Sequence[str] | None,
    ) -> None:
        self.id = session_id
        self._kb = kb
        self._chats = chats
        self._llm = llm
        self._mode = mode
        self._collection = collection

    @classmethod
    def open(
        cls, kb: KnowledgeBase, chats: ChatStore, session_id: str | None = None, *, llm: str | None = None,
        mode: AnswerMode | None = None, collection: str | Sequence[str] | None = None,
    ) -> ChatSession:
        return cls(kb, chats, session_id or uuid.uuid4().hex[:12], llm=llm, mode=mode, collection=collection)

    def messages(self) -> list[ChatMessageRecord]:
        """The turns so far (none for a session not yet stored)."""
        if self._chats.get_chat_session(self.id) is None:
            return []
        return self._chats.chat_messages(self.id)

    def ask(self, question: str) -> Answer:
        return AnswerStream(self._turn(question, stream=False)).answer

    def ask_stream(self, question: str) -> AnswerStream:
        return AnswerStream(self._turn(question, stream=True))

    def _turn(self, question: str, *, stream: bool) -> Iterator[str | Answer]:
        history = [
            Message("user", m.content) if m.role == "user" else Message("assistant", strip_citations(m.content))
            for m in self.messages()
        ]
        recent = trim_history(history, self._kb.settings.chat_history_tokens)
        usage = UsageLog()
        query = self._standalone(recent, question, usage)
        prepared = self._kb.question(question, query=query, mode=self._mode, history=recent, collection=self._collection)
        for event in self._kb.answerer(self._llm).run(prepared, stream=stream, usage=usage):
            if isinstance(event, Answer):
                self._remember(question, event)
            yield event

    def _standalone(self, history: Sequence[Message], question: str, usage: UsageLog) -> str:
        generator = self._kb.generator(self._llm)
        if not history:
            return question
        if generator is not None:
            try:
                generation = generator.generate(standalone_request(history, question))
                rewritten = generation.json().get("question")
            except GeneratorError as exc:
                usage.add("standalone", None, str(exc))
            else:
                usage.add("standalone", generation)
                if isinstance(rewritten, str) and rewritten.strip():
                    return rewritten.strip()
        return offline_standalone(history, question)

    def _remember(self, question: str, answer: Answer) -> None:
        scope = scope_collections(self._collection)
        if self._chats.get_chat_session(self.id) is None:
            self._chats.create_chat_session(self.id, question[:TITLE_CHARS], scope)
        self._chats.add_chat_message(self.id, "user", question, collections=scope)
        self._chats.add_chat_message(self.id, "assistant", answer.answer, answer.to_dict())
