"""SciFact end to end: ingest throughput, pipeline overhead, re-add speed, retrieval quality, latency.

1. Ingests /work/shared/eval/scifact/corpus.jsonl into a fresh SQLite knowledge base
   (timed, model already loaded): documents/s and chunks/s.
2. Reads the stored chunks' embedding texts (prefix + "\\n" + text) back and times the
   same embedder on exactly those texts: pipeline overhead = ingest / raw embedding - 1.
3. Re-adds the unchanged corpus: time, and speed-up over the first ingest.
4. Runs the test queries (those in qrels/test.tsv) with search_many in keyword, vector
   and hybrid modes (top_k 10 and 100, one hit per document): nDCG@10, recall@10,
   recall@100, MRR@10.
5. Per-query latency of hybrid search without the query embedding (vector precomputed),
   plus keyword, vector and full kb.search (embedding included) for reference.

Prints a Markdown table at the end and writes bench/results/scifact.json.

    python bench/scifact.py [--db PATH] [--reuse] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from sourcebook import KnowledgeBase
from sourcebook.evaluation.dataset import read_qrels, read_queries
from sourcebook.evaluation.metrics import mean_mrr, mean_ndcg, mean_recall, percentile
from sourcebook.retrieval import SearchOptions

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
RESULTS = HERE / "results" / "scifact.json"
MODES = ("keyword", "vector", "hybrid")
EXPECTED_NDCG = {"keyword": 0.68, "vector": 0.645, "hybrid": 0.71}  # README: published / measured levels
TARGET_OVERHEAD = 0.15
TARGET_SPEEDUP = 20.0


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def say(message: str) -> None:
    print(message, flush=True)


def subset_corpus(limit: int, qrels: dict[str, dict[str, int]]) -> tuple[Path, set[str]]:
    """The first `limit` records of the corpus, written under bench/.cache (for smoke runs)."""
    target = HERE / ".cache" / f"scifact-corpus-first{limit}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    ids: set[str] = set()
    with open(DATA / "corpus.jsonl", encoding="utf-8") as src, open(target, "w", encoding="utf-8") as out:
        for line in src:
            if len(ids) >= limit:
                break
            if line.strip():
                ids.add(str(json.loads(line)["_id"]))
                out.write(line)
    return target, ids


def chunk_texts(db: str) -> tuple[list[str], list[str], np.ndarray]:
    """Every stored chunk's embedding text (in insertion order), its content hash, and its stored vector."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT c.prefix, c.text, c.content_hash, v.vector FROM chunks c JOIN vectors v ON v.chunk_seq = c.seq "
            "ORDER BY c.seq"
        ).fetchall()
    finally:
        conn.close()
    texts = [f"{prefix}\n{text}" if prefix else text for prefix, text, _, _ in rows]
    hashes = [row[2] for row in rows]
    vectors = np.frombuffer(b"".join(row[3] for row in rows), dtype=np.float32).reshape(len(rows), -1)
    return texts, hashes, vectors


