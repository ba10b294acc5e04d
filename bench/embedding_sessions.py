"""Peak memory and speed of the embedder against an earlier source tree, side by side.

Written for the change from a session per parallel run to one shared onnxruntime session
(without memory patterns): run it with `--baseline-src` pointing at a tree from before that
change (`git archive d1db4c6 src | tar -x -C /tmp/base`) to see what the change costs and saves.
Each tree embeds the first N SciFact abstracts in a fresh process (peak RSS is per process), the
trees alternate, each figure is the median over `--repeats` rounds, and the vectors of both
trees are compared.

    python bench/embedding_sessions.py --baseline-src /tmp/base/src [--texts 320] [--repeats 5] [--precision fp32|int8]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
SOURCE = Path(__file__).resolve().parent.parent / "src"


def _texts(limit: int) -> list[str]:
    texts: list[str] = []
    with (DATA / "corpus.jsonl").open() as lines:
        for line in lines:
            record = json.loads(line)
            texts.append(f"{record['title']}. {record['text']}")
            if len(texts) == limit:
                break
    return texts


def _measure(limit: int, precision: str) -> dict[str, float]:
    """Runs in the child process, on whichever tree PYTHONPATH names."""
    from sourcebook.embedders.local import LocalEmbedder

    embedder = LocalEmbedder(precision=precision)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    texts = _texts(limit)
    started, cpu = time.perf_counter(), time.process_time()
    vectors = embedder.embed_documents(texts)
    return {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
        "loaded_mb": loaded,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "checksum": float(abs(vectors).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=Path, required=True, help="the src/ folder of the tree to compare with")
    parser.add_argument("--texts", type=int, default=320)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--precision", choices=("fp32", "int8"), default="fp32")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.texts, args.precision)))
        return
    trees = {"this tree": SOURCE, "baseline": args.baseline_src.resolve()}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.repeats):
        for name, source in trees.items():
            child = [sys.executable, __file__, "--child", "--baseline-src", str(source),
                     "--texts", str(args.texts), "--precision", args.precision]
            done = subprocess.run(child, capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(source)})
            runs[name].append(json.loads(done.stdout.splitlines()[-1]))
    print(f"{args.texts} SciFact abstracts, {args.precision}, median of {args.repeats} fresh processes per tree")
    print("| tree | seconds | CPU seconds | RSS after loading MB | peak RSS MB |")
    print("|---|---|---|---|---|")
    for name, measured in runs.items():
        median = {key: statistics.median(run[key] for run in measured) for key in measured[0]}
        print(f"| {name} | {median['seconds']:.2f} | {median['cpu_seconds']:.2f} | {median['loaded_mb']:.0f} | {median['peak_mb']:.0f} |")
    sums = {name: {round(run["checksum"], 3) for run in measured} for name, measured in runs.items()}
    print("same vectors in both trees:", sums["this tree"] == sums["baseline"])


if __name__ == "__main__":
    main()
