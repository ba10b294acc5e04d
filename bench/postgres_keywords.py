"""Postgres keyword search at scale: each query term's head of impact-ordered postings against
every posting of its terms.

Why: summing every posting of the query's terms costs time in proportion to the corpus; the
store now reads each term's `HEAD` postings of highest BM25 term weight (migration
keyword_impact_order, stores/postgres/keywords.py `impact_sql`) and scores the best candidates
exactly. This measures both statements on the same database, the same queries, in one
process, interleaved query by query (so load on the shared machine falls on both alike), and
how many of the exhaustive statement's hits the heads find (recall at 10 and at the
retriever's pool of 200), per head size given by --heads.

The database is bench/scale.py's (`--store postgres`, bench/scale_postgres.py builds and
caches it through the store); a cache built before the migration is migrated here, and the
time opening took is reported. "exhaustive" is the statement before the migration
(`keywords.keyword_sql`, every posting), swapped into the store for its turns; hybrid runs
through the retriever with the query's vector (SciFact's test queries, as scale.py), so it
includes the vector search and the fusion.

    python bench/postgres_keywords.py --chunks 100000 [--queries 200] [--rounds 3] [--heads 500 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from latency_100k import corpus_params, load  # noqa: E402
from scale import CORPUS, EVERYTHING, query_vectors  # noqa: E402
from scale_postgres import cached_server  # noqa: E402

from sourcebook import KnowledgeBase, Settings  # noqa: E402
from sourcebook.evaluation.metrics import percentile  # noqa: E402
from sourcebook.models import SearchFilter  # noqa: E402
from sourcebook.retrieval import Retriever, SearchOptions  # noqa: E402
from sourcebook.stores.postgres import PostgresStore  # noqa: E402
from sourcebook.stores.postgres import keywords as pg_keywords  # noqa: E402
from sourcebook.stores.postgres.filters import filter_sql  # noqa: E402

RESULTS = HERE / "results"
POOL = 200  # the keyword hits the retriever asks for (SearchOptions.candidates)
Statement = Callable[[list[str], int, SearchFilter], tuple[str, tuple[Any, ...]]]


def exhaustive_statement(terms: list[str], k: int, filters: SearchFilter) -> tuple[str, tuple[Any, ...]]:
    """The statement before migration keyword_impact_order: every posting of the query's terms."""
    where, params = filter_sql(filters)
    return pg_keywords.keyword_sql(where), (terms, *params, k)


VARIANTS: dict[str, Statement] = {"exhaustive": exhaustive_statement, "impact": pg_keywords.keyword_statement}


def timed_ms(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return (time.perf_counter() - start) * 1000, result


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}


def ids(store: PostgresStore, query: str, k: int) -> list[str]:
    return [hit.chunk_id for hit in store.keyword_search(query, k, EVERYTHING)]


def heads_sweep(store: PostgresStore, queries: list[str], heads: list[int]) -> dict[str, Any]:
    """Per head size: recall at 10 and at `POOL` of the exhaustive statement's hits, the share of
    queries whose top 10 is the same list (and the same set: chunks of equal score may swap,
    their sums added in another order), and the store's keyword_search time (k = `POOL`),
    alternating query by query with the exhaustive statement's."""
    report: dict[str, Any] = {}
    for head in heads:
        pg_keywords.HEAD = head
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        found = {10: 0, POOL: 0}
        expected = {10: 0, POOL: 0}
        identical = same_set = 0
        for i, query in enumerate(queries):
            lists = {}
            for variant in (list(VARIANTS) if i % 2 == 0 else list(reversed(VARIANTS))):
                pg_keywords.keyword_statement = VARIANTS[variant]  # type: ignore[assignment]
                ms, lists[variant] = timed_ms(lambda: ids(store, query, POOL))
                times[variant].append(ms)
            exact, ours = lists["exhaustive"], lists["impact"]
            for at in found:
                found[at] += len(set(exact[:at]) & set(ours[:at]))
                expected[at] += len(exact[:at])
            identical += exact[:10] == ours[:10]
            same_set += set(exact[:10]) == set(ours[:10])
        report[str(head)] = {
            "recall@10": round(found[10] / max(expected[10], 1), 4),
            f"recall@{POOL}": round(found[POOL] / max(expected[POOL], 1), 4),
            "top10_identical": round(identical / len(queries), 4),
            "top10_same_set": round(same_set / len(queries), 4),  # order aside: ties sum in another order
            "ms": {variant: summary(values) for variant, values in times.items()},
        }
    pg_keywords.keyword_statement = VARIANTS["impact"]  # type: ignore[assignment]
    return report


