"""What the reranking stage costs a hybrid search, as ratios measured side by side in one process.

Three variants over the same queries, interleaved per round so machine load hits them alike:
the named-entry lookup turned off (the baseline), the default (lookup on, linear reranker off),
and `rerank=True`. Each round times all queries per variant; the script prints the median over
the rounds of each variant's time divided by the baseline's. Query embedding is included, as a
user's search pays it.

    PYTHONPATH=src python bench/rerank_speed.py /work/shared/eval/scifact sf.db --queries 100 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import sourcebook.retrieval as retrieval
from sourcebook import KnowledgeBase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("db")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    lines = (args.dataset / "queries.jsonl").read_text().splitlines()
    queries = [json.loads(line)["text"] for line in lines if line.strip()][: args.queries]
    identifiers = retrieval.identifiers
    with KnowledgeBase.open(args.db) as kb:

        def timed(variant: str) -> float:
            retrieval.identifiers = identifiers if variant != "baseline" else (lambda query: [])
            start = time.perf_counter()
            for query in queries:
                kb.search(query, rerank=variant == "rerank")
            return time.perf_counter() - start

        timed("baseline")  # warm-up: model load, page cache
        ratios: dict[str, list[float]] = {"lookup": [], "rerank": []}
        for _ in range(args.rounds):
            base = timed("baseline")
            for variant in ratios:
                ratios[variant].append(timed(variant) / base)
    retrieval.identifiers = identifiers
    named = sum(bool(identifiers(query)) for query in queries)
    print(f"{len(queries)} queries ({named} name an identifier), {args.rounds} rounds")
    print({variant: round(statistics.median(values), 3) for variant, values in ratios.items()})


if __name__ == "__main__":
    main()
