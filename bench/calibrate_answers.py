"""Refit the answer-confidence calibration (answering/confidence.py) and print its constants.

    python eval/gitdoc/build.py && python eval/microtype/build.py
    sourcebook --db /tmp/gitdoc.db add eval/gitdoc/corpus
    sourcebook --db /tmp/microtype.db add eval/microtype/corpus
    python bench/calibrate_answers.py \\
        --set eval/gitdoc/questions.jsonl=/tmp/gitdoc.db \\
        --set eval/microtype/questions.jsonl=/tmp/microtype.db \\
        --dump /tmp/calibration.jsonl --leave-one-out

`--dump` keeps the features per question, to refit with `--from-dump`; `--leave-one-out` also
prints what each question gets from fits without it (the honest figure for a new feature).

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
from typing import Any

from sourcebook import KnowledgeBase
from sourcebook.answering.confidence import FEATURE_NAMES, Calibrated, LogisticModel
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


def report(rows: list[dict[str, Any]]) -> None:
    features = [row["features"] for row in rows]
    p_correct = fit_logistic(features, [row["correct"] for row in rows], L2)
    p_answerable = fit_logistic(features, [row["answerable"] for row in rows], L2)
    calibrated = [Calibrated(p_correct.probability(f), p_answerable.probability(f)) for f in features]
    threshold = choose_threshold(
        [c.p_answerable for c in calibrated], [row["answerable"] for row in rows], MAX_FALSE_ABSTENTION,
        [row["floor_abstains"] for row in rows],
    )
    print(f"# fitted on {len(rows)} dev questions ({sum(r['answerable'] for r in rows)} answerable, "
          f"{sum(r['correct'] for r in rows)} answered right); features {', '.join(FEATURE_NAMES)}")
    print(_constant("P_CORRECT", p_correct))
    print(_constant("P_ANSWERABLE", p_answerable))
    print(f"ABSTAIN_BELOW = {threshold.value}")
    # What the fitted calibration does on its own data (with the threshold applied).
    final_confidence = [c.p_correct for c in calibrated]
    final_correct = [
        row["correct"] and not row["floor_abstains"] and c.p_answerable >= threshold.value
        for row, c in zip(rows, calibrated, strict=True)
    ]
    _, ece = reliability_table(final_confidence, final_correct)
    print(f"# dev: abstention on unanswerable {threshold.abstention_on_unanswerable:.3f}, "
          f"false abstention {threshold.false_abstention:.3f}, ECE {ece:.3f}")


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
    args = parser.parse_args()
    if args.from_dump:
        rows = [json.loads(line) for line in args.from_dump.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        rows = collect(args.set)
    if args.dump:
        args.dump.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    report(rows)
    if args.leave_one_out:
        report_held_out(rows)


if __name__ == "__main__":
    main()
