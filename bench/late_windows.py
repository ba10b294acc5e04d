"""Sentence-window vectors: what they cost the model, and what they score, per design.

Designs (chunking/windows.py, embedders/late_chunking.py):
- "separate": each window embedded as a sequence of its own (prefix, then its two sentences),
  the default;
- "late": each window pooled from its chunk's single forward pass, the prefix's tokens joining
  every window's pool (`late_windows = true`);
- "late-no-prefix": the same, the window's own tokens only;
- "confined": pooled from the chunk's pass with each token attending only to its window
  neighbourhood, the last layer run twice (`window_pooling = "confined"`);
- "sentences": the prefix and each sentence embedded alone, the windows and the chunk's own
  vector pooled from those passes (`window_pooling = "sentences"`);
- "pairs": every other window embedded as a text, the windows between and the chunk's vector
  pooled from those passes (`window_pooling = "pairs"`).

`cost` chunks the first `--limit` SciFact records as `add` does and times, in one process and
interleaved, the model on the chunks alone, on the chunks and their windows as texts
("separate"), and on the chunks with their windows pooled ("late"); it prints each one's CPU and
wall seconds as a ratio of the chunks alone (median of `--repeat` rounds).

`quality DESIGN DATASET --db PATH` runs `sourcebook eval retrieval DATASET --db PATH --json` with
ingestion switched to DESIGN (build a fresh --db per design: windows are stored at ingest).

`prefix INDEX.db --out DIR` scores a SciFact index that is still being built (or was stopped):
its first K corpus records that are ready become a BEIR dataset of their own (the test queries
with a relevant record among them, judged on those records only), evaluated as the index holds
them and with its window vectors dropped (chunk vectors alone), each on a copy of the index.

    python bench/late_windows.py cost [--limit 200] [--repeat 3]
    python bench/late_windows.py quality late-no-prefix eval/pydocs --db /tmp/pd-noprefix.db
    python bench/late_windows.py prefix /tmp/sf-late.db --out /tmp/sf-prefix
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sourcebook.ingest as ingest
from sourcebook.chunking import chunk_document, window_spans, window_texts
from sourcebook.embedders import create_embedder
from sourcebook.embedders.base import span_embedder
from sourcebook.loaders import iter_beir
from sourcebook.settings import Settings

SCIFACT = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))


def _timed(run: Callable[[], Any]) -> tuple[float, float]:
    """(CPU seconds of the whole process, wall seconds) of one call: CPU is the comparable
    figure on a shared machine, as onnxruntime's threads count in it."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def cost(limit: int, repeat: int) -> None:
    settings = Settings()
    embedder = create_embedder(settings)
    spans = span_embedder(embedder)
    assert spans is not None, f"{embedder.name} cannot pool spans"
    budget = min(settings.chunk_max_tokens, embedder.max_tokens)
    documents = list(itertools.islice(iter_beir(str(SCIFACT / "corpus.jsonl")), limit))
    chunks = [c for doc in documents for c in chunk_document(doc, embedder.count_tokens, budget, settings.chunk_overlap)]
    texts = [c.embedding_text for c in chunks]
    windows = [text for c in chunks for text in window_texts(c)]
    pooled = [window_spans(c) for c in chunks]
    print(f"{len(documents)} SciFact documents: {len(chunks)} chunks ({sum(embedder.count_tokens(texts))} tokens), "
          f"{len(windows)} windows ({sum(embedder.count_tokens(windows))} tokens as texts)", flush=True)
    designs: dict[str, Callable[[], Any]] = {
        "chunks alone": lambda: embedder.embed_documents(texts),
        "separate": lambda: embedder.embed_documents(texts + windows),
        "late": lambda: spans.embed_documents_with_spans(texts, pooled),
        "confined": lambda: spans.embed_documents_with_spans(texts, pooled, confine=True),
        "sentences": lambda: spans.embed_documents_with_spans(texts, pooled, apart="sentences"),
        "pairs": lambda: spans.embed_documents_with_spans(texts, pooled, apart="pairs"),
    }
    embedder.embed_documents(texts[:64])  # warm the kernels
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in designs}
    for round_number in range(repeat):
        for name, run in designs.items():
            rounds[name].append(_timed(run))
        base_cpu, base_wall = rounds["chunks alone"][-1]
        print(f"round {round_number + 1} (load {os.getloadavg()[0]:.1f}): " + ", ".join(
            f"{name} {cpu / base_cpu:.2f}x CPU {wall / base_wall:.2f}x wall" for name, (cpu, wall) in
            ((n, r[-1]) for n, r in rounds.items())), flush=True)
    print("| design | CPU s | wall s | CPU vs chunks alone | wall vs chunks alone |")
    print("|---|---|---|---|---|")
    for name, measured in rounds.items():
        cpu_ratio = statistics.median(c / b[0] for (c, _), b in zip(measured, rounds["chunks alone"]))
        wall_ratio = statistics.median(w / b[1] for (_, w), b in zip(measured, rounds["chunks alone"]))
        cpu_s = statistics.median(c for c, _ in measured)
        wall_s = statistics.median(w for _, w in measured)
        print(f"| {name} | {cpu_s:.1f} | {wall_s:.1f} | {cpu_ratio:.2f}x | {wall_ratio:.2f}x |")


