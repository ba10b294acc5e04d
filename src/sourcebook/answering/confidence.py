"""Confidence of an LLM answer, in [0, 1]: how strongly retrieval matched, times how much of it is supported.

    retrieval = 1 / (1 + exp(-12 x (r - 0.45)))
    r         = relevance of the best sentence in the retrieved sources to the question:
                0.75 x cosine similarity + 0.25 x share of the question's content words
                (the extractive answerer's score; its confidence is exactly `retrieval`)
    support   = supported sentences / all sentences of the answer (the citation check)

    confidence = retrieval x support             for an answer
    confidence = retrieval                       for an abstention (as the extractive answerer)

Why a product: either signal alone is fooled. Strong retrieval with an answer whose claims
its sources do not bear out is a hallucination; fully supported claims drawn from sources
that barely touch the question answer another question. For an abstention the number says
how strongly the documents seemed to match, so a high value flags a probably missed answer.
`retrieval` is computed by the extractive answerer (ExtractiveConfig: midpoint 0.45 and
slope 12, fitted on examples/questions.jsonl), which also gates the LLM call; bench/answers.py prints the reliability table (confidence bin vs share
right) that checks higher confidence means more often right.
"""

from __future__ import annotations

from ..models import CitationCheck


def answer_confidence(retrieval: float, check: CitationCheck | None, abstained: bool) -> float:
    """Combine `retrieval` (already in [0, 1]) with the citation check, rounded for display."""
    if abstained or check is None:
        return round(retrieval, 4)
    return round(retrieval * check.supported_ratio, 4)
