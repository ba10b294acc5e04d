"""Calibrated confidence: the features measured on an answer, and the fitted models applied to them."""

from __future__ import annotations

import math

import pytest

from sourcebook import KnowledgeBase
from sourcebook.answering.confidence import (
    ABSTAIN_BELOW,
    FEATURE_NAMES,
    P_ANSWERABLE,
    P_CORRECT,
    ConfidenceFeatures,
    LogisticModel,
    answer_features,
    asked_identifiers,
    calibrate,
    quoted,
)
from sourcebook.models import Answer, Citation, CitationCheck, Hit, StoredChunk, TermStatistics


def test_identifiers_are_flags_commands_settings_and_inner_capitals() -> None:
    question = r"Does --force-with-lease, core.autocrlf, \textls, stash@{0} or verbose=errors beat excludesFile?"
    assert asked_identifiers(question) == {
        "--force-with-lease", "core.autocrlf", r"\textls", "stash@{0}", "verbose=errors", "excludesfile",
    }
    assert asked_identifiers("How do I skip the pre-commit hooks, e.g. on a force-push?") == set()
    assert asked_identifiers("Can I use GitPython or LetterSpace?") == {"gitpython", "letterspace"}
    assert asked_identifiers("What is the installed size of libfoo33 in utf8?") == {"libfoo33", "utf8"}


def test_the_fitted_models_cover_every_feature() -> None:
    assert len(P_CORRECT.weights) == len(P_ANSWERABLE.weights) == len(FEATURE_NAMES)
    assert 0.0 < ABSTAIN_BELOW < 1.0


def test_logistic_model_probability() -> None:
    model = LogisticModel(-1.0, (2.0, 0.5))
    assert model.probability([0.5, 0.0]) == pytest.approx(0.5)
    assert model.probability([1.0, 2.0]) == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert model.probability([1e6, 0.0]) == pytest.approx(1.0)  # clamped, no overflow


def _features(**values: float) -> ConfidenceFeatures:
    return ConfidenceFeatures(**{name: values.get(name, 0.0) for name in FEATURE_NAMES})


def test_calibrate_scales_correctness_by_citation_support() -> None:
    features = _features(top_similarity=0.8, cited_similarity=0.8, answer_similarity=0.8, terms_in_sources=1.0,
                         terms_in_cited=1.0, terms_in_answer=1.0, identifiers_in_answer=1.0, asks_identifier=1.0,
                         keyword_rank=1.0)
    verbatim = calibrate(features)
    half = calibrate(features, CitationCheck("partially_supported", 0.5, (), ()))
    assert half.p_correct == pytest.approx(verbatim.p_correct / 2)
    assert half.p_answerable == verbatim.p_answerable  # support says nothing about whether an answer exists
    # An answer that quotes what was asked, from chunks that match, is likelier right and
    # likelier answerable than an abstention over chunks that barely match.
    nothing = calibrate(_features(top_similarity=0.4, terms_in_sources=0.3, missing_terms=2.0))
    assert verbatim.p_correct > nothing.p_correct and verbatim.p_answerable > nothing.p_answerable


def _chunk(n: int, text: str, headings: tuple[str, ...] = ()) -> StoredChunk:
    return StoredChunk(f"c{n}", f"d{n}", "default", f"/docs/{n}.html", "T", 0, text, headings, None, "")


