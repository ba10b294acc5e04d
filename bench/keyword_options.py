"""Keyword index options side by side on one knowledge base: what index/keywords.py was chosen over.

Every engine indexes the same analysed chunks (the store's `chunk_terms` rows: Porter stems,
stopwords kept in the index and dropped from queries, stores/bm25.py) and answers the same
SciFact test queries with the same terms, so only the index differs:

* ``segments``: this store's keyword search (index/keywords.py through the store), on a copy of
  the database: cold open from a saved base, p50, one document added and found;
* ``baseline``: the same calls with the source tree given by ``--baseline-src`` first on the path
  (e.g. ``git archive 8f414a4 src``: one in-memory index rebuilt from every row after any write);
* ``tantivy`` (tantivy-py 0.27.0, on disk, mmap; pre-analysed terms, whitespace tokenizer);
* ``bm25s`` (0.3.16, numpy backend; it has no incremental add: a write re-indexes everything);
* ``fts5`` (SQLite FTS5, porter unicode61, bm25() ORDER BY rank LIMIT k, on the chunk texts).

Each engine runs in a fresh process, so its peak RSS (ru_maxrss) is its own (``segments`` is built
and saved in one process, ``segments-build``, and measured from a cold open in the next). Times: ``build_s``
index from the rows; ``open_s`` from its files in a fresh process; ``p50_ms`` / ``p95_ms`` one
query at k=200 (the pool a hybrid search asks for); ``add_one_s`` write one document of 3 chunks
and run the first search that sees it.

    pip install --target DIR tantivy==0.27.0 bm25s==0.3.16   # measurement only, not dependencies
    PYTHONPATH=src:DIR python bench/keyword_options.py DB [--engines segments,baseline,tantivy,bm25s,fts5]
        [--scale 10]   # every document of DB ten times (a cached keyword-only copy): 1M chunks from 100k
        [--head-to-head 3]   # only baseline vs this store, query by query in one process (3 rounds)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sourcebook.evaluation.metrics import percentile
from sourcebook.stores.bm25 import B, K1, query_terms, query_words

DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
K = 200
NEW_TEXTS = ["Zebrafish regenerate cardiac tissue after cryoinjury.", "Regeneration needs fibroblasts.",
             "Zebrafish hearts scar less than mouse hearts."]


def queries(n: int) -> list[str]:
    with open(DATA / "queries.jsonl", encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines]
    return texts[:n]


def term_rows(db: str) -> tuple[list[tuple[int, str, str, int, np.ndarray, np.ndarray]], dict[str, int]]:
    """(seq, chunk id, document id, length, term ids, counts) of the default tenant, and the vocabulary."""
    with sqlite3.connect(db) as conn:
        vocabulary = dict(conn.execute("SELECT term, id FROM terms"))
        rows = [
            (seq, chunk_id, document_id, length, np.frombuffer(ids, np.int32), np.frombuffer(counts, np.int32))
            for seq, chunk_id, document_id, length, ids, counts in conn.execute(
                """SELECT c.seq, c.id, c.document_id, t.length, t.term_ids, t.counts
                   FROM chunks c CROSS JOIN chunk_terms t WHERE t.chunk_seq = c.seq ORDER BY c.seq""")
        ]
    return rows, vocabulary


def timed_queries(search: Callable[[str], object], texts: list[str]) -> dict[str, float]:
    search(texts[0])
    values = []
    for text in texts:
        start = time.perf_counter()
        search(text)
        values.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": percentile(values, 50), "p95_ms": percentile(values, 95)}


def tokens(term_ids: np.ndarray, counts: np.ndarray) -> list[str]:
    return [f"t{t}" for t, c in zip(term_ids.tolist(), counts.tolist()) for _ in range(c)]


def query_tokens(text: str, vocabulary: dict[str, int]) -> list[str]:
    return [f"t{vocabulary[t]}" for t in query_terms(text) if t in vocabulary]


def new_chunk_tokens(vocabulary: dict[str, int]) -> list[list[str]]:
    from sourcebook.stores.bm25 import term_counts

    return [[f"t{vocabulary.get(t, -1 - i)}" for t, c in term_counts(text)[0].items() for _ in range(c)]
            for i, text in enumerate(NEW_TEXTS)]


# Engines: each returns its figures; run in a child process (main() below).
def run_build(db: str, texts: list[str], _: dict[str, Any]) -> dict[str, Any]:
    """Build and save this store's keyword index from every row (what a first open without a file does)."""
    from sourcebook.models import SearchFilter
    from sourcebook.stores import SQLiteStore

    shutil.rmtree(f"{db}.indexes", ignore_errors=True)
    with SQLiteStore(db) as store:
        start = time.perf_counter()
        store.keyword_search(texts[0], K, SearchFilter())
        return {"build_s": time.perf_counter() - start}


