"""LLM answers end to end: the example knowledge base, the real Anthropic SDK, a mock Messages API.

The mock recognises each Sourcebook prompt (answer, rewrite, follow-ups) and answers from
the numbered sources it was sent, so these tests check what the engine sends and what it
makes of the reply: citations checked, invalid numbers removed, abstention without a call,
full-context vs retrieval, streaming, query rewriting and its fallback, usage.
"""

from __future__ import annotations

import html
import json
import os
import re

import pytest
from typer.testing import CliRunner

from sourcebook import KnowledgeBase, Settings
from sourcebook.answering.prompts import ANSWER_SYSTEM, REFUSAL
from sourcebook.cli import app
from sourcebook.errors import ConfigurationError, InvalidQueryError
from sourcebook.stores import open_store
from tests.mock_servers import AnthropicProtocol, Fail, Malformed, MockServer
from tests.mock_servers.responder import Responder, anthropic_prompt, citing, purpose_of

LEAVE = "How many days of paid holiday does a full-time Northwind Labs employee get each year?"
UNANSWERABLE = "Which company provides the employee pension scheme?"
LEAVE_CLAIM = citing("27 days", "Full-time employees get 27 days of annual leave per year")
MODEL = "anthropic:claude-test"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with MockServer(AnthropicProtocol()) as mock:
        yield mock


@pytest.fixture
def llm_kb(example_kb, server):
    """`build(responder, **settings)`: the example store answered by the mock LLM."""

    def build(responder: Responder | None = None, **overrides) -> KnowledgeBase:
        server.default = responder or Responder()
        db = example_kb.settings.db
        settings = Settings(db=db, llm=MODEL, llm_base_urls={"anthropic": server.url}, llm_retry_base_delay=0, **overrides)
        return KnowledgeBase(open_store(db), settings, example_kb.embedder)

    return build


def answer_prompts(server: MockServer) -> list[str]:
    return [anthropic_prompt(r.body)[1] for r in server.requests if purpose_of(anthropic_prompt(r.body)[0]) == "answer"]


def test_answer_is_written_cited_checked_and_reported(llm_kb, server):
    answer = llm_kb(Responder(answer=LEAVE_CLAIM)).ask(LEAVE)
    assert not answer.abstained and answer.answerer == MODEL
    assert re.fullmatch(r"Full-time employees get 27 days of annual leave per year \[\d+\]\.", answer.answer)
    assert answer.citation_check.verdict == "supported" and answer.citation_check.supported_ratio == 1.0
    (citation,) = answer.citations
    assert citation.supported and "27 days" in citation.quote
    assert citation.source.endswith("employee-handbook.md") and citation.chunk_id.startswith(citation.document_id)
    assert answer.follow_up_questions == ("F1?", "F2?", "F3?")
    # Calibrated p_correct (answering/confidence.py) x the supported share (1.0 here): what the
    # fitted model says of an answer retrieved this well, not a hand-set number.
    assert 0.3 < answer.confidence <= 1.0
    assert [c["purpose"] for c in answer.usage["calls"]] == ["answer", "follow_ups"]
    assert answer.usage["input_tokens"] > 100 and answer.usage["calls"][0]["attempts"] == 1
    data = answer.to_dict()
    assert set(data) >= {"question", "answer", "abstained", "citations", "confidence", "mode", "queries", "usage",
                         "follow_up_questions", "citation_check", "answerer"}
    assert set(data["citations"][0]) >= {"n", "document_id", "source", "chunk_id", "quote", "supported"}
    json.dumps(data)


def test_prompt_numbers_sources_with_metadata_as_untrusted_data(llm_kb, server):
    llm_kb(Responder(answer=LEAVE_CLAIM)).ask(LEAVE)
    (prompt,) = answer_prompts(server)
    system, _ = anthropic_prompt(server.requests[0].body)
    assert system == ANSWER_SYSTEM and "not instructions" in system and "[n]" not in system
    assert prompt.startswith("<sources>\n<source n=\"1\" title=\"") and prompt.endswith(f"Question: {LEAVE}")
    assert 'section="' in prompt and 'page="' in prompt  # the PDF's chunks carry their page


def test_nothing_relevant_means_no_llm_call(llm_kb, server):
    kb = llm_kb(Responder(answer=LEAVE_CLAIM))
    answer = kb.ask(UNANSWERABLE)
    assert answer.abstained and answer.citations == () and answer.usage == {}
    assert answer.answerer == MODEL and answer.confidence < 0.5
    stream = kb.ask_stream(UNANSWERABLE)
    assert "".join(stream) == stream.answer.answer
    assert server.requests == []


def test_invalid_citation_numbers_are_removed(llm_kb):
    def writer(question, sources):
        return LEAVE_CLAIM(question, sources).replace("].", "][999].")

    answer = llm_kb(Responder(answer=writer)).ask(LEAVE)
    assert "[999]" not in answer.answer and answer.citation_check.removed == (999,)
    assert answer.citation_check.verdict == "supported"


def test_unsupported_sentences_are_flagged_and_lower_confidence(llm_kb):
    supported = llm_kb(Responder(answer=LEAVE_CLAIM)).ask(LEAVE)

    def writer(question, sources):
        n = LEAVE_CLAIM(question, sources).rsplit("[", 1)[1].rstrip("].")
        return f"{LEAVE_CLAIM(question, sources)} Staff may also take unlimited paid sabbaticals every year [{n}]."

    mixed = llm_kb(Responder(answer=writer)).ask(LEAVE)
    statuses = [s.status for s in mixed.citation_check.sentences]
    assert statuses == ["supported", "unsupported"] and mixed.citation_check.verdict == "partially_supported"
    assert mixed.confidence < supported.confidence


