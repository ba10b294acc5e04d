"""The embedding model's graph variants and thread layouts, side by side in one process.

`precision` (the default): the fp32 graph `bert_onnx.build_bert_onnx` writes against int8
quantizations of it (the kept recipe `bert_onnx.quantize_int8`, and the variants it was chosen
over), on the first N SciFact abstracts as the model sees them (at most 256 tokens, sorted,
batches of 8), timed interleaved and repeated (median), with each variant's cosine to fp32.

`threads`: the kept int8 graph over SciFact chunk-like and two-sentence window texts, batched
as `LocalEmbedder` batches them, with onnxruntime intra-op threads 1 vs 2 and batches run in
parallel from two Python threads (one session, or one session each).

    python bench/embedding_precision.py [precision|threads] [--texts 96] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from sourcebook.embedders.bert_onnx import build_bert_onnx
from sourcebook.embedders.local import LocalEmbedder, _bert_graph, _bundled_minilm_dir

DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
VARIANTS: dict[str, dict[str, object]] = {
    "MatMul+Attention, per channel (kept)": {"ops": ["MatMul", "Attention"], "per_channel": True},
    "MatMul+Attention, per tensor": {"ops": ["MatMul", "Attention"], "per_channel": False},
    "MatMul only, per channel": {"ops": ["MatMul"], "per_channel": True},
    "per channel, reduce_range": {"ops": ["MatMul", "Attention"], "per_channel": True, "reduce_range": True},
    "per channel, unsigned weights": {"ops": ["MatMul", "Attention"], "per_channel": True, "unsigned": True},
}


def abstracts(limit: int, windows: bool) -> list[str]:
    """Title + abstract of the first records; with `windows`, each one's two-sentence windows too."""
    texts: list[str] = []
    with open(DATA / "corpus.jsonl", encoding="utf-8") as corpus:
        for line in corpus:
            record = json.loads(line)
            texts.append(f"{record['title']}\n{record['text']}")
            if windows:
                sentences = re.split(r"(?<=\.) ", record["text"])
                texts += [f"{record['title']}\n{' '.join(sentences[i:i + 2])}" for i in range(len(sentences) - 1)]
            if len(texts) >= limit:
                return texts[:limit]
    return texts


def feeds_of(embedder: LocalEmbedder, texts: list[str], fixed_rows: int | None) -> list[dict[str, np.ndarray]]:
    """Model inputs: batches of `fixed_rows` sorted texts, or `LocalEmbedder`'s own batches."""
    rows = embedder._token_rows(texts)
    lengths = [len(row) for row in rows]
    if fixed_rows:
        order = sorted(range(len(rows)), key=lengths.__getitem__)
        batches = [order[i : i + fixed_rows] for i in range(0, len(order), fixed_rows)]
    else:
        batches = list(embedder._batches(lengths))
    feeds = []
    for batch in batches:
        width = max(lengths[i] for i in batch)
        ids = np.zeros((len(batch), width), np.int64)
        mask = np.zeros_like(ids)
        for r, i in enumerate(batch):
            ids[r, : lengths[i]] = rows[i]
            mask[r, : lengths[i]] = 1
        feeds.append({"input_ids": ids, "attention_mask": mask})
    return feeds


def session(graph: bytes | str, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    vectors = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def quantized(fp32: bytes, recipe: dict[str, object]) -> bytes:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "fp32.onnx", Path(folder) / "int8.onnx"
        source.write_bytes(fp32)
        quantize_dynamic(
            source, target, op_types_to_quantize=recipe["ops"], per_channel=bool(recipe["per_channel"]),
            reduce_range=bool(recipe.get("reduce_range")),
            weight_type=QuantType.QUInt8 if recipe.get("unsigned") else QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        return target.read_bytes()


def race(configs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each configuration, the configurations interleaved in every repeat."""
    times: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(repeats):
        for name, run in configs.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def precision(texts: int, repeats: int) -> None:
    embedder = LocalEmbedder(precision="fp32")
    feeds = feeds_of(embedder, abstracts(texts, windows=False), fixed_rows=8)
    fp32 = build_bert_onnx(_bundled_minilm_dir())
    sessions = {"fp32": session(fp32, 0), **{name: session(quantized(fp32, recipe), 0) for name, recipe in VARIANTS.items()}}
    vectors = {name: np.concatenate([pooled(s.run(None, f)[0], f["attention_mask"]) for f in feeds]) for name, s in sessions.items()}
    medians = race({name: (lambda s=s: [s.run(None, f) for f in feeds]) for name, s in sessions.items()}, repeats)
    print(f"{texts} SciFact abstracts, {len(feeds)} batches, median of {repeats}, load {os.getloadavg()[0]:.1f}")
    print("| graph | seconds | speed vs fp32 | cosine to fp32, min / mean |\n|---|---|---|---|")
    for name, seconds in medians.items():
        cosines = np.sum(vectors[name] * vectors["fp32"], axis=1)
        print(f"| {name} | {seconds:.2f} | {medians['fp32'] / seconds:.2f}x | {cosines.min():.3f} / {cosines.mean():.3f} |")


def threads(texts: int, repeats: int) -> None:
    embedder = LocalEmbedder(precision="int8")
    feeds = feeds_of(embedder, abstracts(texts, windows=True), fixed_rows=None)
    graph = _bert_graph(_bundled_minilm_dir(), "int8")
    one, two, other_one = session(graph, 1), session(graph, 2), session(graph, 1)
    pool = ThreadPoolExecutor(2)
    halves = [feeds[0::2], feeds[1::2]]
    configs: dict[str, Callable[[], object]] = {
        "2 threads, batches in turn": lambda: [two.run(None, f) for f in feeds],
        "1 thread, batches in turn": lambda: [one.run(None, f) for f in feeds],
        "1 thread, 2 batches at once (one session)": lambda: list(pool.map(lambda f: one.run(None, f), feeds)),
        "1 thread, 2 batches at once (a session each)": lambda: list(pool.map(
            lambda pair: [pair[0].run(None, f) for f in pair[1]], [(one, halves[0]), (other_one, halves[1])])),
        "2 threads, 2 batches at once": lambda: list(pool.map(lambda f: two.run(None, f), feeds)),
    }
    medians = race(configs, repeats)
    base = medians["2 threads, batches in turn"]
    print(f"{texts} SciFact texts (abstracts and windows), {len(feeds)} batches, median of {repeats}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| layout | seconds | speed vs 2 threads in turn |\n|---|---|---|")
    for name, seconds in medians.items():
        print(f"| {name} | {seconds:.2f} | {base / seconds:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=("precision", "threads"), default="precision")
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    (precision if args.what == "precision" else threads)(args.texts, args.repeats)


if __name__ == "__main__":
    main()
