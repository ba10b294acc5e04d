"""Hosted embedders (OpenAI-compatible, Gemini) through their real SDKs against the mock servers."""

from __future__ import annotations

import numpy as np
import pytest

from sourcebook import KnowledgeBase
from sourcebook.embedders import create_embedder
from sourcebook.errors import EmbeddingError, ProviderUnavailableError
from sourcebook.settings import Settings
from tests.mock_servers import Fail, GeminiProtocol, MockServer, OpenAIProtocol, fake_vector

EMBEDDING_PROTOCOLS = {"openai": OpenAIProtocol, "gemini": GeminiProtocol}


@pytest.fixture(params=list(EMBEDDING_PROTOCOLS))
def hosted(request, monkeypatch):
    provider = request.param
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    with MockServer(EMBEDDING_PROTOCOLS[provider](), dimension=12) as server:
        url = server.url + "/v1" if provider == "openai" else server.url
        yield provider, server, {"embedding_model": f"{provider}:test-embed", "embedding_base_url": url,
                                 "llm_retry_base_delay": 0.0}


def test_batches_normalises_and_keeps_order(hosted):
    provider, server, settings = hosted
    embedder = create_embedder(Settings(**settings, embedding_batch_size=3))
    texts = [f"text number {i}" for i in range(7)]
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (7, 12) and embedder.dimension == 12 and embedder.name == f"{provider}:test-embed"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    expected = np.asarray(fake_vector("text number 5", 12), dtype=np.float32)
    assert np.allclose(vectors[5], expected / np.linalg.norm(expected))
    assert len(server.requests) == 3  # 3 + 3 + 1


def test_rate_limits_are_retried(hosted):
    _, server, settings = hosted
    embedder = create_embedder(Settings(**settings))
    server.script(Fail(429, headers={"retry-after": "0"}), Fail(503))
    assert embedder.embed_query("hello").shape == (12,)
    assert len(server.requests) == 3


def test_persistent_failure_is_a_typed_error(hosted):
    _, server, settings = hosted
    embedder = create_embedder(Settings(**settings, llm_max_retries=1))
    server.script(Fail(500), Fail(500))
    with pytest.raises(ProviderUnavailableError, match="test-embed"):
        embedder.embed_query("hello")


def test_a_model_of_another_dimension_is_refused(hosted):
    provider, _, settings = hosted
    embedder = create_embedder(Settings(**(settings | {"embedding_model": f"{provider}:text-embedding-3-large"})))
    with pytest.raises(EmbeddingError, match="12-dimensional"):
        embedder.embed_query("hello")


def test_a_knowledge_base_on_a_hosted_embedder(hosted, tmp_path, example_docs):
    provider, _, settings = hosted
    with KnowledgeBase.open(tmp_path / "kb.db", **settings) as kb:
        results = kb.add([str(example_docs / "employee-handbook.md"), str(example_docs / "security-policy.md")])
        assert [r.action for r in results] == ["added", "added"]
        (collection,) = kb.collections()
        assert (collection.embedding_model, collection.dimension) == (f"{provider}:test-embed", 12)
        assert kb.search("password length", mode="keyword")[0].chunk.source.endswith("security-policy.md")
        assert len(kb.search("password length", mode="vector")) > 0


def test_gemini_queries_and_documents_use_their_task_types(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    with MockServer(GeminiProtocol(), dimension=4) as server:
        embedder = create_embedder(Settings(embedding_model="gemini:test-embed", embedding_base_url=server.url))
        embedder.embed_query("q")
        embedder.embed_documents(["d"])
    kinds = [r.body["requests"][0].get("taskType") for r in server.requests]
    assert kinds == ["RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT"]
