"""The embedding model's graph variants and thread layouts, side by side in one process.

`precision` (the default): the fp32 graph `bert_onnx.build_bert_onnx` writes against int8
quantizations of it (the kept recipe `bert_onnx.quantize_int8`, and the variants it was chosen
over). Fidelity to fp32 on `--docs` SciFact abstracts batched as `LocalEmbedder` batches them:
each vector's cosine to fp32's, and for `--queries` pseudo-queries (titles of the abstracts
that follow; never the eval queries), embedded one at a time, the Spearman correlation of their
scores over all the abstracts and the overlap of their top 10 with fp32's; batch dependence: each
abstract's cosine between its vector embedded alone and in its batch. Speed: model time on
the first `--texts` abstracts, one thread a session, timed interleaved and repeated (median):
wall and process CPU seconds, the steadier figure on a shared machine.

`threads`: the kept int8 graph over SciFact chunk-like and two-sentence window texts, batched
as `LocalEmbedder` batches them, with onnxruntime intra-op threads 1 vs 2 and batches run in
parallel from two Python threads (one session, or one session each).

`runtimes`: the product's embedders at each `embedding_precision` (fp32 and int8 on onnxruntime,
bf16 on OpenVINO), as `LocalEmbedder` runs them (two batches at once on the 2 cores): model
time over `--texts` abstracts and their two-sentence windows, interleaved and repeated, and
fidelity to fp32 as for `precision`.

    python bench/embedding_precision.py [precision|threads|runtimes] [--texts 96] [--repeats 5] [--docs 500] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort

from sourcebook.embedders.bert_onnx import FFN_OUTPUT, build_bert_onnx, quantize_int8
from sourcebook.embedders.late_chunking import padded, plain_feeds
from sourcebook.embedders.local import LocalEmbedder, _bert_graph, _bundled_minilm_dir

DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
# Both FFN MatMuls' weights (INT8_VERSION 3 kept them in MatMulNBits).
FFN_WEIGHTS = re.compile(r"encoder\.layer\.\d+\.(intermediate|output)\.dense\.wt")
# FFN_OUTPUT, and every weight of the first and last layers (their Attention stays fp32).
OUTER_LAYERS = re.compile(rf"{FFN_OUTPUT.pattern}|encoder\.layer\.[05]\..*")


VARIANTS: dict[str, Callable[[bytes], bytes]] = {
    "dynamic, FFN output MatMulNBits (kept, INT8_VERSION 4)": quantize_int8,
    "the same, layers 0 and 5 as INT8_VERSION 2": lambda fp32: quantize_int8(fp32, blockwise=OUTER_LAYERS),
    "QAttention and attention output dynamic, FFN MatMulNBits (INT8_VERSION 3)": lambda fp32: quantize_int8(
        fp32, blockwise=FFN_WEIGHTS),
    "MatMulNBits 8-bit, blocks of 128, Attention fp32 (INT8_VERSION 2)": lambda fp32: quantize_int8(fp32, dynamic_ops=()),
    "the same, blocks of 32": lambda fp32: quantize_int8(fp32, block=32, dynamic_ops=()),
    "the same, QAttention (dynamic)": lambda fp32: quantize_int8(fp32, dynamic_ops=("Attention",)),
    "dynamic MatMul+Attention, per channel (INT8_VERSION 1)": lambda fp32: quantize_int8(fp32, blockwise=None),
    "dynamic MatMul, FFN output MatMulNBits, Attention fp32": lambda fp32: quantize_int8(
        fp32, dynamic_ops=("MatMul",), blockwise=FFN_OUTPUT),
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


def feeds_of(embedder: LocalEmbedder, texts: list[str]) -> list[dict[str, np.ndarray]]:
    """Model inputs, batched as `LocalEmbedder` batches them."""
    rows = embedder._token_rows(texts)
    feeds = []
    for batch in embedder._batches([len(row) for row in rows]):
        ids, mask = padded([rows[i] for i in batch])
        feeds.append(plain_feeds(ids, mask))
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


def race(configs: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """Median wall and process CPU seconds of each configuration, the configurations interleaved
    in every repeat. On a machine shared with other work a run waits for a core about as long as
    it computes, so wall seconds rank configurations by the load they met; CPU seconds do not."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in configs}
    for _ in range(repeats):
        for name, run in configs.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            run()
            times[name].append((time.perf_counter() - started, time.process_time() - started_cpu))
    return {name: (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
            for name, values in times.items()}


def vectors(embedder: LocalEmbedder, run: ort.InferenceSession, texts: list[str], one_at_a_time: bool) -> np.ndarray:
    """Unit vectors of `texts` in their order, run on `run`: batched as `embedder` batches them,
    or one text a run (as a query is embedded)."""
    rows = embedder._token_rows(texts)
    batches = [[i] for i in range(len(rows))] if one_at_a_time else list(embedder._batches([len(r) for r in rows]))
    out = np.empty((len(rows), 384), np.float32)
    for batch in batches:
        ids, mask = padded([rows[i] for i in batch])
        out[batch] = pooled(run.run(None, plain_feeds(ids, mask))[0], mask)
    return out


def fidelity(docs: np.ndarray, queries: np.ndarray, docs_fp32: np.ndarray, queries_fp32: np.ndarray) -> str:
    """Cosine to fp32 (min / mean), mean Spearman correlation of each query's scores with fp32's,
    and mean overlap of its top 10 with fp32's."""
    cosines = np.sum(docs * docs_fp32, axis=1)
    scores, reference = queries @ docs.T, queries_fp32 @ docs_fp32.T
    ranks = scores.argsort(axis=1).argsort(axis=1), reference.argsort(axis=1).argsort(axis=1)
    spearman = np.mean([np.corrcoef(a, b)[0, 1] for a, b in zip(*ranks)])
    top, top_reference = np.argsort(-scores, axis=1)[:, :10], np.argsort(-reference, axis=1)[:, :10]
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, top_reference)])
    return f"{cosines.min():.4f} / {cosines.mean():.4f} | {spearman:.4f} | {overlap:.3f}"


