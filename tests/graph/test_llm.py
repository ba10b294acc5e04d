"""LLM extraction through a real SDK against the mock Anthropic server: typed nodes with
summaries and aliases, relations with provenance, token usage, the chunk-hash cache, retries,
and malformed replies."""

from __future__ import annotations

import re
import shutil

import pytest

from sourcebook import KnowledgeBase
from sourcebook.graph.llm import GRAPH_SCHEMA, GRAPH_SYSTEM
from tests.mock_servers import AnthropicProtocol, Fail, MockServer, Recorded, Reply
from tests.mock_servers.responder import anthropic_prompt, sources_of

KNOWN = {  # what the scripted model "recognises" in a passage: name -> (type, aliases)
    "Tidewater": ("technology", []), "Kafka": ("technology", []), "Driftwood": ("technology", []),
    "harbor-db": ("technology", []), "Aiko": ("person", []), "Tobias Lindqvist": ("person", []),
    "Data Collection Pipeline": ("concept", ["DCP"]), "PostgreSQL": ("technology", ["Postgres"]),
}


def graph_reply(request: Recorded) -> Reply:
    system, prompt = anthropic_prompt(request.body)
    assert system == GRAPH_SYSTEM
    (text,) = sources_of(prompt).values()
    present = [name for name in KNOWN if re.search(rf"\b{re.escape(name)}\b", text)]
    nodes = [{"name": n, "type": KNOWN[n][0], "summary": f"{n} as the passage describes it.", "aliases": KNOWN[n][1]}
             for n in present]
    edges = [{"source": a, "relation": "works with", "target": b} for a, b in zip(present, present[1:])]
    edges.append({"source": "Nobody", "relation": "invented by the model", "target": present[0] if present else "x"})
    return Reply(data={"nodes": nodes, "edges": edges}, input_tokens=100, output_tokens=20)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with MockServer(AnthropicProtocol()) as mock:
        mock.default = graph_reply
        yield mock


@pytest.fixture
def docs(tmp_path, example_docs):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("architecture-overview.md", "meeting-notes-2024-05-14.txt"):
        shutil.copy(example_docs / name, folder / name)
    return folder


def open_kb(path, server, **overrides) -> KnowledgeBase:
    settings = {"graph_llm": "anthropic:claude-test", "graph_extractor": "llm",
                "llm_base_urls": {"anthropic": server.url}, "llm_max_retries": 2, "llm_retry_base_delay": 0.0}
    return KnowledgeBase.open(path, **(settings | overrides))


def test_llm_graph_is_typed_summarised_merged_and_costed(tmp_path, server, docs) -> None:
    with open_kb(tmp_path / "kb.db", server) as kb:
        kb.add(str(docs))
        report = kb.build_graph()
        chunks = report.chunks
        assert report.extractor == "llm:anthropic:claude-test:1"
        assert report.extracted == chunks == len(server.requests) and report.failed == 0
        usage = report.to_dict()["usage"]
        assert (usage["input_tokens"], usage["output_tokens"]) == (100 * chunks, 20 * chunks)
        assert usage["calls"][0]["purpose"] == "graph" and usage["calls"][0]["provider"] == "anthropic"
        tool = server.requests[0].body["tools"][0]
        assert tool["name"] == GRAPH_SCHEMA.name and tool["input_schema"] == GRAPH_SCHEMA.schema

        harbor = kb.entity("harbor-db")
        assert harbor.entity.type == "technology" and harbor.entity.documents == 2
        assert harbor.entity.summary == "harbor-db as the passage describes it."
        assert kb.entity("DCP").entity.name == "Data Collection Pipeline"  # the model's alias
        assert kb.entity("Postgres").entity.key == "postgresql"
        assert {e.type for e in kb.entities(limit=None)} <= {"technology", "person", "concept"}
        assert "nobody" not in {e.key for e in kb.entities(limit=None)}  # edges to unlisted nodes dropped
        for neighbour in harbor.neighbours:
            assert neighbour.relation.relation == "works with"
            for passage in neighbour.passages:
                assert "harbor-db" in passage.text

        kb.build_graph(force=True)
        assert len(server.requests) == chunks  # every chunk came from the cache: no new call


def test_failed_chunks_are_reported_retried_later_and_not_cached(tmp_path, server, docs) -> None:
    calls = {"n": 0}

    def flaky(request: Recorded):
        calls["n"] += 1
        if calls["n"] == 1:
            return Reply(data={"nodes": [{"name": "X"}], "edges": "not a list"})  # fails validation
        if calls["n"] == 2:
            return Fail(400, "bad request")  # rejected: not retried
        return graph_reply(request)

    server.default = flaky
    with open_kb(tmp_path / "kb.db", server) as kb:
        kb.add(str(docs / "architecture-overview.md"))
        report = kb.build_graph()
        assert report.failed == 2 and report.extracted == report.chunks - 2
        assert "does not match the schema" in report.errors[0] and "rejected" in report.errors[1]
        again = kb.build_graph()  # the document was left incomplete: only the failed chunks are asked again
        assert (again.documents, again.extracted, again.cached, again.failed) == (1, 2, report.chunks - 2, 0)
        assert kb.build_graph().up_to_date == 1


def test_rate_limits_are_retried_with_the_generators_backoff(tmp_path, server, docs) -> None:
    server.script(Fail(429, "slow down", {"retry-after": "0"}), Fail(503))
    with open_kb(tmp_path / "kb.db", server) as kb:
        kb.add(str(docs / "meeting-notes-2024-05-14.txt"))
        report = kb.build_graph()
        assert report.failed == 0 and report.calls[0]["attempts"] == 3
        assert len(server.requests) == report.chunks + 2