def quality(design: str, dataset: str, db: str) -> None:
    os.environ["SOURCEBOOK_WINDOW_POOLING"] = "late" if design.startswith("late") else design
    if design == "late-no-prefix":
        with_prefix = ingest.window_spans
        ingest.window_spans = lambda chunk: [  # type: ignore[assignment]
            window[1:] if chunk.prefix else window for window in with_prefix(chunk)
        ]
    from sourcebook.cli import app

    app(["eval", "retrieval", dataset, "--db", db, "--json"])


def ready_prefix(index: str, out: Path) -> int:
    """Write the BEIR dataset of the index's ready first records to `out`; how many records."""
    with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
        ready = {source for (source,) in conn.execute("SELECT source FROM documents WHERE status = 'ready'")}
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    kept: set[str] = set()
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as corpus, open(out / "corpus.jsonl", "w", encoding="utf-8") as subset:
        for line in corpus:
            record_id = str(json.loads(line)["_id"])
            if record_id not in ready:  # a BEIR record's source is its id
                break
            kept.add(record_id)
            subset.write(line)
    (out / "queries.jsonl").write_text((SCIFACT / "queries.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    lines = (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    judged = [line for line in lines[1:] if line.split("\t")[1] in kept]
    (out / "qrels" / "test.tsv").write_text("\n".join([lines[0], *judged]) + "\n", encoding="utf-8")
    return len(kept)


def prefix(index: str, out: Path) -> None:
    records = ready_prefix(index, out / "dataset")
    print(f"{index}: its first {records} SciFact records are ready", flush=True)
    from sourcebook.cli import app

    for name, drop_windows in (("late windows", False), ("chunk vectors alone", True)):
        copy = out / f"{name.replace(' ', '-')}.db"
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as source, sqlite3.connect(copy) as target:
            source.backup(target)
            if drop_windows:
                target.execute("UPDATE vectors SET windows = NULL")
        print(f"{name}:", flush=True)
        app(["eval", "retrieval", str(out / "dataset"), "--db", str(copy), "--json"], standalone_mode=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    timing = commands.add_parser("cost", help="model time per design on the first SciFact records")
    timing.add_argument("--limit", type=int, default=200)
    timing.add_argument("--repeat", type=int, default=3)
    scoring = commands.add_parser("quality", help="`sourcebook eval retrieval` with one design")
    scoring.add_argument("design", choices=("confined", "separate", "sentences", "pairs", "late", "late-no-prefix"))
    scoring.add_argument("dataset")
    scoring.add_argument("--db", required=True)
    partial = commands.add_parser("prefix", help="score the ready first records of a SciFact index being built")
    partial.add_argument("index")
    partial.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "cost":
        cost(args.limit, args.repeat)
    elif args.command == "quality":
        quality(args.design, args.dataset, args.db)
    else:
        prefix(args.index, args.out)


if __name__ == "__main__":
    main()
