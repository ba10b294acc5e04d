"""SciFact nDCG@10 on Postgres beside SQLite, in the same run, on the same vectors.

1. Takes an ingested SciFact SQLite knowledge base (bench/.cache/scifact.db, the one
   bench/scifact.py builds; copied from /work/main/bench/.cache when this worktree has
   none; ingested from the corpus when neither exists, which costs ~10 minutes on 2 cores).
2. Starts a throwaway embedded PostgreSQL 18 + pgvector server and `copy_store`s the
   knowledge base into it: the very same chunks and vectors, nothing re-embedded.
3. Runs the test queries (qrels/test.tsv) in keyword, vector and hybrid modes on both
   stores (top_k 10, one hit per document) with query vectors embedded once, and prints
   nDCG@10, recall@10 and per-query search latency (no embedding) side by side.
About 6 minutes on 2 busy cores with the SQLite file present (the copy is half of it).

    python bench/postgres_scifact.py [--sqlite PATH]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg

from sourcebook import KnowledgeBase, Settings
from sourcebook.copying import copy_store
from sourcebook.evaluation.dataset import read_qrels, read_queries
from sourcebook.evaluation.metrics import mean_ndcg, mean_recall, percentile
from sourcebook.retrieval import SearchOptions
from sourcebook.stores.postgres.embedded import EmbeddedPostgres
from sourcebook.stores.postgres import PostgresStore
from sourcebook.stores.sqlite import SQLiteStore

HERE = Path(__file__).resolve().parent
DATA = Path("/work/shared/eval/scifact")
MAIN_CACHE = Path("/work/main/bench/.cache/scifact.db")
MODES = ("keyword", "vector", "hybrid")
def say(message: str) -> None:
    print(message, flush=True)


def sqlite_source(path: Path) -> Path:
    """The ingested SciFact SQLite file, copied or built as the docstring says."""
    if not path.exists() and MAIN_CACHE.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(MAIN_CACHE, path)
        say(f"copied {MAIN_CACHE} -> {path}")
    if not path.exists():
        say(f"ingesting {DATA / 'corpus.jsonl'} into {path} (slow)")
        with KnowledgeBase.open(path) as kb:
            kb.add(str(DATA / "corpus.jsonl"), format="beir")
    return path


def evaluate(kb: KnowledgeBase, mode: str, ids: list[str], texts: list[str], vectors: np.ndarray,
             qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    options = SearchOptions.from_settings(kb.settings, mode=mode, top_k=10, per_document=1)
    retriever = kb._retriever
    retriever.search(texts[0], options, vectors[0])  # warm-up
    run: dict[str, list[str]] = {}
    timings = []
    for query_id, text, vector in zip(ids, texts, vectors):
        start = time.perf_counter()
        hits = retriever.search(text, options, vector)
        timings.append((time.perf_counter() - start) * 1000)
        run[query_id] = [hit.chunk.source for hit in hits]
    return {"ndcg@10": mean_ndcg(run, qrels, 10), "recall@10": mean_recall(run, qrels, 10),
            "p50_ms": percentile(timings, 50), "p95_ms": percentile(timings, 95)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sqlite", type=Path, default=HERE / ".cache" / "scifact.db")
    args = parser.parse_args()

    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    queries = read_queries(DATA / "queries.jsonl")
    ids = sorted(qrels, key=int)
    texts = [queries[q] for q in ids]

    settings = Settings()
    sqlite_store = SQLiteStore(sqlite_source(args.sqlite))
    sqlite_kb = KnowledgeBase(sqlite_store, settings)
    vectors = np.stack([sqlite_kb.embedder.embed_query(t) for t in texts])

    directory = Path(tempfile.mkdtemp(prefix="sourcebook-bench-pg-"))
    server = EmbeddedPostgres.start(directory / "data", delete_on_stop=True, durable=False)
    try:
        store = PostgresStore(server.create_database("scifact"))
        start = time.perf_counter()
        report = copy_store(sqlite_store, store)
        copy_seconds = time.perf_counter() - start
        with psycopg.connect(store.dsn, autocommit=True) as conn:  # as the owner: the RLS role may not ANALYZE
            conn.execute("ANALYZE")
        say(f"copied {report.documents_copied} documents, {report.chunks_copied} chunks SQLite -> Postgres "
            f"in {copy_seconds:.1f} s ({report.chunks_copied / copy_seconds:.0f} chunks/s, no re-embedding)")
        pg_kb = KnowledgeBase(store, settings, sqlite_kb.embedder)

        results = {name: {mode: evaluate(kb, mode, ids, texts, vectors, qrels) for mode in MODES}
                   for name, kb in (("SQLite", sqlite_kb), ("Postgres", pg_kb))}
        say(f"\n## SciFact, {len(ids)} test queries, {report.chunks_copied} chunks (same vectors in both stores)\n")
        say("| mode | SQLite nDCG@10 | Postgres nDCG@10 | SQLite recall@10 | Postgres recall@10 "
            "| SQLite p50 / p95 ms | Postgres p50 / p95 ms |")
        say("|---|---|---|---|---|---|---|")
        for mode in MODES:
            s, p = results["SQLite"][mode], results["Postgres"][mode]
            say(f"| {mode} | {s['ndcg@10']:.4f} | {p['ndcg@10']:.4f} | {s['recall@10']:.4f} | {p['recall@10']:.4f} "
                f"| {s['p50_ms']:.2f} / {s['p95_ms']:.2f} | {p['p50_ms']:.2f} / {p['p95_ms']:.2f} |")
        say(f"\nPostgres HNSW m={store.hnsw.m}, "
            f"ef_construction={store.hnsw.ef_construction}, ef_search={store.hnsw.ef_search}")

        store.close()
    finally:
        sqlite_kb.close()
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
