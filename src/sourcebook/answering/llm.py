"""From a question to a checked `Answer`: retrieval, the relevance gate, sources, the LLM, the check.

    question -> hybrid retrieval (+ rewritten queries, RRF-fused, when enabled)
             -> extractive scoring of the retrieved sentences: below answer_min_score, or when the
                calibrated probability that the documents hold an answer is below
                answer_min_answerable (confidence.py), or when the question is set in something
                no document names, names something no document holds, or uses words no document
                does (evidence.unknown_setting, unknown_name, unknown_words), the answer abstains here and no LLM
                is called; with no LLM configured this is the answer
             -> sources: the top chunks ("retrieval"), or every chunk of the documents in scope
                when they fit the budget ("full-context"; "auto" picks)
             -> numbered-sources prompt -> LLM (streamed or not)
             -> citation check -> follow-up questions -> calibrated confidence -> Answer
             -> "you may also want to read": retrieved documents the answer did not cite (related.py)

`run` yields the answer's text deltas as the LLM writes them, then the finished `Answer`;
`AnswerStream` is the iterator the API hands out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from ..embedders.base import Embedder
from ..errors import ConfigurationError, InvalidQueryError
from ..generators import Generation, Generator, Message
from ..models import Answer, CitationCheck, Hit
from ..related import you_may_also_read
from ..retrieval import Retriever, SearchOptions
from ..settings import AnswerMode, Settings
from ..stores.base import DocumentStore, SearchStore
from .citations import CitationChecker, cited_numbers
from .confidence import ABSTAIN_BELOW, ConfidenceFeatures, answer_features, calibrate, quotes_what_was_asked
from .evidence import unknown_name, unknown_setting, unknown_words
from .extractive import ABSTENTION_TEXT, ExtractiveAnswerer, ExtractiveConfig
from .followups import Answerable, llm_follow_ups, names_subject, offline_follow_ups
from .fullcontext import full_context_sources
from .prompts import REFUSAL, Source, answer_request, is_refusal
from .rewrite import rewrite_question, search_rewritten

# Conservative characters per token when a local model's context bounds the full-context budget.
CHARS_PER_TOKEN = 3
# Room left in a local model's context for the prompt's instructions and the answer.
RESERVED_TOKENS = 1500
# Chunks a keyword search reads to check that a follow-up's subject is answerable.
FOLLOW_UP_LOOKUP = 3
# Chunks a keyword search reads for a name the retrieved chunks do not write (evidence.unknown_name).
NAME_LOOKUP = 20


@dataclass(frozen=True)
class Question:
    """One question to answer and everything that shapes the answer."""

    text: str
    """As the user asked it (shown to the LLM, with `history`)."""
    query: str
    """What is searched: `text`, or a chat follow-up rewritten to stand alone."""
    options: SearchOptions
    mode: AnswerMode
    rewrite: bool = False
    history: tuple[Message, ...] = ()


class AnswerStore(DocumentStore, SearchStore, Protocol):
    """What the answerer reads: the documents in scope (full-context sources) and term statistics."""


class UsageLog:
    """The LLM calls behind one answer: per call, and totals."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def add(self, purpose: str, generation: Generation | None, error: str | None = None) -> None:
        if generation is not None:
            self.calls.append(generation.record(purpose))
        elif error is not None:
            self.calls.append({"purpose": purpose, "error": error})

    def to_dict(self) -> dict[str, Any]:
        if not self.calls:
            return {}
        total = {key: sum(call.get(key, 0) for call in self.calls) for key in ("input_tokens", "output_tokens", "latency_ms")}
        total["latency_ms"] = round(total["latency_ms"], 1)
        return {"calls": self.calls, **total}


