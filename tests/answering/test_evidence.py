"""Knowledge-base-level evidence: whether the knowledge base names what a question asks about."""

from __future__ import annotations

import pytest

from sourcebook.answering.evidence import knowledge_base_evidence, question_names
from sourcebook.models import Answer, Citation, Hit, StoredChunk, TermStatistics


def test_names_are_found_by_shape_not_by_a_list() -> None:
    assert question_names("How do I track large binary files with Git LFS?") == ["Git", "LFS"]
    assert question_names("How do I use microtype in ConTeXt on macOS with utf8?") == ["ConTeXt", "macOS", "utf8"]
    # a capital that opens a sentence is grammar; stopwords are never names, even in capitals
    assert question_names("Windows users ask. Does IT need it? Which option sets the upstream?") == []
    assert question_names("Which option: Overleaf or Word?") == ["Word"]  # "Overleaf" opens a clause after ':'


def _hit(n: int, text: str, heading: str = "OPTIONS") -> Hit:
    chunk = StoredChunk(f"c{n}", f"d{n}", "default", f"/docs/{n}.html", "Git manual", 0, text, (heading,), None, "")
    return Hit(n, 0.03, chunk, keyword_rank=n, vector_score=0.5)


def _answer(question: str, hits: tuple[Hit, ...], cited: tuple[int, ...]) -> Answer:
    citations = tuple(
        Citation(i, f"d{n}", f"/docs/{n}.html", f"c{n}", "q", "Git manual", (), None) for i, n in enumerate(cited, 1)
    )
    return Answer(question, "some answer", not citations, citations, 0.0, hits)


QUESTION = "How do I track large binary files with Git LFS?"  # keyword terms: track larg binari file git lf


def test_a_name_the_knowledge_base_never_uses_is_absent() -> None:
    hits = (_hit(1, "Git stores large binary files in packs."), _hit(2, "Track the files you add."))
    stats = TermStatistics(50, {"track": 5, "larg": 3, "binari": 2, "file": 40, "git": 45, "lf": 0})
    evidence = knowledge_base_evidence(QUESTION, _answer(QUESTION, hits, (1,)), stats)
    assert evidence.terms_in_kb == pytest.approx(5 / 6)
    assert evidence.name_absent == 1.0  # "LFS" analyses to "lf", which no chunk holds
    assert evidence.name_absent_from_cited == pytest.approx(0.5)  # "Git" is cited, "LFS" is not


def test_a_name_the_knowledge_base_holds_only_as_a_plain_word_is_absent_from_the_citation() -> None:
    stats = TermStatistics(50, {"track": 5, "larg": 3, "binari": 2, "file": 40, "git": 45, "lf": 1})
    # a heading "git-lfs" holds "lfs" in lower case only: a word, not the name "LFS" as the question writes it
    headed = (_hit(1, "Git stores large binary files in packs; track them.", heading="git-lfs"),)
    evidence = knowledge_base_evidence(QUESTION, _answer(QUESTION, headed, (1,)), stats)
    assert evidence.terms_in_kb == 1.0 and evidence.name_absent == 0.0
    assert evidence.name_absent_from_cited == pytest.approx(0.5)
    named = (_hit(1, "Git LFS stores large binary files.", heading="git-lfs"),)
    assert knowledge_base_evidence(QUESTION, _answer(QUESTION, named, (1,)), stats).name_absent_from_cited == 0.0


def test_names_are_matched_as_written_in_the_cited_chunks() -> None:
    question = "How do I use microtype in ConTeXt?"
    stats = TermStatistics(20, {"us": 10, "microtyp": 20, "context": 3})
    lower = knowledge_base_evidence(question, _answer(question, (_hit(1, "In this context, use it."),), (1,)), stats)
    exact = knowledge_base_evidence(question, _answer(question, (_hit(1, "CONTEXT has its own."),), (1,)), stats)
    assert (lower.name_absent, lower.name_absent_from_cited) == (0.0, 1.0)  # the KB holds "context", not the name
    assert (exact.name_absent, exact.name_absent_from_cited) == (0.0, 0.0)  # capitals as small caps ("pdfTEX") count
    uncited = knowledge_base_evidence(question, _answer(question, (_hit(1, "ConTeXt has its own."),), ()), stats)
    assert uncited.name_absent_from_cited == 1.0  # an abstention cites nothing


def test_a_question_with_nothing_to_miss_scores_as_fully_present() -> None:
    stats = TermStatistics(5, {})
    evidence = knowledge_base_evidence("?!", _answer("?!", (), ()), stats)
    assert (evidence.terms_in_kb, evidence.name_absent, evidence.name_absent_from_cited) == (1.0, 0.0, 0.0)
