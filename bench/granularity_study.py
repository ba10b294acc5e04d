"""Which granularity should each retriever see? A document-level study over two indexes.

The quality push (README, "The quality push") found that all-MiniLM-L6-v2 retrieves far better
from 128-token chunks than from 256-token ones, while BM25 prefers the longer chunks. This
script asks what a hybrid gains if each retriever works at its own granularity, before anyone
builds it into the stores: it reads two knowledge bases of the same BEIR corpus, one indexed
with 256-token chunks and one with 128, and scores every combination at the document level:

- each list's score of a document is its best chunk's (BM25 through the store's own keyword
  search; cosine exactly with numpy over the stored vectors, queries embedded once);
- documents are fused by z-score over each list's top `--pool` (Sourcebook's z-score fusion,
  applied to documents instead of chunks, so its figures differ slightly from
  `sourcebook eval retrieval`'s);
- "max" takes a document's best 128-token window, "mean" the normalised mean of its windows'
  vectors (what a single stored vector per chunk could carry);
- with `--sentence-windows N`, also vectors of every run of N consecutive sentences (sliding
  by one, the document's title before each), scored by the best window: embedded here, about
  1.6x the chunks' embedding cost at N = 2, and cached under bench/.cache.

Build the two indexes first (the second run reuses nothing of the first):

    sourcebook eval retrieval DATASET --db sf256.db
    SOURCEBOOK_CHUNK_MAX_TOKENS=128 sourcebook eval retrieval DATASET --db sf128.db
    python bench/granularity_study.py DATASET --db-256 sf256.db --db-128 sf128.db
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sourcebook import KnowledgeBase
from sourcebook.evaluation.dataset import BeirDataset, load_dataset
from sourcebook.evaluation.metrics import mean_ndcg
from sourcebook.models import SearchFilter
from sourcebook.chunking import sentence_texts
from sourcebook.stores import open_store

CACHE = Path(__file__).resolve().parent / ".cache"

WEIGHTS = (0.3, 0.4, 0.5)
"""Keyword shares of the fusion tried for each pair of lists."""


class Index:
    """One knowledge base's chunks as rows: their document (corpus position) and vector."""

    def __init__(self, db: Path, documents: dict[str, int]) -> None:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT c.id, d.source, v.vector FROM chunks c JOIN documents d ON d.id = c.document_id "
                "JOIN vectors v ON v.chunk_seq = c.seq ORDER BY c.seq"
            ).fetchall()
        finally:
            conn.close()
        self.db = db
        self.document_of = {chunk_id: documents[source] for chunk_id, source, _ in rows}
        self.row_document = np.array([documents[source] for _, source, _ in rows])
        self.vectors = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(len(rows), -1)
        self.documents = len(documents)

    def best_per_document(self, chunk_scores: np.ndarray) -> np.ndarray:
        """(queries, documents): each document's best chunk score, -inf where it has none."""
        out = np.full((chunk_scores.shape[0], self.documents), -np.inf)
        for row, scores in zip(out, chunk_scores):
            np.maximum.at(row, self.row_document, scores)
        return out

    def vector_max(self, queries: np.ndarray) -> np.ndarray:
        return self.best_per_document(queries @ self.vectors.T)

    def vector_mean(self, queries: np.ndarray) -> np.ndarray:
        mean = np.zeros((self.documents, self.vectors.shape[1]))
        np.add.at(mean, self.row_document, self.vectors)
        mean /= np.linalg.norm(mean, axis=1, keepdims=True) + 1e-9
        return queries @ mean.T

    def keyword(self, texts: Sequence[str]) -> np.ndarray:
        """BM25 through the store's own keyword search (top 1,000 chunks per query)."""
        store = open_store(str(self.db))
        out = np.full((len(texts), self.documents), -np.inf)
        for row, text in zip(out, texts):
            for item in store.keyword_search(text, 1000, SearchFilter()):
                document = self.document_of[item.chunk_id]
                row[document] = max(row[document], item.score)
        return out


def sentence_windows(
    records: list[dict[str, Any]], size: int, embedder: Any, cache: Path
) -> tuple[np.ndarray, np.ndarray]:
    """(owning document per window, window vectors): title + `size` sentences, sliding by one."""
    texts: list[str] = []
    owners: list[int] = []
    for document, record in enumerate(records):
        sentences = sentence_texts(record.get("text", ""))
        title = record.get("title", "")
        for start in range(len(sentences)):
            window = " ".join(sentences[start : start + size])
            texts.append(f"{title}\n{window}" if title else window)
            owners.append(document)
    vectors = np.load(cache) if cache.exists() else np.zeros((0, 0))
    if len(vectors) != len(texts):  # no cache, or one from other windows
        vectors = embedder.embed_documents(texts)
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, vectors)
    return np.array(owners), vectors


def zscore_fuse(lists: Sequence[np.ndarray], weights: Sequence[float], pool: int) -> np.ndarray:
    """Per query: each list standardised over its top `pool` documents (the rest at its lowest z), weighted sum."""
    fused = np.zeros_like(lists[0])
    for scores, weight in zip(lists, weights, strict=True):
        for q, row in enumerate(scores):
            top = np.argsort(-row)[: min(pool, len(row))]
            top = top[np.isfinite(row[top])]
            z = (row[top] - row[top].mean()) / (row[top].std() + 1e-9)
            standardised = np.full(len(row), z.min() if len(z) else 0.0)
            standardised[top] = z
            fused[q] += weight * standardised
    return fused


