"""The ChatStore role (sessions and their turns) and the ContextCache role (the enrichment
cache of chunk contexts, one entry per chunk hash and generator)."""

from __future__ import annotations

import pytest

from sourcebook.errors import ChatSessionNotFoundError, StoreError
from sourcebook.stores import Store

from .helpers import StoreFixtures


class ChatStoreSuite(StoreFixtures):
    """The ChatStore contract: subclass it and override `empty_store` (see sourcebook.testing).

    It asks for nothing but chat methods of the store: no collection is created first."""

    def test_sessions_keep_their_turns_in_order(self, empty_store: Store) -> None:
        empty_store.create_chat_session("s1", "First question")
        empty_store.add_chat_message("s1", "user", "What is the leave?")
        empty_store.add_chat_message("s1", "assistant", "27 days [1].", {"confidence": 0.9, "citations": []})
        messages = empty_store.chat_messages("s1")
        assert [(m.role, m.content) for m in messages] == [("user", "What is the leave?"), ("assistant", "27 days [1].")]
        assert messages[0].data is None and messages[1].data == {"confidence": 0.9, "citations": []}
        session = empty_store.get_chat_session("s1")
        assert (session.id, session.title, session.message_count) == ("s1", "First question", 2)

    def test_sessions_list_most_recent_first_and_delete(self, empty_store: Store) -> None:
        empty_store.create_chat_session("old", "a")
        empty_store.create_chat_session("new", "b")
        empty_store.add_chat_message("new", "user", "hi")
        assert [s.id for s in empty_store.list_chat_sessions()] == ["new", "old"]
        empty_store.delete_chat_session("new")
        assert empty_store.get_chat_session("new") is None and [s.id for s in empty_store.list_chat_sessions()] == ["old"]

    def test_sessions_carry_the_collections_they_were_used_in(self, empty_store: Store) -> None:
        """What a collection-scoped API key is shown: the set only grows, sorted, without repeats."""
        empty_store.create_chat_session("bare", "no scope yet")
        empty_store.create_chat_session("s", "t", ["hr", "eng"])
        empty_store.add_chat_message("s", "user", "q", collections=["hr", "board"])
        empty_store.add_chat_message("s", "assistant", "a", {"answer": "a"})
        assert empty_store.get_chat_session("bare").collections == ()
        assert empty_store.get_chat_session("s").collections == ("board", "eng", "hr")
        empty_store.add_chat_message("bare", "user", "q", collections=["*"])
        assert {s.id: s.collections for s in empty_store.list_chat_sessions()} == {
            "bare": ("*",), "s": ("board", "eng", "hr")}

    def test_unknown_sessions_and_duplicates_are_typed_errors(self, empty_store: Store) -> None:
        empty_store.create_chat_session("s", "t")
        with pytest.raises(StoreError, match="exists already"):
            empty_store.create_chat_session("s", "t")
        for call in (lambda: empty_store.chat_messages("nope"),
                     lambda: empty_store.add_chat_message("nope", "user", "x"),
                     lambda: empty_store.delete_chat_session("nope")):
            with pytest.raises(ChatSessionNotFoundError, match="nope"):
                call()


class ContextCacheSuite(StoreFixtures):
    """The ContextCache contract: subclass it and override `empty_store` (see sourcebook.testing).

    It asks for nothing but the two cache methods of the store: no collection is created first."""

    def test_chunk_contexts_are_cached_per_generator(self, empty_store: Store) -> None:
        assert empty_store.get_chunk_contexts(["h1", "h2"], "anthropic:x") == {}
        empty_store.put_chunk_contexts({"h1": "About leave.", "h2": "About travel."}, "anthropic:x")
        empty_store.put_chunk_contexts({"h1": "Other model's words."}, "openai:y")
        assert empty_store.get_chunk_contexts(["h1", "h2", "h3"], "anthropic:x") == {
            "h1": "About leave.", "h2": "About travel."}
        assert empty_store.get_chunk_contexts(["h1"], "openai:y") == {"h1": "Other model's words."}
