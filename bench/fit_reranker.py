"""Fit the offline reranker's weights (sourcebook.reranking.LINEAR_WEIGHTS) on judged queries.

For each fitting query, hybrid search (reranking off) gives its first 30 chunks, exactly what the
reranker sees; every (relevant, irrelevant) pair of candidates of one query is a training example
for a pairwise logistic regression (RankNet with a linear scorer, L2-regularised, Newton steps):
P(a above b) = sigmoid(w . (f(a) - f(b))). Pairwise, so the weights only have to order a query's
candidates among themselves, which is all reranking does. The script prints the weights as the
Python literal to paste into LINEAR_WEIGHTS; it never writes source files.

Fitting data (only these; the test halves and pydocs stay out):
    --beir DIR --beir-db DB   a BEIR dataset and its built knowledge base (`sourcebook eval retrieval
                              DIR --db DB` builds it); --fold even|odd keeps the queries whose id hash
                              is even or odd, so the other half measures the fitted weights
    --qa FILE --qa-db DB      a QA file with "split" fields and its knowledge base; --split dev keeps
                              the dev questions; a candidate is relevant when its source's file name is
                              one of the question's gold_sources and it holds one of its answers

    PYTHONPATH=src python bench/fit_reranker.py --beir /work/shared/eval/scifact --beir-db sf.db \\
        --fold even --qa eval/gitdoc/questions.jsonl --qa-db gitdoc.db --split dev
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sourcebook import KnowledgeBase
from sourcebook.evaluation.dataset import load_dataset
from sourcebook.evaluation.metrics import mean_ndcg
from sourcebook.models import StoredChunk
from sourcebook.reranking import FEATURES, LinearReranker, feature_matrix

CANDIDATES = 30
L2 = 1.0


def in_fold(query_id: str, fold: str) -> bool:
    if fold == "all":
        return True
    parity = int(hashlib.sha256(query_id.encode()).hexdigest(), 16) % 2
    return parity == (0 if fold == "even" else 1)


def holds_answer(chunk: StoredChunk, gold_sources: set[str], answers: Sequence[str]) -> bool:
    """A QA candidate is relevant when it is on a gold page and states an expected answer."""
    text = " ".join((*chunk.heading_path, chunk.text)).lower()
    return Path(chunk.source).name in gold_sources and any(answer.lower() in text for answer in answers)


def pairs_for(kb: KnowledgeBase, query: str, relevant: Callable[[StoredChunk], bool]) -> np.ndarray:
    """Feature differences (relevant - irrelevant) of one query's candidate pairs, with their weights."""
    hits = kb.search(query, mode="hybrid", top_k=CANDIDATES, per_document=0, rerank=False)
    if not hits:
        return np.zeros((0, len(FEATURES) + 1))
    rows = feature_matrix(query, [h.chunk for h in hits], [h.score for h in hits])
    labels = [relevant(h.chunk) for h in hits]
    good = [i for i, label in enumerate(labels) if label]
    bad = [i for i, label in enumerate(labels) if not label]
    if not good or not bad:
        return np.zeros((0, len(FEATURES) + 1))
    # LambdaRank's weight: how much swapping the pair at their fused ranks changes DCG, so the fit
    # cares about the order at the top (what nDCG@10 sees), not among the last candidates.
    gain = 1.0 / np.log2(2.0 + np.arange(len(hits)))
    pairs = [(i, j) for i in good for j in bad]
    weight = np.array([[abs(gain[i] - gain[j])] for i, j in pairs])
    return np.hstack([np.array([rows[i] - rows[j] for i, j in pairs]), weight])


