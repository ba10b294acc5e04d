"""The chat-session and enrichment-cache part of the `Store` contract, run against every store."""

from __future__ import annotations

import pytest

from sourcebook.errors import ChatSessionNotFoundError, StoreError
from tests.conformance.test_store import STORE_FACTORIES


@pytest.fixture(params=STORE_FACTORIES)
def store(request):
    instance = request.param(request)
    yield instance
    instance.close()


def test_sessions_keep_their_turns_in_order(store):
    store.create_chat_session("s1", "First question")
    store.add_chat_message("s1", "user", "What is the leave?")
    store.add_chat_message("s1", "assistant", "27 days [1].", {"confidence": 0.9, "citations": []})
    messages = store.chat_messages("s1")
    assert [(m.role, m.content) for m in messages] == [("user", "What is the leave?"), ("assistant", "27 days [1].")]
    assert messages[0].data is None and messages[1].data == {"confidence": 0.9, "citations": []}
    session = store.get_chat_session("s1")
    assert (session.id, session.title, session.message_count) == ("s1", "First question", 2)


def test_sessions_list_most_recent_first_and_delete(store):
    store.create_chat_session("old", "a")
    store.create_chat_session("new", "b")
    store.add_chat_message("new", "user", "hi")
    assert [s.id for s in store.list_chat_sessions()] == ["new", "old"]
    store.delete_chat_session("new")
    assert store.get_chat_session("new") is None and [s.id for s in store.list_chat_sessions()] == ["old"]


def test_unknown_sessions_and_duplicates_are_typed_errors(store):
    store.create_chat_session("s", "t")
    with pytest.raises(StoreError, match="exists already"):
        store.create_chat_session("s", "t")
    for call in (lambda: store.chat_messages("nope"), lambda: store.add_chat_message("nope", "user", "x"),
                 lambda: store.delete_chat_session("nope")):
        with pytest.raises(ChatSessionNotFoundError, match="nope"):
            call()


def test_chunk_contexts_are_cached_per_generator(store):
    assert store.get_chunk_contexts(["h1", "h2"], "anthropic:x") == {}
    store.put_chunk_contexts({"h1": "About leave.", "h2": "About travel."}, "anthropic:x")
    store.put_chunk_contexts({"h1": "Other model's words."}, "openai:y")
    assert store.get_chunk_contexts(["h1", "h2", "h3"], "anthropic:x") == {"h1": "About leave.", "h2": "About travel."}
    assert store.get_chunk_contexts(["h1"], "openai:y") == {"h1": "Other model's words."}
