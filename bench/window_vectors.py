"""Sentence-window vectors at the chunk level: the figure the product would measure.

`granularity_study.py` fuses at the document level. This script runs Sourcebook's own
chunk-level fusion (`retrieval.zscore_fusion` over the store's BM25 list and a vector list of
200 chunks, then the best chunk per document, as `sourcebook eval retrieval` does) with
three vector lists over the 256-token index:

- "chunk": each chunk's own cosine (what Sourcebook does today);
- "max": the best of the chunk's own cosine and those of its 2-sentence windows;
- "windows": the best window alone (the chunk's own where it has no window).

Windows are `granularity_study.py --sentence-windows 2`'s (title + two sentences, sliding by
one, embedded once and cached); a window belongs to every chunk of its document whose text
holds both its sentences, and one straddling two chunks to each chunk holding either. With
`--db-128 B.db` (the same corpus indexed at 128 tokens) the windows are instead B's chunks,
each belonging to the 256-token chunks its character span overlaps by half or more.

    python bench/window_vectors.py DATASET --db-256 A.db [--db-128 B.db]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import numpy as np
from granularity_study import CACHE, WEIGHTS, sentence_windows

from sourcebook import KnowledgeBase
from sourcebook.evaluation.dataset import load_dataset
from sourcebook.evaluation.metrics import mean_ndcg
from sourcebook.models import ScoredId, SearchFilter
from sourcebook.retrieval import zscore_fusion
from sourcebook.chunking import sentence_texts
from sourcebook.stores import open_store

POOL = 200
"""Chunks per list, as `SearchOptions.candidates`."""


class Chunks:
    """One index's chunks in stored order: ids, their documents' sources (corpus ids), texts,
    character spans in the document and vectors."""

    def __init__(self, db: Path) -> None:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                'SELECT c.id, d.source, c.text, c.start, c."end", v.vector FROM chunks c '
                "JOIN documents d ON d.id = c.document_id JOIN vectors v ON v.chunk_seq = c.seq ORDER BY c.seq"
            ).fetchall()
        finally:
            conn.close()
        self.ids = [r[0] for r in rows]
        self.sources = [r[1] for r in rows]
        self.texts = [r[2] for r in rows]
        self.spans = [(r[3], r[4]) for r in rows]
        self.vectors = np.frombuffer(b"".join(r[5] for r in rows), dtype=np.float32).reshape(len(rows), -1)

    def by_source(self) -> dict[str, list[int]]:
        rows: dict[str, list[int]] = {}
        for row, source in enumerate(self.sources):
            rows.setdefault(source, []).append(row)
        return rows


def contained_chunks(long: Chunks, short: Chunks) -> tuple[np.ndarray, np.ndarray]:
    """(short row, long row) pairs: each short chunk belongs to the long chunks it half-overlaps."""
    long_of = long.by_source()
    windows: list[int] = []
    chunks: list[int] = []
    for row, (source, (start, end)) in enumerate(zip(short.sources, short.spans)):
        for candidate in long_of.get(source, []):
            low, high = long.spans[candidate]
            if 2 * (min(end, high) - max(start, low)) >= end - start:
                windows.append(row)
                chunks.append(candidate)
    return np.array(windows), np.array(chunks)


def window_owners(records: list[dict], long: Chunks) -> tuple[np.ndarray, np.ndarray]:
    """(window row, chunk row) pairs: which chunks each sentence window belongs to."""
    chunks_of, texts = long.by_source(), long.texts
    windows: list[int] = []
    chunks: list[int] = []
    window = 0
    for record in records:
        sentences = sentence_texts(record.get("text", ""))
        candidates = chunks_of.get(str(record["_id"]), [])
        for start in range(len(sentences)):
            pair = sentences[start : start + 2]
            holders = [c for c in candidates if all(s in texts[c] for s in pair)]
            holders = holders or [c for c in candidates if any(s in texts[c] for s in pair)]
            windows += [window] * len(holders)
            chunks += holders
            window += 1
    return np.array(windows), np.array(chunks)


def best_documents(ranked: list[tuple[str, float]], document_of: dict[str, str], k: int = 10) -> list[str]:
    """The first k distinct documents of a chunk ranking (per_document = 1)."""
    seen: list[str] = []
    for chunk_id, _ in ranked:
        document = document_of[chunk_id]
        if document not in seen:
            seen.append(document)
            if len(seen) == k:
                break
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", help="BEIR-layout folder")
    parser.add_argument("--db-256", required=True, type=Path, help="index built with 256-token chunks")
    parser.add_argument("--db-128", type=Path, help="use this 128-token index's chunks as the windows")
    args = parser.parse_args()

    dataset = load_dataset(args.dataset)
    with open(dataset.corpus, encoding="utf-8") as corpus:
        records = [json.loads(line) for line in corpus if line.strip()]
    kb = KnowledgeBase.open(args.db_256)
    store = open_store(str(args.db_256))  # the keyword pool comes from the store's own BM25
    long = Chunks(args.db_256)
    ids, vectors = long.ids, long.vectors
    document_of = dict(zip(ids, long.sources))
    if args.db_128:
        short = Chunks(args.db_128)
        windows = short.vectors
        window_rows, window_chunks = contained_chunks(long, short)
    else:
        _, windows = sentence_windows(records, 2, kb.embedder, CACHE / f"{dataset.name}-sentences2.npy")
        window_rows, window_chunks = window_owners(records, long)

    query_ids = list(dataset.qrels)
    queries = kb.embedder.embed_documents([dataset.queries[q] for q in query_ids])
    keyword = [store.keyword_search(dataset.queries[q], POOL, SearchFilter()) for q in query_ids]
    own, of_windows = queries @ vectors.T, queries @ windows.T
    print(f"{dataset.name}: {len(ids)} chunks, {len(windows)} windows; nDCG@10 at keyword share {' / '.join(map(str, WEIGHTS))}")
    for mode in ("chunk", "max", "windows"):
        vector_lists = []
        for q in range(len(query_ids)):
            scores = own[q].copy()
            if mode != "chunk":
                best = np.full(len(ids), -np.inf)
                np.maximum.at(best, window_chunks, of_windows[q][window_rows])
                scores = np.maximum(scores, best) if mode == "max" else np.where(np.isfinite(best), best, scores)
            top = np.argsort(-scores)[:POOL]
            vector_lists.append([ScoredId(ids[i], rank, float(scores[i])) for rank, i in enumerate(top, 1)])
        vector_run = {
            q: best_documents([(item.chunk_id, item.score) for item in vector_lists[i]], document_of)
            for i, q in enumerate(query_ids)
        }
        figures = []
        for share in WEIGHTS:
            run = {
                q: best_documents(zscore_fusion([keyword[i], vector_lists[i]], [share, 1 - share]), document_of)
                for i, q in enumerate(query_ids)
            }
            figures.append(mean_ndcg(run, dataset.qrels, 10))
        print(f"  {mode}: vector {mean_ndcg(vector_run, dataset.qrels, 10):.4f}, hybrid {' / '.join(f'{f:.4f}' for f in figures)}")


if __name__ == "__main__":
    main()