def fit(pairs: np.ndarray, l2: float = L2, steps: int = 50) -> np.ndarray:
    """Weighted pairwise logistic regression without intercept (a pair's order has no bias), by
    Newton's method; `pairs` rows are feature differences with the pair's weight last."""
    differences, pair_weights = pairs[:, :-1], pairs[:, -1]
    weights = np.zeros(differences.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-differences @ weights))
        gradient = differences.T @ (pair_weights * (p - 1.0)) + l2 * weights
        curvature = pair_weights * p * (1 - p)
        hessian = (differences * curvature[:, None]).T @ differences + l2 * np.eye(len(weights))
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return weights


def measure(kb: KnowledgeBase, dataset_dir: str, fold: str, weights: dict[str, float]) -> tuple[float, float, int]:
    """nDCG@10 (one hit per document, as `eval retrieval`) of hybrid without and with the reranker
    at `weights`, over the BEIR queries of `fold`: the weights' figure on queries they were not fitted on."""
    dataset = load_dataset(dataset_dir, "test")
    reranker = LinearReranker(weights)
    runs: dict[str, dict[str, list[str]]] = {"fused": {}, "reranked": {}}
    qrels = {q: judged for q, judged in dataset.qrels.items() if in_fold(q, fold)}
    for query_id in qrels:
        text = dataset.queries[query_id]
        hits = kb.search(text, mode="hybrid", top_k=100, per_document=0, rerank=False)
        head = hits[:CANDIDATES]
        order = reranker.rerank(text, [h.chunk for h in head], [h.score for h in head])
        for name, ranked in (("fused", hits), ("reranked", [head[i] for i in order] + hits[CANDIDATES:])):
            runs[name][query_id] = list(dict.fromkeys(h.chunk.source for h in ranked))[:10]
    return mean_ndcg(runs["fused"], qrels, 10), mean_ndcg(runs["reranked"], qrels, 10), len(qrels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beir")
    parser.add_argument("--beir-db")
    parser.add_argument("--fold", choices=("even", "odd", "all"), default="even")
    parser.add_argument("--qa", action="append", default=[])
    parser.add_argument("--qa-db", action="append", default=[])
    parser.add_argument("--split", default="dev")
    parser.add_argument("--measure-fold", choices=("even", "odd", "all"), help="report nDCG@10 on this BEIR fold")
    args = parser.parse_args()
    blocks: list[np.ndarray] = []
    queries = 0
    if args.beir:
        dataset = load_dataset(args.beir, "test")
        with KnowledgeBase.open(args.beir_db) as kb:
            for query_id, text in dataset.queries.items():
                if in_fold(query_id, args.fold):
                    judged = {doc for doc, gain in dataset.qrels[query_id].items() if gain > 0}
                    blocks.append(pairs_for(kb, text, lambda chunk, judged=judged: chunk.source in judged))
                    queries += 1
    for qa_file, qa_db in zip(args.qa, args.qa_db, strict=True):
        records = [json.loads(line) for line in Path(qa_file).read_text().splitlines() if line.strip()]
        with KnowledgeBase.open(qa_db) as kb:
            for record in records:
                if record.get("split") == args.split and record.get("gold_sources") and record.get("answers"):
                    gold, answers = set(record["gold_sources"]), record["answers"]
                    blocks.append(pairs_for(kb, record["question"], lambda c, g=gold, a=answers: holds_answer(c, g, a)))
                    queries += 1
    differences = np.concatenate(blocks) if blocks else np.zeros((0, len(FEATURES) + 1))
    if not len(differences):
        sys.exit("no query had both a relevant and an irrelevant candidate")
    fitted = dict(zip(FEATURES, (round(float(value), 4) for value in fit(differences))))
    print(f"# {queries} queries, {len(differences)} pairs", file=sys.stderr)
    print(json.dumps(fitted))
    if args.beir and args.measure_fold:
        with KnowledgeBase.open(args.beir_db) as kb:
            before, after, count = measure(kb, args.beir, args.measure_fold, fitted)
        print(f"# {args.beir} fold {args.measure_fold} ({count} queries): nDCG@10 hybrid {before:.4f}, reranked {after:.4f}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
