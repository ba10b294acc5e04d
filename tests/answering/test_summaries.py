"""Summaries end to end: a 20-page Markdown manual in a real SQLite knowledge base, summarized
offline (extractive) and by a mock LLM (the real Anthropic SDK against tests/mock_servers), with
the summary cache in the store."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sourcebook import KnowledgeBase, Settings
from sourcebook.answering.citations import CitationChecker, cited_numbers
from sourcebook.answering.prompts import Source
from sourcebook.chunking import sentence_texts
from sourcebook.cli import app
from sourcebook.errors import CollectionNotFoundError, DocumentNotReadyError
from sourcebook.stores import open_store
from tests.mock_servers import AnthropicProtocol, MockServer, Reply
from tests.mock_servers.core import Recorded
from tests.mock_servers.responder import Responder, anthropic_prompt, sources_of

MODEL = "anthropic:claude-test"
TOPICS = ("harbour", "orchard", "glacier", "library", "foundry", "observatory", "vineyard", "railway", "bakery", "quarry")
SUBJECTS = ("inspection", "budget", "staffing", "safety", "maintenance")
FABRICATED = "The whole programme was cancelled by the Martian parliament in 1850"


def manual_text(edition: str = "first") -> str:
    """About twenty pages (some 9,900 words): ten chapters of five sections, distinct sentences."""
    lines = [f"# Regional Operations Manual ({edition} edition)", "",
             f"This manual describes how the ten regional sites are run in the {edition} edition."]
    for t, topic in enumerate(TOPICS):
        lines += ["", f"## The {topic} site", ""]
        for s, subject in enumerate(SUBJECTS):
            lines += ["", f"### {subject.capitalize()} at the {topic}", ""]
            for p in range(2):
                sentences = [
                    f"The {topic} team reviews its {subject} plan every {t + s + p + 2} weeks with the site manager.",
                    f"Each {subject} review at the {topic} records {10 * (t + 1) + s + p} findings in the shared register.",
                    f"Findings about {subject} that stay open longer than {s + p + 3} days go to the regional board.",
                    f"The {topic} site keeps {t + 2 * s + p + 4} trained people on the {subject} rota at all times.",
                    f"Visitors to the {topic} must read the {subject} notice board before entering the yard.",
                    f"In paragraph {p + 1} of this part, the {topic} {subject} lead signs off the quarterly report.",
                    f"Spare {subject} equipment for the {topic} is stored in building {chr(65 + t)}{s}{p}.",
                ]
                lines += ["", " ".join(sentences)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def manual_kb(tmp_path_factory: pytest.TempPathFactory) -> tuple[KnowledgeBase, Path]:
    folder = tmp_path_factory.mktemp("summaries")
    manual = folder / "manual.md"
    manual.write_text(manual_text(), encoding="utf-8")
    note = folder / "note.md"
    note.write_text("# Canteen note\n\nThe canteen serves soup on Mondays and fish on Fridays.\n", encoding="utf-8")
    kb = KnowledgeBase.open(folder / "kb.db")
    results = kb.add([str(manual), str(note)], "ops")
    assert [r.action for r in results] == ["added", "added"], results
    yield kb, manual
    kb.close()


def test_offline_summary_of_a_20_page_document_quotes_only_its_own_sentences(manual_kb):
    kb, manual = manual_kb
    assert len(manual.read_text().split()) > 6000  # about twenty pages
    summary = kb.summarize(str(manual), refresh=True)
    chunks = {c.id: c for c in kb.chunks(str(manual))}
    assert summary.summarizer == "extractive" and summary.citation_check is None and not summary.cached
    assert 1 <= len(summary.citations) <= 8
    for citation in summary.citations:
        assert citation.quote in chunks[citation.chunk_id].text  # verbatim: a sentence of the document
        assert citation.document_id == summary.document_id and f"[{citation.n}]" in summary.summary
    # every sentence of the summary is one cited quote, in document order, from across the document
    assert len(re.findall(r"\[\d+\]", summary.summary)) == len(summary.citations)
    positions = [chunks[c.chunk_id].position for c in summary.citations]
    assert positions == sorted(positions)
    chapters = {c.heading_path[1] for c in summary.citations if len(c.heading_path) > 1}
    assert len(chapters) >= 6


def test_the_cache_serves_an_unchanged_document_and_a_change_summarizes_anew(manual_kb, tmp_path):
    kb, manual = manual_kb
    first = kb.summarize(str(manual))
    again = kb.summarize(str(manual))
    assert again.cached and again.summary == first.summary and again.citations == first.citations
    data = json.loads(json.dumps(again.to_dict()))
    assert set(data) >= {"document_id", "source", "summary", "citations"}
    assert set(data["citations"][0]) >= {"n", "chunk_id", "quote", "page"}

    original = manual.read_text(encoding="utf-8")
    try:
        manual.write_text(manual_text("second"), encoding="utf-8")
        assert kb.add(str(manual), "ops")[0].action == "updated"
        changed = kb.summarize(str(manual))
        assert not changed.cached
        texts = {c.id: c.text for c in kb.chunks(str(manual))}
        assert all(c.quote in texts[c.chunk_id] for c in changed.citations)
    finally:
        manual.write_text(original, encoding="utf-8")
        kb.add(str(manual), "ops")


def test_a_collection_summary_draws_on_every_document(manual_kb):
    kb, manual = manual_kb
    summary = kb.summarize_collection("ops", sentences=4)
    assert summary.document_id is None and summary.collection == "ops"
    assert len(summary.documents) == 2
    assert {c.document_id for c in summary.citations} == set(summary.documents)
    assert "soup on Mondays" in summary.summary
    assert kb.summarize_collection("ops", sentences=4).cached
    with pytest.raises(CollectionNotFoundError):
        kb.summarize_collection("nope")


def test_a_document_not_ready_has_no_summary(manual_kb):
    kb, _ = manual_kb
    record = kb.enqueue("pending.md", "ops")
    try:
        with pytest.raises(DocumentNotReadyError, match="nothing to summarize"):
            kb.summarize(record.id)
    finally:
        kb.remove(record.id)


def test_cli_json_contract_and_human_output(manual_kb):
    kb, manual = manual_kb
    runner = CliRunner()
    result = runner.invoke(app, ["--db", kb.settings.db, "summarize", str(manual), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["source"] == str(manual) and data["summary"] and data["citations"][0]["quote"]
    human = runner.invoke(app, ["--db", kb.settings.db, "summarize", "--collection", "ops"])
    assert human.exit_code == 0 and "Sources" in human.stdout and "[1]" in human.stdout
    bad = runner.invoke(app, ["--db", kb.settings.db, "summarize", "--json"])
    assert bad.exit_code == 2


# With an LLM: the mock recognises the map and reduce prompts --------------------------------
def first_sentence(text: str) -> str:
    return next(s for s in sentence_texts(html.unescape(text)) if len(s.split()) > 5 and not s.startswith("#"))


class SummaryWriter(Responder):
    """Map: the first sentence of each of the first sources, cited, plus one fabricated claim.
    Reduce: the statements it was given, plus the fabricated claim again."""

    def __call__(self, request: Recorded):
        system, prompt = anthropic_prompt(request.body)
        if system.startswith("You summarise sections"):
            self.seen.append("summary_map")
            sources = sources_of(prompt)
            lines = [f"{first_sentence(text).rstrip('.')} [{n}]." for n, text in sorted(sources.items())[:3]]
            return Reply(" ".join([*lines, f"{FABRICATED} [1]."]))
        if system.startswith("You combine cited statements"):
            self.seen.append("summary_reduce")
            statements = re.findall(r"^- (.*)$", prompt, re.MULTILINE)
            return Reply(" ".join([*statements[:6], f"{FABRICATED} [1]."]))
        return super().__call__(request)


@pytest.fixture
def llm_kb(manual_kb, monkeypatch):
    kb, manual = manual_kb
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    writer = SummaryWriter()
    with MockServer(AnthropicProtocol()) as server:
        server.default = writer
        settings = Settings(db=kb.settings.db, llm=MODEL, llm_base_urls={"anthropic": server.url}, llm_retry_base_delay=0)
        llm = KnowledgeBase(open_store(kb.settings.db), settings, kb.embedder)
        yield llm, manual, server, writer
        llm.close()


def test_llm_summary_is_map_reduced_and_every_cited_sentence_passes_the_checker(llm_kb):
    kb, manual, server, writer = llm_kb
    summary = kb.summarize(str(manual), refresh=True)
    assert summary.summarizer == MODEL and writer.seen.count("summary_reduce") == 1
    assert writer.seen.count("summary_map") >= 3  # a 20-page document takes several parts
    assert FABRICATED not in summary.summary
    check = summary.citation_check
    assert check is not None and any(s.status == "unsupported" and FABRICATED in s.text for s in check.sentences)
    assert [c["purpose"] for c in summary.usage["calls"]][-1] == "summary_reduce"
    # the final text, checked again against the chunks it cites: every sentence supported
    chunks = {c.id: c for c in kb.chunks(str(manual))}
    sources = [Source(c.n, chunks[c.chunk_id], chunks[c.chunk_id].text) for c in {c.n: c for c in summary.citations}.values()]
    recheck = CitationChecker(kb.embedder, kb.settings.citation_min_support).check(summary.summary, sources)
    assert recheck.check.sentences and all(s.status == "supported" for s in recheck.check.sentences)
    assert all(cited_numbers(s.text) for s in recheck.check.sentences)

    calls = len(server.requests)
    cached = kb.summarize(str(manual))
    assert cached.cached and cached.summary == summary.summary and len(server.requests) == calls  # no LLM call

    original = manual.read_text(encoding="utf-8")
    try:  # a changed document is summarized again, by the LLM
        manual.write_text(manual_text("second"), encoding="utf-8")
        assert kb.add(str(manual), "ops")[0].action == "updated"
        changed = kb.summarize(str(manual))
        assert not changed.cached and changed.summarizer == MODEL and len(server.requests) > calls
    finally:
        manual.write_text(original, encoding="utf-8")
        kb.add(str(manual), "ops")
