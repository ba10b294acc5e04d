"""The Postgres store's vector search by ef_search and candidate pool: recall@10 against exact, and latency.

Why: the store's defaults (stores/postgres/vectors.py: EF_SEARCH_PER_100K, OVERSAMPLE,
MIN_CANDIDATES) are chosen from these figures. It runs on the corpus, the exact top lists and
the query vectors that `bench/scale.py --store postgres --chunks N` built and cached (run that
first), through the store's own query (`vector_query` with an explicit pool, `ef_search_sql`
with a fixed ef_search) on one pooled connection, as `PostgresStore.vector_search` runs them.
A pool of 10 rescores only what the index returns for k = 10: the index's own recall.

    python bench/pg_rescore.py --chunks 300000 [--ef 40,100,200,400,1000] [--pool 10,40,100,200]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from latency_100k import CACHE, corpus_params, key_of, load, say  # noqa: E402
from scale import CORPUS, EVERYTHING, TRUTH_DEPTH, query_vectors, recalls  # noqa: E402
from scale_postgres import cached_server  # noqa: E402

from sourcebook import KnowledgeBase  # noqa: E402
from sourcebook.evaluation.metrics import percentile  # noqa: E402
from sourcebook.stores.postgres import PostgresStore  # noqa: E402
from sourcebook.stores.postgres.vectors import ef_search_sql, vector_query  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", default="40,100,200,400,1000")
    parser.add_argument("--pool", default="10,40,100,200")
    args = parser.parse_args()
    with KnowledgeBase.open(":memory:") as probe:
        params = corpus_params(probe, args.chunks, *CORPUS)
        queries, vectors_file = query_vectors(probe, args.queries)
        cache_file = CACHE / f"pg-{key_of(params)}.json"
        if not cache_file.exists():
            raise SystemExit(f"run bench/scale.py --store postgres --chunks {args.chunks} first")
        server, dsn, _ = cached_server(probe, params, False, say)
    truth_file = cache_file.with_name(f"{cache_file.stem}-truth-{key_of({'queries': queries, 'depth': TRUTH_DEPTH})}.json")
    truth = json.loads(truth_file.read_text())
    vectors = np.load(vectors_file)
    rows = []
    try:
        with PostgresStore(dsn) as store:
            for pool in map(int, args.pool.split(",")):
                for ef in map(int, args.ef.split(",")):
                    found, times = [], []
                    for v in vectors:
                        start = time.perf_counter()
                        with store.transaction(pipeline=True) as conn:
                            conn.execute(ef_search_sql(), (pool, ef))
                            hits = conn.execute(*vector_query(v, 10, EVERYTHING, pool)).fetchall()
                        times.append((time.perf_counter() - start) * 1000)
                        found.append([chunk_id for chunk_id, _ in hits])
                    recall, tied = recalls(found, truth)
                    row = {"pool": pool, "ef_search": max(ef, pool), "recall_at_10": recall, "recall_ties": tied,
                           "p50_ms": percentile(times[1:], 50), "p95_ms": percentile(times[1:], 95), "load": load()}
                    rows.append(row)
                    say(json.dumps(row))
    finally:
        server.stop()
    out = HERE / "results" / f"pg_rescore-{args.chunks}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    say(f"wrote {out}")


if __name__ == "__main__":
    main()
