"""Ranking metrics against values computed by hand (the arithmetic is in each comment)."""

from __future__ import annotations

import math

import pytest

from sourcebook.evaluation.metrics import (
    mean_mrr,
    mean_ndcg,
    mean_recall,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
)

LOG2_3 = math.log2(3)  # 1.584962500721156


def test_single_relevant_document_at_rank_three() -> None:
    # DCG = 1 / log2(4) = 0.5; ideal DCG = 1 / log2(2) = 1.
    assert ndcg_at_k(["x", "y", "a"], {"a": 1}, 10) == pytest.approx(0.5)


def test_graded_gains_are_linear_like_trec_eval() -> None:
    # Gains a=2, b=1; ranking b, x, a.
    # DCG = 1/log2(2) + 0/log2(3) + 2/log2(4) = 1 + 0 + 1 = 2
    # IDCG = 2/log2(2) + 1/log2(3) = 2 + 0.6309297535714575 = 2.6309297535714575
    assert ndcg_at_k(["b", "x", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(2 / 2.6309297535714575)
    # The ideal order scores 1; with 2^rel - 1 gains the swapped order would score
    # (1 + 3/log2 3) / (3 + 1/log2 3) instead of (1 + 2/log2 3) / (2 + 1/log2 3).
    assert ndcg_at_k(["a", "b"], {"a": 2, "b": 1}, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx((1 + 2 / LOG2_3) / (2 + 1 / LOG2_3))


def test_three_grades_with_an_unjudged_document() -> None:
    # Gains a=3, b=2, c=1; ranking c, u (unjudged), a, b.
    # DCG = 1/1 + 0/log2(3) + 3/2 + 2/log2(5) = 2.5 + 0.8613531161467861 = 3.361353116146786
    # IDCG = 3/1 + 2/log2(3) + 1/2 = 3.5 + 1.2618595071429148 = 4.761859507142915
    assert ndcg_at_k(["c", "u", "a", "b"], {"a": 3, "b": 2, "c": 1}, 10) == pytest.approx(3.361353116146786 / 4.761859507142915)


def test_tied_gains_are_interchangeable() -> None:
    # a and b both have gain 1: either order is ideal.
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1}, 10) == ndcg_at_k(["b", "a"], {"a": 1, "b": 1}, 10) == 1.0


def test_ranking_order_is_final_even_for_tied_scores() -> None:
    # Two documents a system scored equally: the metric keeps the order it was given
    # (trec_eval would re-sort by document id); a first -> 1, b first -> 1/log2(3).
    assert ndcg_at_k(["a", "z"], {"a": 1}, 10) == 1.0
    assert ndcg_at_k(["z", "a"], {"a": 1}, 10) == pytest.approx(1 / LOG2_3)


def test_repeated_document_counts_once_at_its_first_rank() -> None:
    # a, a, b -> a at 1, b at 2: DCG = 1 + 1/log2(3) = IDCG.
    assert ndcg_at_k(["a", "a", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)
    assert recall_at_k(["a", "a"], {"a": 1, "b": 1}, 2) == 0.5
    assert mrr_at_k(["x", "x", "a"], {"a": 1}, 2) == 0.5


def test_cutoff_applies_to_ranking_and_ideal() -> None:
    # A relevant document at rank 11 does not count at k = 10.
    assert ndcg_at_k([f"n{i}" for i in range(10)] + ["a"], {"a": 1}, 10) == 0.0
    # Three relevant, k = 2: the ideal is cut at 2 as well, so a, b is perfect.
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1, "c": 1}, 2) == pytest.approx(1.0)
    # k = 1 keeps only the first rank.
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 1) == pytest.approx(0.5)


def test_missing_or_non_positive_judgments_score_zero() -> None:
    assert ndcg_at_k(["a"], {}, 10) == 0.0
    assert ndcg_at_k(["z"], {"z": 0, "a": 1}, 10) == 0.0
    assert ndcg_at_k(["a"], {"z": 0}, 10) == 0.0
    assert ndcg_at_k([], {"a": 1}, 10) == 0.0
    assert recall_at_k(["a"], {}, 10) == 0.0
    assert mrr_at_k(["z", "a"], {"z": 0, "a": 2}, 10) == 0.5


def test_recall_at_k() -> None:
    judged = {"a": 1, "b": 1, "c": 1, "d": 0}
    assert recall_at_k(["a", "x", "b"], judged, 2) == pytest.approx(1 / 3)
    assert recall_at_k(["a", "x", "b"], judged, 3) == pytest.approx(2 / 3)


def test_mrr_at_k() -> None:
    assert mrr_at_k(["x", "y", "a", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "a"], {"a": 1}, 1) == 0.0


def test_means_run_over_the_judged_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    # q2 has no ranking: it counts as 0. (1 + 0) / 2.
    assert mean_ndcg({"q1": ["a"]}, qrels, 10) == pytest.approx(0.5)
    assert mean_recall({"q1": ["a"], "q2": ["x", "b"]}, qrels, 1) == pytest.approx(0.5)
    # q3 is not judged: ignored. (1/2 + 1) / 2.
    assert mean_mrr({"q1": ["x", "a"], "q2": ["b"], "q3": ["c"]}, qrels, 10) == pytest.approx(0.75)
    assert mean_ndcg({}, {}, 10) == 0.0


def test_percentile_interpolates_linearly() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))
