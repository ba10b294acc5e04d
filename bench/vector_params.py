"""How the vector index's constants were chosen (index/vector_index.py, index/ann.py).

* `exact`: CPU time of one exact search (`ExactRows`, k=50) over N random 384-d rows, for the
  threshold below which exact search stays (`ANN_MIN_ROWS`);
* `hnsw`: on the first `--chunks` chunks of a bench/scale.py database, recall of the true top 10
  (any row of a true chunk among the rows the graph returns: what rescoring needs) for HNSW
  connectivity M x efConstruction, at ef 300 and 1200, and the build time.

    python bench/vector_params.py exact
    python bench/vector_params.py hnsw --db bench/.cache/latency_100k-<key>.db --queries Q.npy [--chunks 30000]
"""

from __future__ import annotations

import argparse
import sqlite3
import time

import numpy as np

from sourcebook.index.vectors import ExactRows, RowBatch


def exact_costs() -> None:
    rng = np.random.default_rng(0)
    for n in (25_000, 50_000, 100_000, 200_000, 470_000):
        rows = rng.standard_normal((n, 384)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        index = ExactRows(384)
        index.add(RowBatch(rows, np.repeat(np.arange(n // 5 + 1), 5)[:n].astype(np.int64), ["d"] * n))
        index.search(rows[0], 50, None)
        seconds = []
        for i in range(50):
            start = time.process_time()
            index.search(rows[i], 50, None)
            seconds.append(time.process_time() - start)
        print(f"{n:>8,} rows: exact search CPU p50 {np.median(seconds) * 1000:.2f} ms, {rows.nbytes / 1e6:.0f} MB", flush=True)


def hnsw_recall(db: str, queries_file: str, chunks: int) -> None:
    from usearch.index import Index

    queries = np.load(queries_file)[:60]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    stored = conn.execute("SELECT c.seq, v.vector, v.windows FROM chunks c JOIN vectors v ON v.chunk_seq = c.seq "
                          "ORDER BY c.seq LIMIT ?", (chunks,)).fetchall()
    rows = np.frombuffer(b"".join(v + (w or b"") for _, v, w in stored), dtype=np.float32).reshape(-1, 384)
    seqs = np.concatenate([[s] * (1 + len(w or b"") // len(v)) for s, v, w in stored])
    starts = np.flatnonzero(np.concatenate(([True], seqs[1:] != seqs[:-1])))
    truth = [set(seqs[starts][np.argsort(-scores)[:10]]) for scores in np.maximum.reduceat(queries @ rows.T, starts, axis=1)]
    print(f"{len(rows):,} rows of {chunks:,} chunks", flush=True)
    for connectivity, expansion_add in ((16, 64), (32, 64), (16, 128), (32, 128)):
        index = Index(ndim=384, metric="cos", dtype="i8", connectivity=connectivity, expansion_add=expansion_add)
        start = time.time()
        index.add(np.arange(len(rows)), rows, threads=2)
        built = time.time() - start
        recalls = []
        for ef in (300, 1200):
            index.expansion_search = ef
            found = [set(seqs[np.asarray(index.search(q, 300, threads=1).keys, dtype=np.int64)]) for q in queries]
            recalls.append(f"ef {ef}: {np.mean([len(f & t) / 10 for f, t in zip(found, truth)]):.3f}")
        print(f"M {connectivity}, efConstruction {expansion_add}: build {built:.0f} s, " + ", ".join(recalls), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("exact", "hnsw"))
    parser.add_argument("--db")
    parser.add_argument("--queries")
    parser.add_argument("--chunks", type=int, default=30_000)
    args = parser.parse_args()
    if args.what == "exact":
        exact_costs()
    else:
        hnsw_recall(args.db, args.queries, args.chunks)


if __name__ == "__main__":
    main()
