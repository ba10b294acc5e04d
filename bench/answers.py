"""Answer quality on the example documents: the answerers.

    python bench/answers.py                          # the extractive answerer
    python bench/answers.py --llm llamacpp:smollm2   # + the local GGUF generator (slow: minutes)

Each answerer on examples/questions.jsonl (20 answerable questions with gold answers and
gold sources, 5 unanswerable): answer hit rate (a gold answer string in a non-abstained
answer), citation precision (cited documents among the gold sources), abstention
accuracy (answered when answerable, abstained when not), and a reliability table:
answered questions by confidence bin, with the share answered right. The citation checker
has its own labelled pairs: bench/citation_checker.py.

Builds a fresh knowledge base of examples/docs in a temporary folder (a few seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sourcebook import Answer, KnowledgeBase

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "examples" / "questions.jsonl"
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _right(question: dict[str, Any], answer: Answer) -> bool:
    if not question["answers"]:
        return answer.abstained
    text = answer.answer.lower()
    return not answer.abstained and any(gold.lower() in text for gold in question["answers"])


def _cited_gold(question: dict[str, Any], answer: Answer) -> tuple[int, int]:
    cited = {c.source for c in answer.citations}
    gold = sum(any(s.endswith(Path(g).name) for g in question["gold_sources"]) for s in cited)
    return gold, len(cited)


def answers_report(kb: KnowledgeBase, llm: str | None, questions: Sequence[dict[str, Any]]) -> None:
    name = llm or "extractive"
    results: list[tuple[dict[str, Any], Answer, float]] = []
    for question in questions:
        start = time.monotonic()
        answer = kb.ask(question["question"], llm=llm)
        results.append((question, answer, time.monotonic() - start))
        print(f"  {question['id']} {'ok ' if _right(question, answer) else 'BAD'} c={answer.confidence:.2f} "
              f"{answer.mode} {answer.answer[:90]!r}", file=sys.stderr)
    answerable = [(q, a) for q, a, _ in results if q["answers"]]
    hits = sum(_right(q, a) for q, a in answerable)
    gold_cited = [_cited_gold(q, a) for q, a in answerable if not a.abstained]
    abstention_right = sum((a.abstained == (not q["answers"])) for q, a, _ in results)
    checks = [a.citation_check.verdict for _, a, _ in results if a.citation_check is not None]
    print(f"## {name}: {len(results)} questions ({len(answerable)} answerable)\n")
    print(f"- answer hit rate: {hits}/{len(answerable)} = {hits / len(answerable):.2f}")
    print(f"- citation precision: {sum(g for g, _ in gold_cited)}/{sum(n for _, n in gold_cited)} cited documents are gold sources")
    print(f"- abstention accuracy: {abstention_right}/{len(results)} = {abstention_right / len(results):.2f}")
    if checks:
        print(f"- citation check verdicts: {', '.join(f'{v} {checks.count(v)}' for v in dict.fromkeys(checks))}")
    print(f"- median latency: {statistics.median(t for *_, t in results):.2f} s per question\n")
    answered = [(a.confidence, _right(q, a)) for q, a, _ in results if not a.abstained]
    print("| confidence | answered | right | share right |\n|---|---|---|---|")
    for low, high in zip(BINS, BINS[1:]):
        inside = [right for c, right in answered if low <= c < high]
        share = f"{sum(inside) / len(inside):.2f}" if inside else "-"
        print(f"| {low:.1f}-{min(high, 1.0):.1f} | {len(inside)} | {sum(inside)} | {share} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", action="append", default=[], help="also evaluate this provider:model (repeatable)")
    parser.add_argument("--min-support", type=float, default=0.5)
    args = parser.parse_args()
    questions = _read_jsonl(QUESTIONS)
    with tempfile.TemporaryDirectory() as folder, KnowledgeBase.open(
        Path(folder) / "kb.db", llm_follow_ups=False, llm_max_tokens=200, citation_min_support=args.min_support
    ) as kb:
        kb.add(str(ROOT / "examples" / "docs"))
        for llm in [None, *args.llm]:
            answers_report(kb, llm, questions)


if __name__ == "__main__":
    main()
