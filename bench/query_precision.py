"""What a query's embedding costs at each query precision, for int8 documents.

`embedding_query_precision` "fp32" (the default) embeds queries with the fp32 graph, "int8" with
the documents' int8 graph. This times both on the same SciFact queries, one query at a time as a
search embeds it, in one process with the two alternating (median of `--rounds`), and prints
CPU and wall milliseconds per query and their ratios.

    python bench/query_precision.py [--queries 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from sourcebook.embedders.local import LocalEmbedder

SCIFACT = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()[: args.queries]
    queries = [json.loads(line)["text"] for line in lines]
    embedders = {precision: LocalEmbedder(precision="int8", query_precision=precision) for precision in ("int8", "fp32")}
    for embedder in embedders.values():
        embedder.embed_query("warm up")
    per_query: dict[str, list[tuple[float, float]]] = {precision: [] for precision in embedders}
    for _ in range(args.rounds):
        for precision, embedder in embedders.items():
            cpu, wall = time.process_time(), time.perf_counter()
            for query in queries:
                embedder.embed_query(query)
            per_query[precision].append(((time.process_time() - cpu) * 1000 / len(queries),
                                         (time.perf_counter() - wall) * 1000 / len(queries)))
    for precision, runs in per_query.items():
        print(f"{precision} queries: CPU {statistics.median(r[0] for r in runs):.2f} ms, "
              f"wall {statistics.median(r[1] for r in runs):.2f} ms a query")
    for index, unit in ((0, "CPU"), (1, "wall")):
        ratio = statistics.median(a[index] / b[index] for a, b in zip(per_query["fp32"], per_query["int8"]))
        print(f"fp32 / int8 {unit}: {ratio:.2f}x")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