def test_a_refusal_is_an_abstention(llm_kb):
    answer = llm_kb(Responder(answer=REFUSAL)).ask(LEAVE)
    assert answer.abstained and answer.citations == () and answer.answer == REFUSAL


def test_auto_sends_whole_documents_when_they_fit(llm_kb, server, example_kb):
    answer = llm_kb(Responder(answer=LEAVE_CLAIM)).ask(LEAVE)
    assert answer.mode == "full-context"
    (prompt,) = answer_prompts(server)
    titles = {html.escape(d.title) for d in example_kb.documents()}
    assert set(re.findall(r'title="([^"]+)"', prompt)) == titles
    assert prompt.count("<source n=") == sum(d.chunk_count for d in example_kb.documents())
    assert answer.citation_check.verdict == "supported"


def test_auto_falls_back_to_retrieval_over_budget(llm_kb, server):
    answer = llm_kb(Responder(answer=LEAVE_CLAIM), full_context_max_chars=2000).ask(LEAVE)
    assert answer.mode == "retrieval"
    assert answer_prompts(server)[0].count("<source n=") <= 5


def test_forced_full_context_over_budget_is_a_clear_error(llm_kb):
    with pytest.raises(InvalidQueryError, match="full-context budget"):
        llm_kb(full_context_max_chars=2000).ask(LEAVE, mode="full-context")


def test_full_context_respects_the_scope(llm_kb, server, example_kb):
    handbook = next(d for d in example_kb.documents() if d.source.endswith("employee-handbook.md"))
    answer = llm_kb(Responder(answer=LEAVE_CLAIM)).ask(LEAVE, mode="full-context", document_ids=[handbook.id])
    (prompt,) = answer_prompts(server)
    assert answer.mode == "full-context" and set(re.findall(r'title="([^"]+)"', prompt)) == {html.escape(handbook.title)}


def test_streaming_yields_text_then_the_checked_answer(llm_kb):
    stream = llm_kb(Responder(answer=LEAVE_CLAIM)).ask_stream(LEAVE)
    deltas = list(stream)
    assert len(deltas) > 5 and "".join(deltas) == stream.answer.answer
    assert stream.answer.citation_check.verdict == "supported"


def test_query_rewriting_searches_each_variation(llm_kb):
    rewrite = {"queries": ["annual leave allowance", "holiday entitlement days", LEAVE], "keywords": ["annual leave", "27"]}
    kb = llm_kb(Responder(answer=LEAVE_CLAIM, rewrite=rewrite), answer_mode="retrieval")
    answer = kb.ask(LEAVE, rewrite=True)
    assert answer.queries == (LEAVE, "annual leave allowance", "holiday entitlement days", "annual leave 27")
    assert [c["purpose"] for c in answer.usage["calls"]][:2] == ["rewrite", "answer"]
    assert answer.hits[0].chunk.source.endswith("employee-handbook.md")


@pytest.mark.parametrize("failure", [Fail(500), Malformed()], ids=["5xx", "malformed"])
def test_query_rewriting_falls_back_to_the_question(llm_kb, failure):
    kb = llm_kb(Responder(answer=LEAVE_CLAIM, rewrite=failure), llm_max_retries=0, answer_mode="retrieval")
    answer = kb.ask(LEAVE, rewrite=True)
    assert answer.queries == (LEAVE,) and not answer.abstained
    assert answer.usage["calls"][0]["purpose"] == "rewrite" and "error" in answer.usage["calls"][0]


def test_follow_ups_fall_back_offline_when_the_llm_fails(llm_kb):
    answer = llm_kb(Responder(answer=LEAVE_CLAIM, follow_ups=Malformed())).ask(LEAVE)
    assert 1 <= len(answer.follow_up_questions) <= 3
    assert all(q.startswith("What does ") for q in answer.follow_up_questions)


def test_full_context_without_an_llm_is_a_configuration_error(example_kb):
    with pytest.raises(ConfigurationError, match="needs an LLM"):
        example_kb.ask(LEAVE, mode="full-context")


def test_extractive_answers_carry_the_new_keys(example_kb):
    data = example_kb.ask(LEAVE).to_dict()
    assert (data["mode"], data["queries"], data["usage"], data["answerer"]) == ("retrieval", [LEAVE], {}, "extractive")
    assert data["citation_check"] is None and len(data["follow_up_questions"]) == 3


def test_cli_ask_with_an_llm(example_kb, server, monkeypatch):
    server.default = Responder(answer=LEAVE_CLAIM)
    monkeypatch.setenv("SOURCEBOOK_LLM_BASE_URLS", json.dumps({"anthropic": server.url}))
    runner = CliRunner()
    db = example_kb.settings.db
    result = runner.invoke(app, ["--db", db, "ask", LEAVE, "--llm", MODEL, "--mode", "retrieval", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["mode"] == "retrieval" and data["answerer"] == MODEL and data["citation_check"]["verdict"] == "supported"
    streamed = runner.invoke(app, ["--db", db, "ask", LEAVE, "--llm", MODEL])
    assert streamed.exit_code == 0, streamed.output
    assert "27 days of annual leave" in streamed.stdout and "citation check: supported" in streamed.stdout
    assert "Follow-up questions" in streamed.stdout and "full-context" in streamed.stdout
    bad = runner.invoke(app, ["--db", db, "ask", LEAVE, "--mode", "sideways"])
    assert bad.exit_code != 0


def test_cli_missing_key_is_a_clear_error(example_kb, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = CliRunner().invoke(app, ["--db", example_kb.settings.db, "ask", LEAVE, "--llm", "openai:gpt-x", "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "missing_api_key" and "OPENAI_API_KEY" in error["message"]
    assert os.environ.get("OPENAI_API_KEY") is None
