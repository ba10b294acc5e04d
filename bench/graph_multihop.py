"""Graph-augmented retrieval against hybrid alone on the multi-hop set (eval/multihop).

Each of the 31 questions needs passages of two documents of examples/docs linked by an
entity (a person, a service, a database...); eval/multihop/questions.jsonl names, per hop,
the source and a verbatim evidence span. In 24 the question names the bridging entity
("bridge": "named"); in 7 it only describes it ("implicit": "the database Aiko plans to
upgrade"), so finding the second passage needs the first. Figures are printed for all
questions and for each kind. The script builds a knowledge base of
examples/docs in a temporary directory (or --db), builds its graph (offline rules, or
--llm provider:model), runs every question in each configuration and prints:

- evidence recall@k: share of the hops whose evidence span is in one of the first k
  chunks (chunk ranking, any number of chunks per document), k = 3, 5, 10;
- both@k: share of questions with both hops in the first k chunks;
- context recall: the same for the answer context `ask` reads (top 5, at most 2 chunks
  per document);
- p50 latency of one search (ms).

Takes about 60 s on 2 cores (ingestion and model loading dominate; a search ~50 ms).
Usage: python bench/graph_multihop.py [--db PATH] [--llm provider:model] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from sourcebook import KnowledgeBase
from sourcebook.evaluation.metrics import mean

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "examples" / "docs"
DATASET = ROOT / "eval" / "multihop"
CONFIGS = {  # name -> search keyword arguments
    "keyword": {"mode": "keyword"},
    "vector": {"mode": "vector"},
    "hybrid": {"mode": "hybrid", "graph": False},
    "hybrid+graph": {"mode": "hybrid", "graph": True},
    "graph (RRF of 3 lists)": {"mode": "graph"},
}


def _flat(text: str) -> str:
    return " ".join(text.replace("`", "").replace("*", "").split()).lower()


def found(hits: list, evidence: list[dict[str, str]]) -> list[bool]:
    """Per hop: is its evidence span inside one of the hits from its source?"""
    return [
        any(os.path.basename(h.chunk.source) == e["source"] and _flat(e["text"]) in _flat(h.chunk.text) for h in hits)
        for e in evidence
    ]


def evaluate(kb: KnowledgeBase, questions: list[dict]) -> dict[str, dict[str, float]]:
    """Per configuration: each metric's mean over `questions`."""
    results: dict[str, dict[str, float]] = {}
    for name, kwargs in CONFIGS.items():
        rows: dict[str, list[float]] = {}
        latencies = []
        for q in questions:
            start = time.perf_counter()
            hits = kb.search(q["question"], top_k=10, per_document=0, **kwargs)
            latencies.append((time.perf_counter() - start) * 1000)
            context = kb.search(q["question"], top_k=5, per_document=2, **kwargs)
            for k in (3, 5, 10):
                hops = found(hits[:k], q["evidence"])
                rows.setdefault(f"recall@{k}", []).append(sum(hops) / len(hops))
                rows.setdefault(f"both@{k}", []).append(float(all(hops)))
            hops = found(context, q["evidence"])
            rows.setdefault("context recall", []).append(sum(hops) / len(hops))
            rows.setdefault("context both", []).append(float(all(hops)))
        results[name] = {metric: mean(values) for metric, values in rows.items()}
        results[name]["p50 ms"] = sorted(latencies)[len(latencies) // 2]
    return results


def check(kb: KnowledgeBase, questions: list[dict]) -> None:
    """Every evidence span must exist in its source's chunks, else the set is broken."""
    for q in questions:
        for e in q["evidence"]:
            document = kb.document(str(DOCS / e["source"]))
            if not any(_flat(e["text"]) in _flat(c.text) for c in kb.chunks(document.id)):
                raise SystemExit(f"{q['id']}: evidence {e['text']!r} is not in {e['source']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="knowledge base file to (re)use; default: a temporary one")
    parser.add_argument("--llm", help="extract the graph with this provider:model instead of the offline rules")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    questions = [json.loads(line) for line in (DATASET / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "multihop.db")
        overrides = {"graph_extractor": "llm", "graph_llm": args.llm} if args.llm else {"graph_extractor": "offline"}
        with KnowledgeBase.open(db, **overrides) as kb:
            kb.add(str(DOCS))
            report = kb.build_graph()
            check(kb, questions)
            results = {"all": evaluate(kb, questions)}
            for bridge in ("named", "implicit"):
                results[bridge] = evaluate(kb, [q for q in questions if q["bridge"] == bridge])
    if args.json:
        print(json.dumps({"questions": len(questions), "graph": report.to_dict(), "results": results}, indent=1))
        return
    print(f"{len(questions)} multi-hop questions; graph by {report.extractor}: {report.stats}")
    for subset, table in results.items():
        size = len(questions) if subset == "all" else sum(q["bridge"] == subset for q in questions)
        print(f"\n{subset} ({size} questions)")
        metrics = list(next(iter(table.values())))
        print(f"{'':24}" + "".join(f"{m:>15}" for m in metrics))
        for name, values in table.items():
            print(f"{name:24}" + "".join(f"{values[m]:>15.3f}" if m != "p50 ms" else f"{values[m]:>15.1f}" for m in metrics))


if __name__ == "__main__":
    sys.exit(main())