def test_answer_features_on_a_fixed_answer(example_kb: KnowledgeBase) -> None:
    embedder = example_kb.embedder
    question = "Which git push option is --force-with-lease?"
    hits = (
        Hit(1, 0.03, _chunk(1, "Usually, git push refuses to update a remote ref.", ("OPTIONS", "--force-with-lease")),
            keyword_rank=2, vector_score=0.8),
        Hit(2, 0.02, _chunk(2, "Tags are pushed with --tags."), keyword_rank=None, vector_score=0.6),
    )
    citation = Citation(1, "d1", "/docs/1.html", "c1", "q", "T", ("OPTIONS", "--force-with-lease"), None)
    answer = Answer(question, "Use it to protect the ref [1].", False, (citation,), 0.0, hits)
    stats = TermStatistics(100, {"git": 60, "push": 20, "option": 40, "forc": 3, "leas": 2})
    features = answer_features(question, answer, embedder.embed_query(question), embedder, stats)
    assert features.top_similarity == 0.8 and features.similarity_margin == pytest.approx(0.2)
    assert features.cited_similarity == 0.8 and features.keyword_rank == 0.5
    assert (features.identifiers_in_answer, features.asks_identifier) == (1.0, 1.0)  # in the cited heading path
    assert features.missing_terms == 0.0 and features.terms_in_sources == 1.0
    assert 0.0 < features.terms_in_answer < features.terms_in_cited == 1.0
    assert 0.0 < features.answer_similarity < 1.0

    assert features.missing_name_rarity == 0.0  # the question names nothing (an identifier is not a name)
    assert features.absent_from_kb == 0.0  # every word of the question is in some chunk
    unheld = TermStatistics(100, {**stats.frequencies, "leas": 0})
    assert answer_features(question, answer, embedder.embed_query(question), embedder, unheld).absent_from_kb == 1.0
    abstained = answer_features(question, Answer(question, "no", True, (), 0.0, hits), embedder.embed_query(question),
                                embedder, stats)
    assert abstained.top_similarity == 0.8 and abstained.terms_in_sources == 1.0  # what retrieval found still counts
    assert (abstained.cited_similarity, abstained.answer_similarity, abstained.terms_in_answer,
            abstained.identifiers_in_answer, abstained.keyword_rank) == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert abstained.asks_identifier == 1.0  # a property of the question


def test_the_gate_abstains_below_the_threshold(example_kb: KnowledgeBase) -> None:
    """The default (fitted) gate abstains on a question the examples do not answer; a threshold
    of 0 turns that gate off, leaving the extractive answerer's own floor."""
    question = "What was Northwind Labs' share price at the close of trading yesterday?"
    assert example_kb.ask(question).abstained
    answered = example_kb.ask("How many days of paid holiday does a full-time Northwind Labs employee get each year?")
    assert not answered.abstained and "27 days" in answered.answer and answered.confidence > 0.3
    settings = example_kb.settings
    try:
        settings.answer_min_answerable, settings.answer_min_score = 0.0, -1.0
        ungated = example_kb.ask(question)
        settings.answer_min_answerable = 1.0
        closed = example_kb.ask("How many days of paid holiday does a full-time Northwind Labs employee get each year?")
    finally:
        settings.answer_min_answerable, settings.answer_min_score = None, 0.40
    assert not ungated.abstained and ungated.citations
    assert closed.abstained and closed.citations == () and closed.confidence > 0.0  # p_correct of what it withheld


def test_a_name_the_knowledge_base_never_holds_lowers_both_probabilities() -> None:
    """The fitted weight of missing_name_rarity: "How do I enable microtype on Overleaf?" over a
    manual that never names Overleaf reads as less answerable than the same answer without it."""
    answered = dict(top_similarity=0.65, cited_similarity=0.65, answer_similarity=0.6, terms_in_sources=0.67,
                    missing_terms=1.0, terms_in_cited=0.67, terms_in_answer=0.33, keyword_rank=1.0)
    named, missing = calibrate(_features(**answered)), calibrate(_features(**answered, missing_name_rarity=1.0))
    assert missing.p_answerable < named.p_answerable and missing.p_correct < named.p_correct


def test_a_word_no_chunk_holds_lowers_the_probability_of_an_answer() -> None:
    """The fitted weight of absent_from_kb: "How do I produce landscape pages with dvipdfmx?" over a
    manual that never writes "landscape" reads as less answerable than the same answer without it."""
    answered = dict(top_similarity=0.64, similarity_margin=0.06, cited_similarity=0.64, answer_similarity=0.53,
                    terms_in_sources=0.5, missing_terms=2.0, terms_in_cited=0.5, terms_in_answer=0.5, keyword_rank=0.2)
    held, absent = calibrate(_features(**answered)), calibrate(_features(**answered, absent_from_kb=1.0))
    assert absent.p_answerable < held.p_answerable


def test_an_identifier_is_quoted_only_as_a_whole_token_and_a_mixed_case_name_only_as_written() -> None:
    question = "How do I use microtype in ConTeXt?"
    assert quoted(question, "The command \\textmicrotypecontext sets the context(s) of the text.") == 0.0
    assert quoted(question, "Context-sensitive setup") == 0.0
    assert quoted(question, "ConTeXt has its own mechanism.") == 1.0
    assert quoted("Is --force safe?", "Use --force-with-lease instead.") == 0.0
    assert quoted("Is --force safe?", "Use --force.") == 1.0
    assert quoted("What do core.autocrlf and --amend do?", "Set core.autocrlf=true.") == 0.5
    assert quoted("How do I push?", "anything") == 0.0  # names no identifier
