"""Refit the answer-confidence calibration (answering/confidence.py) and print its constants.

The whole refit is one command (knowledge bases it does not find in --kb-dir are built first,
from the sets' corpora: about 15 min for the first five on the loaded 2-core machine; asking the
questions of all seven over built ones takes about 10 min):

    python bench/calibrate_answers.py --kb-dir /tmp/calib --check eval/pydocs/queries.jsonl=/tmp/pydocs.db \\
        --dump /tmp/calibration.jsonl --leave-one-set-out --write

`--kb-dir DIR` reads the dev split of the seven answers sets (gitdoc, microtype, valgrind, sqlite,
dvipdfmx, zsh, vrbtabs) over DIR/NAME.db, building a missing one as the sets' READMEs do
(`python eval/NAME/build.py` then `sourcebook --db DIR/NAME.db add eval/NAME/corpus`);
`--set QA.jsonl=KB.db` adds any other set. `--write` pastes the constants into
answering/confidence.py; `--check QUERIES.jsonl=KB.db` asks queries that all have an answer
(eval/pydocs, whose knowledge base `sourcebook eval retrieval eval/pydocs --db KB.db --modes
keyword` builds): never fitted on, they cap the gate's threshold so that it withholds at most 5%
of them (`check_cap`: 3 of the 60 pydocs queries, the limit that corpus of another kind sets), and
the report says how many it withholds.
`--dump` keeps the rows (features, labels and the raw material they were measured on), to refit
with `--from-dump`; `--leave-one-out` also prints what each question gets from fits without it;
`--leave-one-set-out` scores each set by a fit on the others, and all of them pooled that way:
the honest figure for a manual the fit has not seen, which decides whether a feature is kept.

Data: the dev split of every set, plus examples/questions.jsonl over examples/docs (a
temporary knowledge base, seconds). Test splits are never read. Each question is asked
with both abstention gates off (answer_min_score -1, answer_min_answerable 0), so every
question yields the answer the extractive answerer would give; its features are measured
on that answer (answer_features) and labelled: correct (a gold answer in it) and
answerable (the record has gold answers). Whether the answer is withheld whatever the fitted
gate says (the extractive floor, the default answer_min_score, or a rule on unknown settings,
names or words, evidence.py) is recorded too, since it counts against the false-abstention
budget when the threshold is chosen, as does the gate's exemption for an answer that quotes
what was asked (confidence.quotes_what_was_asked).

Prints `P_CORRECT`, `P_ANSWERABLE` and `ABSTAIN_BELOW` ready to paste into
answering/confidence.py, and what they do on the data they were fitted on.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from dataclasses import dataclass
from typing import Any

from sourcebook import KnowledgeBase
from sourcebook.answering.confidence import (
    ABSTAIN_BELOW, FEATURE_NAMES, P_ANSWERABLE, P_CORRECT, ConfidenceFeatures, LogisticModel, quotes_what_was_asked,
)
from sourcebook.answering.lexical import chunk_text
from sourcebook.evaluation.answers import contains_answer, read_qa, reliability_table
from sourcebook.evaluation.calibration import choose_threshold, fit_logistic, leave_one_out
from sourcebook.models import Answer
from sourcebook.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "questions.jsonl"
CONFIDENCE = ROOT / "src" / "sourcebook" / "answering" / "confidence.py"
SETS = ("gitdoc", "microtype", "valgrind", "sqlite", "dvipdfmx", "zsh", "vrbtabs")
CHECK = "check"
"""The `set` label prefix of rows from --check: measured, never fitted on."""
L2 = 3.0
"""The penalty (standardised units): 1 and 3 score alike left one set out (README): on knowledge bases
built at fp32 with pair windows (the default) 3 catches more unanswerable questions under the pydocs
cap (0.918 against 0.898), at int8 with separate windows 1 did (0.939 against 0.898)."""
MAX_FALSE_ABSTENTION = 0.05
# Below any probability the fitted models give (their score is clipped at -60): the gate's own
# threshold is then never the reason to abstain, so an abstention is the floor's or a rule's.
RULES_ONLY = 1e-30


def _raw(answer: Answer) -> dict[str, Any]:
    """What the features were measured on, for trying candidate features on a dump without asking again."""
    return {
        "answer": answer.answer, "cited": [c.chunk_id for c in answer.citations],
        "hits": [{"id": h.chunk.id, "text": chunk_text(h), "vector": h.vector_score, "keyword_rank": h.keyword_rank}
                 for h in answer.hits],
    }


def measure(kb: KnowledgeBase, questions: list[tuple[str, str, tuple[str, ...] | None]], label: str) -> list[dict[str, Any]]:
    """One row per (id, question, gold answers; None: answerable, no gold string) of `questions`:
    features, labels, and whether the answer is withheld whatever the fitted gate says. `kb`'s
    settings are as they were after each question."""
    floor = Settings().answer_min_score
    settings = kb.settings
    before = settings.answer_min_score, settings.answer_min_answerable
    rows = []
    for qid, question, answers in questions:
        settings.answer_min_score, settings.answer_min_answerable = -1.0, 0.0
        raw = kb.ask(question)
        settings.answer_min_score, settings.answer_min_answerable = floor, RULES_ONLY
        withheld = kb.ask(question)
        settings.answer_min_score, settings.answer_min_answerable = before
        stats = kb._store.term_statistics(question)  # noqa: SLF001 (the raw material only)
        features = kb.answerer().confidence_features(question, raw, kb.embedder.embed_query(question))
        rows.append({
            "set": label, "id": qid, "question": question, "features": list(features.vector()),
            "correct": bool(answers) and not raw.abstained and contains_answer(raw.answer, answers or ()),
            "answerable": answers is None or bool(answers), "floor_abstains": withheld.abstained,
            "raw": {**_raw(raw), "chunks": stats.chunks, "frequencies": stats.frequencies},
        })
        print(f"{label} {qid} correct={rows[-1]['correct']} withheld={withheld.abstained}", file=sys.stderr)
    return rows


def _open(path: Path) -> KnowledgeBase:
    return KnowledgeBase.open(path, answer_min_answerable=0.0)


def _dev(qa: Path) -> list[tuple[str, str, tuple[str, ...] | None]]:
    return [(item.id, item.question, item.answers) for item in read_qa(qa, "dev")]


def built(kb_dir: Path, name: str) -> Path:
    """kb_dir/name.db, built from eval/name's corpus first if it is not there."""
    db = kb_dir / f"{name}.db"
    if not db.exists():
        kb_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(ROOT / "eval" / name / "build.py")], check=True)
        with KnowledgeBase.open(db) as kb:
            kb.add(str(ROOT / "eval" / name / "corpus"))
    return db


