"""Query-time retrieval variants on a BEIR set, offline (issue 15): fusion weights and methods,
document aggregation, dense pseudo-relevance feedback (Rocchio on the query vector).

Each query's keyword and vector lists (the product's own store searches, pool 200, as hybrid
uses) are computed once; every variant is then a pure function of those lists (and, for PRF, of
one more vector search), scored as `eval retrieval` does (one hit per document, nDCG@10). The
queries are split by the parity of sha256(query id) as bench/fit_reranker.py does: choose on
"even", report "odd" untouched.

    SOURCEBOOK_CACHE=/tmp/s25/int8v4-cache PYTHONPATH=src python bench/query_time_fusion.py \
        --db /tmp/sf75/sf-v4.db --beir /work/shared/eval/scifact
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sqlite3
import time
from collections.abc import Callable

import numpy as np

from sourcebook import KnowledgeBase
from sourcebook.evaluation.dataset import load_dataset
from sourcebook.evaluation.metrics import mean_ndcg
from sourcebook.models import ScoredId, SearchFilter
from sourcebook.retrieval import reciprocal_rank_fusion, zscore_fusion
from sourcebook.stopwords import STOPWORDS
from sourcebook.stores.common import document_of

POOL = 200
Lists = tuple[list[ScoredId], list[ScoredId]]


def parity(query_id: str) -> str:
    return "even" if int(hashlib.sha256(query_id.encode()).hexdigest(), 16) % 2 == 0 else "odd"


def documents(ranked: list[tuple[str, float]], source: dict[str, str], share: float = 0.0) -> list[str]:
    """Sources best first, one per document; `share` > 0 scores a document by its best chunk
    plus `share` times its second best (several matching passages as weak extra evidence)."""
    if share == 0:
        return list(dict.fromkeys(source[document_of(cid)] for cid, _ in ranked))[:10]
    best: dict[str, list[float]] = {}
    for cid, score in ranked:
        scores = best.setdefault(source[document_of(cid)], [])
        if len(scores) < 2:
            scores.append(score)
    total = {doc: s[0] + share * (s[1] if len(s) > 1 else s[0] - 1.0) for doc, s in best.items()}
    return sorted(total, key=lambda doc: -total[doc])[:10]


def minmax_fusion(lists: Lists, weight: float) -> list[tuple[str, float]]:
    """Convex combination of min-max normalised scores (a chunk missing from a list scores 0 there)."""
    fused: dict[str, float] = {}
    for ranking, w in zip(lists, (weight, 1 - weight), strict=True):
        scores = np.array([item.score for item in ranking])
        low, span = scores.min(), scores.max() - scores.min() + 1e-9
        for item in ranking:
            fused[item.chunk_id] = fused.get(item.chunk_id, 0.0) + w * (item.score - low) / span
    return sorted(fused.items(), key=lambda pair: -pair[1])


def extra_variants(conn: sqlite3.Connection, ids: list[str], query_vectors: np.ndarray, lists: dict[str, Lists],
                   report: Callable[[str, Callable[[str], list[str]]], None], source: dict[str, str]) -> None:
    """Exact (brute-force) vector scores with other ways to combine a chunk's own cosine and its
    sentence windows' (the store takes the max), and per-query adaptive fusion weights."""
    rows = conn.execute("SELECT c.id, v.vector, v.windows FROM chunks c JOIN vectors v ON v.chunk_seq = c.seq").fetchall()
    chunk_ids = [r[0] for r in rows]
    own = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    dim = own.shape[1]
    windows = [np.frombuffer(r[2], dtype=np.float32).reshape(-1, dim) if r[2] else np.zeros((0, dim), np.float32) for r in rows]
    owner = np.concatenate([np.full(len(w), i) for i, w in enumerate(windows)]).astype(int)
    flat = np.concatenate(windows)
    position = {q: i for i, q in enumerate(ids)}

    def exact(q: str, combine: str) -> list[ScoredId]:
        vector = query_vectors[position[q]]
        c = own @ vector
        per_window = flat @ vector
        best = np.full(len(own), -1.0)
        np.maximum.at(best, owner, per_window)
        second = np.full(len(own), -1.0)
        masked = np.where(per_window < best[owner], per_window, -1.0)
        np.maximum.at(second, owner, masked)
        has = best > -1
        score = {"max": np.maximum(c, best), "own": c,
                 "own+0.5win": np.where(has, (c + 0.5 * best) / 1.5, c),
                 "max+0.2second": np.maximum(c, best) + 0.2 * np.where(second > -1, second, np.maximum(c, best)),
                 "mean(own,win)": np.where(has, (c + best) / 2, c)}[combine]
        top = np.argsort(-score)[:POOL]
        return [ScoredId(chunk_ids[i], rank, float(score[i])) for rank, i in enumerate(top, 1)]

    for combine in ("max", "own", "own+0.5win", "max+0.2second", "mean(own,win)"):
        cached = {q: exact(q, combine) for q in ids}
        report(f"vector exact {combine}", lambda q, c=cached: documents([(i.chunk_id, i.score) for i in c[q]], source))
        report(f"hybrid exact {combine}", lambda q, c=cached: documents(zscore_fusion([lists[q][0], c[q]], [0.3, 0.7]), source))

    def adaptive(q: str, base: float, lo: float, hi: float) -> list[tuple[str, float]]:
        """The keyword weight scaled by how far the keyword list's best stands out versus the vector list's."""
        peaks = []
        for ranking in lists[q]:
            scores = np.array([item.score for item in ranking])
            peaks.append((scores.max() - scores.mean()) / (scores.std() + 1e-9))
        w = float(np.clip(base * peaks[0] / peaks[1], lo, hi))
        return zscore_fusion(lists[q], [w, 1 - w])

    for base, lo, hi in ((0.3, 0.15, 0.5), (0.3, 0.2, 0.4), (0.25, 0.1, 0.5)):
        report(f"hybrid adaptive w {base} [{lo},{hi}]", lambda q, b=base, l=lo, h=hi: documents(adaptive(q, b, l, h), source))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--beir", required=True)
    parser.add_argument("--only-extra", action="store_true", help="run only window aggregation and adaptive weights")
    parser.add_argument("--only-keyword-prf", action="store_true", help="run only the keyword PRF variants")
    args = parser.parse_args()
    dataset = load_dataset(args.beir, "test")
    ids = list(dataset.qrels)
    folds = {"all": ids, "even": [q for q in ids if parity(q) == "even"], "odd": [q for q in ids if parity(q) == "odd"]}
    with KnowledgeBase.open(args.db) as kb:
        store = kb._store  # noqa: SLF001 - a bench reads the store's raw lists
        conn = sqlite3.connect(args.db)
        source = dict(conn.execute("SELECT id, source FROM documents"))
        chunk_vectors = {cid: np.frombuffer(blob, dtype=np.float32) for cid, blob in conn.execute(
            "SELECT c.id, v.vector FROM chunks c JOIN vectors v ON v.chunk_seq = c.seq")}
        query_vectors = kb._retriever.embed_queries([dataset.queries[q] for q in ids])  # noqa: SLF001
        lists: dict[str, Lists] = {}
        for q, vector in zip(ids, query_vectors):
            lists[q] = (store.keyword_search(dataset.queries[q], POOL, SearchFilter()),
                        store.vector_search(vector, POOL, SearchFilter()))

        def score(variant: Callable[[str], list[str]]) -> dict[str, float]:
            runs = {q: variant(q) for q in ids}
            return {fold: mean_ndcg({q: runs[q] for q in qs}, {q: dataset.qrels[q] for q in qs}, 10)
                    for fold, qs in folds.items()}

        def report(name: str, variant: Callable[[str], list[str]]) -> None:
            s = score(variant)
            print(f"{name:40s} all {s['all']:.4f}  even {s['even']:.4f}  odd {s['odd']:.4f}", flush=True)

        def z(q: str, w: float = 0.3) -> list[tuple[str, float]]:
            return zscore_fusion(lists[q], [w, 1 - w])

        texts = dict(conn.execute("SELECT id, text FROM chunks"))

        def keyword_prf(q: str, depth: int, terms: int, w: float = 0.3) -> list[tuple[str, float]]:
            """RM3-like: the query plus the `terms` words most frequent in the top `depth` fused chunks."""
            asked = set(re.findall(r"[a-z]{3,}", dataset.queries[q].lower()))
            counts: dict[str, float] = {}
            for cid, _ in z(q, w)[:depth]:
                words = [t for t in re.findall(r"[a-z]{4,}", texts[cid].lower()) if t not in STOPWORDS and t not in asked]
                for word in set(words):
                    counts[word] = counts.get(word, 0.0) + words.count(word) / len(words)
            extra = sorted(counts, key=lambda t: -counts[t])[:terms]
            expanded = store.keyword_search(dataset.queries[q] + " " + " ".join(extra), POOL, SearchFilter())
            return zscore_fusion([expanded, lists[q][1]], [w, 1 - w])

        if args.only_extra:
            extra_variants(conn, ids, query_vectors, lists, report, source)
            return
        if args.only_keyword_prf:
            for depth in (3, 5):
                for terms in (3, 5, 10):
                    report(f"hybrid + keyword PRF depth {depth} terms {terms}",
                           lambda q, d=depth, t=terms: documents(keyword_prf(q, d, t), source))
            return
        report("keyword", lambda q: documents([(i.chunk_id, i.score) for i in lists[q][0]], source))
        report("vector", lambda q: documents([(i.chunk_id, i.score) for i in lists[q][1]], source))
        report("hybrid zscore w0.3 (default)", lambda q: documents(z(q), source))
        for w in (0.2, 0.25, 0.35, 0.4, 0.5):
            report(f"hybrid zscore w{w}", lambda q, w=w: documents(z(q, w), source))
        report("hybrid rrf k60", lambda q: documents(reciprocal_rank_fusion(list(lists[q]), 60), source))
        for w in (0.2, 0.3, 0.4):
            report(f"hybrid minmax w{w}", lambda q, w=w: documents(minmax_fusion(lists[q], w), source))
        for share in (0.05, 0.1, 0.2):
            report(f"hybrid + doc second-chunk share {share}", lambda q, s=share: documents(z(q), source, s))

        def prf(q: str, depth: int, beta: float, w: float = 0.3) -> list[tuple[str, float]]:
            """Rocchio: q' = q + beta * mean(top `depth` fused chunks' vectors), searched again and fused."""
            head = [cid for cid, _ in z(q, w)[:depth]]
            vector = query_vectors[ids.index(q)]
            moved = vector + beta * np.mean([chunk_vectors[c] for c in head], axis=0)
            moved = (moved / np.linalg.norm(moved)).astype(np.float32)
            return zscore_fusion([lists[q][0], store.vector_search(moved, POOL, SearchFilter())], [w, 1 - w])

        for depth in (3, 5):
            for beta in (0.3, 0.6, 1.0):
                report(f"hybrid + dense PRF depth {depth} beta {beta}", lambda q, d=depth, b=beta: documents(prf(q, d, b), source))
        # Cost: a hybrid search's vector search and fusion (its keyword search and query embedding
        # are the same either way), plain versus with PRF's second vector search and fusion.
        timings: dict[str, list[float]] = {"plain": [], "prf": []}
        runs: dict[str, Callable[[str], object]] = {"plain": z, "prf": lambda q: prf(q, 3, 0.3)}
        for _ in range(5):
            for name, run in runs.items():
                start = time.perf_counter()
                for q in ids[:100]:
                    store.vector_search(query_vectors[ids.index(q)], POOL, SearchFilter())
                    run(q)
                timings[name].append(time.perf_counter() - start)
        ratio = np.median(timings["prf"]) / np.median(timings["plain"])
        print(f"# vector search + fusion, dense PRF / plain, median of 5 rounds over 100 queries: {ratio:.2f}x")


if __name__ == "__main__":
    main()
