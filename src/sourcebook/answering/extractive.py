"""Offline answers: the retrieved sentences that best answer the question, cited.

No LLM is needed. Each sentence of the top chunks is scored by cosine similarity
to the question (the same embedding model as retrieval) blended with content-word
overlap; the best few, each followed by its source number, form the answer.
When no sentence is relevant enough the answerer abstains instead of guessing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..embedders.base import Embedder
from ..models import Answer, Citation, Hit, StoredChunk
from ..reranking import identifiers, named_entry
from ..chunking import sentence_texts
from .focus import Focus, antecedent, bonus, missing_value, stated
from .lexical import content_terms, overlap

ABSTENTION_TEXT = "The knowledge base does not contain an answer to this question."

# Blend of the two relevance signals; lexical overlap breaks ties between sentences
# that embed alike, and penalises ones that share no words with the question.
SEMANTIC_WEIGHT = 0.75
LEXICAL_WEIGHT = 0.25
# A sentence joins the answer when it scores within this margin of the best one.
SELECTION_MARGIN = 0.12
# A sentence naming what was asked for ("Which function...?") may come from another chunk within this margin.
WIDE_MARGIN = 2 * SELECTION_MARGIN
MIN_SENTENCE_WORDS = 4
_LEADER_DOTS = re.compile(r"(?:\.\s?){5,}")  # ". . . . ." or "....." before a page number
_SECTION_NUMBER = re.compile(r"^(?:\d+\.)+\d*\s+")  # "10. ", "23.1. "


@dataclass(frozen=True)
class ScoredSentence:
    text: str
    hit: Hit
    score: float
    """Relevance to the question (what abstention and confidence read)."""
    similarity: float
    rank_score: float = 0.0
    """`score` plus how directly the sentence states what was asked (focus.py): what picks the answer."""


@dataclass(frozen=True)
class ExtractiveConfig:
    min_score: float = 0.40
    max_sentences: int = 4
    # Logistic map from the best sentence score to confidence; the midpoint and slope
    # were fitted on examples/questions.jsonl (answerable vs unanswerable questions).
    confidence_midpoint: float = 0.45
    confidence_slope: float = 12.0


def is_statement(sentence: str) -> bool:
    """A sentence that can answer: long enough, not a question (FAQ headings are), not an ALL-CAPS
    title line, not an index or contents line ("MiKTeX (distribution) . . . . 4, 8, 27", whose
    leader dots a PDF keeps: it names a topic and says nothing of it)."""
    return (
        len(sentence.split()) >= MIN_SENTENCE_WORDS
        and not sentence.rstrip().endswith("?")
        and any(ch.islower() for ch in sentence)
        and not _LEADER_DOTS.search(sentence)
    )


def heading_keys(chunk: StoredChunk) -> set[str]:
    """The chunk's headings as a sentence of its text would read them, to keep them out of answers:
    a heading says what a section is about, never what it says. A numbered HTML section
    ("10. Converting An Entire Database To A Text File") reaches the sentence splitter as "10."
    and the title, so the title is also kept without its section number; else it was quoted as
    the answer to "how do I turn a database into SQL text?" instead of "Use the .dump command"."""
    keys = set()
    for heading in (*chunk.heading_path, chunk.title):
        key = " ".join(heading.lower().split())
        keys |= {key, _SECTION_NUMBER.sub("", key)}
    return keys


def _defining(question: str, scored: list[ScoredSentence]) -> list[ScoredSentence]:
    """The sentences of the entries the question names (`--force`, `max_connections`), when some
    were retrieved: the definition of the asked term answers, not a neighbour that mentions it
    ("must be less than max_connections" in the entry of reserved connections). Else all of them."""
    names = identifiers(question)
    defining = [s for s in scored if named_entry(names, s.hit.chunk)]
    return defining or scored


def names_asked(question: str, statement: str) -> bool:
    """Whether `statement` writes every name the question writes (`--aggressive`): a value stated
    of the asked name in another entry (a configuration variable's "used by gc --aggressive. This
    defaults to 250") is the asked one's, unlike a value of a neighbouring entry."""
    names = identifiers(question)
    return bool(names) and set(names) <= set(identifiers(statement))


def _reading(sentence: str, text: str) -> str:
    """`sentence` as it is scored: after the sentence its pronoun subject refers to, when it has one."""
    before = antecedent(sentence, text)
    return sentence if before is None else f"{before} {sentence}"


def _selected(candidates: list[ScoredSentence], limit: int) -> list[tuple[ScoredSentence, str]]:
    """Up to `limit` of `candidates` (best first) with their statements, none quoted twice: a
    sentence led by its antecedent ("...need Subfont Definition Files. They are available in
    ttfutils.") shows the antecedent, which then takes no slot of its own, and replaces it when
    the antecedent was chosen first."""
    chosen: list[tuple[ScoredSentence, str]] = []
    for sentence in candidates:
        if len(chosen) == limit:
            break
        statement = stated(sentence.text, sentence.hit.chunk)
        if any(sentence.text in shown for _, shown in chosen):
            continue
        covered = [index for index, (other, _) in enumerate(chosen) if other.text in statement]
        if covered:
            chosen[covered[0]] = (sentence, statement)
            chosen = [pair for index, pair in enumerate(chosen) if index not in covered[1:]]
        else:
            chosen.append((sentence, statement))
    return chosen


class ExtractiveAnswerer:
    def __init__(self, embedder: Embedder, config: ExtractiveConfig) -> None:
        self._embedder = embedder
        self._config = config

    def answer(self, question: str, hits: list[Hit], question_vector: np.ndarray) -> Answer:
        scored = self._score_sentences(question, hits, question_vector)
        best = scored[0] if scored else None
        if best is None or best.score < self._config.min_score:
            confidence = self._confidence(best.score) if best else 0.0
            return Answer(question, ABSTENTION_TEXT, True, (), round(confidence, 4), tuple(hits))
        ranked = sorted(_defining(question, scored), key=lambda s: -s.rank_score)
        top = ranked[0].rank_score
        limit = self._config.max_sentences
        chosen = _selected([s for s in ranked if s.rank_score >= top - SELECTION_MARGIN], limit)
        wanted = missing_value(Focus.of(question), [statement for _, statement in chosen])
        if wanted is not None:  # the best sentence names the setting; its neighbour may give the value
            source = chosen[0][0].hit.chunk.id
            picked = [sentence for sentence, _ in chosen]
            near = [s for s in ranked if s.hit.chunk.id == source or wanted.anywhere and s.rank_score >= top - WIDE_MARGIN]
            extra = next((s for s in near if s not in picked and wanted(stated(s.text, s.hit.chunk))), None)
            if extra is None:  # another entry may state it of the asked name: "...used by gc --aggressive. This defaults to 250"
                extra = next((s for s in sorted(scored, key=lambda s: -s.rank_score) if s not in picked
                              and names_asked(question, statement := stated(s.text, s.hit.chunk)) and wanted(statement)), None)
            if extra is not None:
                chosen = _selected([*(sentence for sentence, _ in chosen[: limit - 1]), extra], limit)
        numbers: dict[str, int] = {}
        parts: list[str] = []
        citations: list[Citation] = []
        for sentence, statement in chosen:
            chunk = sentence.hit.chunk
            if chunk.id not in numbers:
                numbers[chunk.id] = len(numbers) + 1
            n = numbers[chunk.id]
            parts.append(f"{statement} [{n}]")
            citations.append(
                Citation(n, chunk.document_id, chunk.source, chunk.id, sentence.text, chunk.title, chunk.heading_path, chunk.page)
            )
        return Answer(question, " ".join(parts), False, tuple(citations), round(self._confidence(best.score), 4), tuple(hits))

    def _score_sentences(self, question: str, hits: list[Hit], question_vector: np.ndarray) -> list[ScoredSentence]:
        candidates: list[tuple[str, Hit]] = []
        firsts: set[int] = set()  # candidates that open their chunk's text (an entry's definition)
        seen: set[str] = set()
        for hit in hits:
            headings = heading_keys(hit.chunk)
            opening = True
            for text in sentence_texts(hit.chunk.text):
                key = " ".join(text.lower().split())
                if not is_statement(text) or key in seen or key in headings:
                    continue
                seen.add(key)
                if opening:
                    firsts.add(len(candidates))
                    opening = False
                candidates.append((text, hit))
        if not candidates:
            return []
        # A sentence whose subject is a pronoun is read with the sentence it refers to, as the
        # answer states it: "They are available as part of the ttfutils package" alone names no
        # "Subfont Definition Files" and shares no words with a question about them. Its bonus
        # stays its own: the antecedent, a candidate too, has the names it writes counted already,
        # and counting them twice lifted the pair above the asked entry's sentences.
        readings = [_reading(text, hit.chunk.text) for text, hit in candidates]
        vectors = self._embedder.embed_documents(readings)
        similarities = vectors @ question_vector
        terms = content_terms(question)
        focus = Focus.of(question)
        scored = []
        for index, ((text, hit), reading, sim) in enumerate(zip(candidates, readings, similarities, strict=True)):
            score = SEMANTIC_WEIGHT * float(sim) + LEXICAL_WEIGHT * overlap(terms, reading)
            extra = bonus(focus, text, hit.chunk, index in firsts)
            scored.append(ScoredSentence(text, hit, score, float(sim), score + extra))
        return sorted(scored, key=lambda s: -s.score)

    def _confidence(self, score: float) -> float:
        c = self._config
        return 1.0 / (1.0 + math.exp(-c.confidence_slope * (score - c.confidence_midpoint)))
