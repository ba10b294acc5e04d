"""Fitting the confidence calibration: logistic regression and the abstention threshold on fixed data."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from sourcebook.answering.confidence import FEATURE_NAMES, ConfidenceFeatures, LogisticModel
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
    return {"set": name, "features": [x] * len(FEATURE_NAMES), "answerable": answerable, "correct": correct,
            "floor_abstains": floor}


def _rows() -> list[dict]:
    return [
        _row(name, answerable, answerable and i % 4 != 0, x)
        for name in ("examples", "alpha", "beta")
        for i in range(12)
        for answerable, x in ((True, 0.6 + i / 40), (False, 0.1 + i / 40))
    ]


def test_a_fit_is_scored_on_a_set_it_did_not_see(capsys: pytest.CaptureFixture[str]) -> None:
    """Leave-one-set-out: each manual's questions scored by a fit on the others (examples always
    fitted on, never scored), since a fit on the same manuals' questions flatters it; then all
    the held-out sets pooled, each scored by the fit that did not see it."""
    bench = load_bench("calibrate_answers")
    rows = _rows()
    fit = bench.Fit.on([r for r in rows if r["set"] != "beta"])
    caught, withheld, ece = fit.score([r for r in rows if r["set"] == "beta"])
    assert caught > 0.5 and withheld <= 0.1 and 0.0 <= ece < 0.5
    # An answer the extractive floor (or a rule) withheld is withheld whatever the threshold.
    assert fit.score([_row("beta", True, True, 0.9, floor=True)])[1] == 1.0
    kept = bench.Fit.on(rows, keep_gate=True)  # confidence refit, the gate as answering/confidence.py has it
    assert (kept.p_answerable, kept.abstain_below) == (bench.P_ANSWERABLE, bench.ABSTAIN_BELOW)
    assert kept.p_correct == bench.Fit.on(rows).p_correct
    bench.report_held_out_sets(rows, keep_gate=False)
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[3] for line in printed[:2]] == ["alpha", "beta"]
    alpha = bench.Fit.on([r for r in rows if r["set"] != "alpha"]).outcomes([r for r in rows if r["set"] == "alpha"])
    beta = bench.Fit.on([r for r in rows if r["set"] != "beta"]).outcomes([r for r in rows if r["set"] == "beta"])
    pooled = bench.figures(alpha + beta)
    assert printed[2].startswith("# held-out sets pooled (48): refit without each: ")
    assert f"false abstention {pooled[1]:.3f}, ECE {pooled[2]:.3f}" in printed[2]
    # The AUC of p_answerable, per set and pooled, each row scored by the fit that did not see it.
    scored = [
        (bench.Fit.on([r for r in rows if r["set"] != held]).p_answerable.probability(r["features"]), r["answerable"])
        for held in ("alpha", "beta") for r in rows if r["set"] == held
    ]
    assert f", AUC answerable {bench.auc([s for s, _ in scored[:24]], [y for _, y in scored[:24]]):.3f}; " in printed[0]
    assert f", AUC answerable {bench.auc([s for s, _ in scored], [y for _, y in scored]):.3f}; " in printed[2]
    assert bench._auc_of([(0.3, True), (0.9, True)]) == "n/a"  # noqa: SLF001 (one label: no ranking to score)


def test_the_refit_reads_the_seven_answers_sets_dev_splits_only() -> None:
    """The one-command refit (--kb-dir) reads every answers set, the two written without running the
    system on them (zsh, vrbtabs) included: leave-one-set-out over them is the honest figure."""
    bench = load_bench("calibrate_answers")
    assert bench.SETS == ("gitdoc", "microtype", "valgrind", "sqlite", "dvipdfmx", "zsh", "vrbtabs")
    for name in bench.SETS:
        questions = bench.ROOT / "eval" / name / "questions.jsonl"
        assert (bench.ROOT / "eval" / name / "build.py").exists()
        assert {item[0] for item in bench._dev(questions)} < {  # noqa: SLF001
            json.loads(line)["id"] for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()
        }


def test_check_rows_are_never_fitted_on_and_cap_what_the_gate_withholds(capsys: pytest.CaptureFixture[str]) -> None:
    """--check rows (pydocs: answerable, no gold strings) are not labels: the models are the same
    without them; they cap the threshold at the false-abstention budget, and the report says how
    many of them the fitted gate withholds."""
    bench = load_bench("calibrate_answers")
    rows = _rows()
    free = bench.Fit.on(rows)
    checks = [_row("check:pydocs", True, False, x) for x in [0.9] * 37 + [0.05, 0.1, 0.3]]
    assert free.p_answerable.probability(checks[-1]["features"]) < free.abstain_below  # 3 of 40 below it
    capped = bench.Fit.on(rows + checks)
    assert (capped.p_correct, capped.p_answerable) == (free.p_correct, free.p_answerable)
    # the threshold is capped so that the gate withholds at most 5% of them: 2 of 40, the third lowest kept
    assert capped.abstain_below == math.floor(free.p_answerable.probability(checks[-1]["features"]) * 10_000) / 10_000
    bench.report(rows + checks, keep_gate=False)
    assert "# check:pydocs: 2 of 40 withheld (0 by the floor or a rule)" in capsys.readouterr().out
    # those the floor or a rule withholds count first
    floored = [dict(row, floor_abstains=True) for row in checks[:2]] + checks[2:]
    assert bench.Fit.on(rows + floored).abstain_below <= free.p_answerable.probability(checks[-3]["features"])


def test_the_threshold_is_chosen_on_what_the_gate_decides() -> None:
    """An answer quoting every asked identifier from the keyword search's first chunk passes the
    gate whatever p_answerable (confidence.quotes_what_was_asked): it neither uses up the
    false-abstention budget nor counts as withheld."""
    bench = load_bench("calibrate_answers")
    quoting = ConfidenceFeatures(*([0.0] * len(FEATURE_NAMES)))
    quoting = replace(quoting, asks_identifier=1.0, identifiers_in_answer=1.0, keyword_rank=1.0)
    row = {"set": "beta", "features": list(quoting.vector()), "answerable": True, "correct": True, "floor_abstains": False}
    fit = bench.Fit(bench.P_CORRECT, bench.P_ANSWERABLE, 0.99)
    assert bench.P_ANSWERABLE.probability(row["features"]) < 0.99
    assert fit.kept(row) and fit.score([row])[1] == 0.0


def test_write_pastes_the_constants_over_the_fitted_block(tmp_path) -> None:
    bench = load_bench("calibrate_answers")
    target = tmp_path / "confidence.py"
    target.write_text(bench.CONFIDENCE.read_text(encoding="utf-8"), encoding="utf-8")
    fit = bench.Fit(LogisticModel(-1.5, (0.25,) * len(FEATURE_NAMES)), LogisticModel(2.0, (-0.5,) * len(FEATURE_NAMES)), 0.42)
    bench.write(fit, _rows() + [_row("check:pydocs", True, False, 0.5)], target)
    text = target.read_text(encoding="utf-8")
    assert re.search(r"^# Fitted on \d{4}-\d\d-\d\d \(code at [\w-]+\) on 72 dev questions of alpha, beta, examples\.$",
                     text, re.MULTILINE)
    assert f"P_CORRECT = LogisticModel(-1.5, {(0.25,) * len(FEATURE_NAMES)})\n" in text
    assert "\nABSTAIN_BELOW = 0.42\n" in text
    assert text.count("P_ANSWERABLE = LogisticModel(") == 1 and text.count("\nABSTAIN_BELOW = ") == 1
    bench.write(fit, _rows(), target)  # a second write replaces its own block
    assert target.read_text(encoding="utf-8") == text


def test_a_row_records_an_answer_withheld_by_a_rule_as_well_as_by_the_floor(example_kb) -> None:
    """The threshold is chosen on what the gate adds: an answer a rule withholds (evidence.unknown_name:
    "Heroku", which no document names) is withheld whatever the threshold, as one below the
    extractive floor is; the raw answer is still measured, and the knowledge base's settings stay."""
    bench = load_bench("calibrate_answers")
    settings = (example_kb.settings.answer_min_score, example_kb.settings.answer_min_answerable)
    rows = bench.measure(example_kb, [
        ("k8s", "How do I deploy Beacon on Heroku?", ()),
        ("q01", "How many days of paid holiday does a full-time Northwind Labs employee get each year?", ("27 days",)),
        ("py", "How many days of paid holiday does a full-time Northwind Labs employee get each year?", None),
    ], "examples")
    assert (example_kb.settings.answer_min_score, example_kb.settings.answer_min_answerable) == settings
    k8s, q01, unlabelled = rows
    assert k8s["floor_abstains"] and not k8s["answerable"] and k8s["raw"]["cited"]
    assert q01["correct"] and q01["answerable"] and not q01["floor_abstains"]
    assert unlabelled["answerable"] and not unlabelled["correct"]  # a --check query: answerable, no gold string
    assert len(q01["features"]) == len(FEATURE_NAMES) and q01["raw"]["chunks"] > 0
    assert {"id", "text", "vector", "keyword_rank"} <= set(q01["raw"]["hits"][0])


def test_a_missing_knowledge_base_is_built_from_its_sets_corpus(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = load_bench("calibrate_answers")
    ran: list[list[str]] = []
    added: list[tuple[str, str]] = []

    class Opened:
        def __init__(self, path) -> None:
            self.path = path

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            return None

        def add(self, source: str) -> None:
            added.append((str(self.path), source))

    monkeypatch.setattr(bench.subprocess, "run", lambda args, check: ran.append(args))
    monkeypatch.setattr(bench.KnowledgeBase, "open", Opened)
    assert bench.built(tmp_path / "kbs", "dvipdfmx") == tmp_path / "kbs" / "dvipdfmx.db"
    assert (tmp_path / "kbs").is_dir()
    assert ran == [[bench.sys.executable, str(bench.ROOT / "eval" / "dvipdfmx" / "build.py")]]
    assert added == [(str(tmp_path / "kbs" / "dvipdfmx.db"), str(bench.ROOT / "eval" / "dvipdfmx" / "corpus"))]
    (tmp_path / "gitdoc.db").write_bytes(b"")
    assert bench.built(tmp_path, "gitdoc") == tmp_path / "gitdoc.db" and len(ran) == 1  # there: not built again
