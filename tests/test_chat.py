"""Chat sessions: persisted turns, follow-ups made standalone (by the LLM, or offline), trimmed
history, and the `sourcebook chat` command."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sourcebook import KnowledgeBase, Settings
from sourcebook.chat import offline_standalone, trim_history
from sourcebook.cli import app
from sourcebook.generators import Message
from sourcebook.stores import open_store
from tests.mock_servers import AnthropicProtocol, Fail, MockServer
from tests.mock_servers.responder import Responder, anthropic_prompt, citing, purpose_of

LEAVE = "How many days of paid holiday does a full-time Northwind Labs employee get each year?"
CARRY = "How many unused annual leave days can be carried over, and until when?"
LEAVE_CLAIM = citing("27 days", "Full-time employees get 27 days of annual leave per year")


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with MockServer(AnthropicProtocol()) as mock:
        yield mock


def llm_kb(example_kb, server, responder, **overrides) -> KnowledgeBase:
    server.default = responder
    db = example_kb.settings.db
    settings = Settings(db=db, llm="anthropic:claude-test", llm_base_urls={"anthropic": server.url}, **overrides)
    return KnowledgeBase(open_store(db), settings, example_kb.embedder)


def test_a_follow_up_is_made_standalone_and_the_session_persists(example_kb, server):
    responder = Responder(answer=LEAVE_CLAIM, standalone={"question": CARRY})
    kb = llm_kb(example_kb, server, responder)
    session = kb.chat()
    first = session.ask(LEAVE)
    assert first.queries == (LEAVE,) and "standalone" not in responder.seen
    second = session.ask("And how many of those can I carry over?")
    assert second.queries[0] == CARRY and second.usage["calls"][0]["purpose"] == "standalone"
    answer_request = [r for r in server.requests if purpose_of(anthropic_prompt(r.body)[0]) == "answer"][-1]
    turns = answer_request.body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[0]["content"] == LEAVE and "[" not in turns[1]["content"]  # old citation numbers are stripped
    assert turns[2]["content"].endswith("Question: And how many of those can I carry over?")

    resumed = kb.chat(session.id)
    records = resumed.messages()
    assert [m.role for m in records] == ["user", "assistant"] * 2
    assert records[1].data["citation_check"]["verdict"] == "supported"
    stored = kb.chat_session(session.id)
    assert stored.title == LEAVE[:80] and stored.message_count == 4


def test_standalone_rewriting_falls_back_offline(example_kb, server):
    kb = llm_kb(example_kb, server, Responder(answer=LEAVE_CLAIM, standalone=Fail(500)), llm_max_retries=0)
    session = kb.chat()
    session.ask(LEAVE)
    follow_up = session.ask("and that?")
    assert follow_up.queries[0] == f"{LEAVE} and that?"
    assert follow_up.usage["calls"][0]["purpose"] == "standalone" and "error" in follow_up.usage["calls"][0]


def test_offline_chat_answers_follow_ups_extractively(example_kb):
    session = example_kb.chat()
    session.ask("What is the daily food allowance for UK business trips?")
    follow_up = session.ask("and is it the same abroad?")
    assert follow_up.queries[0].startswith("What is the daily food allowance") and follow_up.answerer == "extractive"
    standalone = session.ask("What is the shortest password allowed under the security rules?")
    assert standalone.queries == ("What is the shortest password allowed under the security rules?",)


def test_history_is_trimmed_to_the_budget_from_the_oldest_turn():
    history = [Message("user", "a" * 400), Message("assistant", "b" * 400), Message("user", "c" * 40), Message("assistant", "d" * 40)]
    assert trim_history(history, 10_000) == tuple(history)
    assert trim_history(history, 150) == tuple(history[2:])  # the old pair does not fit
    assert trim_history(history, 15) == ()  # never starts on an assistant turn
    assert trim_history(history, 0) == ()


def test_offline_standalone_rule():
    history = [Message("user", "What is the UK per diem?"), Message("assistant", "£45 [1].")]
    assert offline_standalone(history, "And abroad?") == "What is the UK per diem? And abroad?"
    assert offline_standalone(history, "How long must passwords be under the security policy?") == (
        "How long must passwords be under the security policy?")
    assert offline_standalone([], "And abroad?") == "And abroad?"


def test_chat_command(example_kb):
    runner = CliRunner()
    db = example_kb.settings.db
    result = runner.invoke(app, ["--db", db, "chat", "--json"], input=f"{LEAVE}\nand after that?\n/exit\nignored\n")
    assert result.exit_code == 0, result.output
    turns = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(turns) == 2 and turns[0]["session_id"] == turns[1]["session_id"]
    assert turns[1]["queries"][0] == f"{LEAVE} and after that?"
    listed = json.loads(runner.invoke(app, ["--db", db, "chat", "--list", "--json"]).stdout)
    assert turns[0]["session_id"] in {s["id"] for s in listed["sessions"]}
    resumed = runner.invoke(app, ["--db", db, "chat", "--session", turns[0]["session_id"]], input="and the year after?\n")
    assert resumed.exit_code == 0 and "confidence" in resumed.stdout