def timed(fn: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, process CPU seconds)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def git_commit() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=str(HERE / ".cache" / "scifact.db"), help="SQLite file of the knowledge base")
    parser.add_argument("--reuse", action="store_true", help="use an existing --db as is (no ingest timing)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N corpus records (smoke runs)")
    parser.add_argument("--out", default=str(RESULTS), help="JSON results file")
    args = parser.parse_args()

    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "limit": args.limit,
        "loadavg": {"start": load()},
    }
    qrels_all = read_qrels(DATA / "qrels" / "test.tsv")
    queries_all = read_queries(DATA / "queries.jsonl")
    corpus = DATA / "corpus.jsonl"
    qrels = qrels_all
    if args.limit:
        corpus, kept = subset_corpus(args.limit, qrels_all)
        # Only queries with a relevant document in the subset (the rest could never score).
        qrels = {q: j for q, j in qrels_all.items() if any(d in kept for d in j)}
        say(f"--limit {args.limit}: {len(kept)} documents, {len(qrels)} queries with a relevant one among them "
            "(figures NOT comparable with the full benchmark)")
    query_ids = sorted(qrels, key=int)
    query_texts = [queries_all[q] for q in query_ids]

    db = Path(args.db)
    reuse = args.reuse and db.exists()
    if args.reuse and not reuse:
        say(f"--reuse: {db} does not exist, ingesting")
    if not reuse:
        remove_db(db)
    db.parent.mkdir(parents=True, exist_ok=True)
    say(f"load average at start: {report['loadavg']['start']} ({os.cpu_count()} CPUs)")

    kb = KnowledgeBase.open(db)
    _, model_seconds, _ = timed(lambda: kb.embedder.embed_documents(["warm up the model", "and its kernels"]))
    embedder = kb.embedder
    report["settings"] = {
        "embedding_model": embedder.name,
        "embedding_batch_size": kb.settings.embedding_batch_size,
        "embedding_threads": kb.settings.embedding_threads,
        "chunk_max_tokens": kb.settings.chunk_max_tokens,
        "chunk_overlap": kb.settings.chunk_overlap,
        "candidates": kb.settings.candidates,
        "rrf_k": kb.settings.rrf_k,
    }
    say(f"model {embedder.name} loaded in {model_seconds:.1f} s")

    # 1-2. Ingest, then the raw embedder on the very same texts --------------------------
    if not reuse:
        report["loadavg"]["before_ingest"] = load()
        results, ingest_s, ingest_cpu = timed(lambda: kb.add(str(corpus), format="beir"))
        actions: dict[str, int] = {}
        for r in results:
            actions[r.action] = actions.get(r.action, 0) + 1
        documents = sum(1 for r in results if r.action == "added")
        chunks = sum(r.chunks for r in results)
        report["loadavg"]["after_ingest"] = load()
        failed = [r for r in results if r.action == "failed"]
        report["ingest"] = {
            "seconds": ingest_s, "cpu_seconds": ingest_cpu, "documents": documents, "chunks": chunks,
            "actions": actions, "documents_per_s": documents / ingest_s, "chunks_per_s": chunks / ingest_s,
            "failed_examples": [f"{r.source}: {r.error}" for r in failed[:5]],
        }
        say(f"ingest: {documents} documents, {chunks} chunks in {ingest_s:.1f} s "
            f"({documents / ingest_s:.1f} documents/s, {chunks / ingest_s:.1f} chunks/s; CPU {ingest_cpu:.1f} s); "
            f"actions {actions}; load {report['loadavg']['after_ingest']}")

        texts, hashes, stored = chunk_texts(str(db))
        from sourcebook.models import sha256_text

        mismatched = sum(1 for t, h in zip(texts, hashes) if sha256_text(t) != h)
        report["loadavg"]["before_raw_embed"] = load()
        raw, raw_s, raw_cpu = timed(lambda: embedder.embed_documents(texts))
        report["loadavg"]["after_raw_embed"] = load()
        cosine = np.sum(raw * stored, axis=1)
        overhead = ingest_s / raw_s - 1
        cpu_overhead = ingest_cpu / raw_cpu - 1
        report["raw_embed"] = {
            "texts": len(texts), "seconds": raw_s, "cpu_seconds": raw_cpu, "texts_per_s": len(texts) / raw_s,
            "tokens": int(sum(embedder.count_tokens(texts))),
            "hash_mismatches": mismatched, "min_cosine_to_stored": float(cosine.min()),
            "overhead": overhead, "cpu_overhead": cpu_overhead,
        }
        say(f"raw embed_documents on the same {len(texts)} chunk texts: {raw_s:.1f} s "
            f"({len(texts) / raw_s:.1f} chunks/s; CPU {raw_cpu:.1f} s); load {report['loadavg']['after_raw_embed']}")
        say(f"  (texts rebuilt from the store: {mismatched} content-hash mismatches; "
            f"min cosine of raw vs stored vectors {cosine.min():.6f})")
        say(f"pipeline overhead = ingest / raw embed - 1 = {overhead:+.1%} wall, {cpu_overhead:+.1%} CPU "
            f"(target < {TARGET_OVERHEAD:.0%}) -> {'OK' if overhead < TARGET_OVERHEAD else 'MISSED'}")
    else:
        say(f"--reuse: using {db} as is, no ingest timing")

    # 3. Re-add the unchanged corpus ------------------------------------------------------
    report["loadavg"]["before_readd"] = load()
    again, readd_s, _ = timed(lambda: kb.add(str(corpus), format="beir"))
    readd_actions: dict[str, int] = {}
    for r in again:
        readd_actions[r.action] = readd_actions.get(r.action, 0) + 1
    readd: dict[str, Any] = {"seconds": readd_s, "actions": readd_actions,
                             "embedded": sum(r.embedded for r in again)}
    line = f"re-add unchanged corpus: {readd_s:.2f} s, actions {readd_actions}, {readd['embedded']} chunks embedded"
    if "ingest" in report:
        speedup = report["ingest"]["seconds"] / readd_s
        readd["speedup"] = speedup
        line += f"; speed-up vs first ingest {speedup:.1f}x (target >= {TARGET_SPEEDUP:.0f}x) -> " + (
            "OK" if speedup >= TARGET_SPEEDUP else "MISSED")
    report["readd"] = readd
    say(line)

    # 4. Quality over the test queries ----------------------------------------------------
    stats = kb.status()
    report["store"] = {"documents": stats["documents"], "chunks": stats["chunks"], "size_bytes": stats["size_bytes"]}
    report["loadavg"]["before_queries"] = load()
    quality: dict[str, dict[str, float]] = {}
    for mode in MODES:
        runs = {}
        for top_k in (10, 100):
            hits, seconds, _ = timed(lambda: kb.search_many(query_texts, mode=mode, top_k=top_k, per_document=1))
            runs[top_k] = {q: [h.chunk.source for h in found] for q, found in zip(query_ids, hits)}
            if top_k == 10:
                batch_seconds = seconds
        quality[mode] = {
            "ndcg@10": mean_ndcg(runs[10], qrels, 10),
            "recall@10": mean_recall(runs[10], qrels, 10),
            "recall@100": mean_recall(runs[100], qrels, 100),
            "mrr@10": mean_mrr(runs[10], qrels, 10),
            "search_many_seconds_top10": batch_seconds,
            "short_rankings_top10": sum(1 for r in runs[10].values() if len(r) < 10),
        }
        m = quality[mode]
        say(f"{mode:8s} nDCG@10 {m['ndcg@10']:.4f}  recall@10 {m['recall@10']:.4f}  recall@100 {m['recall@100']:.4f}  "
            f"MRR@10 {m['mrr@10']:.4f}  ({len(query_ids)} queries, search_many {batch_seconds:.1f} s)")
    report["quality"] = quality
    report["queries"] = len(query_ids)

    # 5. Latency ----------------------------------------------------------------------------
    report["loadavg"]["before_latency"] = load()
    vectors = [embedder.embed_query(q) for q in query_texts]
    latency: dict[str, dict[str, float]] = {}
    for mode in MODES:
        options = SearchOptions.from_settings(kb.settings, mode=mode, top_k=10, per_document=1)
        kb._retriever.search(query_texts[0], options, vectors[0])  # warm-up
        timings = []
        for text, vector in zip(query_texts, vectors):
            start = time.perf_counter()
            kb._retriever.search(text, options, vector)
            timings.append((time.perf_counter() - start) * 1000)
        latency[f"{mode}_no_embedding"] = {"p50_ms": percentile(timings, 50), "p95_ms": percentile(timings, 95)}
    timings = []
    for text in query_texts:
        start = time.perf_counter()
        embedder.embed_query(text)
        timings.append((time.perf_counter() - start) * 1000)
    latency["embed_query"] = {"p50_ms": percentile(timings, 50), "p95_ms": percentile(timings, 95)}
    timings = []
    for text in query_texts:
        start = time.perf_counter()
        kb.search(text, mode="hybrid", top_k=10, per_document=1)
        timings.append((time.perf_counter() - start) * 1000)
    latency["hybrid_kb_search_with_embedding"] = {"p50_ms": percentile(timings, 50), "p95_ms": percentile(timings, 95)}
    report["latency"] = latency
    report["loadavg"]["end"] = load()
    for name, values in latency.items():
        say(f"latency {name}: p50 {values['p50_ms']:.2f} ms, p95 {values['p95_ms']:.2f} ms")
    kb.close()

    # Summary -------------------------------------------------------------------------------
    say("")
    say(f"## SciFact ({len(query_ids)} test queries, {stats['chunks']} chunks, model {embedder.name}"
        f"{', LIMITED to ' + str(args.limit) + ' documents' if args.limit else ''})")
    say("")
    say("| mode | nDCG@10 | recall@10 | recall@100 | MRR@10 | expected nDCG@10 | p50 ms (no embedding) | p95 ms |")
    say("|---|---|---|---|---|---|---|---|")
    for mode in MODES:
        m, lat = quality[mode], latency[f"{mode}_no_embedding"]
        say(f"| {mode} | {m['ndcg@10']:.4f} | {m['recall@10']:.4f} | {m['recall@100']:.4f} | {m['mrr@10']:.4f} | "
            f"~{EXPECTED_NDCG[mode]} | {lat['p50_ms']:.2f} | {lat['p95_ms']:.2f} |")
    say("")
    say("| measure | value | target |")
    say("|---|---|---|")
    if "ingest" in report:
        ing, raw = report["ingest"], report["raw_embed"]
        say(f"| ingest | {ing['seconds']:.1f} s, {ing['documents_per_s']:.1f} docs/s, {ing['chunks_per_s']:.1f} chunks/s | |")
        say(f"| raw embed (same {raw['texts']} texts) | {raw['seconds']:.1f} s, {raw['texts_per_s']:.1f} chunks/s | |")
        say(f"| pipeline overhead | {raw['overhead']:+.1%} wall ({raw['cpu_overhead']:+.1%} CPU) | < {TARGET_OVERHEAD:.0%} |")
    speed = f", {readd['speedup']:.1f}x faster" if "speedup" in readd else ""
    say(f"| re-add unchanged | {readd['seconds']:.2f} s{speed} | >= {TARGET_SPEEDUP:.0f}x |")
    emb = latency["embed_query"]
    full = latency["hybrid_kb_search_with_embedding"]
    say(f"| query embedding | p50 {emb['p50_ms']:.2f} ms, p95 {emb['p95_ms']:.2f} ms | |")
    say(f"| kb.search hybrid incl. embedding | p50 {full['p50_ms']:.2f} ms, p95 {full['p95_ms']:.2f} ms | |")
    say(f"| load average (start / end) | {report['loadavg']['start']} / {report['loadavg']['end']} | |")

    for mode in MODES:
        if not args.limit and quality[mode]["ndcg@10"] < EXPECTED_NDCG[mode] - 0.02:
            say(f"WARNING: {mode} nDCG@10 {quality[mode]['ndcg@10']:.4f} is well below the expected "
                f"~{EXPECTED_NDCG[mode]}")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"\nwrote {out}")


if __name__ == "__main__":
    main()
