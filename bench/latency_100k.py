"""Search latency on a 100,000-chunk knowledge base with realistic text and vectors.

The corpus is synthetic but built from SciFact so both retrievers see realistic work:

* texts: SciFact abstract sentences recombined (shuffled), each chunk filled to a
  length drawn from the real chunk-length distribution (the SciFact documents chunked
  by Sourcebook's own chunker), so vocabulary, term frequencies and lengths are real;
  each synthetic document takes its title from a real document and most of its
  sentences from that document, the rest from anywhere in the corpus;
* vectors: real chunk vectors (about 2,000 real chunk texts embedded once with the
  configured model) plus small Gaussian noise, renormalised, so they cluster the way
  real embeddings do and queries have genuinely close neighbours;
* window vectors (with `vector_windows` on, the default): as many per chunk as
  `windows.window_texts` gives for its text, each its chunk's vector plus noise, so
  the exact search reads as many rows as a real knowledge base of this size.

Chunks are written straight through the store (ensure_collection / upsert_document /
replace_chunks) in documents of about 10 chunks; the model never runs on 100k texts.
The built database is cached under bench/.cache/, keyed by the parameters.

Then, for 200 SciFact test queries (vectors embedded beforehand, not timed): p50/p95
of hybrid search (keyword + vector + RRF + hit building) through the retriever, the
same for keyword-only and vector-only, and a breakdown of the hybrid's parts.

    python bench/latency_100k.py [--chunks 100000] [--queries 200] [--rebuild]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from sourcebook import KnowledgeBase, Settings
from sourcebook.chunking import chunk_document
from sourcebook.evaluation.metrics import percentile
from sourcebook.identity import document_id
from sourcebook.loaders import iter_beir
from sourcebook.models import Chunk, DocumentStatus, SearchFilter, sha256_text
from sourcebook.embedders.base import Embedder
from sourcebook.retrieval import Retriever, SearchOptions, reciprocal_rank_fusion
from sourcebook.chunking import sentence_texts
from sourcebook.stores import open_store
from sourcebook.stores.base import Store
from sourcebook.chunking import window_texts

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))
CACHE = HERE / ".cache"
RESULTS = HERE / "results" / "latency_100k.json"
COLLECTION = "default"
GENERATOR_VERSION = 3  # bump when the generated corpus changes, to invalidate cached databases
TARGET_P50_MS = 20.0
OWN_DOCUMENT_SHARE = 0.6  # of a synthetic document's sentences drawn from its title's real document
OTHER_BASE_SHARE = 0.2  # of a synthetic document's chunks whose vector derives from another real chunk


def say(message: str) -> None:
    print(message, flush=True)


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def key_of(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]


def real_material(kb: KnowledgeBase, n_real: int, seed: int) -> dict[str, Any]:
    """Real SciFact chunks, sentences and titles; `n_real` chunk texts embedded (cached on disk)."""
    embedder = kb.embedder
    settings = kb.settings
    documents = list(iter_beir(DATA / "corpus.jsonl"))
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(documents), size=min(n_real, len(documents)), replace=False)
    max_tokens = min(settings.chunk_max_tokens, embedder.max_tokens)
    real_texts: list[str] = []
    real_doc: list[int] = []  # index into `documents` of each real chunk
    chunk_chars: list[int] = []
    for i in picked:
        chunks = chunk_document(documents[i], embedder.count_tokens, max_tokens, settings.chunk_overlap)
        chunk_chars.extend(len(c.text) for c in chunks)
        chosen = chunks[int(rng.integers(len(chunks)))]
        real_texts.append(chosen.embedding_text)
        real_doc.append(int(i))

    params = {"v": GENERATOR_VERSION, "model": embedder.name, "n_real": n_real, "seed": seed,
              "max_tokens": max_tokens, "overlap": settings.chunk_overlap}
    vectors_file = CACHE / f"latency_real_vectors-{key_of(params)}.npy"
    if vectors_file.exists():
        vectors = np.load(vectors_file)
        say(f"real vectors: {len(vectors)} from cache {vectors_file.name}")
    else:
        start = time.perf_counter()
        vectors = embedder.embed_documents(real_texts)
        say(f"real vectors: embedded {len(real_texts)} real chunk texts in {time.perf_counter() - start:.1f} s")
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(vectors_file, vectors)
    sentences = [sentence_texts(d.text) for d in documents]
    return {
        "documents": documents, "sentences": sentences, "real_doc": real_doc, "vectors": vectors,
        "chunk_chars": np.array(chunk_chars), "all_sentences": [s for group in sentences for s in group],
    }


def fill(rng: np.random.Generator, own: list[str], pool: list[str], target_chars: int) -> str:
    """Sentences, mostly from `own` (shuffled), until the text reaches about `target_chars`."""
    parts: list[str] = []
    size = 0
    own_order = list(rng.permutation(len(own))) if own else []
    while size < target_chars:
        if own_order and rng.random() < OWN_DOCUMENT_SHARE:
            sentence = own[own_order.pop()]
        else:
            sentence = pool[int(rng.integers(len(pool)))]
        if parts and size + len(sentence) - target_chars > target_chars - size:
            break  # stopping short is closer to the target than overshooting
        parts.append(sentence)
        size += len(sentence) + 1
    return " ".join(parts)


def noisy(rng: np.random.Generator, base: np.ndarray, sigma: float) -> np.ndarray:
    vectors = base + sigma * rng.standard_normal(base.shape).astype(np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def build(
    store: Store, embedder: Embedder, settings: Settings, material: dict[str, Any], n_chunks: int, per_doc: int,
    sigma: float, seed: int, writers: int = 1,
) -> dict[str, Any]:
    """Write the synthetic corpus through `store`, document by document. With `writers` > 1 the
    writes (upsert_document + replace_chunks, one document each) run on that many threads while
    this one generates the next documents: a server store then works on several documents at
    once (the same corpus: generation stays sequential, only the writes overlap)."""
    rng = np.random.default_rng(seed + 1)
    writing = ThreadPoolExecutor(writers) if writers > 1 else None
    pending: deque[Future[None]] = deque()
    store.ensure_collection(COLLECTION, embedder.name, embedder.dimension)
    documents, sentences, pool = material["documents"], material["sentences"], material["all_sentences"]
    real_doc, real_vectors, lengths = material["real_doc"], material["vectors"], material["chunk_chars"]
    written = window_count = 0
    d = 0
    cosines: list[float] = []
    while written < n_chunks:
        count = min(int(rng.integers(max(1, per_doc - 4), per_doc + 5)), n_chunks - written)
        base = int(rng.integers(len(real_doc)))
        real = documents[real_doc[base]]
        title = real.title
        own = list(sentences[real_doc[base]])
        texts = [fill(rng, own, pool, int(rng.choice(lengths))) for _ in range(count)]
        bases = np.where(rng.random(count) < OTHER_BASE_SHARE, rng.integers(len(real_doc), size=count), base)
        vectors = noisy(rng, real_vectors[bases], sigma)
        if len(cosines) < 2000:
            cosines.extend(np.sum(vectors * real_vectors[bases], axis=1).tolist())
        tokens = embedder.count_tokens(texts)
        chunks: list[Chunk] = []
        offset = 0
        for position, (text, n_tokens) in enumerate(zip(texts, tokens)):
            chunks.append(Chunk(position, text, offset, offset + len(text), (), None, n_tokens, title))
            offset += len(text) + 2
        source = f"synthetic/{d:06d}"
        doc_id = document_id(COLLECTION, source)
        windows = [noisy(rng, np.repeat(vectors[i : i + 1], len(window_texts(chunk)), axis=0), sigma)
                   if settings.vector_windows else np.zeros((0, vectors.shape[1]), np.float32)
                   for i, chunk in enumerate(chunks)]
        window_count += sum(len(w) for w in windows)
        write = partial(_write_document, store, doc_id, source, title, real.source, texts, chunks, vectors, windows)
        if writing is None:
            write()
        else:
            pending.append(writing.submit(write))
            while len(pending) > 4 * writers:  # bounded: generation waits for the writers
                pending.popleft().result()
        written += count
        d += 1
        if d % 2000 == 0:
            say(f"  {written:,} chunks in {d:,} documents (load {load()})")
    if writing is not None:
        for future in pending:
            future.result()
        writing.shutdown()
    return {"documents": d, "chunks": written, "window_vectors": window_count, "mean_cosine_to_base": float(np.mean(cosines))}


def _write_document(store: Store, doc_id: str, source: str, title: str, origin: str, texts: list[str],
                    chunks: list[Chunk], vectors: np.ndarray, windows: list[np.ndarray]) -> None:
    """One synthetic document through the store, as ingestion writes it: the row, then its chunks."""
    store.upsert_document(doc_id, collection=COLLECTION, source=source, title=title,
                          media_type="application/x-beir", metadata={"synthetic": True, "from": origin},
                          status=DocumentStatus.PROCESSING)
    store.replace_chunks(doc_id, content_hash=sha256_text("\x00".join(texts)), title=title, chunks=chunks,
                         vectors=vectors, windows=windows)


def corpus_params(probe: KnowledgeBase, chunks: int, per_doc: int, n_real: int, noise: float, seed: int) -> dict[str, Any]:
    """What the synthetic corpus depends on: the key of a cached build, whichever store it is written to."""
    return {"v": GENERATOR_VERSION, "model": probe.embedder.name, "chunks": chunks,
            "per_doc": per_doc, "n_real": n_real, "noise": noise, "seed": seed,
            "max_tokens": probe.settings.chunk_max_tokens, "overlap": probe.settings.chunk_overlap,
            "windows": probe.settings.vector_windows}


def cached_database(
    probe: KnowledgeBase, chunks: int, per_doc: int, n_real: int, noise: float, seed: int, rebuild: bool,
) -> tuple[Path, dict[str, Any], dict[str, Any] | None]:
    """The synthetic knowledge base of `chunks` chunks under bench/.cache/ (built unless cached):
    (its path, the parameters that key it, the build's record). `probe` gives the model and settings."""
    CACHE.mkdir(parents=True, exist_ok=True)
    embedder = probe.embedder
    params = corpus_params(probe, chunks, per_doc, n_real, noise, seed)
    db = CACHE / f"latency_100k-{key_of(params)}.db"
    meta = db.with_suffix(".json")
    if db.exists() and not rebuild:
        say(f"using cached {db}")
        return db, params, json.loads(meta.read_text())["build"] if meta.exists() else None
    material = real_material(probe, n_real, seed)
    partial = db.with_suffix(".partial.db")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    start = time.perf_counter()
    with open_store(str(partial)) as store:  # closing checkpoints and removes the WAL
        built = build(store, embedder, probe.settings, material, chunks, per_doc, noise, seed)
    os.replace(partial, db)
    built["seconds"] = time.perf_counter() - start
    meta.write_text(json.dumps({"params": params, "build": built}, indent=2) + "\n")
    say(f"built {built['chunks']:,} chunks in {built['documents']:,} documents in {built['seconds']:.0f} s "
        f"(mean cosine of noisy vector to its real base {built['mean_cosine_to_base']:.3f}) -> {db}")
    return db, params, built


def timings(fn: Callable[[int], object], n: int) -> tuple[float, float, list[float]]:
    """p50, p95 (ms) of fn(i) for i in range(n), after a warm-up call."""
    fn(0)
    values = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        values.append((time.perf_counter() - start) * 1000)
    return percentile(values, 50), percentile(values, 95), values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--chunks-per-document", type=int, default=10)
    parser.add_argument("--real-texts", type=int, default=2000, help="real chunk texts embedded for base vectors")
    parser.add_argument("--noise", type=float, default=0.025, help="Gaussian sigma per dimension before renormalising")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rebuild", action="store_true", help="ignore a cached database")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()

    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpus": os.cpu_count(),
                              "loadavg": {"start": load()}}
    say(f"load average at start: {report['loadavg']['start']} ({os.cpu_count()} CPUs)")
    probe = KnowledgeBase.open(":memory:")
    embedder = probe.embedder
    db, params, built = cached_database(probe, args.chunks, args.chunks_per_document, args.real_texts, args.noise,
                                        args.seed, args.rebuild)
    probe.close()
    report["params"] = params
    report["db"] = str(db)
    report["build"] = built

    store = open_store(str(db))  # measured below through the retriever and directly
    kb = KnowledgeBase(store, Settings(db=str(db)), embedder)
    stats = kb.status()
    say(f"store: {stats['chunks']:,} chunks, {sum(stats['documents'].values()):,} documents, "
        f"{stats['size_bytes'] / 1e6:.0f} MB")
    report["store"] = {"chunks": stats["chunks"], "documents": stats["documents"], "size_bytes": stats["size_bytes"]}

    qrels_ids: list[str] = []
    with open(DATA / "qrels" / "test.tsv", encoding="utf-8") as lines:
        next(lines)
        for line in lines:
            query_id = line.split("\t")[0]
            if line.strip() and query_id not in qrels_ids:
                qrels_ids.append(query_id)
    with open(DATA / "queries.jsonl", encoding="utf-8") as lines:
        texts = {str(r["_id"]): r["text"] for r in map(json.loads, lines)}
    queries = [texts[q] for q in qrels_ids[: args.queries]]
    vectors = kb.embedder.embed_documents(queries)  # not timed: the latency excludes query embedding

    start = time.perf_counter()
    store.vector_search(vectors[0], 10, SearchFilter())
    first_load_ms = (time.perf_counter() - start) * 1000
    say(f"first vector search (loads {stats['chunks']:,} vectors into memory): {first_load_ms:.0f} ms")
    report["first_vector_load_ms"] = first_load_ms

    retriever = Retriever(store, lambda: embedder)
    results: dict[str, dict[str, float]] = {}
    report["loadavg"]["before_timing"] = load()
    for mode in ("hybrid", "keyword", "vector"):
        options = SearchOptions.from_settings(kb.settings, mode=mode, top_k=10, per_document=1)
        p50, p95, _ = timings(lambda i, o=options: retriever.search(queries[i], o, vectors[i]), len(queries))
        results[mode] = {"p50_ms": p50, "p95_ms": p95}
        say(f"{mode:8s} search (retriever, top 10, one per document, no query embedding): "
            f"p50 {p50:.2f} ms, p95 {p95:.2f} ms (load {load()})")

    # Where the hybrid's time goes: the store calls and the hit fetch, as the retriever makes them.
    options = SearchOptions.from_settings(kb.settings, mode="hybrid", top_k=10, per_document=1)
    pool = max(options.candidates, options.top_k * max(options.per_document, 1))  # as Retriever.search
    nofilter = SearchFilter()
    fused = [
        [cid for cid, _ in reciprocal_rank_fusion(
            [store.keyword_search(q, pool, nofilter), store.vector_search(v, pool, nofilter)], options.rrf_k)]
        for q, v in zip(queries, vectors)
    ]
    parts = {
        f"store.keyword_search(k={pool})": lambda i: store.keyword_search(queries[i], pool, nofilter),
        f"store.vector_search(k={pool})": lambda i: store.vector_search(vectors[i], pool, nofilter),
        "store.get_chunks(all fused ids)": lambda i: store.get_chunks(fused[i]),
    }
    breakdown = {}
    for name, fn in parts.items():
        p50, p95, _ = timings(fn, len(queries))
        breakdown[name] = {"p50_ms": p50, "p95_ms": p95}
        say(f"  part {name}: p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    fused_sizes = [len(f) for f in fused]
    say(f"  fused candidates per query: median {percentile(fused_sizes, 50):.0f}, max {max(fused_sizes)}")
    report["breakdown"] = breakdown
    report["latency"] = results
    report["queries"] = len(queries)
    report["loadavg"]["end"] = load()
    kb.close()

    say("")
    say(f"## Search latency, {stats['chunks']:,} chunks ({len(queries)} SciFact queries, query embedding excluded)")
    say("")
    say("| mode | p50 ms | p95 ms |")
    say("|---|---|---|")
    for mode, values in results.items():
        say(f"| {mode} | {values['p50_ms']:.2f} | {values['p95_ms']:.2f} |")
    verdict = "OK" if results["hybrid"]["p50_ms"] < TARGET_P50_MS else "MISSED"
    say("")
    say(f"hybrid p50 target < {TARGET_P50_MS:.0f} ms: {verdict}; load average start {report['loadavg']['start']}, "
        f"before timing {report['loadavg']['before_timing']}, end {report['loadavg']['end']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    say(f"wrote {out}")


if __name__ == "__main__":
    main()