def measure(store: PostgresStore, dsn: str, queries: list[str], vectors: np.ndarray, rounds: int) -> dict[str, Any]:
    """Per variant and mode (the retriever's keyword and hybrid search, as scale.py times them),
    p50 and p95 of each round and over all rounds (ms), and how often the two variants'
    retrievers return the same top 10."""
    settings = Settings(db=dsn)

    def no_model() -> Any:
        raise AssertionError("the bench passes query vectors; the model must not load")

    retriever = Retriever(store, no_model)
    options = {mode: SearchOptions.from_settings(settings, mode=mode, top_k=10, per_document=1)
               for mode in ("keyword", "hybrid")}
    times: dict[str, dict[str, list[list[float]]]] = {v: {mode: [] for mode in options} for v in VARIANTS}
    tops: dict[str, dict[str, list[list[str]]]] = {v: {mode: [] for mode in options} for v in VARIANTS}
    for round_ in range(rounds):
        for series in times.values():
            for values in series.values():
                values.append([])
        for i, query in enumerate(queries):
            order = list(VARIANTS) if (i + round_) % 2 == 0 else list(reversed(VARIANTS))
            for variant in order:
                pg_keywords.keyword_statement = VARIANTS[variant]  # type: ignore[assignment]
                for mode, option in options.items():
                    ms, hits = timed_ms(lambda: retriever.search(query, option, vectors[i]))
                    times[variant][mode][-1].append(ms)
                    if round_ == 0:
                        tops[variant][mode].append([hit.chunk.id for hit in hits])
    pg_keywords.keyword_statement = VARIANTS["impact"]  # type: ignore[assignment]
    return {
        "ms": {v: {mode: {"rounds": [summary(r) for r in runs], "all": summary([t for r in runs for t in r])}
                   for mode, runs in series.items()} for v, series in times.items()},
        "retriever_top10_identical": {mode: sum(a == b for a, b in zip(tops["exhaustive"][mode], tops["impact"][mode]))
                                      for mode in options},
        "queries": len(queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heads", type=int, nargs="*", default=[pg_keywords.HEAD],
                        help="head sizes whose recall and time to measure (the last one is timed in the retriever)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line")
    args = parser.parse_args()
    probe = KnowledgeBase.open(":memory:")
    params = corpus_params(probe, args.chunks, *CORPUS)
    server, dsn, built = cached_server(probe, params, False, lambda message: None if args.json else print(message))
    queries, vectors_file = query_vectors(probe, args.queries)
    probe.close()
    report: dict[str, Any] = {"chunks": args.chunks, "loadavg": {"start": load()}}
    try:
        opened_ms, store = timed_ms(lambda: PostgresStore(dsn))
        report["open"] = {"ms": round(opened_ms, 1), "migrations_applied": list(store.migration.applied)}
        with store:
            report["heads"] = heads_sweep(store, queries, args.heads)
            report["head"] = pg_keywords.HEAD
            report.update(measure(store, dsn, queries, np.load(vectors_file), args.rounds))
    finally:
        server.stop()
    report["loadavg"]["end"] = load()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"postgres-keywords-{args.chunks}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
