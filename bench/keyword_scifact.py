"""SciFact keyword-mode quality without running the embedding model.

Keyword search needs no vectors, but `sourcebook eval retrieval` indexes the corpus through
`add`, which embeds every chunk and window (about 15 minutes on 2 busy cores). This bench runs
the same `evaluate_retrieval` (the production ingest, chunker, store and keyword search) with
an embedder that counts tokens with the real model's tokenizer, so the chunks are exactly the
ones `add` makes, but returns one constant unit vector instead of running the model. The
vector and hybrid figures would be meaningless, so only keyword mode is run.

    python bench/keyword_scifact.py [--db PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sourcebook import KnowledgeBase, Settings
from sourcebook.embedders.base import Embedder, ProgressCallback
from sourcebook.evaluation.retrieval import evaluate_retrieval
from sourcebook.stores import open_store

DATA = Path(os.environ.get("SCIFACT_DIR", "/work/shared/eval/scifact"))


class TokenizerOnlyEmbedder:
    """The configured embedder's name, tokenizer and limits, with a constant vector for every text."""

    def __init__(self, real: Embedder) -> None:
        self._real = real
        self.name = f"{real.name}+constant-vectors"
        self.dimension = real.dimension
        self.max_tokens = real.max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._real.count_tokens(texts)

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        vectors[:, 0] = 1.0
        if progress:
            progress(len(texts))
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="knowledge base file (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = args.db or str(Path(scratch) / "scifact-keyword.db")
        settings = Settings(db=path)
        probe = KnowledgeBase.open(":memory:")
        kb = KnowledgeBase(open_store(path), settings, TokenizerOnlyEmbedder(probe.embedder))
        start = time.perf_counter()
        report = evaluate_retrieval(kb, DATA, modes=("keyword",))
        seconds = time.perf_counter() - start
        kb.close()
        probe.close()
    keyword = report.modes[0]
    result = {
        "dataset": report.dataset, "documents": report.documents, "chunks": report.chunks,
        "ndcg@10": keyword.metrics["ndcg@10"], "recall@100": keyword.metrics["recall@100"],
        "keyword_p50_ms": keyword.latency_p50_ms, "seconds": seconds,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"SciFact keyword: nDCG@10 {result['ndcg@10']:.4f}, recall@100 {result['recall@100']:.4f}, "
              f"p50 {result['keyword_p50_ms']:.1f} ms ({report.chunks} chunks, {seconds:.0f} s)")


if __name__ == "__main__":
    main()
