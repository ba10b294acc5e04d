"""Fitting the answer-confidence calibration (answering/confidence.py) from labelled answers.

Plain L2-regularised logistic regression by Newton's method: a few features and a
few hundred questions need nothing more (and no scikit-learn dependency), and Newton
steps from a zero start are deterministic, so a refit on the same data prints the
same constants. Features are standardised for the fit (so one penalty suits them all)
and the weights mapped back to raw feature units, which is what the answerer applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..answering.confidence import LogisticModel
from ..errors import ConfigurationError

NEWTON_STEPS = 50
TOLERANCE = 1e-10


def fit_logistic(rows: Sequence[Sequence[float]], labels: Sequence[bool], l2: float = 1.0) -> LogisticModel:
    """The logistic model maximising the likelihood of `labels` minus l2/2 x |weights|^2 (standardised units)."""
    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 2 or len(x) != len(y) or len(x) == 0:
        raise ConfigurationError(f"calibration data: {len(y)} labels for {len(x)} feature rows")
    if y.min() == y.max():
        raise ConfigurationError("calibration data: every label is the same, nothing to fit")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant feature: its weight stays 0 under the penalty
    design = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    penalty = np.full(design.shape[1], l2)
    penalty[0] = 0.0  # the intercept is not shrunk
    beta = np.zeros(design.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (y - p) - penalty * beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if float(np.abs(step).max()) < TOLERANCE:
            break
    weights = beta[1:] / scale
    intercept = beta[0] - float(weights @ mean)
    return LogisticModel(round(float(intercept), 4), tuple(round(float(w), 4) for w in weights))


@dataclass(frozen=True)
class Threshold:
    """An abstention threshold and what it does on the data it was chosen on."""

    value: float
    abstention_on_unanswerable: float
    false_abstention: float


def choose_threshold(
    p_answerable: Sequence[float],
    answerable: Sequence[bool],
    max_false_abstention: float = 0.05,
    abstained_anyway: Sequence[bool] | None = None,
) -> Threshold:
    """The highest threshold (abstain below it) that abstains on at most `max_false_abstention`
    of the answerable questions: as many unanswerable ones caught as that budget allows.
    `abstained_anyway` marks questions abstained on before calibration (the extractive
    answerer's own floor, answer_min_score); they count against the budget whatever the threshold.

    Candidates are midpoints between consecutive distinct probabilities, so the threshold
    does not sit on a data point and a tiny change in a probability cannot flip a decision.
    """
    scores = np.asarray(p_answerable, dtype=np.float64)
    gold = np.asarray(answerable, dtype=bool)
    anyway = np.zeros(len(gold), dtype=bool) if abstained_anyway is None else np.asarray(abstained_anyway, dtype=bool)
    if not gold.any() or gold.all():
        raise ConfigurationError("choosing a threshold needs answerable and unanswerable questions")
    distinct = np.unique(scores)
    candidates = [0.0, *((distinct[:-1] + distinct[1:]) / 2)]
    best = Threshold(0.0, float(anyway[~gold].mean()), float(anyway[gold].mean()))
    for value in candidates:
        abstains = (scores < value) | anyway
        false_rate = float(abstains[gold].mean())
        if false_rate <= max_false_abstention:
            best = Threshold(round(float(value), 4), float(abstains[~gold].mean()), false_rate)
    return best


def leave_one_out(rows: Sequence[Sequence[float]], labels: Sequence[bool], l2: float = 1.0) -> list[float]:
    """Each row's probability under a model fitted without it: what a fit on this data can be
    expected to do on a question it has not seen. In-sample figures flatter a model with more
    features; these do not, so they are what decides whether a feature is kept."""
    predicted = []
    for i in range(len(rows)):
        others = [j for j in range(len(rows)) if j != i]
        model = fit_logistic([rows[j] for j in others], [labels[j] for j in others], l2)
        predicted.append(model.probability(rows[i]))
    return predicted
