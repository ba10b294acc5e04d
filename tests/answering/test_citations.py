"""The citation checker on fixed inputs: invalid numbers, paraphrases, wrong sources, altered facts."""

from __future__ import annotations

import pytest

from sourcebook.answering.citations import CitationChecker, cited_numbers, remove_invalid, strip_citations
from sourcebook.answering.prompts import Source
from sourcebook.embedders import create_embedder
from sourcebook.models import StoredChunk
from sourcebook.settings import Settings

LEAVE = ("Full-time employees receive 27 days of annual leave per year, plus UK bank holidays. "
         "Up to 5 unused days may be carried over to the next year and must be used by 31 March.")
PASSWORDS = "Passwords must be at least 14 characters long. Multi-factor authentication is required for every system."


def chunk(i: int, text: str, title: str) -> StoredChunk:
    return StoredChunk(f"doc{i}#0", f"doc{i}", "default", f"{title.lower()}.md", title, 0, text, ("Policy",), None, "")


SOURCES = [Source(1, chunk(1, LEAVE, "Handbook"), LEAVE), Source(2, chunk(2, PASSWORDS, "Security"), PASSWORDS)]


@pytest.fixture(scope="module")
def checker() -> CitationChecker:
    return CitationChecker(create_embedder(Settings()), min_support=0.5)


def test_invalid_numbers_are_removed_and_reported():
    text, removed = remove_invalid("Leave is 27 days [1]. Carry over 5 [3]. Both [1, 7][2].", {1, 2})
    assert text == "Leave is 27 days [1]. Carry over 5. Both [1][2]."
    assert removed == (3, 7)


def test_a_marker_after_the_full_stop_stays_with_its_sentence():
    text, _ = remove_invalid("Leave is 27 days. [1] Passwords have 14 characters. [2]", {1, 2})
    assert text == "Leave is 27 days [1]. Passwords have 14 characters [2]."
    assert cited_numbers("a [2][1] b [2]") == (2, 1)
    assert strip_citations("Leave is 27 days [1]. More [2][3].") == "Leave is 27 days. More."


def test_a_paraphrase_of_its_source_is_supported(checker):
    result = checker.check("Full-time staff get 27 days of annual leave a year [1].", SOURCES)
    (sentence,) = result.check.sentences
    assert sentence.status == "supported" and sentence.supported_by == (1,) and sentence.support >= 0.5
    (citation,) = result.citations
    assert citation.supported and "27 days" in citation.quote and citation.quote in LEAVE
    assert (citation.n, citation.document_id, citation.chunk_id, citation.source) == (1, "doc1", "doc1#0", "handbook.md")
    assert result.check.verdict == "supported"


@pytest.mark.parametrize("claim", [
    "Full-time staff get 27 days of annual leave a year [2].",      # the wrong source
    "Full-time employees receive 30 days of annual leave per year [1].",  # an altered number
    "Full-time employees do not receive annual leave [1].",         # a negated fact
    "Employees may take unlimited paid sabbaticals [1].",            # not in the source at all
    "Full-time employees receive 27 weeks of annual leave per year [1].",  # an altered unit
    "All unused days may be carried over to the next year [1].",    # "up to 5" made universal
    "Passwords must be at most 14 characters long [2].",             # an antonym
], ids=["wrong-source", "altered-number", "negated", "invented", "altered-unit", "over-generalised", "antonym"])
def test_unsupported_claims_are_flagged(checker, claim):
    result = checker.check(claim, SOURCES)
    (sentence,) = result.check.sentences
    assert sentence.status == "unsupported" and sentence.supported_by == ()
    assert result.check.verdict == "unsupported" and result.check.supported_ratio == 0.0
    assert [c.supported for c in result.citations] == [False]


def test_mixed_answers_report_each_sentence(checker):
    answer = ("Full-time employees receive 27 days of annual leave [1]. Passwords need 14 characters [1][2]. "
              "This is general advice.")
    result = checker.check(answer, SOURCES)
    assert [s.status for s in result.check.sentences] == ["supported", "supported", "uncited"]
    assert result.check.sentences[1].supported_by == (2,)  # [1] does not support it, [2] does
    assert result.check.verdict == "partially_supported"
    assert result.check.supported_ratio == pytest.approx(2 / 3)
    # Citations are listed once per (source, quote): which passage of [1] is nearest to the
    # password claim depends on the model's precision (at int8 it is the leave sentence itself).
    assert {c.n for c in result.citations} == {1, 2}
    assert all(c.supported for c in result.citations if c.n == 2)


def test_an_empty_answer_has_no_claims(checker):
    result = checker.check("", SOURCES)
    assert result.check.verdict == "no_claims" and result.citations == ()
