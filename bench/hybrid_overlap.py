"""Side by side: a hybrid search's keyword and vector retrievals one after the other, or overlapped.

The retriever runs the keyword search in a shared worker while it embeds the query and runs the
vector search when the store declares `concurrent_searches` (retrieval.py, overlap.py). This
measures both paths in one process on bench/scale.py's cached corpus, flipping the attribute on
the one open store: every query is searched by both paths back to back, the path that goes first
alternating from query to query, in rounds; each round gives each path's p50 and p95 over the
queries, and the figures are the medians over rounds (the machine is shared: a slow stretch
hits both paths alike). Two cases: the query vector given (scale.py's figure: the model's time
excluded) and text in, hits out (the query embedded by the model in this process, the query
cache off, as a product search without a cache pays it). Every pair of searches must return the
same hits, or the run stops.

    python bench/hybrid_overlap.py --store postgres --chunks 100000 [--rounds 5] [--queries 200]

The corpus must have been built by `python bench/scale.py --chunks N [--store postgres]`.
Prints one JSON object; load averages are sampled after every round.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from scale import CORPUS, query_vectors
from latency_100k import cached_database, corpus_params
from scale_postgres import cached_server

from sourcebook import KnowledgeBase, Settings
from sourcebook.models import Hit
from sourcebook.retrieval import Retriever, SearchOptions
from sourcebook.stores import open_store

PATHS = ("sequential", "overlapped")


def timed(call: Callable[[], list[Hit]]) -> tuple[float, float, list[Hit]]:
    """(wall ms, this process's CPU ms, the hits) of one search."""
    wall, cpu = time.perf_counter(), time.process_time()
    hits = call()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, hits


def one_round(store: Any, searches: list[Callable[[], list[Hit]]]) -> dict[str, dict[str, float]]:
    """Each search by both paths back to back (the first path alternating): p50 and p95 wall
    and p50 CPU per path, and the median of the paired ratios overlapped / sequential."""
    wall: dict[str, list[float]] = {path: [] for path in PATHS}
    cpu: dict[str, list[float]] = {path: [] for path in PATHS}
    for i, search in enumerate(searches):
        hits: dict[str, list[Hit]] = {}
        for path in PATHS if i % 2 == 0 else reversed(PATHS):
            store.concurrent_searches = path == "overlapped"
            wall_ms, cpu_ms, hits[path] = timed(search)
            wall[path].append(wall_ms)
            cpu[path].append(cpu_ms)
        if hits["sequential"] != hits["overlapped"]:
            raise AssertionError(f"search {i}: the paths returned different hits")
    result = {path: {"p50_ms": float(np.percentile(wall[path], 50)), "p95_ms": float(np.percentile(wall[path], 95)),
                     "cpu_p50_ms": float(np.percentile(cpu[path], 50))} for path in PATHS}
    result["paired"] = {"ratio_p50": float(np.median(np.array(wall["overlapped"]) / np.array(wall["sequential"])))}
    return result


def parts(calls: dict[str, list[Callable[[], object]]]) -> dict[str, dict[str, float]]:
    """p50 wall of each part alone (keyword search, vector search, the query's embedding): what
    the sequential path sums and the overlapped path takes the longer of."""
    result = {}
    for name, searches in calls.items():
        wall = []
        for search in searches:
            start = time.perf_counter()
            search()
            wall.append((time.perf_counter() - start) * 1000)
        result[name] = {"p50_ms": float(np.percentile(wall, 50))}
    return result


def medians(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {group: {key: round(float(np.median([r[group][key] for r in rounds])), 2) for key in rounds[0][group]}
            for group in rounds[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="postgres")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    probe = KnowledgeBase.open(":memory:")
    server = None
    if args.store == "postgres":
        server, db, _ = cached_server(probe, corpus_params(probe, args.chunks, *CORPUS), False, print)
    else:
        path, _, _ = cached_database(probe, args.chunks, *CORPUS, False)
        db = str(path)
    queries, vectors_file = query_vectors(probe, args.queries)
    vectors = np.load(vectors_file)
    store = open_store(db)
    try:
        retriever = Retriever(store, lambda: probe.embedder)
        options = SearchOptions.from_settings(Settings(db=db), mode="hybrid", top_k=10, per_document=1)
        cases: dict[str, list[Callable[[], list[Hit]]]] = {
            "vector given": [lambda q=q, v=v: retriever.search(q, options, v) for q, v in zip(queries, vectors)],
            "text in": [lambda q=q: retriever.search(q, options) for q in queries],
        }
        alone = {mode: SearchOptions.from_settings(Settings(db=db), mode=mode, top_k=10, per_document=1)
                 for mode in ("keyword", "vector")}
        embedder = probe.embedder
        each: dict[str, list[Callable[[], object]]] = {
            "keyword": [lambda q=q: retriever.search(q, alone["keyword"]) for q in queries],
            "vector given": [lambda q=q, v=v: retriever.search(q, alone["vector"], v) for q, v in zip(queries, vectors)],
            "embed": [lambda q=q: embedder.embed_query(q) for q in queries],
        }
        for searches in cases.values():  # warm-up: caches, the model, the pool's threads
            one_round(store, searches[:20])
        report: dict[str, Any] = {"store": args.store, "chunks": args.chunks, "queries": len(queries),
                                  "rounds": args.rounds, "load_start": [round(x, 2) for x in os.getloadavg()]}
        loads = []
        per_case: dict[str, list[dict[str, dict[str, float]]]] = {case: [] for case in cases}
        alone_rounds = []
        for _ in range(args.rounds):
            for case, searches in cases.items():
                per_case[case].append(one_round(store, searches))
            alone_rounds.append(parts(each))
            loads.append(os.getloadavg()[0])
        report["cases"] = {case: medians(rounds) for case, rounds in per_case.items()}
        report["alone"] = medians(alone_rounds)
        report["load_1min_per_round"] = [round(x, 2) for x in loads]
        print(json.dumps(report, indent=2))
    finally:
        store.close()
        probe.close()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
