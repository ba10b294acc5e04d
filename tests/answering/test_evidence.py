"""Knowledge-base-level evidence: how rare, in the whole knowledge base, is a name the question asks about
and the answer's citations lack."""

from __future__ import annotations

import math

import pytest

from sourcebook.answering.evidence import missing_name_rarity, question_names
from sourcebook.models import Answer, Citation, Hit, StoredChunk, TermStatistics


def test_names_are_found_by_shape_not_by_a_list() -> None:
    assert question_names("How do I track large binary files with Git LFS?") == ["Git", "LFS"]
    assert question_names("How do I use microtype in ConTeXt on macOS with utf8?") == ["ConTeXt", "macOS", "utf8"]
    # a capital that opens a sentence is grammar; stopwords are never names, even in capitals
    assert question_names("Windows users ask. Does IT need it? Which option sets the upstream?") == []
    assert question_names("Which option: Overleaf or Word?") == ["Word"]  # "Overleaf" opens a clause after ':'


def test_rarity_reads_alike_whatever_the_size_of_the_knowledge_base() -> None:
    for chunks in (10, 10_000):
        stats = TermStatistics(chunks, {"rare": 0, "everywhere": chunks, "half": chunks // 2})
        assert stats.rarity("rare") == pytest.approx(1.0) and stats.rarity("unknown") == pytest.approx(1.0)
        assert stats.rarity("everywhere") == pytest.approx(0.0)
        assert 0.0 < stats.rarity("half") < 0.5
    assert TermStatistics(0, {"rare": 0}).rarity("rare") == 0.0
    assert TermStatistics(100, {"a": 1}).rarity("a") == pytest.approx(math.log(100.5 / 1.5) / math.log(201))


def _hit(n: int, text: str, heading: str = "OPTIONS") -> Hit:
    chunk = StoredChunk(f"c{n}", f"d{n}", "default", f"/docs/{n}.html", "git-push(1)", 0, text, (heading,), None, "")
    return Hit(n, 0.03, chunk, keyword_rank=n, vector_score=0.5)


def _answer(question: str, hits: tuple[Hit, ...], cited: tuple[int, ...]) -> Answer:
    citations = tuple(
        Citation(i, f"d{n}", f"/docs/{n}.html", f"c{n}", "q", "Git manual", (), None) for i, n in enumerate(cited, 1)
    )
    return Answer(question, "some answer", not citations, citations, 0.0, hits)


QUESTION = "How do I track large binary files with Git LFS?"  # keyword terms: track larg binari file git lf
STATS = TermStatistics(50, {"track": 5, "larg": 3, "binari": 2, "file": 40, "git": 45, "lf": 0})


def test_a_name_no_chunk_holds_is_as_rare_as_can_be() -> None:
    hits = (_hit(1, "Git stores large binary files in packs."), _hit(2, "Track the files you add."))
    assert missing_name_rarity(QUESTION, _answer(QUESTION, hits, (1,)), STATS) == pytest.approx(1.0)


def test_the_subject_of_the_knowledge_base_says_little_by_its_absence_from_the_citation() -> None:
    question = "Which option makes Git push atomically?"
    stats = TermStatistics(50, {"option": 30, "make": 10, "git": 45, "push": 12, "atom": 2})
    entry = (_hit(1, "--atomic: use an atomic transaction on the remote side."),)
    rarity = missing_name_rarity(question, _answer(question, entry, (1,)), stats)
    assert rarity == pytest.approx(stats.rarity("git")) and rarity < 0.1  # 45 of 50 chunks hold "git"
    rare = TermStatistics(50, {**stats.frequencies, "git": 1})
    assert missing_name_rarity(question, _answer(question, entry, (1,)), rare) > 0.7


def test_names_count_as_cited_only_when_written_as_names() -> None:
    stats = TermStatistics(50, {**STATS.frequencies, "lf": 4})
    # a heading "git-lfs" holds "lfs" in lower case only: a word, not the name "LFS" as the question writes it
    headed = (_hit(1, "Git stores large binary files in packs.", heading="git-lfs"),)
    assert missing_name_rarity(QUESTION, _answer(QUESTION, headed, (1,)), stats) == pytest.approx(stats.rarity("lf"))
    named = (_hit(1, "Git LFS stores large binary files.", heading="git-lfs"),)
    assert missing_name_rarity(QUESTION, _answer(QUESTION, named, (1,)), stats) == 0.0
    question = "How do I use microtype in ConTeXt?"
    context = TermStatistics(20, {"us": 10, "microtyp": 20, "context": 3})
    plain = (_hit(1, "In this context, use it."),)
    small_caps = (_hit(1, "CONTEXT has its own."),)  # PDF text of a TeX logo (pdfTEX) is still the name
    assert missing_name_rarity(question, _answer(question, plain, (1,)), context) == pytest.approx(context.rarity("context"))
    assert missing_name_rarity(question, _answer(question, small_caps, (1,)), context) == 0.0
    # an abstention cites nothing: every name is missing from it
    assert missing_name_rarity(question, _answer(question, small_caps, ()), context) == pytest.approx(context.rarity("context"))


def test_a_question_that_names_nothing_has_nothing_missing() -> None:
    question = "How do I change the page margins?"
    assert missing_name_rarity(question, _answer(question, (), ()), TermStatistics(5, {"page": 0})) == 0.0
