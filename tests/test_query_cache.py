"""The query cache (issue 18): repeated queries are served from memory, and a write, by this
process or another, never lets a stale result through."""

from __future__ import annotations

from pathlib import Path

import pytest

from sourcebook import KnowledgeBase
from sourcebook.query_cache import QueryCache

QUESTION = "How many days of annual leave do full-time staff get?"


def test_least_recently_used_entries_go_first_and_counts_are_kept() -> None:
    cache = QueryCache(2)
    calls: list[str] = []

    def compute(value: str):  # type: ignore[no-untyped-def]
        return lambda: calls.append(value) or value

    assert cache.get_or_compute("search", ("a",), compute("a")) == "a"
    assert cache.get_or_compute("search", ("b",), compute("b")) == "b"
    assert cache.get_or_compute("search", ("a",), compute("a2")) == "a"  # a is now the most recent
    assert cache.get_or_compute("search", ("c",), compute("c")) == "c"  # evicts b
    assert cache.get_or_compute("search", ("b",), compute("b2")) == "b2"
    assert calls == ["a", "b", "c", "b2"]
    assert cache.stats() == {"entries": 2, "max_entries": 2, "hits": {"embedding": 0, "search": 1, "answer": 0},
                             "misses": {"embedding": 0, "search": 4, "answer": 0}}
    with pytest.raises(ZeroDivisionError):
        cache.get_or_compute("answer", ("x",), lambda: 1 / 0)
    assert cache.get_or_compute("answer", ("x",), lambda: "computed after a failure") == "computed after a failure"


def _lookups(kb: KnowledgeBase, kind: str) -> tuple[int, int]:
    stats = kb.query_cache_stats()
    assert stats is not None
    return stats["hits"][kind], stats["misses"][kind]


def test_a_write_between_two_identical_queries_changes_the_second_result(tmp_path: Path, docs_copy: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb.db", query_cache_entries=64) as kb:
        kb.add(str(docs_copy / "security-policy.md"))
        first = kb.search("annual leave days full-time", top_k=3)
        assert kb.search("annual leave days full-time", top_k=3) == first
        assert _lookups(kb, "search") == (1, 1)
        assert all("employee-handbook" not in h.chunk.source for h in first)
        kb.add(str(docs_copy / "employee-handbook.md"))  # the write
        after = kb.search("annual leave days full-time", top_k=3)
        assert "employee-handbook" in after[0].chunk.source
        assert _lookups(kb, "search") == (1, 2)
        assert _lookups(kb, "embedding") == (1, 1)  # the query's vector was reused all the same
        kb.remove(str(docs_copy / "employee-handbook.md"))
        assert all("employee-handbook" not in h.chunk.source for h in kb.search("annual leave days full-time", top_k=3))


def test_another_process_writing_the_file_is_seen(tmp_path: Path, docs_copy: Path) -> None:
    """Another connection stands in for another process: the generation lives in the file."""
    with KnowledgeBase.open(tmp_path / "kb.db", query_cache_entries=64) as server:
        server.add(str(docs_copy / "security-policy.md"))
        before = server.ask(QUESTION)
        assert before.abstained or "27 days" not in before.answer
        with KnowledgeBase.open(tmp_path / "kb.db") as cli:
            cli.add(str(docs_copy / "employee-handbook.md"))
        after = server.ask(QUESTION)
        assert not after.abstained and "27 days" in after.answer
        again = server.ask(QUESTION)
        assert again.answer == after.answer and again.usage == {"cached": True}
        assert _lookups(server, "answer") == (1, 2)


def test_tenants_never_share_entries(tmp_path: Path, docs_copy: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb.db", query_cache_entries=64) as kb:
        acme, globex = kb.for_tenant("acme"), kb.for_tenant("globex")
        acme.add(str(docs_copy / "employee-handbook.md"))
        assert acme.search("annual leave")
        assert globex.search("annual leave") == []
        assert acme.query_cache_stats() == globex.query_cache_stats()  # one cache, keys say whose


def test_off_by_default_in_the_library(tmp_path: Path) -> None:
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        assert kb.query_cache_stats() is None
        kb.enable_query_cache(8)
        assert kb.query_cache_stats() == {"entries": 0, "max_entries": 8, "hits": {"embedding": 0, "search": 0, "answer": 0},
                                          "misses": {"embedding": 0, "search": 0, "answer": 0}}


def test_an_llm_answer_is_served_again_without_a_second_call(tmp_path: Path, docs_copy: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.mock_servers import MockServer, OpenAIProtocol
    from tests.mock_servers.core import Reply

    monkeypatch.setenv("OPENAI_API_KEY", "test-openai")
    with MockServer(OpenAIProtocol()) as llm:
        llm.default = Reply("Full-time employees receive 27 days of annual leave [1].")
        with KnowledgeBase.open(tmp_path / "kb.db", query_cache_entries=8, llm="openai:model-x",
                                llm_base_urls={"openai": llm.url + "/v1"}, llm_follow_ups=False) as kb:
            kb.add(str(docs_copy / "employee-handbook.md"))
            first = kb.ask(QUESTION)
            again = kb.ask(QUESTION)
            assert first.answerer == "openai:model-x" and first.usage["output_tokens"] > 0
            assert again.answer == first.answer and again.usage == {"cached": True}
            assert len(llm.chat_requests()) == 1
            assert kb.ask(QUESTION, llm="openai:model-x").usage == {"cached": True}  # the same LLM, named
