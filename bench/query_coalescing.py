"""Query embeddings under concurrency: coalesced into shared model runs against one run each.

Runs `--threads` threads that each embed new queries (a number appended, so nothing is cached)
back to back for `--seconds`, once with the embedder's coalescing (the product) and once with
batches of one (the behaviour before), alternating `--repeats` times in one process, and prints
per mode: queries/s and p50/p99 latency, with the median over repeats. The model is the default
MiniLM at fp32.

    python bench/query_coalescing.py [--threads 20] [--seconds 5] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

from sourcebook.embedders.coalescing import QueryCoalescer
from sourcebook.embedders.local import LocalEmbedder

QUERIES = ["annual leave policy", "incident severity levels", "travel expenses per diem", "password rotation",
           "release notes for beacon", "onboarding in the first week", "on-call escalation path", "anchor days"]


def load(embedder: LocalEmbedder, threads: int, seconds: float) -> dict[str, float]:
    """Queries per second and latency percentiles (ms) of `threads` clients for `seconds`."""
    latencies: list[float] = []
    lock = threading.Lock()
    until = time.monotonic() + seconds

    def client(number: int) -> None:
        mine: list[float] = []
        count = 0
        while time.monotonic() < until:
            started = time.perf_counter()
            embedder.embed_query(f"{QUERIES[count % len(QUERIES)]} {number} {count}")
            mine.append(time.perf_counter() - started)
            count += 1
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=client, args=(n,)) for n in range(threads)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.monotonic() - started
    latencies.sort()
    return {"qps": len(latencies) / elapsed, "p50_ms": 1000 * latencies[len(latencies) // 2],
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embedder = LocalEmbedder()
    modes = {"coalesced": embedder._queries, "one per run": QueryCoalescer(embedder._idle, embedder._forward, max_batch=1)}
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for _ in range(args.repeats):
        for mode, coalescer in modes.items():
            embedder._queries = coalescer
            runs[mode].append(load(embedder, args.threads, args.seconds))
    summary = {mode: {key: round(statistics.median(run[key] for run in results), 1) for key in results[0]}
               for mode, results in runs.items()}
    if args.json:
        print(json.dumps({"threads": args.threads, **summary}))
        return
    print(f"{args.threads} threads, {args.seconds:g} s per run, median of {args.repeats} (modes alternating)")
    print(f"{'mode':<12} {'queries/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for mode, figures in summary.items():
        print(f"{mode:<12} {figures['qps']:>10} {figures['p50_ms']:>8} {figures['p99_ms']:>8}")


if __name__ == "__main__":
    main()
