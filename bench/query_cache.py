"""The query cache's effect: p50 of search and ask, uncached against cached, side by side.

Indexes examples/docs once (a temporary knowledge base), then for each query of a fixed list
runs it uncached (the cache off) and cached (the cache on, after one warming call per query),
interleaved, `--repeats` times, and prints the medians and their ratio. The cached figure is
what a repeated query costs in the server (`query_cache_entries`, on by default there); a write
moves the store's generation and the next lookup misses (tests/test_query_cache.py).

    python bench/query_cache.py [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sourcebook import KnowledgeBase

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
QUERIES = ["annual leave", "incident severity levels", "travel expenses per diem", "password rotation policy",
           "on-call escalation", "hybrid working anchor days"]


def _ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with KnowledgeBase.open(Path(tmp) / "kb.db") as plain:
            plain.add(str(EXAMPLES / "docs"))
        with KnowledgeBase.open(Path(tmp) / "kb.db") as plain, \
                KnowledgeBase.open(Path(tmp) / "kb.db", query_cache_entries=1024) as cached:
            for query in QUERIES:  # load the model and the indexes in both, and warm the cache
                plain.search(query), cached.search(query), plain.ask(query), cached.ask(query)
            times: dict[str, list[float]] = {key: [] for key in ("search", "search_cached", "ask", "ask_cached")}
            for _ in range(args.repeats):
                for query in QUERIES:
                    times["search"].append(_ms(lambda: plain.search(query)))
                    times["search_cached"].append(_ms(lambda: cached.search(query)))
                    times["ask"].append(_ms(lambda: plain.ask(query)))
                    times["ask_cached"].append(_ms(lambda: cached.ask(query)))
            stats = cached.query_cache_stats()
    p50 = {f"{key}_p50_ms": round(statistics.median(values), 3) for key, values in times.items()}
    result = {**p50, "search_speedup": round(p50["search_p50_ms"] / p50["search_cached_p50_ms"], 1),
              "ask_speedup": round(p50["ask_p50_ms"] / p50["ask_cached_p50_ms"], 1),
              "lookups": len(QUERIES) * args.repeats, "cache": stats}
    if args.json:
        print(json.dumps(result))
        return
    print(f"{len(QUERIES)} queries x {args.repeats} repeats, examples/docs, extractive answers")
    print(f"search p50: {p50['search_p50_ms']:.2f} ms uncached, {p50['search_cached_p50_ms']:.3f} ms cached "
          f"({result['search_speedup']}x)")
    print(f"ask p50:    {p50['ask_p50_ms']:.2f} ms uncached, {p50['ask_cached_p50_ms']:.3f} ms cached "
          f"({result['ask_speedup']}x)")


if __name__ == "__main__":
    main()
