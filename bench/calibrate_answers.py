"""Refit the answer-confidence calibration (answering/confidence.py) and print its constants.

    python eval/gitdoc/build.py && python eval/microtype/build.py && python eval/valgrind/build.py
    sourcebook --db /tmp/gitdoc.db add eval/gitdoc/corpus
    sourcebook --db /tmp/microtype.db add eval/microtype/corpus
    sourcebook --db /tmp/valgrind.db add eval/valgrind/corpus
    python bench/calibrate_answers.py \\
        --set eval/gitdoc/questions.jsonl=/tmp/gitdoc.db \\
        --set eval/microtype/questions.jsonl=/tmp/microtype.db \\
        --set eval/valgrind/questions.jsonl=/tmp/valgrind.db \\
        --dump /tmp/calibration.jsonl --leave-one-out --leave-one-set-out

`--dump` keeps the features per question, to refit with `--from-dump`; `--leave-one-out` also
prints what each question gets from fits without it (the honest figure for a new feature);
`--leave-one-set-out` scores each set by a fit on the others (does a fit carry to a new manual?).

Data: the dev split of every --set, plus examples/questions.jsonl over examples/docs (a
temporary knowledge base, seconds). Test splits are never read. Each question is asked
with both abstention gates off (answer_min_score -1, answer_min_answerable 0), so every
question yields the answer the extractive answerer would give; its features are measured
on that answer (answer_features) and labelled: correct (a gold answer in it) and
answerable (the record has gold answers). Whether the extractive floor (the default
answer_min_score) would have abstained anyway is recorded too, since it counts against
the false-abstention budget when the threshold is chosen.

Prints `P_CORRECT`, `P_ANSWERABLE` and `ABSTAIN_BELOW` ready to paste into
answering/confidence.py, and what they do on the data they were fitted on.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from dataclasses import dataclass
from typing import Any

from sourcebook import KnowledgeBase
from sourcebook.answering.confidence import ABSTAIN_BELOW, FEATURE_NAMES, P_ANSWERABLE, P_CORRECT, LogisticModel
from sourcebook.evaluation.answers import contains_answer, read_qa, reliability_table
from sourcebook.evaluation.calibration import choose_threshold, fit_logistic, leave_one_out
from sourcebook.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "questions.jsonl"
L2 = 3.0
MAX_FALSE_ABSTENTION = 0.05


def measure(kb: KnowledgeBase, qa_path: Path, label: str) -> list[dict[str, Any]]:
    """One row per dev question: features, labels, and whether the extractive floor abstains."""
    floor = Settings().answer_min_score
    rows = []
    for item in read_qa(qa_path, "dev"):
        kb.settings.answer_min_score = -1.0
        raw = kb.ask(item.question)
        kb.settings.answer_min_score = floor
        floored = kb.ask(item.question)
        features = kb.answerer().confidence_features(item.question, raw, kb.embedder.embed_query(item.question))
        rows.append({
            "set": label, "id": item.id, "question": item.question, "features": list(features.vector()),
            "correct": item.answerable and not raw.abstained and contains_answer(raw.answer, item.answers),
            "answerable": item.answerable, "floor_abstains": floored.abstained,
        })
        print(f"{label} {item.id} correct={rows[-1]['correct']}", file=sys.stderr)
    return rows


def _open(path: Path) -> KnowledgeBase:
    return KnowledgeBase.open(path, answer_min_answerable=0.0)


def collect(sets: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for spec in sets:
        qa, _, db = spec.partition("=")
        with _open(Path(db)) as kb:
            rows += measure(kb, Path(qa), Path(qa).parent.name)
    with tempfile.TemporaryDirectory() as folder, _open(Path(folder) / "kb.db") as kb:
        kb.add(str(ROOT / "examples" / "docs"))
        rows += measure(kb, EXAMPLES, "examples")
    return rows


def _constant(name: str, model: LogisticModel) -> str:
    return f"{name} = LogisticModel({model.intercept}, {model.weights})"


@dataclass(frozen=True)
class Fit:
    """The two models and the threshold chosen on one set of rows."""

    p_correct: LogisticModel
    p_answerable: LogisticModel
    abstain_below: float

    @classmethod
    def on(cls, rows: list[dict[str, Any]], keep_gate: bool = False) -> Fit:
        """Both models and the threshold fitted on `rows`; with `keep_gate` only p_correct, the
        abstention gate (P_ANSWERABLE, ABSTAIN_BELOW) kept as answering/confidence.py has it."""
        features = [row["features"] for row in rows]
        p_correct = fit_logistic(features, [row["correct"] for row in rows], L2)
        if keep_gate:
            return cls(p_correct, P_ANSWERABLE, ABSTAIN_BELOW)
        p_answerable = fit_logistic(features, [row["answerable"] for row in rows], L2)
        threshold = choose_threshold(
            [p_answerable.probability(f) for f in features], [row["answerable"] for row in rows],
            MAX_FALSE_ABSTENTION, [row["floor_abstains"] for row in rows],
        )
        return cls(p_correct, p_answerable, threshold.value)

    def score(self, rows: list[dict[str, Any]]) -> tuple[float, float, float]:
        """Abstention on unanswerable, false abstention and ECE on `rows`, as `eval answers` counts
        them: an answer withheld by the floor or the threshold is not a right one."""
        kept = [not row["floor_abstains"] and self.p_answerable.probability(row["features"]) >= self.abstain_below
                for row in rows]
        answerable = [row["answerable"] for row in rows]
        _, ece = reliability_table([self.p_correct.probability(row["features"]) for row in rows],
                                   [row["correct"] and k for row, k in zip(rows, kept, strict=True)])
        return (_share([not k for k, a in zip(kept, answerable, strict=True) if not a]),
                _share([not k for k, a in zip(kept, answerable, strict=True) if a]), ece or 0.0)


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _figures(name: str, figures: tuple[float, float, float]) -> str:
    return f"{name}: abstention on unanswerable {figures[0]:.3f}, false abstention {figures[1]:.3f}, ECE {figures[2]:.3f}"


def report(rows: list[dict[str, Any]], keep_gate: bool) -> None:
    fit = Fit.on(rows, keep_gate)
    print(f"# fitted on {len(rows)} dev questions ({sum(r['answerable'] for r in rows)} answerable, "
          f"{sum(r['correct'] for r in rows)} answered right); features {', '.join(FEATURE_NAMES)}")
    print(_constant("P_CORRECT", fit.p_correct))
    print(_constant("P_ANSWERABLE", fit.p_answerable))
    print(f"ABSTAIN_BELOW = {fit.abstain_below}")
    print("# " + _figures("dev, in sample", fit.score(rows)))


def report_held_out_sets(rows: list[dict[str, Any]], keep_gate: bool) -> None:
    """Each question set (not examples/questions.jsonl, always fitted on) scored by a fit on the
    others and by the constants in answering/confidence.py: whether a fit carries to a manual it
    has not seen, which leave-one-out over questions of the same manuals does not show."""
    current = Fit(P_CORRECT, P_ANSWERABLE, ABSTAIN_BELOW)
    for held in sorted({row["set"] for row in rows} - {"examples"}):
        inside = [row for row in rows if row["set"] == held]
        refit = Fit.on([row for row in rows if row["set"] != held], keep_gate)
        print(f"# held-out set {held} ({len(inside)}): " + _figures("refit without it", refit.score(inside))
              + "; " + _figures("current constants", current.score(inside)))


def auc(scores: list[float], labels: list[bool]) -> float:
    """The chance a random positive scores above a random negative (ties count half)."""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def report_held_out(rows: list[dict[str, Any]]) -> None:
    """The same fit and threshold choice, each question predicted by a fit without it: the
    honest expectation for unseen questions (the in-sample figures above flatter more features)."""
    features = [row["features"] for row in rows]
    correct = [row["correct"] for row in rows]
    answerable = [row["answerable"] for row in rows]
    p_correct = leave_one_out(features, correct, L2)
    p_answerable = leave_one_out(features, answerable, L2)
    threshold = choose_threshold(p_answerable, answerable, MAX_FALSE_ABSTENTION, [row["floor_abstains"] for row in rows])
    kept = [not row["floor_abstains"] and p >= threshold.value for row, p in zip(rows, p_answerable, strict=True)]
    _, ece = reliability_table(p_correct, [c and k for c, k in zip(correct, kept, strict=True)])
    print(f"# leave-one-out: AUC answerable {auc(p_answerable, answerable):.3f}, AUC correct {auc(p_correct, correct):.3f}, "
          f"abstention on unanswerable {threshold.abstention_on_unanswerable:.3f}, "
          f"false abstention {threshold.false_abstention:.3f}, ECE {ece:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="QA.jsonl=KB.db",
                        help="a question set and the knowledge base built from its corpus (repeatable)")
    parser.add_argument("--dump", type=Path, help="write the measured rows here (JSONL)")
    parser.add_argument("--from-dump", type=Path, help="refit from rows written by --dump instead of asking")
    parser.add_argument("--leave-one-out", action="store_true",
                        help="also print what each question gets from a fit without it (refits once per question)")
    parser.add_argument("--leave-one-set-out", action="store_true",
                        help="also score each question set by a fit on the others, and by the current constants")
    parser.add_argument("--keep-gate", action="store_true",
                        help="refit only P_CORRECT (confidence); keep the abstention gate's model and threshold")
    args = parser.parse_args()
    if args.from_dump:
        rows = [json.loads(line) for line in args.from_dump.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        rows = collect(args.set)
    if args.dump:
        args.dump.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    report(rows, args.keep_gate)
    if args.leave_one_out:
        report_held_out(rows)
    if args.leave_one_set_out:
        report_held_out_sets(rows, args.keep_gate)


if __name__ == "__main__":
    main()
