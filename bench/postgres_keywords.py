"""Postgres keyword search at scale: BM25 statistics from counter rows against counting them live.

Why: until migration keyword_statistics a Postgres keyword query counted the tenant's chunks
and their mean length (a scan of every chunk row) and each term's postings, per query; now it
sums small counter rows (stores/postgres/keyword_stats.py). This measures both statements on
the same database, the same queries, in one process, interleaved query by query (so load on
the shared machine falls on both alike), and checks that they return the same top 10.

The database is bench/scale.py's (`--store postgres`, bench/scale_postgres.py builds and
caches it through the store); a cache built before the migration is migrated here, and the
time the backfill took is reported. "live" is the statement as it was before the migration
(`live_counting_sql`), swapped into the store for its turns; hybrid runs through the
retriever with the query's vector (SciFact's test queries, as scale.py), so it includes the
vector search and the fusion.

    python bench/postgres_keywords.py --chunks 100000 [--queries 200] [--rounds 3] [--json]
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
from sourcebook.retrieval import Retriever, SearchOptions  # noqa: E402
from sourcebook.stores.bm25 import B, K1  # noqa: E402
from sourcebook.stores.postgres import PostgresStore  # noqa: E402
from sourcebook.stores.postgres import keywords as pg_keywords  # noqa: E402

RESULTS = HERE / "results"


def live_counting_sql(where: str) -> str:
    """The keyword statement before migration keyword_statistics: N, the mean length and each
    term's n counted live (the reference the counters must agree with)."""
    filtered = f"JOIN chunks c ON c.seq = p.chunk_seq WHERE true {where}" if where else ""
    return f"""
        WITH stats AS (SELECT count(*)::float8 AS n, coalesce(avg(length), 1)::float8 AS mean FROM chunks),
        idf AS (
            SELECT t.term, greatest(ln((stats.n - count(*) + 0.5) / (count(*) + 0.5)), 1e-6) AS idf
            FROM chunk_terms t, stats WHERE t.term = ANY(%s) GROUP BY t.term, stats.n),
        scored AS (
            SELECT p.chunk_seq, sum(idf.idf * p.tf * {K1 + 1}
                                    / (p.tf + {K1} * (1 - {B} + {B} * p.length / stats.mean))) AS score
            FROM chunk_terms p JOIN idf ON idf.term = p.term CROSS JOIN stats {filtered}
            GROUP BY p.chunk_seq ORDER BY score DESC, p.chunk_seq LIMIT %s)
        SELECT c.id, s.score FROM scored s JOIN chunks c ON c.seq = s.chunk_seq
        ORDER BY s.score DESC, s.chunk_seq"""


VARIANTS: dict[str, Callable[[str], str]] = {"live": live_counting_sql, "counters": pg_keywords.keyword_sql}


def timed_ms(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return (time.perf_counter() - start) * 1000, result


def measure(store: PostgresStore, dsn: str, queries: list[str], vectors: np.ndarray, rounds: int) -> dict[str, Any]:
    """Per variant and mode (the retriever's keyword and hybrid search, as scale.py times them),
    the median of each round and over all rounds (ms), and the top-10 agreement of the two
    store statements (`keyword_search`, k = 10)."""
    settings = Settings(db=dsn)

    def no_model() -> Any:
        raise AssertionError("the bench passes query vectors; the model must not load")

    retriever = Retriever(store, no_model)
    options = {mode: SearchOptions.from_settings(settings, mode=mode, top_k=10, per_document=1)
               for mode in ("keyword", "hybrid")}
    times: dict[str, dict[str, list[list[float]]]] = {v: {mode: [] for mode in options} for v in VARIANTS}
    tops: dict[str, list[list[tuple[str, float]]]] = {v: [] for v in VARIANTS}
    for round_ in range(rounds):
        for series in times.values():
            for values in series.values():
                values.append([])
        for i, query in enumerate(queries):
            order = list(VARIANTS) if (i + round_) % 2 == 0 else list(reversed(VARIANTS))
            for variant in order:
                pg_keywords.keyword_sql = VARIANTS[variant]  # type: ignore[assignment]
                for mode, option in options.items():
                    ms, _ = timed_ms(lambda: retriever.search(query, option, vectors[i]))
                    times[variant][mode][-1].append(ms)
                if round_ == 0:
                    tops[variant].append([(h.chunk_id, h.score) for h in store.keyword_search(query, 10, EVERYTHING)])
    pg_keywords.keyword_sql = VARIANTS["counters"]  # type: ignore[assignment]
    same_ids = sum(a == b for a, b in zip(*([[i for i, _ in top] for top in tops[v]] for v in VARIANTS)))
    score_gap = max((abs(x - y) / max(abs(x), 1e-12) for a, b in zip(tops["live"], tops["counters"])
                     for (_, x), (_, y) in zip(a, b)), default=0.0)
    return {
        "p50_ms": {v: {mode: {"rounds": [round(statistics.median(r), 2) for r in runs],
                              "all": round(statistics.median([t for r in runs for t in r]), 2)}
                       for mode, runs in series.items()} for v, series in times.items()},
        "top10_identical_queries": same_ids, "queries": len(queries), "max_relative_score_gap": score_gap,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
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
            report.update(measure(store, dsn, queries, np.load(vectors_file), args.rounds))
    finally:
        server.stop()
    report["loadavg"]["end"] = load()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"postgres-keywords-{args.chunks}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
