"""Fitting the confidence calibration: logistic regression and the abstention threshold on fixed data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sourcebook.errors import ConfigurationError
from sourcebook.evaluation.calibration import choose_threshold, fit_logistic, leave_one_out

from .bench_scripts import load_bench


def _data(seed: int = 7, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Labels drawn from a known logistic model: p = sigmoid(-1 + 3 x0 - 2 x1), x2 irrelevant."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, size=(n, 3))
    p = 1 / (1 + np.exp(-(-1 + 3 * x[:, 0] - 2 * x[:, 1])))
    return x, rng.uniform(size=n) < p


def test_fit_recovers_a_known_model_in_raw_units() -> None:
    x, y = _data(n=4000)
    model = fit_logistic(x.tolist(), y.tolist(), l2=0.0)
    assert model.intercept == pytest.approx(-1, abs=0.3)
    assert model.weights[0] == pytest.approx(3, abs=0.4)
    assert model.weights[1] == pytest.approx(-2, abs=0.4)
    assert abs(model.weights[2]) < 0.4
    # The model's probability is the logistic of its raw-unit score.
    row = [0.5, 0.2, 0.9]
    z = model.intercept + sum(w * v for w, v in zip(model.weights, row))
    assert model.probability(row) == pytest.approx(1 / (1 + math.exp(-z)))


def test_fit_is_reproducible_and_the_penalty_shrinks() -> None:
    x, y = _data()
    assert fit_logistic(x.tolist(), y.tolist()) == fit_logistic(x.tolist(), y.tolist())
    loose, tight = fit_logistic(x.tolist(), y.tolist(), l2=0.0), fit_logistic(x.tolist(), y.tolist(), l2=200.0)
    assert sum(map(abs, tight.weights)) < sum(map(abs, loose.weights))


def test_fit_survives_separable_and_constant_features() -> None:
    rows = [[0.0, 1.0], [0.1, 1.0], [0.9, 1.0], [1.0, 1.0]]
    model = fit_logistic(rows, [False, False, True, True], l2=1.0)  # separable: the penalty keeps it finite
    assert model.weights[1] == 0.0
    assert model.probability([1.0, 1.0]) > 0.5 > model.probability([0.0, 1.0])


def test_fit_rejects_data_it_cannot_fit() -> None:
    with pytest.raises(ConfigurationError, match="every label is the same"):
        fit_logistic([[0.1], [0.2]], [True, True])
    with pytest.raises(ConfigurationError, match="2 labels for 3 feature rows"):
        fit_logistic([[0.1], [0.2], [0.3]], [True, False])


def test_threshold_is_the_highest_within_the_false_abstention_budget() -> None:
    # 20 answerable at 0.300, 0.335, 0.370, ...; 4 unanswerable, one (0.32) between two answerable ones.
    answerable_scores = [0.3 + 0.035 * i for i in range(20)]
    scores = answerable_scores + [0.1, 0.2, 0.32, 0.9]
    gold = [True] * 20 + [False] * 4
    chosen = choose_threshold(scores, gold, max_false_abstention=0.05)
    # One answerable (0.300) may be abstained on, so the threshold goes up to just below the
    # second (0.335): the midpoint of 0.32 and 0.335, catching the unanswerable 0.32 on the way.
    assert chosen.value == pytest.approx(0.3275)
    assert chosen.false_abstention == pytest.approx(1 / 20)
    assert chosen.abstention_on_unanswerable == pytest.approx(3 / 4)
    strict = choose_threshold(scores, gold, max_false_abstention=0.0)
    assert strict.value == pytest.approx(0.25) and strict.abstention_on_unanswerable == pytest.approx(2 / 4)
    # A question the extractive floor abstains on anyway uses up the budget.
    anyway = [False] * 19 + [True] + [False] * 4
    assert choose_threshold(scores, gold, 0.05, anyway).value == pytest.approx(0.25)
    with pytest.raises(ConfigurationError, match="answerable and unanswerable"):
        choose_threshold([0.5], [True])


def test_leave_one_out_predicts_each_row_from_a_fit_without_it() -> None:
    x, y = _data(n=60)
    held_out = leave_one_out(x.tolist(), y.tolist(), l2=1.0)
    assert len(held_out) == 60
    in_sample = fit_logistic(x.tolist(), y.tolist(), l2=1.0)
    assert held_out[5] == fit_logistic(np.delete(x, 5, axis=0).tolist(), np.delete(y, 5).tolist(), 1.0).probability(x[5])
    assert held_out[5] != in_sample.probability(x[5])
    # a fit that has not seen a row is less sure of it: the held-out log loss is the larger
    def log_loss(p: list[float]) -> float:
        return -float(np.mean([math.log(q if label else 1 - q) for q, label in zip(p, y)]))
    assert log_loss(held_out) > log_loss([in_sample.probability(row) for row in x])


def _row(name: str, answerable: bool, correct: bool, x: float, floor: bool = False) -> dict:
    return {"set": name, "features": [x] * 12, "answerable": answerable, "correct": correct, "floor_abstains": floor}


def test_a_fit_is_scored_on_a_set_it_did_not_see(capsys: pytest.CaptureFixture[str]) -> None:
    """Leave-one-set-out: each manual's questions scored by a fit on the others (examples always
    fitted on, never scored), since a fit on the same manuals' questions flatters it."""
    bench = load_bench("calibrate_answers")
    rows = [
        _row(name, answerable, answerable and i % 4 != 0, x)
        for name in ("examples", "alpha", "beta")
        for i in range(12)
        for answerable, x in ((True, 0.6 + i / 40), (False, 0.1 + i / 40))
    ]
    fit = bench.Fit.on([r for r in rows if r["set"] != "beta"])
    caught, withheld, ece = fit.score([r for r in rows if r["set"] == "beta"])
    assert caught > 0.5 and withheld <= 0.1 and 0.0 <= ece < 0.5
    # An answer the extractive floor withheld is withheld whatever the threshold.
    assert fit.score([_row("beta", True, True, 0.9, floor=True)])[1] == 1.0
    kept = bench.Fit.on(rows, keep_gate=True)  # confidence refit, the gate as answering/confidence.py has it
    assert (kept.p_answerable, kept.abstain_below) == (bench.P_ANSWERABLE, bench.ABSTAIN_BELOW)
    assert kept.p_correct == bench.Fit.on(rows).p_correct
    bench.report_held_out_sets(rows, keep_gate=False)
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[3] for line in printed] == ["alpha", "beta"]
