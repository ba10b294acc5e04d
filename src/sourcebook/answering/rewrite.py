"""Query rewriting: the LLM words the question 3-5 other ways plus keywords; each is searched and
the rankings are fused with the original's by reciprocal rank fusion.

A question's words are often not the documents' ("time off" vs "annual leave"); several
phrasings widen recall, and RRF rewards chunks that many of them find. Any failure (the
LLM down, JSON it cannot produce) falls back to the original query alone: rewriting may
improve an answer, never break one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..errors import GeneratorError
from ..generators import Generation, Generator
from ..models import Hit, ScoredId
from ..retrieval import reciprocal_rank_fusion
from .prompts import rewrite_request

MAX_QUERIES = 5
MAX_KEYWORDS = 8


@dataclass(frozen=True)
class Rewrite:
    queries: tuple[str, ...]
    keywords: tuple[str, ...]
    generation: Generation | None
    error: str | None = None


def rewrite_question(generator: Generator, question: str) -> Rewrite:
    """Variations and keywords for `question`; empty (with the error) when the LLM fails."""
    try:
        generation = generator.generate(rewrite_request(question))
        data = generation.json()
    except GeneratorError as exc:
        return Rewrite((), (), None, str(exc))

    def strings(key: str, limit: int) -> tuple[str, ...]:
        values = data.get(key)
        if not isinstance(values, list):
            return ()
        cleaned = (v.strip() for v in values if isinstance(v, str))
        unique = dict.fromkeys(v for v in cleaned if v and v.lower() != question.strip().lower())
        return tuple(unique)[:limit]

    return Rewrite(strings("queries", MAX_QUERIES), strings("keywords", MAX_KEYWORDS), generation)


def fuse(rankings: Sequence[Sequence[Hit]], top_k: int, per_document: int, rrf_k: int) -> list[Hit]:
    """One ranking from several: RRF over the lists, then the per-document cap and top_k."""
    first_seen: dict[str, Hit] = {}
    for hits in rankings:
        for hit in hits:
            first_seen.setdefault(hit.chunk.id, hit)
    fused = reciprocal_rank_fusion([[ScoredId(h.chunk.id, h.rank, h.score) for h in hits] for hits in rankings], rrf_k)
    result: list[Hit] = []
    per_doc: dict[str, int] = {}
    for chunk_id, score in fused:
        hit = first_seen[chunk_id]
        document = hit.chunk.document_id
        if per_document and per_doc.get(document, 0) >= per_document:
            continue
        per_doc[document] = per_doc.get(document, 0) + 1
        result.append(replace(hit, rank=len(result) + 1, score=score))
        if len(result) == top_k:
            break
    return result


def search_rewritten(
    rewrite: Rewrite,
    original: list[Hit],
    search: Callable[[str], list[Hit]],
    search_keywords: Callable[[str], list[Hit]],
    *,
    top_k: int,
    per_document: int,
    rrf_k: int,
) -> tuple[list[Hit], list[str]]:
    """The fused hits and the extra queries searched (the keywords count as one keyword query)."""
    rankings = [original]
    searched: list[str] = []
    for query in rewrite.queries:
        rankings.append(search(query))
        searched.append(query)
    if rewrite.keywords:
        keywords = " ".join(rewrite.keywords)
        rankings.append(search_keywords(keywords))
        searched.append(keywords)
    return fuse(rankings, top_k, per_document, rrf_k), searched
