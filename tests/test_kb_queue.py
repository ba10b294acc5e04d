"""The facade's methods for services: queued (pending) documents, bytes in hand, collections, chat sessions."""

from __future__ import annotations

import pytest

from sourcebook import KnowledgeBase
from sourcebook.errors import ChatSessionNotFoundError, CollectionNotFoundError
from sourcebook.loaders import RawSource

NOTE = b"# Lunch\n\nThe canteen serves lentil soup every Wednesday at noon.\n"


def test_a_queued_upload_is_pending_then_ready(kb: KnowledgeBase) -> None:
    queued = kb.enqueue("lunch.md", "notes", metadata={"team": "facilities"})
    assert (queued.status, queued.title, queued.chunk_count, queued.metadata) == ("pending", "lunch.md", 0, {"team": "facilities"})
    [result] = kb.add_raw([RawSource.from_bytes("lunch.md", NOTE)], "notes", metadata={"team": "facilities"})
    assert result.document_id == queued.id and result.status == "ready"
    ready = kb.document(queued.id)
    assert (ready.status, ready.title, ready.chunk_count) == ("ready", "Lunch", 1)
    assert ready.metadata["team"] == "facilities"
    assert kb.search("lentil soup", collection="notes")[0].chunk.source == "lunch.md"


def test_requeuing_a_ready_document_reprocesses_it_and_keeps_it_searchable(kb: KnowledgeBase) -> None:
    [first] = kb.add_raw([RawSource.from_bytes("lunch.md", NOTE)])
    assert kb.enqueue("lunch.md").status == "pending"
    assert kb.search("lentil soup")[0].chunk.document_id == first.document_id  # old chunks still served
    [again] = kb.add_raw([RawSource.from_bytes("lunch.md", NOTE)])
    assert again.action == "updated" and again.embedded == 0  # vectors reused: only the status moved
    assert kb.document(first.document_id).status == "ready"


def test_a_queued_document_that_fails_records_why(kb: KnowledgeBase) -> None:
    queued = kb.enqueue("data.bin")
    [result] = kb.add_raw([RawSource.from_bytes("data.bin", bytes(range(256)) * 4)])
    assert result.action == "failed"
    failed = kb.document(queued.id)
    assert failed.status == "error" and failed.error == result.error


def test_a_ready_document_whose_update_fails_stays_ready(kb: KnowledgeBase) -> None:
    [first] = kb.add_raw([RawSource.from_bytes("lunch.md", NOTE)])
    [result] = kb.add_raw([RawSource.from_bytes("lunch.md", b"\x00\x01\x02" * 100)])
    assert result.action == "failed"
    kept = kb.document(first.document_id)
    assert (kept.status, kept.chunk_count) == ("ready", 1)


def test_fail_marks_a_queued_document(kb: KnowledgeBase) -> None:
    queued = kb.enqueue("https://example.org/page.html")
    kb.fail(queued.id, "the worker crashed")
    assert (kb.document(queued.id).status, kb.document(queued.id).error) == ("error", "the worker crashed")


def test_collections(kb: KnowledgeBase) -> None:
    created = kb.create_collection("handbook")
    assert (created.name, created.embedding_model, created.document_count) == ("handbook", kb.embedder.name, 0)
    assert kb.create_collection("handbook") == created  # a no-op when it exists
    kb.add_raw([RawSource.from_bytes("lunch.md", NOTE)], "handbook")
    kb.delete_collection("handbook")
    assert kb.collections() == [] and kb.documents() == []
    assert kb.search("lentil soup") == []
    with pytest.raises(CollectionNotFoundError):
        kb.delete_collection("handbook")


def test_chat_sessions(kb: KnowledgeBase) -> None:
    session = kb.create_chat_session("about lunch")
    assert (session.title, session.message_count) == ("about lunch", 0)
    assert [s.id for s in kb.chat_sessions()] == [session.id]
    kb.add_raw([RawSource.from_bytes("lunch.md", NOTE)])
    kb.chat(session.id).ask("When is lentil soup served?")
    assert kb.chat_session(session.id).message_count == 2
    kb.delete_chat_session(session.id)
    with pytest.raises(ChatSessionNotFoundError):
        kb.chat_session(session.id)