class Answerer:
    """Answers questions over one store; with `generator` None, answers are extractive."""

    def __init__(
        self, store: AnswerStore, retriever: Retriever, embedder: Embedder, settings: Settings, generator: Generator | None
    ) -> None:
        self._store = store
        self._retriever = retriever
        self._embedder = embedder
        self._settings = settings
        self._generator = generator

    def answer(self, question: Question, usage: UsageLog | None = None) -> Answer:
        *_, last = self.run(question, stream=False, usage=usage)
        assert isinstance(last, Answer)
        return last

    def run(self, question: Question, *, stream: bool, usage: UsageLog | None = None) -> Iterator[str | Answer]:
        """The answer's text deltas (when streaming), then the `Answer` with what it did not cite
        but its reader may want (`related`)."""
        for event in self._run(question, stream, usage or UsageLog()):
            yield replace(event, related=you_may_also_read(event)) if isinstance(event, Answer) else event

    def _run(self, question: Question, stream: bool, usage: UsageLog) -> Iterator[str | Answer]:
        if self._generator is None and question.mode == "full-context":
            raise ConfigurationError("full-context mode needs an LLM: pass --llm provider:model or set SOURCEBOOK_LLM")
        vector = self._embedder.embed_query(question.query)
        # at most `per_document` of a document first, then topped up to `top_k` (`SearchOptions.top_up`)
        hits = self._retriever.search(question.query, question.options, vector)
        gate = self._calibrated(
            question.query, self._extractive(question.query, hits, vector), vector, scope=question.options
        )
        if self._generator is None or gate.abstained:  # nothing relevant: no LLM call is made
            offline = replace(
                gate, question=question.text, queries=(question.query,), usage=usage.to_dict(),
                follow_up_questions=() if gate.abstained else offline_follow_ups(
                    (h.chunk for h in hits), {c.chunk_id for c in gate.citations}, question.query,
                    self._answerable(question.options),
                ),
                answerer=gate.answerer if self._generator is None else self._generator.spec,
            )
            if stream:
                yield offline.answer
            yield offline
            return
        yield from self._generate(question, hits, vector, usage, stream, self._generator)

    def _extractive(self, query: str, hits: list[Hit], vector: np.ndarray) -> Answer:
        config = ExtractiveConfig(min_score=self._settings.answer_min_score, max_sentences=self._settings.answer_sentences)
        return ExtractiveAnswerer(self._embedder, config).answer(query, hits, vector)

    def _calibrated(
        self, query: str, answer: Answer, vector: np.ndarray, check: CitationCheck | None = None, gate: bool = True,
        scope: SearchOptions | None = None,
    ) -> Answer:
        """`answer` with its calibrated confidence; with `gate`, an abstention when the documents
        probably hold no answer (an LLM's answer passed that gate as the extractive one before it);
        `scope` (the question's search options) lets `unknown_name` look a name up in the documents asked.
        `answer_min_answerable` 0 turns the whole gate off, the rules on unknown settings, names and words with it:
        bench/calibrate_answers.py needs every answer the extractive answerer would give."""
        stats = self._store.term_statistics(query)
        features = answer_features(query, answer, vector, self._embedder, stats)
        calibrated = calibrate(features, check)
        threshold = ABSTAIN_BELOW if self._settings.answer_min_answerable is None else self._settings.answer_min_answerable
        unlikely = calibrated.p_answerable < threshold and not quotes_what_was_asked(features)
        lookup = None if scope is None else self._keyword_lookup(scope, NAME_LOOKUP)
        if gate and not answer.abstained and threshold > 0 and (
            unlikely or unknown_setting(query, stats, answer.hits) or unknown_name(query, stats, answer.hits, lookup)
            or unknown_words(stats)
        ):
            answer = replace(answer, answer=ABSTENTION_TEXT, abstained=True, citations=())
        return replace(answer, confidence=round(calibrated.p_correct, 4))

    def confidence_features(self, query: str, answer: Answer, vector: np.ndarray) -> ConfidenceFeatures:
        """What `answer`'s calibrated confidence is computed from (bench/calibrate_answers.py fits on
        these): the answer, its retrieved chunks and how common the query's terms are in the store."""
        return answer_features(query, answer, vector, self._embedder, self._store.term_statistics(query))

    def _generate(
        self, question: Question, hits: list[Hit], vector: np.ndarray, usage: UsageLog, stream: bool, generator: Generator
    ) -> Iterator[str | Answer]:
        queries = [question.query]
        if question.rewrite:
            hits, extra = self._rewrite(question, hits, usage, generator)
            queries += extra
        mode, sources = self._sources(question, hits, generator)
        request = answer_request(
            question.text, sources, question.history,
            max_tokens=self._settings.llm_max_tokens, temperature=self._settings.llm_temperature,
        )
        generation: Generation | None = None
        if stream:
            for event in generator.stream(request):
                if isinstance(event, Generation):
                    generation = event
                else:
                    yield event
        else:
            generation = generator.generate(request)
        assert generation is not None
        usage.add("answer", generation)
        yield self._finish(question, hits, sources, generation, vector, mode, queries, usage, generator)

    def _rewrite(
        self, question: Question, hits: list[Hit], usage: UsageLog, generator: Generator
    ) -> tuple[list[Hit], list[str]]:
        rewrite = rewrite_question(generator, question.query)
        usage.add("rewrite", rewrite.generation, rewrite.error)
        options = question.options
        keyword_options = replace(options, mode="keyword")
        return search_rewritten(
            rewrite, hits,
            lambda q: self._retriever.search(q, options),
            lambda q: self._retriever.search(q, keyword_options),
            top_k=options.top_k, per_document=options.per_document, rrf_k=options.rrf_k,
        )

    def _sources(self, question: Question, hits: list[Hit], generator: Generator) -> tuple[str, list[Source]]:
        if question.mode != "retrieval":
            budget = self._settings.full_context_max_chars
            context = getattr(generator, "context_tokens", None)
            if context:
                budget = min(budget, (context - RESERVED_TOKENS) * CHARS_PER_TOKEN)
            whole = full_context_sources(self._store, question.options.filters, budget)
            if whole is not None:
                return "full-context", whole
            if question.mode == "full-context":
                raise InvalidQueryError(
                    f"the documents in scope exceed the full-context budget ({budget} characters): narrow the scope "
                    f"(collection, document ids, metadata), raise full_context_max_chars, or use mode 'retrieval'"
                )
        return "retrieval", [Source(i, hit.chunk, hit.chunk.text) for i, hit in enumerate(hits, 1)]

    def _finish(
        self, question: Question, hits: list[Hit], sources: list[Source], generation: Generation,
        vector: np.ndarray, mode: str, queries: list[str], usage: UsageLog, generator: Generator,
    ) -> Answer:
        text = generation.text.strip()
        abstained = not text or (is_refusal(text) and not cited_numbers(text))
        base = Answer(
            question=question.text, answer=text or REFUSAL, abstained=abstained, citations=(), confidence=0.0,
            hits=tuple(hits), mode=mode, queries=tuple(queries),  # type: ignore[arg-type]
            answerer=f"{generation.provider}:{generation.model}",
        )
        if abstained:  # nothing to follow up on: the documents did not answer
            return replace(self._calibrated(question.query, base, vector), usage=usage.to_dict())
        checked = CitationChecker(self._embedder, self._settings.citation_min_support).check(text, sources)
        cited_ids = {c.chunk_id for c in checked.citations}
        follow_ups = self._follow_ups(question, checked.text, sources, cited_ids, usage, generator)
        answered = replace(base, answer=checked.text, citations=checked.citations, citation_check=checked.check)
        return replace(self._calibrated(question.query, answered, vector, checked.check, gate=False), usage=usage.to_dict(),
                       follow_up_questions=follow_ups)

    def _follow_ups(
        self, question: Question, answer: str, sources: list[Source], cited: set[str], usage: UsageLog, generator: Generator
    ) -> tuple[str, ...]:
        chunks = [s.chunk for s in sources]
        if self._settings.llm_follow_ups:
            questions, generation, error = llm_follow_ups(generator, question.text, answer, chunks)
            usage.add("follow_ups", generation, error)
            if questions:
                return questions
        return offline_follow_ups(chunks, cited, question.query, self._answerable(question.options))

    def _answerable(self, options: SearchOptions) -> Answerable:
        """A follow-up's check: a keyword search for its subject finds a passage naming it."""
        search = self._keyword_lookup(options, FOLLOW_UP_LOOKUP, per_document=1)
        return lambda subject: names_subject(subject, [hit.chunk for hit in search(subject)])

    def _keyword_lookup(self, options: SearchOptions, top_k: int, per_document: int = 0) -> Callable[[str], list[Hit]]:
        """A keyword search for a word or phrase in the scope of `options`: its first `top_k` chunks,
        at most `per_document` of a document (0: any number), [] for a phrase with no searchable word."""
        quick = replace(options, mode="keyword", top_k=top_k, per_document=per_document, min_score=None,
                        graph=False, rerank=False, top_up=False)

        def lookup(text: str) -> list[Hit]:
            try:
                return self._retriever.search(text, quick)
            except InvalidQueryError:
                return []

        return lookup


class AnswerStream:
    """Iterate for the answer's text as it is written; `.answer` is the checked `Answer` at the end.

    The streamed text is the model's raw words; `.answer.answer` is that text after the
    citation check (invalid citation numbers removed), which may differ slightly.
    """

    def __init__(self, events: Iterator[str | Answer]) -> None:
        self._events = events
        self._answer: Answer | None = None

    def __iter__(self) -> Iterator[str]:
        for event in self._events:
            if isinstance(event, Answer):
                self._answer = event
            else:
                yield event

    @property
    def answer(self) -> Answer:
        """The finished answer (consumes whatever text was not read yet)."""
        if self._answer is None:
            for _ in self:
                pass
        assert self._answer is not None
        return self._answer
