"""Contextual chunk enrichment at ingestion: an LLM sentence per chunk, cached by chunk hash."""

from __future__ import annotations

import shutil

import pytest

from sourcebook import KnowledgeBase
from sourcebook.errors import ConfigurationError
from sourcebook.stores import open_store
from tests.mock_servers import AnthropicProtocol, Fail, MockServer
from tests.mock_servers.responder import Responder

CONTEXT = "This chunk is part of the Northwind Labs employee handbook."


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with MockServer(AnthropicProtocol()) as mock:
        mock.default = Responder(context=CONTEXT)
        yield mock


def open_kb(path, server, **overrides) -> KnowledgeBase:
    settings = {"enrich_chunks": True, "llm": "anthropic:claude-test", "llm_base_urls": {"anthropic": server.url},
                "llm_max_retries": 0} | overrides
    return KnowledgeBase.open(path, **settings)


def test_each_chunk_gets_a_cached_context_sentence(tmp_path, server, example_docs):
    doc = tmp_path / "handbook.md"
    shutil.copy(example_docs / "employee-handbook.md", doc)
    with open_kb(tmp_path / "kb.db", server) as kb:
        (result,) = kb.add(str(doc))
        chunks = kb.chunks(result.document_id)
        assert len(server.requests) == result.chunks == len(chunks) > 1
        assert all(c.prefix.endswith("\n" + CONTEXT) and c.prefix.startswith("Northwind Labs") for c in chunks)

        doc.write_text(doc.read_text() + "\n\n## Pets\n\nDogs are welcome in the office on Fridays.\n")
        (changed,) = kb.add(str(doc))
        new_calls = len(server.requests) - len(chunks)
        assert changed.action == "updated" and 0 < new_calls < changed.chunks  # unchanged chunks hit the cache
        assert changed.embedded == new_calls  # and reuse their vectors
        assert kb.search("dogs in the office")[0].chunk.prefix.endswith(CONTEXT)


def test_failed_calls_keep_the_deterministic_prefix(tmp_path, server, example_docs):
    server.default = lambda request: Fail(500)
    with open_kb(tmp_path / "kb.db", server) as kb:
        (result,) = kb.add(str(example_docs / "security-policy.md"))
        assert result.action == "added"
        assert all("\n" not in c.prefix for c in kb.chunks(result.document_id))
        with open_store(kb.settings.db) as store:
            assert store.get_chunk_contexts([], "anthropic:claude-test") == {}


def test_enrichment_needs_an_llm(tmp_path, example_docs):
    with KnowledgeBase.open(tmp_path / "kb.db", enrich_chunks=True) as kb:
        with pytest.raises(ConfigurationError, match="enrich_chunks needs an LLM"):
            kb.add(str(example_docs / "security-policy.md"))
