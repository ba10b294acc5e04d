"""The embedded tier at scale: memory, open time, search latency, recall and a write, at N chunks.

The knowledge base is bench/latency_100k.py's synthetic one (SciFact sentences recombined,
real chunk vectors plus noise, as many sentence-window vectors per chunk as its text has),
written through the store and cached under bench/.cache/. Then, each step in a process of its
own so no step's memory or caches leak into the next:

1. prepare: open the store and search once, so the vector and keyword indexes are built and
   saved beside the database as a user's first searches would (`index_build_s` is the vector
   index's time);
2. truth: the exact top 50 chunks of every query and their scores, by a float32 scan of every
   stored vector (a chunk scoring its best row), streamed so it never holds the matrix;
3. measure, in a fresh process: cold open, the first query, p50/p95 of hybrid, keyword and
   vector search through the retriever (query vectors embedded beforehand: the model is not
   loaded in this process), recall@10 of the production vector search against step 2 (and
   recall with ties: a hit counts when its exact score is within TIE of the exact 10th's, as
   ann-benchmarks' "epsilon" recall does, since the synthetic clusters make the 10th to the
   50th exact scores near-ties; the issue's recall stays the headline), then
   one document of 10 chunks added through the store and the time until a search finds it,
   and the peak RSS of the whole process (getrusage).

    python bench/scale.py --chunks 100000 [--queries 200] [--json] [--rebuild] [--store postgres]

`--store postgres` measures the Postgres store instead, on an embedded server holding the same
corpus (bench/scale_postgres.py builds and caches it); the steps are the same, and the figures are
client wall times (the server's work is not this process's CPU).

`--json` prints one line: {"chunks", "rss_mb", "open_s", "first_query_ms", "hybrid_p50_ms",
"keyword_p50_ms", "vector_p50_ms", "recall_at_10", "add_one_s", "file_mb"}; the full report
(p95s, index build, load averages) goes to bench/results/scale-<N>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from latency_100k import CACHE, DATA, cached_database, corpus_params, key_of, load, noisy, timings  # noqa: E402
from scale_postgres import cached_server, database_mb, stored_blocks  # noqa: E402

from sourcebook import KnowledgeBase, Settings  # noqa: E402
from sourcebook.models import Chunk, DocumentStatus, SearchFilter, sha256_text  # noqa: E402
from sourcebook.retrieval import Retriever, SearchOptions  # noqa: E402
from sourcebook.stores import open_store  # noqa: E402

RESULTS = HERE / "results"
EVERYTHING = SearchFilter()
TRUTH_BATCH = 8192  # chunks per block of the exact scan
TRUTH_DEPTH = 50  # exact hits kept per query: enough to score the ties of the 10th
CORPUS = (10, 2000, 0.025, 0)  # chunks per document, real texts embedded, noise, seed (latency_100k.build)
TIE = 1e-3  # cosine within which a hit ties the exact 10th (float16 rescoring is exact to about this)


def query_vectors(probe: KnowledgeBase, count: int) -> tuple[list[str], Path]:
    """The first `count` SciFact test queries and the .npy file of their vectors (embedded once, cached)."""
    ids: list[str] = []
    with open(DATA / "qrels" / "test.tsv", encoding="utf-8") as lines:
        next(lines)
        for line in lines:
            query_id = line.split("\t")[0]
            if line.strip() and query_id not in ids:
                ids.append(query_id)
    with open(DATA / "queries.jsonl", encoding="utf-8") as lines:
        texts = {str(r["_id"]): r["text"] for r in map(json.loads, lines)}
    queries = [texts[q] for q in ids[:count]]
    cached = CACHE / f"scale_queries-{key_of({'model': probe.embedder.name, 'queries': queries})}.npy"
    if not cached.exists():
        np.save(cached, probe.embedder.embed_documents(queries))
    return queries, cached


def sqlite_blocks(db: str) -> Iterator[tuple[list[str], np.ndarray, np.ndarray]]:
    """Every chunk's stored rows of the SQLite store, in blocks: (chunk ids, their rows, each
    chunk's row count: its vector, then its windows)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    cursor = conn.execute("SELECT c.id, v.vector, v.windows FROM chunks c JOIN vectors v ON v.chunk_seq = c.seq")
    while block := cursor.fetchmany(TRUTH_BATCH):
        dimension = len(block[0][1]) // 4
        rows = np.frombuffer(b"".join(v + (w or b"") for _, v, w in block), dtype=np.float32).reshape(-1, dimension)
        yield [i for i, _, _ in block], rows, np.array([1 + len(w or b"") // len(v) for _, v, w in block])
    conn.close()


def exact_top(blocks: Iterable[tuple[list[str], np.ndarray, np.ndarray]],
              vectors: np.ndarray) -> list[list[tuple[str, float]]]:
    """Each query's TRUTH_DEPTH best (chunk id, score) by an exact float32 scan of every stored row
    (a chunk scores its best row), streamed block by block so it never holds the matrix."""
    best_ids = np.empty((len(vectors), 0), dtype=object)
    best_scores = np.empty((len(vectors), 0), dtype=np.float32)
    for block_ids, rows, counts in blocks:
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        scores = np.maximum.reduceat(vectors @ rows.T, starts, axis=1)  # (queries, chunks)
        ids = np.array(block_ids, dtype=object)
        all_scores = np.concatenate([best_scores, scores], axis=1)
        all_ids = np.concatenate([best_ids, np.broadcast_to(ids, scores.shape)], axis=1)
        keep = np.argsort(-all_scores, axis=1, kind="stable")[:, :TRUTH_DEPTH]
        best_scores = np.take_along_axis(all_scores, keep, axis=1)
        best_ids = np.take_along_axis(all_ids, keep, axis=1)
    return [[(str(i), float(score)) for i, score in zip(ids, scores)] for ids, scores in zip(best_ids, best_scores)]


def recalls(found: list[list[str]], truth: list[list[tuple[str, float]]]) -> tuple[float, float]:
    """(recall@10 against the exact top 10, recall@10 with ties: a hit counts when its exact score
    is at least the exact 10th's minus TIE)."""
    plain, tied = [], []
    for hits, exact in zip(found, truth):
        top = {chunk for chunk, _ in exact[:10]}
        floor = exact[min(9, len(exact) - 1)][1] - TIE
        scores = dict(exact)
        plain.append(len(set(hits) & top) / len(top))
        tied.append(min(1.0, sum(scores.get(hit, -1.0) >= floor for hit in hits) / len(top)))
    return float(np.mean(plain)), float(np.mean(tied))


def prepare(db: str, vectors: np.ndarray) -> dict[str, float]:
    """Open and search once: builds (and saves) the vector and keyword indexes if they are not
    there yet, so the measured first query maps saved indexes whatever ran before."""
    start = time.perf_counter()
    with open_store(str(db)) as store:
        store.vector_search(vectors[0], 10, EVERYTHING)
        vector_s = time.perf_counter() - start
        store.keyword_search("scale", 10, EVERYTHING)
    return {"index_build_s": vector_s, "keyword_index_build_s": time.perf_counter() - start - vector_s}


def measure(db: str, queries: list[str], vectors: np.ndarray, truth: list[list[tuple[str, float]]]) -> dict[str, Any]:
    """Everything step 3 of the module docstring lists, in this (fresh) process."""
    start = time.perf_counter()
    store = open_store(str(db))
    settings = Settings(db=str(db))
    open_s = time.perf_counter() - start

    def no_model() -> Any:
        raise AssertionError("the bench passes query vectors; the model must not load")

    retriever = Retriever(store, no_model)
    options = {mode: SearchOptions.from_settings(settings, mode=mode, top_k=10, per_document=1)
               for mode in ("hybrid", "keyword", "vector")}
    start = time.perf_counter()
    retriever.search(queries[0], options["hybrid"], vectors[0])
    first_query_ms = (time.perf_counter() - start) * 1000
    latency = {}
    for mode, option in options.items():
        cpu: list[float] = []
        p50, p95, _ = timings(lambda i, o=option: cpu_timed(cpu, lambda: retriever.search(queries[i], o, vectors[i])),
                              len(queries))
        latency[mode] = {"p50_ms": p50, "p95_ms": p95, "cpu_p50_ms": float(np.median(cpu[1:]) * 1000)}
    store_vector_cpu_ms, store_vector_wall_ms = {}, {}
    for k in (10, 200):  # the store alone, without the retriever's hit building (get_chunks)
        cpu, wall = [], []
        for v in vectors:
            start = time.perf_counter()
            cpu_timed(cpu, lambda: store.vector_search(v, k, EVERYTHING))
            wall.append(time.perf_counter() - start)
        store_vector_cpu_ms[k] = float(np.median(cpu) * 1000)
        store_vector_wall_ms[k] = float(np.median(wall) * 1000)  # Postgres: the server's work is not this process's CPU
    found = [[hit.chunk_id for hit in store.vector_search(v, 10, EVERYTHING)] for v in vectors]
    recall, recall_ties = recalls(found, truth)
    add_one_s = add_one_and_find_it(store, vectors)
    resident = resident_split()  # before closing: the index files are still mapped
    store.close()
    return {"open_s": open_s, "first_query_ms": first_query_ms, "latency": latency, "recall_at_10": recall,
            "recall_at_10_ties": recall_ties, "add_one_s": add_one_s, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_now_mb": resident, "store_vector_cpu_p50_ms": store_vector_cpu_ms,
            "store_vector_wall_p50_ms": store_vector_wall_ms}


def resident_split() -> dict[str, float]:
    """The process's resident memory now, by kind: anonymous (heaps, arrays) and file-backed (the
    memory-mapped index files: page cache the kernel may drop and other processes share)."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {kind: int(fields[f"Rss{kind}"].split()[0]) / 1024 for kind in ("Anon", "File")}


def cpu_timed(seconds: list[float], call: Any) -> None:
    """Run `call`, appending the CPU time it took: on a machine shared with other work the
    wall time measures the queue as much as the search, the process's CPU time does not."""
    start = time.process_time()
    call()
    seconds.append(time.process_time() - start)


def add_one_and_find_it(store: Any, vectors: np.ndarray) -> float:
    """Seconds from writing a new 10-chunk document (with window vectors) to a hybrid-free vector
    search that returns it first: the write plus the index catching up, not the model."""
    rng = np.random.default_rng(7)
    base = noisy(rng, vectors[rng.integers(len(vectors), size=10)], 0.01)
    windows = [noisy(rng, np.repeat(base[i : i + 1], 4, axis=0), 0.01) for i in range(10)]
    chunks = [Chunk(i, f"added chunk {i}", 0, 14, (), None, 4, "added") for i in range(10)]
    document_id = f"scale-added-{time.time_ns()}"
    start = time.perf_counter()
    store.upsert_document(document_id, collection="default", source=document_id, title="added",
                          media_type="text/plain", metadata={}, status=DocumentStatus.PROCESSING)
    store.replace_chunks(document_id, content_hash=sha256_text(document_id), title="added", chunks=chunks,
                         vectors=base, windows=windows)
    hits = store.vector_search(base[3], 1, EVERYTHING)
    elapsed = time.perf_counter() - start
    if not hits or hits[0].chunk_id != f"{document_id}#3":
        raise AssertionError(f"the added document was not found: {hits}")
    store.delete_document(document_id)
    return elapsed


def file_mb(db: Path | str) -> float:
    """The knowledge base's size on disk: the SQLite file, its WAL and its index files, or the
    Postgres database."""
    if is_postgres(db):
        return database_mb(str(db))
    files = [Path(db), Path(f"{db}-wal")]
    index_dir = Path(f"{db}.indexes")
    if index_dir.is_dir():
        files += [f for f in index_dir.rglob("*") if f.is_file()]
    return sum(f.stat().st_size for f in files if f.is_file()) / 1e6


def is_postgres(db: Path | str) -> bool:
    return str(db).startswith(("postgresql://", "postgres://"))


def child(step: str, db: Path | str, vectors_file: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """Run `step` in a fresh interpreter; its result comes back as the last line of its output."""
    command = [sys.executable, __file__, "--step", step, "--db", str(db), "--vectors", str(vectors_file),
               "--step-args", json.dumps(extra)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def run_step(args: argparse.Namespace) -> None:
    db, vectors = args.db, np.load(args.vectors)
    extra = json.loads(args.step_args)
    if args.step == "prepare":
        result: Any = prepare(db, vectors)
    elif args.step == "truth":
        result = exact_top(stored_blocks(db) if is_postgres(db) else sqlite_blocks(db), vectors)
    else:
        result = measure(db, extra["queries"], vectors, json.loads(Path(extra["truth_file"]).read_text()))
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--rebuild", action="store_true", help="ignore a cached database")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite",
                        help="postgres: the Postgres store on an embedded server (bench/scale_postgres.py)")
    parser.add_argument("--step", choices=("prepare", "truth", "measure"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    parser.add_argument("--step-args", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        run_step(args)
        return
    log = (lambda message: None) if args.json else (lambda message: print(message, flush=True))
    probe = KnowledgeBase.open(":memory:")
    server = None
    if args.store == "postgres":
        params = corpus_params(probe, args.chunks, *CORPUS)
        server, db, built = cached_server(probe, params, args.rebuild, log)
        cache_file = CACHE / f"pg-{key_of(params)}.json"
    else:
        path, params, built = cached_database(probe, args.chunks, *CORPUS, args.rebuild)
        db, cache_file = str(path), path
    queries, vectors_file = query_vectors(probe, args.queries)
    probe.close()
    try:
        report = run(args, db, cache_file, queries, vectors_file, log)
    finally:
        if server is not None:
            server.stop()
    report["params"], report["build"], report["store"] = params, built, args.store
    line = report["summary"]
    RESULTS.mkdir(exist_ok=True)
    name = f"scale-{args.chunks}" + ("-postgres" if server is not None else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    if args.json:
        print(json.dumps(line))
        return
    measured = report["measure"]
    for key, value in line.items():
        log(f"{key:>16}: {value}")
    for mode, values in measured["latency"].items():
        log(f"{mode:>8}: p95 {values['p95_ms']:.2f} ms, CPU p50 {values['cpu_p50_ms']:.2f} ms")
    log(f"recall@10 with ties (within {TIE} of the exact 10th): {measured['recall_at_10_ties']:.4f}")
    log(f"store.vector_search p50 by k: CPU {measured['store_vector_cpu_p50_ms']} ms, "
        f"wall {measured['store_vector_wall_p50_ms']} ms")
    log(f"resident at the end: {measured['rss_now_mb']} MB; load average: {report['loadavg']}")


def run(args: argparse.Namespace, db: str, cache_file: Path, queries: list[str], vectors_file: Path,
        log: Any) -> dict[str, Any]:
    """Steps 1-3 of the module docstring on the built knowledge base `db` (a path or a DSN); the
    exact top lists are cached beside `cache_file`."""
    report: dict[str, Any] = {"loadavg": {"start": load()}}
    report["prepare"] = child("prepare", db, vectors_file, {})
    log(f"index ready in {report['prepare']['index_build_s']:.1f} s")
    truth_file = cache_file.with_name(f"{cache_file.stem}-truth-{key_of({'queries': queries, 'depth': TRUTH_DEPTH})}.json")
    if not truth_file.exists():
        truth_file.write_text(json.dumps(child("truth", db, vectors_file, {})))
    report["loadavg"]["before_measure"] = load()
    measured = child("measure", db, vectors_file, {"queries": queries, "truth_file": str(truth_file)})
    report["measure"] = measured
    report["loadavg"]["end"] = load()
    latency = measured["latency"]
    line = {
        "chunks": args.chunks, "rss_mb": round(measured["rss_mb"], 1), "open_s": round(measured["open_s"], 3),
        "first_query_ms": round(measured["first_query_ms"], 1),
        "hybrid_p50_ms": round(latency["hybrid"]["p50_ms"], 2), "keyword_p50_ms": round(latency["keyword"]["p50_ms"], 2),
        "vector_p50_ms": round(latency["vector"]["p50_ms"], 2), "recall_at_10": round(measured["recall_at_10"], 4),
        "add_one_s": round(measured["add_one_s"], 3), "file_mb": round(file_mb(db), 1),
    }
    report["summary"] = line
    return report

if __name__ == "__main__":
    main()