def ndcg(scores: np.ndarray, dataset: BeirDataset, query_ids: list[str], names: list[str]) -> float:
    run = {q: [names[i] for i in np.argsort(-row)[:10]] for q, row in zip(query_ids, scores)}
    return mean_ndcg(run, dataset.qrels, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", help="BEIR-layout folder")
    parser.add_argument("--db-256", required=True, type=Path, help="index built with 256-token chunks")
    parser.add_argument("--db-128", required=True, type=Path, help="index built with 128-token chunks")
    parser.add_argument("--pool", type=int, default=200, help="documents per list in the z-score statistics")
    parser.add_argument("--variants", action="store_true", help="also: pool sizes, log BM25, 3-4 lists, Rocchio")
    parser.add_argument("--sentence-windows", type=int, default=0, metavar="N", help="also windows of N sentences")
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    with open(dataset.corpus, encoding="utf-8") as corpus:
        records = [json.loads(line) for line in corpus if line.strip()]
    names = [str(record["_id"]) for record in records]
    documents = {name: i for i, name in enumerate(names)}
    query_ids = list(dataset.qrels)
    texts = [dataset.queries[q] for q in query_ids]
    long, short = Index(args.db_256, documents), Index(args.db_128, documents)
    embedder = KnowledgeBase.open(args.db_256).embedder
    queries = embedder.embed_documents(texts)

    keyword = {"256": long.keyword(texts), "128": short.keyword(texts)}
    vector = {
        "256": long.vector_max(queries),
        "128 max": short.vector_max(queries),
        "128 mean": short.vector_mean(queries),
    }
    if args.sentence_windows:
        size = args.sentence_windows
        owners, windows = sentence_windows(records, size, embedder, CACHE / f"{dataset.name}-sentences{size}.npy")
        print(f"{len(owners)} windows of {size} sentences")
        scores = queries @ windows.T
        best = np.full((len(queries), len(names)), -np.inf)
        for row, sims in zip(best, scores):
            np.maximum.at(row, owners, sims)
        vector[f"{size}-sentence windows max"] = best
        vector[f"best of 128 and {size}-sentence windows"] = np.maximum(best, vector["128 max"])
    score = lambda s: ndcg(s, dataset, query_ids, names)  # noqa: E731
    print(f"{dataset.name}: {len(query_ids)} queries, {len(names)} documents; nDCG@10, document-level fusion, pool {args.pool}")
    for name, scores in keyword.items():
        print(f"  keyword {name}: {score(scores):.4f}")
    for name, scores in vector.items():
        print(f"  vector {name}: {score(scores):.4f}")
    print(f"  hybrid, keyword share {' / '.join(map(str, WEIGHTS))}:")
    for kw_name, kw in keyword.items():
        for vec_name, vec in vector.items():
            figures = [score(zscore_fuse([kw, vec], [w, 1 - w], args.pool)) for w in WEIGHTS]
            print(f"    keyword {kw_name} + vector {vec_name}: {' / '.join(f'{f:.4f}' for f in figures)}")
    if args.sentence_windows:
        sentences = vector[f"{args.sentence_windows}-sentence windows max"]
        figures = [
            score(zscore_fuse([keyword["256"], vector["128 max"], sentences], [w, (1 - w) / 2, (1 - w) / 2], args.pool))
            for w in WEIGHTS
        ]
        print(f"    three lists (keyword 256, vector 128 max, sentence windows): {' / '.join(f'{f:.4f}' for f in figures)}")
    if args.variants:
        variants(keyword["256"], vector, long, queries, score, args.pool)


def variants(
    keyword: np.ndarray, vector: dict[str, np.ndarray], long: Index, queries: np.ndarray, score: Any, pool: int
) -> None:
    """Fusion variants on the 256-token layout (keyword share 0.5 unless said)."""
    base = vector["256"]
    print("  variants (keyword 256 + vector 256, share 0.5):")
    for size in (50, 100, 200, 400, 1000):
        if size <= base.shape[1]:
            print(f"    z-score pool {size}: {score(zscore_fuse([keyword, base], [0.5, 0.5], size)):.4f}")
    logged = np.where(np.isfinite(keyword), np.log1p(np.maximum(keyword, 0)), -np.inf)
    print(f"    log(1 + BM25) before fusion: {score(zscore_fuse([logged, base], [0.5, 0.5], pool)):.4f}")
    for share in WEIGHTS:
        three = zscore_fuse([keyword, base, vector["128 max"]], [share, (1 - share) / 2, (1 - share) / 2], pool)
        print(f"    three lists (keyword, vector 256, vector 128 max), keyword share {share}: {score(three):.4f}")
    fused = zscore_fuse([keyword, base], [0.5, 0.5], pool)
    documents = np.zeros((long.documents, long.vectors.shape[1]))
    np.add.at(documents, long.row_document, long.vectors)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True) + 1e-9
    for k in (3, 5):
        for beta in (0.5, 1.0):
            top = np.argsort(-fused, axis=1)[:, :k]
            expanded = queries + beta * documents[top].mean(axis=1)
            expanded /= np.linalg.norm(expanded, axis=1, keepdims=True)
            rocchio = long.vector_max(expanded)
            shares = " / ".join(f"{score(zscore_fuse([keyword, rocchio], [w, 1 - w], pool)):.4f}" for w in WEIGHTS)
            print(f"    Rocchio from the fused top {k}, beta {beta}: vector {score(rocchio):.4f}, hybrid {shares}")


if __name__ == "__main__":
    main()