def collect(sets: list[str], checks: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for spec in sets:
        qa, _, db = spec.partition("=")
        with _open(Path(db)) as kb:
            rows += measure(kb, _dev(Path(qa)), Path(qa).parent.name)
    with tempfile.TemporaryDirectory() as folder, _open(Path(folder) / "kb.db") as kb:
        kb.add(str(ROOT / "examples" / "docs"))
        rows += measure(kb, _dev(EXAMPLES), "examples")
    for spec in checks:
        queries, _, db = spec.partition("=")
        records = [json.loads(line) for line in Path(queries).read_text(encoding="utf-8").splitlines() if line.strip()]
        with _open(Path(db)) as kb:
            rows += measure(kb, [(r["_id"], r["text"], None) for r in records], f"{CHECK}:{Path(queries).parent.name}")
    return rows


def _constant(name: str, model: LogisticModel) -> str:
    return f"{name} = LogisticModel({model.intercept}, {model.weights})"


def _fitted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a fit learns from: not the --check rows, which have no gold answers to label them."""
    return [row for row in rows if not row["set"].startswith(CHECK)]


def _gate_score(model: LogisticModel, row: dict[str, Any]) -> float:
    """The gate's p_answerable for `row`, 1 for an answer the gate lets through whatever its
    probability (`quotes_what_was_asked`), so that the threshold is chosen on what the gate decides."""
    if quotes_what_was_asked(ConfidenceFeatures(*row["features"])):
        return 1.0
    return model.probability(row["features"])


def check_cap(p_answerable: LogisticModel, checks: list[dict[str, Any]]) -> float:
    """The highest threshold at which the gate withholds at most MAX_FALSE_ABSTENTION of the --check
    queries (all answerable; those the floor or a rule withholds count first), 1 with none: the
    false-abstention budget of the dev questions, applied to a corpus of another kind. A gate
    fitted on manuals' questions reads the pydocs queries, written in a user's words rather than
    the manuals', as less answerable: uncapped refits withheld 4-11 of the 60 (README)."""
    if not checks:
        return 1.0
    allowed = int(MAX_FALSE_ABSTENTION * len(checks)) - sum(row["floor_abstains"] for row in checks)
    scores = sorted(_gate_score(p_answerable, row) for row in checks if not row["floor_abstains"])
    if allowed >= len(scores):
        return 1.0
    return math.floor(scores[max(allowed, 0)] * 10_000) / 10_000


@dataclass(frozen=True)
class Fit:
    """The two models and the threshold chosen on one set of rows."""

    p_correct: LogisticModel
    p_answerable: LogisticModel
    abstain_below: float

    @classmethod
    def on(cls, rows: list[dict[str, Any]], keep_gate: bool = False) -> Fit:
        """Both models and the threshold fitted on `rows`; with `keep_gate` only p_correct, the
        abstention gate (P_ANSWERABLE, ABSTAIN_BELOW) kept as answering/confidence.py has it. The
        --check rows among `rows` are not fitted on; they cap the threshold (`check_cap`)."""
        checks = [row for row in rows if row["set"].startswith(CHECK)]
        rows = _fitted(rows)
        features = [row["features"] for row in rows]
        p_correct = fit_logistic(features, [row["correct"] for row in rows], L2)
        if keep_gate:
            return cls(p_correct, P_ANSWERABLE, ABSTAIN_BELOW)
        p_answerable = fit_logistic(features, [row["answerable"] for row in rows], L2)
        threshold = choose_threshold(
            [_gate_score(p_answerable, row) for row in rows], [row["answerable"] for row in rows],
            MAX_FALSE_ABSTENTION, [row["floor_abstains"] for row in rows],
        )
        return cls(p_correct, p_answerable, min(threshold.value, check_cap(p_answerable, checks)))

    def kept(self, row: dict[str, Any]) -> bool:
        """Whether `row`'s answer is given: not withheld by the floor or a rule, nor by the gate."""
        return not row["floor_abstains"] and _gate_score(self.p_answerable, row) >= self.abstain_below

    def outcomes(self, rows: list[dict[str, Any]]) -> list[tuple[float, bool, bool, bool]]:
        """Per row: confidence, right (answered and correct), answerable, withheld."""
        return [(self.p_correct.probability(row["features"]), row["correct"] and self.kept(row), row["answerable"],
                 not self.kept(row)) for row in rows]

    def score(self, rows: list[dict[str, Any]]) -> tuple[float, float, float]:
        """Abstention on unanswerable, false abstention and ECE on `rows`, as `eval answers` counts
        them: an answer withheld by the floor, a rule or the threshold is not a right one."""
        return figures(self.outcomes(rows))


def figures(outcomes: list[tuple[float, bool, bool, bool]]) -> tuple[float, float, float]:
    """Abstention on unanswerable, false abstention and ECE of `Fit.outcomes` rows."""
    _, ece = reliability_table([o[0] for o in outcomes], [o[1] for o in outcomes])
    return (_share([o[3] for o in outcomes if not o[2]]), _share([o[3] for o in outcomes if o[2]]), ece or 0.0)


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _figures(name: str, figures: tuple[float, float, float]) -> str:
    return f"{name}: abstention on unanswerable {figures[0]:.3f}, false abstention {figures[1]:.3f}, ECE {figures[2]:.3f}"


def report(rows: list[dict[str, Any]], keep_gate: bool) -> Fit:
    fit = Fit.on(rows, keep_gate)
    fitted = _fitted(rows)
    print(f"# fitted on {len(fitted)} dev questions ({sum(r['answerable'] for r in fitted)} answerable, "
          f"{sum(r['correct'] for r in fitted)} answered right); features {', '.join(FEATURE_NAMES)}")
    print(_constant("P_CORRECT", fit.p_correct))
    print(_constant("P_ANSWERABLE", fit.p_answerable))
    print(f"ABSTAIN_BELOW = {fit.abstain_below}")
    print("# " + _figures("dev, in sample", fit.score(fitted)))
    for check in sorted({row["set"] for row in rows} - {row["set"] for row in fitted}):
        inside = [row for row in rows if row["set"] == check]
        print(f"# {check}: {sum(not fit.kept(row) for row in inside)} of {len(inside)} withheld "
              f"({sum(row['floor_abstains'] for row in inside)} by the floor or a rule)")
    return fit


def report_held_out_sets(rows: list[dict[str, Any]], keep_gate: bool) -> None:
    """Each question set (not examples/questions.jsonl, always fitted on) scored by a fit on the
    others and by the constants in answering/confidence.py, then all of them pooled so: whether
    a fit carries to a manual it has not seen, which leave-one-out over questions of the same
    manuals does not show. With each, the AUC of p_answerable (`_auc_of`)."""
    current = Fit(P_CORRECT, P_ANSWERABLE, ABSTAIN_BELOW)
    fitted = _fitted(rows)
    pooled: list[tuple[float, bool, bool, bool]] = []
    pooled_current: list[tuple[float, bool, bool, bool]] = []
    ranked: list[tuple[float, bool]] = []
    for held in sorted({row["set"] for row in fitted} - {"examples"}):
        inside = [row for row in fitted if row["set"] == held]
        refit = Fit.on([row for row in rows if row["set"] != held], keep_gate)
        pooled += refit.outcomes(inside)
        pooled_current += current.outcomes(inside)
        scored = [(refit.p_answerable.probability(row["features"]), row["answerable"]) for row in inside]
        ranked += scored
        print(f"# held-out set {held} ({len(inside)}): " + _figures("refit without it", refit.score(inside))
              + f", AUC answerable {_auc_of(scored)}; " + _figures("current constants", current.score(inside)))
    print(f"# held-out sets pooled ({len(pooled)}): " + _figures("refit without each", figures(pooled))
          + f", AUC answerable {_auc_of(ranked)}; " + _figures("current constants", figures(pooled_current)))


def _auc_of(scored: list[tuple[float, bool]]) -> str:
    """The AUC of (p_answerable, answerable) pairs from fits that did not see them, "n/a" without both labels.

    It tells the two ways a gate fails on an unseen manual apart: a high AUC with many misses
    means its scores are separable but sit on the wrong side of the threshold (a level the other
    manuals set); a low one means the features do not tell its answerable questions from the others."""
    labels = [label for _, label in scored]
    if all(labels) or not any(labels):
        return "n/a"
    return f"{auc([score for score, _ in scored], labels):.3f}"


def auc(scores: list[float], labels: list[bool]) -> float:
    """The chance a random positive scores above a random negative (ties count half)."""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def report_held_out(rows: list[dict[str, Any]]) -> None:
    """The same fit and threshold choice, each question predicted by a fit without it: the
    honest expectation for unseen questions (the in-sample figures above flatter more features)."""
    rows = _fitted(rows)
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


def write(fit: Fit, rows: list[dict[str, Any]], path: Path = CONFIDENCE) -> None:
    """Paste `fit`'s constants into answering/confidence.py (`path`), with what they were fitted on."""
    fitted = _fitted(rows)
    sets = sorted({row["set"] for row in fitted})
    text = path.read_text(encoding="utf-8")
    block = re.compile(r"^# Fitted on .*?^ABSTAIN_BELOW = [\d.]+$", re.MULTILINE | re.DOTALL)
    if len(block.findall(text)) != 1:
        raise SystemExit(f"{path}: no single '# Fitted on ... ABSTAIN_BELOW = ...' block to replace")
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    new = (f"# Fitted on {datetime.date.today()} (code at {commit or 'an unknown commit'}) on {len(fitted)} dev questions "
           f"of {', '.join(sets)}.\n"
           f"{_constant('P_CORRECT', fit.p_correct)}\n{_constant('P_ANSWERABLE', fit.p_answerable)}\n"
           f"ABSTAIN_BELOW = {fit.abstain_below}")
    path.write_text(block.sub(lambda _: new, text), encoding="utf-8")
    print(f"# written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb-dir", type=Path, help=f"ask the dev splits of {', '.join(SETS)} over DIR/NAME.db "
                        "(built from eval/NAME/corpus when missing)")
    parser.add_argument("--set", action="append", default=[], metavar="QA.jsonl=KB.db",
                        help="a question set and the knowledge base built from its corpus (repeatable)")
    parser.add_argument("--check", action="append", default=[], metavar="QUERIES.jsonl=KB.db",
                        help="queries that all have an answer, never fitted on: they cap the gate's threshold (check_cap)")
    parser.add_argument("--dump", type=Path, help="write the measured rows here (JSONL)")
    parser.add_argument("--from-dump", type=Path, help="refit from rows written by --dump instead of asking")
    parser.add_argument("--leave-one-out", action="store_true",
                        help="also print what each question gets from a fit without it (refits once per question)")
    parser.add_argument("--leave-one-set-out", action="store_true",
                        help="also score each question set by a fit on the others, and by the current constants")
    parser.add_argument("--keep-gate", action="store_true",
                        help="refit only P_CORRECT (confidence); keep the abstention gate's model and threshold")
    parser.add_argument("--write", action="store_true", help="paste the fitted constants into answering/confidence.py")
    args = parser.parse_args()
    if args.from_dump:
        rows = [json.loads(line) for line in args.from_dump.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        sets = [f"{ROOT / 'eval' / name / 'questions.jsonl'}={built(args.kb_dir, name)}" for name in SETS] if args.kb_dir else []
        rows = collect(sets + args.set, args.check)
    if args.dump:
        args.dump.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    if args.leave_one_set_out:
        report_held_out_sets(rows, args.keep_gate)
    fit = report(rows, args.keep_gate)
    if args.leave_one_out:
        report_held_out(rows)
    if args.write:
        write(fit, rows)


if __name__ == "__main__":
    main()