def run_store(db: str, texts: list[str], options: dict[str, Any]) -> dict[str, Any]:
    from sourcebook.models import Chunk, DocumentStatus, SearchFilter
    from sourcebook.stores import SQLiteStore

    everything = SearchFilter()
    build_s = options.get("build_s")
    if build_s is None:  # the baseline's first search builds its index; ours was built by run_build
        with SQLiteStore(db) as store:
            start = time.perf_counter()
            store.keyword_search(texts[0], K, everything)
            build_s = time.perf_counter() - start
    start = time.perf_counter()
    store = SQLiteStore(db)
    store.keyword_search(texts[0], K, everything)
    open_s = time.perf_counter() - start
    figures = timed_queries(lambda q: store.keyword_search(q, K, everything), texts)
    collection = store.collections()[0]
    start = time.perf_counter()
    store.upsert_document("bench-new", collection=collection.name, source="bench/new", title="Zebrafish",
                          media_type="text/plain", metadata={}, status=DocumentStatus.PROCESSING)
    chunks = [Chunk(i, t, 0, len(t), (), None, 10, "") for i, t in enumerate(NEW_TEXTS)]
    vectors = np.zeros((len(chunks), collection.dimension), np.float32)
    vectors[:, 0] = 1
    store.replace_chunks("bench-new", content_hash="bench", title="Zebrafish", chunks=chunks, vectors=vectors,
                         windows=[np.zeros((0, collection.dimension), np.float32)] * len(chunks))
    write_s = time.perf_counter() - start
    hits = store.keyword_search("zebrafish cardiac regeneration", 10, everything)
    add_one_s = time.perf_counter() - start
    assert hits and hits[0].chunk_id.startswith("bench-new#"), hits[:3]
    index = store._keywords
    store.close()
    return {"build_s": build_s, "open_s": open_s, **figures, "add_one_s": add_one_s, "write_s": write_s,
            "rebuilds_after_open": getattr(index, "rebuilds", None),
            "index_file_mb": _size_mb(Path(f"{db}.indexes"))}


def run_tantivy(db: str, texts: list[str], _: dict[str, Any]) -> dict[str, Any]:
    import tantivy

    rows, vocabulary = term_rows(db)
    directory = tempfile.mkdtemp(prefix="kw-tantivy-")
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    schema = builder.build()
    start = time.perf_counter()
    index = tantivy.Index(schema, path=directory)
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for _, chunk_id, _, _, ids, counts in rows:
        writer.add_document(tantivy.Document(body=" ".join(tokens(ids, counts)), id=chunk_id))
    writer.commit()
    writer.wait_merging_threads()
    build_s = time.perf_counter() - start
    del writer, index
    start = time.perf_counter()
    index = tantivy.Index.open(directory)
    index.reload()
    searcher = index.searcher()
    open_s = time.perf_counter() - start

    def search(text: str, k: int = K) -> Any:
        terms = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t))
                 for t in dict.fromkeys(query_tokens(text, vocabulary))]
        return index.searcher().search(tantivy.Query.boolean_query(terms), k) if terms else None

    figures = timed_queries(search, texts)
    start = time.perf_counter()
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    for i, chunk in enumerate(new_chunk_tokens(vocabulary)):
        writer.add_document(tantivy.Document(body=" ".join(chunk), id=f"bench-new#{i}"))
    writer.commit()
    index.reload()
    search(NEW_TEXTS[0], 10)
    add_one_s = time.perf_counter() - start
    del searcher
    size = _size_mb(Path(directory))
    shutil.rmtree(directory, ignore_errors=True)
    return {"build_s": build_s, "open_s": open_s, **figures, "add_one_s": add_one_s, "index_file_mb": size}


