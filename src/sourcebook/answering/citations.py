"""The citation check: every [n] must name a real source, and its sentence must be supported by it.

An LLM cites fluently and not always truthfully, so each cited sentence (a "claim") is
compared with the source it cites:

    support = 0.5 x lexical + 0.5 x semantic
    lexical  = share of the claim's content words found in the source (stemmed, stopwords dropped)
    semantic = cosine similarity (the local embedding model) between the claim and its closest
               span of the source (one sentence, or two adjacent ones)

then capped at 0.25 when consistency.contradiction finds that the claim, while sharing the
source's words, says something else: a number, unit, identifier or name the source lacks (its
title and section count: the reader sees them), a negation, an antonym or a stronger
quantifier than the source's closest sentences, or, aligned word for word with the sentence it
restates (alignment.py), another identifier or word in one of its slots (the ways an LLM most
often turns a true sentence false while keeping its words). A claim is
supported when some source it cites reaches `min_support` (Settings.citation_min_support,
0.5). Numbers outside the sources are removed from the text ("invalid"), unsupported
sentences are flagged, and the closest span becomes the citation's quote.
bench/citation_checker.py measures the checker's precision and recall on a labelled set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..embedders.base import Embedder
from ..models import Citation, CitationCheck, SentenceCheck, SentenceStatus, Verdict
from ..chunking import sentence_texts
from .consistency import contradiction
from .lexical import content_terms
from .prompts import Source

LEXICAL_WEIGHT = 0.5
SEMANTIC_WEIGHT = 0.5
CONTRADICTION_CAP = 0.25

_MARKERS = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
# "... 27 days. [1]" -> "... 27 days [1]." so the marker stays with its sentence when splitting.
_MARKER_AFTER_STOP = re.compile(r"([.!?])((?:\s*\[\d+(?:\s*[,;]\s*\d+)*\])+)")

@dataclass(frozen=True)
class CheckedAnswer:
    text: str
    """The answer with invalid citation numbers removed."""
    citations: tuple[Citation, ...]
    check: CitationCheck


@dataclass(frozen=True)
class _Span:
    text: str
    vector: np.ndarray
    single: bool
    """One sentence (word order is compared with the closest one), or two adjacent ones."""


def remove_invalid(text: str, valid: set[int]) -> tuple[str, tuple[int, ...]]:
    """Drop citation numbers that name no source; a bracket left empty disappears with its space."""
    removed: list[int] = []

    def keep(match: re.Match[str]) -> str:
        numbers = [int(n) for n in re.split(r"\s*[,;]\s*", match.group(1))]
        removed.extend(n for n in numbers if n not in valid)
        kept = [n for n in numbers if n in valid]
        return "".join(f"[{n}]" for n in kept)

    cleaned = _MARKERS.sub(keep, _MARKER_AFTER_STOP.sub(r"\2\1", text))
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip(), tuple(dict.fromkeys(removed))


def cited_numbers(sentence: str) -> tuple[int, ...]:
    found = (int(n) for m in _MARKERS.finditer(sentence) for n in re.split(r"\s*[,;]\s*", m.group(1)))
    return tuple(dict.fromkeys(found))


class CitationChecker:
    def __init__(self, embedder: Embedder, min_support: float = 0.5) -> None:
        self._embedder = embedder
        self._min_support = min_support

    def check(self, answer: str, sources: Sequence[Source]) -> CheckedAnswer:
        by_number = {s.n: s for s in sources}
        text, removed = remove_invalid(answer, set(by_number))
        sentences = [s for s in sentence_texts(text) if _MARKERS.sub("", s).strip(" .")]
        claims = [_MARKERS.sub("", s).strip() for s in sentences]
        cited = [cited_numbers(s) for s in sentences]
        spans = self._spans({n for numbers in cited for n in numbers}, by_number)
        claim_vectors = self._embedder.embed_documents(claims) if claims else np.zeros((0, 1), np.float32)

        checks: list[SentenceCheck] = []
        citations: dict[tuple[int, str], Citation] = {}
        for sentence, claim, numbers, vector in zip(sentences, claims, cited, claim_vectors, strict=True):
            supported_by: list[int] = []
            best = 0.0
            for n in numbers:
                score, quote = self._support(claim, vector, spans[n], by_number[n])
                best = max(best, score)
                if score >= self._min_support:
                    supported_by.append(n)
                chunk = by_number[n].chunk
                citations.setdefault((n, quote), Citation(
                    n, chunk.document_id, chunk.source, chunk.id, quote, chunk.title, chunk.heading_path, chunk.page,
                    supported=score >= self._min_support,
                ))
            status: SentenceStatus = "uncited" if not numbers else "supported" if supported_by else "unsupported"
            checks.append(SentenceCheck(sentence, numbers, tuple(supported_by), best, status))
        return CheckedAnswer(text, tuple(sorted(citations.values(), key=lambda c: c.n)), _verdict(checks, removed))

    def _spans(self, numbers: set[int], sources: dict[int, Source]) -> dict[int, list[_Span]]:
        """Each cited source's sentences and adjacent pairs, embedded in one batch."""
        texts: dict[int, list[tuple[str, bool]]] = {}
        for n in sorted(numbers):
            parts = sentence_texts(sources[n].text) or [sources[n].text]
            texts[n] = [(t, True) for t in parts] + [(f"{a} {b}", False) for a, b in zip(parts, parts[1:])]
        flat = [t for n in texts for t, _ in texts[n]]
        vectors = self._embedder.embed_documents(flat) if flat else []
        spans: dict[int, list[_Span]] = {}
        offset = 0
        for n, parts in texts.items():
            spans[n] = [_Span(t, vectors[offset + i], single) for i, (t, single) in enumerate(parts)]
            offset += len(parts)
        return spans

    @staticmethod
    def _support(claim: str, vector: np.ndarray, spans: list[_Span], source: Source) -> tuple[float, str]:
        """The claim's support from one source, and the source's span closest to it."""
        source_text = source.text
        similarities = [float(span.vector @ vector) for span in spans]
        closest = spans[int(np.argmax(similarities))]
        sentence = max((s for s in spans if s.single), key=lambda s: float(s.vector @ vector))
        terms = content_terms(claim)
        lexical = len(terms & content_terms(source_text)) / len(terms) if terms else 0.0
        score = LEXICAL_WEIGHT * lexical + SEMANTIC_WEIGHT * max(similarities)
        heading = " ".join((source.chunk.title, *source.chunk.heading_path))
        if contradiction(claim, source_text, sentence.text, closest.text, heading):
            score = min(score, CONTRADICTION_CAP)
        return score, closest.text


def _verdict(checks: list[SentenceCheck], removed: tuple[int, ...]) -> CitationCheck:
    if not checks:
        return CitationCheck("no_claims", 0.0, removed, ())
    supported = sum(c.status == "supported" for c in checks)
    ratio = supported / len(checks)
    verdict: Verdict = "supported" if ratio == 1 else "unsupported" if supported == 0 else "partially_supported"
    return CitationCheck(verdict, ratio, removed, tuple(checks))


def strip_citations(text: str) -> str:
    """The text without its [n] markers (an earlier turn's numbers mean nothing in a new prompt)."""
    return re.sub(r"[ \t]+([.,;:!?])", r"\1", _MARKERS.sub("", text)).strip()
