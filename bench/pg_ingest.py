"""Ingest throughput on PostgreSQL through the job queue: 1 and 2 `sourcebook worker` processes.

The same fixed SciFact subset (the first --docs records of corpus.jsonl, BEIR format: one job
per record) goes into a fresh database for each configuration:

* inline: `add` with ingest_jobs="inline" (the batched in-process pipeline writing to
  Postgres, no queue): the reference;
* 1 worker and 2 workers: real `sourcebook worker` subprocesses (concurrency 1 each), started
  and registered (model loaded) before the clock starts; the clock covers `add --no-wait`
  (enqueueing) and runs until the last job's outcome is recorded.

Prints documents/s and chunks/s per configuration and writes bench/results/pg_ingest.json.
Run time on the 2-core machine: about 4-6 minutes with --docs 200 (each configuration embeds
the subset once; the model runs at roughly 15-25 chunks/s per core here).

    python bench/pg_ingest.py [--docs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from latency_100k import DATA, load, say
from sourcebook import KnowledgeBase
from sourcebook.jobs.worker import live_workers
from sourcebook.stores.postgres.embedded import EmbeddedPostgres

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "pg_ingest.json"
SOURCEBOOK = str(Path(sys.executable).parent / "sourcebook")


def subset(n: int) -> Path:
    target = Path(tempfile.mkdtemp(prefix="pg_ingest-")) / f"scifact-first{n}.jsonl"
    with open(DATA / "corpus.jsonl", encoding="utf-8") as src, open(target, "w", encoding="utf-8") as out:
        for i, line in enumerate(src):
            if i == n:
                break
            out.write(line)
    return target


def chunk_count(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM chunks").fetchone()
    return int(row[0]) if row else 0


def run_inline(dsn: str, corpus: Path) -> dict[str, Any]:
    with KnowledgeBase.open(dsn, ingest_jobs="inline") as kb:
        _ = kb.embedder  # model loaded before the clock starts, as the workers' is
        start = time.perf_counter()
        results = kb.add(str(corpus), format="beir")
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "documents": len(results), "failed": sum(r.action == "failed" for r in results)}


def run_workers(dsn: str, corpus: Path, workers: int, logs: Path) -> dict[str, Any]:
    with KnowledgeBase.open(dsn) as kb:
        kb.add([], wait=False)  # creates the queue's tables before the workers start
        processes = [
            subprocess.Popen([SOURCEBOOK, "--db", dsn, "worker", "--name", f"bench-{i}"], stdout=subprocess.DEVNULL,
                             stderr=(logs / f"worker-{workers}-{i}.log").open("wb"))
            for i in range(workers)
        ]
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                while live_workers(conn) < workers:
                    if any(p.poll() is not None for p in processes):
                        raise SystemExit(f"a worker exited early; see {logs}")
                    time.sleep(0.2)
                start = time.perf_counter()
                queued = kb.add(str(corpus), format="beir", wait=False)
                enqueued = time.perf_counter() - start
                ids = [r.document_id for r in queued]
                while True:
                    row = conn.execute("SELECT count(*), count(*) FILTER (WHERE result->>'action' = 'failed') "
                                       "FROM sourcebook_ingest_jobs WHERE result IS NOT NULL").fetchone()
                    assert row is not None
                    if row[0] >= len(ids):
                        break
                    time.sleep(0.1)
                seconds = time.perf_counter() - start
        finally:
            for p in processes:
                p.send_signal(signal.SIGTERM)
            for p in processes:
                p.wait(timeout=120)
    return {"seconds": seconds, "enqueue_seconds": enqueued, "documents": len(ids), "failed": int(row[1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    corpus = subset(args.docs)
    logs = corpus.parent
    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpus": os.cpu_count(),
                              "docs": args.docs, "load_start": load(), "runs": {}}
    server = EmbeddedPostgres.start(corpus.parent / "pg", delete_on_stop=True)
    try:
        for name in ("inline", "1 worker", "2 workers"):
            dsn = server.create_database()
            say(f"{name}: starting (load {load()})")
            run = run_inline(dsn, corpus) if name == "inline" else run_workers(dsn, corpus, int(name[0]), logs)
            run["chunks"] = chunk_count(dsn)
            run["docs_per_s"] = run["documents"] / run["seconds"]
            run["chunks_per_s"] = run["chunks"] / run["seconds"]
            run["load_end"] = load()
            report["runs"][name] = run
            say(f"{name}: {run['documents']} documents, {run['chunks']} chunks in {run['seconds']:.1f} s: "
                f"{run['docs_per_s']:.2f} docs/s, {run['chunks_per_s']:.1f} chunks/s, {run['failed']} failed "
                f"(load {run['load_end']})")
    finally:
        server.stop()

    say("")
    say(f"## Ingest throughput on PostgreSQL, first {args.docs} SciFact documents")
    say("")
    say("| configuration | seconds | docs/s | chunks/s |")
    say("|---|---|---|---|")
    for name, run in report["runs"].items():
        say(f"| {name} | {run['seconds']:.1f} | {run['docs_per_s']:.2f} | {run['chunks_per_s']:.1f} |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"wrote {out}")


if __name__ == "__main__":
    main()