def run_bm25s(db: str, texts: list[str], _: dict[str, Any]) -> dict[str, Any]:
    import bm25s

    rows, vocabulary = term_rows(db)
    corpus = [tokens(ids, counts) for _, _, _, _, ids, counts in rows]
    directory = tempfile.mkdtemp(prefix="kw-bm25s-")
    start = time.perf_counter()
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    retriever.index(corpus, show_progress=False)
    build_s = time.perf_counter() - start
    retriever.save(directory)
    del retriever
    start = time.perf_counter()
    retriever = bm25s.BM25.load(directory, mmap=True)
    open_s = time.perf_counter() - start
    figures = timed_queries(
        lambda q: retriever.retrieve([query_tokens(q, vocabulary) or ["t-none"]], k=K, show_progress=False), texts)
    start = time.perf_counter()  # no incremental add in bm25s 0.3.16: index everything again
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    retriever.index(corpus + new_chunk_tokens(vocabulary), show_progress=False)
    retriever.retrieve([query_tokens(NEW_TEXTS[0], vocabulary) or ["t-none"]], k=10, show_progress=False)
    add_one_s = time.perf_counter() - start
    size = _size_mb(Path(directory))
    shutil.rmtree(directory, ignore_errors=True)
    return {"build_s": build_s, "open_s": open_s, **figures, "add_one_s": add_one_s, "index_file_mb": size}


def run_fts5(db: str, texts: list[str], _: dict[str, Any]) -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix="kw-fts5-")
    path = Path(directory) / "fts.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("ATTACH DATABASE ? AS kb", (f"file:{db}?mode=ro",))
    conn.execute("CREATE VIRTUAL TABLE fts USING fts5 (title, body, content = '', "
                 "tokenize = 'porter unicode61 remove_diacritics 2')")
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.execute("""INSERT INTO fts (rowid, title, body) SELECT c.seq, d.title, c.text
                    FROM kb.chunks c CROSS JOIN kb.documents d WHERE d.id = c.document_id""")
    conn.execute("COMMIT")
    build_s = time.perf_counter() - start

    def search(text: str, k: int = K) -> list[Any]:
        words = [w for w in query_words(text) if w.isalnum()]
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        return conn.execute("SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?",
                            (match, k)).fetchall()

    figures = timed_queries(search, texts)
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO fts (rowid, title, body) VALUES (?, 'Zebrafish', ?)",
                     [(10**12 + i, t) for i, t in enumerate(NEW_TEXTS)])
    conn.execute("COMMIT")
    search(NEW_TEXTS[0], 10)
    add_one_s = time.perf_counter() - start
    conn.close()
    size = _size_mb(Path(directory))
    shutil.rmtree(directory, ignore_errors=True)
    return {"build_s": build_s, "open_s": 0.0, **figures, "add_one_s": add_one_s, "index_file_mb": size}