def precision(texts: int, repeats: int, docs: int, queries: int) -> None:
    embedder = LocalEmbedder(precision="fp32")
    feeds = feeds_of(embedder, abstracts(texts, windows=False))
    corpus = abstracts(docs + queries, windows=False)
    documents, titles = corpus[:docs], [text.split("\n", 1)[0] for text in corpus[docs:]]
    fp32 = build_bert_onnx(_bundled_minilm_dir())
    sessions = {"fp32": session(fp32, 1), **{name: session(build(fp32), 1) for name, build in VARIANTS.items()}}
    vecs = {name: (vectors(embedder, s, documents, False), vectors(embedder, s, titles, True)) for name, s in sessions.items()}
    alone = {name: np.sum(vectors(embedder, s, documents, True) * vecs[name][0], axis=1) for name, s in sessions.items()}
    medians = race({name: (lambda s=s: [s.run(None, f) for f in feeds]) for name, s in sessions.items()}, repeats)
    print(f"fidelity: {docs} SciFact abstracts, {queries} pseudo-queries; speed: {texts} abstracts, {len(feeds)} "
          f"batches, one thread, median of {repeats}, load {os.getloadavg()[0]:.1f}")
    print("| graph | seconds | speed vs fp32 | CPU seconds | CPU speed vs fp32 | cosine to fp32, min / mean | Spearman "
          "| top-10 overlap | alone vs in batch, min / mean |\n|---|---|---|---|---|---|---|---|---|")
    (wall, cpu) = medians["fp32"]
    for name, (seconds, cpu_seconds) in medians.items():
        print(f"| {name} | {seconds:.2f} | {wall / seconds:.2f}x | {cpu_seconds:.2f} | {cpu / cpu_seconds:.2f}x "
              f"| {fidelity(*vecs[name], *vecs['fp32'])} | {alone[name].min():.5f} / {alone[name].mean():.5f} |")


def threads(texts: int, repeats: int) -> None:
    embedder = LocalEmbedder(precision="int8")
    feeds = feeds_of(embedder, abstracts(texts, windows=True))
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
    base = medians["2 threads, batches in turn"][0]
    print(f"{texts} SciFact texts (abstracts and windows), {len(feeds)} batches, median of {repeats}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| layout | seconds | speed vs 2 threads in turn | CPU seconds |\n|---|---|---|---|")
    for name, (seconds, cpu_seconds) in medians.items():
        print(f"| {name} | {seconds:.2f} | {base / seconds:.2f}x | {cpu_seconds:.2f} |")


def runtimes(texts: int, repeats: int, docs: int, queries: int) -> None:
    embedders = {precision: LocalEmbedder(precision=precision) for precision in ("fp32", "bf16", "int8")}
    timed = abstracts(texts, windows=True)
    corpus = abstracts(docs + queries, windows=False)
    documents, titles = corpus[:docs], [text.split("\n", 1)[0] for text in corpus[docs:]]
    vecs = {name: (e.embed_documents(documents), np.stack([e.embed_query(t) for t in titles])) for name, e in embedders.items()}
    medians = race({name: (lambda e=e: e.embed_documents(timed)) for name, e in embedders.items()}, repeats)
    print(f"speed: {texts} SciFact abstracts and windows, median of {repeats}, load {os.getloadavg()[0]:.1f}; "
          f"fidelity: {docs} abstracts, {queries} pseudo-queries (int8: queries through fp32, as the product does)")
    print("| precision (runtime) | seconds | CPU seconds | CPU speed vs fp32 | cosine to fp32, min / mean | Spearman "
          "| top-10 overlap |\n|---|---|---|---|---|---|---|")
    cpu = medians["fp32"][1]
    runtime = {"fp32": "onnxruntime", "bf16": "OpenVINO", "int8": "onnxruntime"}
    for name, (seconds, cpu_seconds) in medians.items():
        print(f"| {name} ({runtime[name]}) | {seconds:.2f} | {cpu_seconds:.2f} | {cpu / cpu_seconds:.2f}x "
              f"| {fidelity(*vecs[name], *vecs['fp32'])} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=("precision", "threads", "runtimes"), default="precision")
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--docs", type=int, default=500, help="precision: abstracts for fidelity to fp32")
    parser.add_argument("--queries", type=int, default=200, help="precision: pseudo-queries for fidelity")
    args = parser.parse_args()
    if args.what == "precision":
        precision(args.texts, args.repeats, args.docs, args.queries)
    elif args.what == "runtimes":
        runtimes(args.texts, args.repeats, args.docs, args.queries)
    else:
        threads(args.texts, args.repeats)


if __name__ == "__main__":
    main()
