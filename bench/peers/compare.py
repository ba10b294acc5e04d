"""One table: Sourcebook next to LlamaIndex and Haystack on SciFact, with the ratios.

Reads what the runs wrote (nothing is re-measured here, so it runs in any venv):

* bench/results/scifact.json (or --bench): Sourcebook's ingest seconds (bench/scifact.py,
  a run that ingested, not a --reuse one);
* bench/results/peers/sourcebook.json: Sourcebook's nDCG@10 and per-query latency per
  mode, from `sourcebook eval retrieval ... --json` on the same knowledge base;
* bench/results/peers/<peer>.json: each peer's run (llamaindex_scifact.py, haystack_scifact.py).

Ratios are peer / Sourcebook: above 1 on seconds and milliseconds means the peer is
slower; below 1 on nDCG@10 means the peer ranks worse. Ingest CPU seconds (all
threads of the process) are the fairer speed figure on a machine shared with
other work; wall seconds are what a user waits.

    python bench/peers/compare.py [--out bench/results/peers/compare.md]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent.parent / "results"
MODES = ("keyword", "vector", "hybrid")
PEERS = ("llamaindex", "haystack")


def sourcebook_row(bench_path: Path) -> dict[str, Any]:
    bench = json.loads(bench_path.read_text())
    if "ingest" not in bench:
        raise SystemExit(f"{bench_path} has no ingest timing (a --reuse run): run bench/scifact.py without --reuse")
    evaluation = json.loads((RESULTS / "peers" / "sourcebook.json").read_text())
    modes = {m["mode"]: m for m in evaluation["modes"]}
    return {
        "system": "Sourcebook",
        "ingest_seconds": bench["ingest"]["seconds"],
        "ingest_cpu_seconds": bench["ingest"]["cpu_seconds"],
        "ndcg": {mode: modes[mode]["metrics"]["ndcg@10"] for mode in MODES},
        "p50_ms": {mode: modes[mode]["latency_p50_ms"] for mode in MODES},
    }


def peer_row(name: str) -> dict[str, Any] | None:
    path = RESULTS / "peers" / f"{name}.json"
    if not path.exists():
        return None
    run = json.loads(path.read_text())
    if run.get("limit"):
        raise SystemExit(f"{path} is a --limit {run['limit']} smoke run: not comparable")
    return {
        "system": run["system"],
        "version": run["version"],
        "ingest_seconds": run["ingest_seconds"],
        "ingest_cpu_seconds": run["ingest_cpu_seconds"],
        "ndcg": {mode: run["quality"][mode]["ndcg@10"] for mode in MODES},
        "p50_ms": {mode: run["quality"][mode]["latency_p50_ms"] for mode in MODES},
    }


def cells(row: dict[str, Any]) -> list[str]:
    return [
        f"{row['ingest_seconds']:.0f}",
        f"{row['ingest_cpu_seconds']:.0f}",
        *(f"{row['ndcg'][m]:.4f}" for m in MODES),
        *(f"{row['p50_ms'][m]:.1f}" for m in MODES),
    ]


def ratios(peer: dict[str, Any], base: dict[str, Any]) -> list[str]:
    return [
        f"{peer['ingest_seconds'] / base['ingest_seconds']:.2f}x",
        f"{peer['ingest_cpu_seconds'] / base['ingest_cpu_seconds']:.2f}x",
        *(f"{peer['ndcg'][m] / base['ndcg'][m]:.3f}" for m in MODES),
        *(f"{peer['p50_ms'][m] / base['p50_ms'][m]:.1f}x" for m in MODES),
    ]


def table(bench_path: Path) -> str:
    base = sourcebook_row(bench_path)
    peers = [row for name in PEERS if (row := peer_row(name)) is not None]
    header = ["system", "ingest s", "ingest CPU s", *(f"nDCG@10 {m}" for m in MODES), *(f"p50 ms {m}" for m in MODES)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.append("| " + " | ".join(["Sourcebook", *cells(base)]) + " |")
    for peer in peers:
        lines.append("| " + " | ".join([f"{peer['system']} {peer['version']}", *cells(peer)]) + " |")
    for peer in peers:
        lines.append("| " + " | ".join([f"{peer['system']} / Sourcebook", *ratios(peer, base)]) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=RESULTS / "scifact.json",
                        help="bench/scifact.py's results with Sourcebook's ingest timing")
    parser.add_argument("--out", type=Path, default=RESULTS / "peers" / "compare.md")
    args = parser.parse_args()
    text = table(args.bench)
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