def head_to_head(db: str, texts: list[str], baseline_src: str, rounds: int) -> dict[str, float]:
    """The baseline index and this store's search in one process, query by query in turn (the
    fairest ratio on a shared machine): p50 wall and CPU time of each over `rounds` passes (on a
    machine with more runnable processes than cores, a longer call is preempted more often, so
    wall time exaggerates a CPU-time difference), and how often their top 10 agree. The baseline's module is loaded from `baseline_src` beside this tree's."""
    import importlib.util

    from sourcebook.models import SearchFilter
    from sourcebook.stores import SQLiteStore

    spec = importlib.util.spec_from_file_location(
        "baseline_keyword_index", Path(baseline_src) / "sourcebook/stores/sqlite/keyword_index.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "sourcebook.stores.sqlite"  # its relative imports resolve in this tree
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    rows, vocabulary = term_rows(db)
    baseline = module.KeywordIndex.build(0, vocabulary, ((chunk_id, document_id, length, ids.tobytes(), counts.tobytes())
                                                         for _, chunk_id, document_id, length, ids, counts in rows))
    del rows
    store = SQLiteStore(db)
    everything = SearchFilter()
    store.keyword_search(texts[0], K, everything)
    times: dict[str, list[float]] = {f"{engine}_{clock}_p50_ms": [] for engine in ("baseline", "segments")
                                     for clock in ("wall", "cpu")}
    for _ in range(rounds):
        for text in texts:
            for name, search in (("baseline", lambda: baseline.search(text, K, None)),
                                 ("segments", lambda: store.keyword_search(text, K, everything))):
                start, start_cpu = time.perf_counter(), time.thread_time()
                search()
                times[f"{name}_wall_p50_ms"].append((time.perf_counter() - start) * 1000)
                times[f"{name}_cpu_p50_ms"].append((time.thread_time() - start_cpu) * 1000)
    agree = sum([c for c, _ in baseline.search(t, 10, None)] == [h.chunk_id for h in store.keyword_search(t, 10, everything)]
                for t in texts)
    store.close()
    return {**{name: percentile(values, 50) for name, values in times.items()}, "same_top10": agree / len(texts)}


ENGINES: dict[str, Callable[[str, list[str], dict[str, Any]], dict[str, Any]]] = {
    "segments-build": run_build, "segments": run_store, "baseline": run_store, "tantivy": run_tantivy, "bm25s": run_bm25s, "fts5": run_fts5,
}


def replicated(source: str, factor: int) -> str:
    """A keyword-only copy of `source` with every document `factor` times (new ids, same terms),
    cached beside it: a million-chunk corpus with real term statistics in a minute, no vectors."""
    target = str(Path(source).with_suffix(f".x{factor}.db"))
    if Path(target).exists():
        return target
    from sourcebook.stores import SQLiteStore

    partial = target + ".partial"
    SQLiteStore(partial).close()  # the schema, migrated
    conn = sqlite3.connect(partial, isolation_level=None)
    conn.execute("ATTACH DATABASE ? AS s", (f"file:{source}?mode=ro",))
    top = conn.execute("SELECT max(seq) FROM s.chunks").fetchone()[0]
    columns = "tenant, collection, source, title, media_type, status, error, chunk_count, content_hash, metadata, created_at, updated_at"
    conn.execute("BEGIN")
    conn.execute("INSERT INTO collections SELECT * FROM s.collections")
    conn.execute("INSERT INTO terms SELECT * FROM s.terms")
    for r in range(factor):
        renamed = columns.replace("source,", f"source || '~{r}',")
        conn.execute(f"INSERT INTO documents (id, {columns}) SELECT id || '~{r}', {renamed} FROM s.documents")
        conn.execute(f"""INSERT INTO chunks (seq, id, document_id, position, text, prefix, heading_path, page, token_count,
                                             content_hash, start, "end")
                         SELECT seq + {r * top}, replace(id, '#', '~{r}#'), document_id || '~{r}', position, text, prefix,
                                heading_path, page, token_count, content_hash, start, "end" FROM s.chunks ORDER BY seq""")
        conn.execute(f"INSERT INTO chunk_terms SELECT chunk_seq + {r * top}, length, term_ids, counts FROM s.chunk_terms")
    conn.execute("COMMIT")
    conn.close()
    os.replace(partial, target)
    return target


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6 if path.exists() else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", help="a knowledge base (bench/latency_100k.py builds one); engines that write use a copy")
    parser.add_argument("--engines", default="segments,baseline,tantivy,bm25s,fts5")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--baseline-src", default="", help="source tree with the old stores/sqlite/keyword_index.py")
    parser.add_argument("--scale", type=int, default=1, help="replicate every document this many times first")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds an engine may take")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--build-s", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--head-to-head", type=int, metavar="ROUNDS",
                        help="only compare the baseline and this store's search in one process, in turn")
    args = parser.parse_args()
    texts = queries(args.queries)
    if args.head_to_head:
        print(json.dumps(head_to_head(args.db, texts, args.baseline_src, args.head_to_head)))
        return
    if args.child:
        options = {"baseline_src": args.baseline_src, **({"build_s": args.build_s} if args.build_s is not None else {})}
        figures = ENGINES[args.child](args.db, texts, options)
        figures["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(figures))
        return
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kw-options-") as scratch:
        copy = str(Path(scratch) / "kb.db")
        shutil.copyfile(replicated(args.db, args.scale) if args.scale > 1 else args.db, copy)
        engines = args.engines.split(",")
        if "segments" in engines:  # built in a process of its own: "segments" then measures a cold open
            engines.insert(engines.index("segments"), "segments-build")
        for engine in engines:
            command = [sys.executable, __file__, copy, "--child", engine, "--queries", str(args.queries),
                       "--baseline-src", args.baseline_src]
            if engine == "segments" and "build_s" in results.get("segments-build", {}):
                command += ["--build-s", str(results["segments-build"]["build_s"])]
            path = [args.baseline_src] if engine == "baseline" else []
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, *sys.path[1:]])}
            try:
                done = subprocess.run(command, capture_output=True, text=True, check=False, env=env, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                results[engine] = {"error": [f"over {args.timeout:.0f} s"]}
            else:
                if done.returncode:
                    results[engine] = {"error": done.stderr.strip().splitlines()[-1:]}
                else:
                    results[engine] = json.loads(done.stdout.strip().splitlines()[-1])
            print(engine, json.dumps(results[engine]), flush=True)
    print("\n| engine | build s | cold open s | p50 ms (k=200) | p95 ms | add one doc + first search s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for engine, r in results.items():
        if "error" not in r and engine != "segments-build":
            print(f"| {engine} | {r['build_s']:.1f} | {r['open_s']:.2f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | "
                  f"{r['add_one_s']:.3f} | {r['rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
