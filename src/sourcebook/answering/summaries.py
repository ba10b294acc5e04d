"""Summaries of a document or a collection, every sentence cited like an answer.

Offline (no LLM) a summary is extractive: the document's chunks are grouped into sections
(consecutive chunks under the same two leading headings, else the same page); each sentence gets
a vector from what ingestion stored (the mean of its sentence windows' vectors, so nothing is
embedded again), and the most central one of a section (closest to its mean) stands for it.
Sections share the sentence budget by size, and the chosen sentences are read back in document
order, each quoting its chunk verbatim, so a summary cannot say what the document does not.

With an LLM it is map-reduce: each part of the document (sections packed up to `PART_CHARS`)
is summarised from its numbered chunks (map), the citation checker (citations.py) keeps only the
sentences their sources support, and one more call combines the parts' statements (reduce),
checked again against the chunks they cite. Unsupported sentences are dropped from the text and
stay visible in `citation_check`, which is the check of the LLM's last text.

A collection's summary draws on its documents' summaries (each cached): offline, their sentences
taken in turns; with an LLM, one reduce over their statements.

Summaries are cached in the store (`SummaryCache`) by subject, summarizer and the content hash
they were made from: a changed document misses, and re-summarising replaces the stale entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ..chunking import WINDOW_SENTENCES, sentence_texts, split_sentences
from ..embedders.base import Embedder
from ..errors import DocumentNotReadyError
from ..generators import Generator
from ..models import Citation, CitationCheck, DocumentRecord, DocumentStatus, StoredChunk, Summary, sha256_text
from ..settings import Settings
from ..stores.base import DocumentStore, SummaryCache
from ..stores.sql.summaries import COLLECTION_SUBJECT
from .citations import CitationChecker, cited_numbers, remove_invalid, strip_citations
from .extractive import is_statement
from .llm import UsageLog
from .prompts import Source, summary_map_request, summary_reduce_request

SUMMARY_VERSION = 1
"""Part of every cache key: bump it when a change of this module changes what a summary says."""
DEFAULT_SENTENCES = 8
PART_CHARS = 6000
"""Most characters of chunk text one map call reads (a 20-page document takes a few calls)."""
MAX_SECTION_CANDIDATES = 200
"""Sentences of a section weighed for centrality (their vectors are stored: weighing is cheap)."""
MAX_COLLECTION_DOCUMENTS = 20
"""A collection summary draws on its largest documents (by chunks), at most this many."""
REDUNDANT = 0.9
"""Cosine above which a second sentence of a section adds nothing to the first."""
ANAPHORA = ("it ", "its ", "this ", "these ", "that ", "those ", "they ", "he ", "she ", "such ")
ANAPHORA_PENALTY = 0.1
"""A sentence opening with a pronoun leans on the one before it, which a summary leaves out."""


class SummaryStore(DocumentStore, SummaryCache, Protocol):
    """What summarizing needs of a store: the documents' chunks, and the cache."""


@dataclass(frozen=True)
class Statement:
    """One summary sentence without its markers, and the citations that support it."""

    text: str
    citations: tuple[Citation, ...]


@dataclass(frozen=True)
class Candidate:
    """A sentence that may stand in an extractive summary, and where it stands in its chunk."""

    chunk: StoredChunk
    start: int
    """Character offset in the chunk's text."""
    text: str
    index: int
    """Its number among the chunk's sentences (window i holds sentences i and i + 1)."""
    count: int
    """How many sentences the chunk has."""


class Summarizer:
    """Summarizes documents and collections of one store; extractive when `generator` is None."""

    def __init__(
        self, store: SummaryStore, embedder: Callable[[], Embedder], settings: Settings, generator: Generator | None,
        sentences: int = DEFAULT_SENTENCES,
    ) -> None:
        """`embedder` is called only when something needs embedding (the citation check, sentences
        without stored windows): a cached or extractive summary does not load the model."""
        self._store = store
        self._embedder = embedder
        self._settings = settings
        self._generator = generator
        self._sentences = sentences
        self.name = "extractive" if generator is None else generator.spec
        """"extractive" or the "provider:model" that writes the summaries."""
        self.cache_key = f"{self.name}/v{SUMMARY_VERSION}/{sentences}"

    # Documents -------------------------------------------------------------------------
    def document(self, record: DocumentRecord, *, refresh: bool = False) -> Summary:
        """The document's summary: from the cache unless the document changed (or `refresh`)."""
        if record.status != DocumentStatus.READY or not record.content_hash or not record.chunk_count:
            raise DocumentNotReadyError(
                f"{record.source} is {record.status} with {record.chunk_count} chunks: nothing to summarize yet"
            )
        if not refresh and (cached := self._store.get_summary(record.id, record.content_hash, self.cache_key)):
            return Summary.from_dict(cached)
        chunks = self._store.document_chunks(record.id)
        usage = UsageLog()
        check: CitationCheck | None = None
        if self._generator is None:
            statements = self._extractive(chunks)
        else:
            statements, check = self._map_reduce(record.title, chunks, usage, self._generator)
        text, citations = render(statements)
        summary = Summary(
            record.id, record.source, record.title, record.collection, text, citations, self.name, check,
            (record.id,), usage.to_dict(),
        )
        self._store.put_summary(record.id, record.content_hash, self.cache_key, summary.to_dict())
        return summary

    def _extractive(self, chunks: Sequence[StoredChunk]) -> list[Statement]:
        """The most central sentence of each section (more for big sections), in document order."""
        sections = [candidates for section in _sections(chunks) if (candidates := _candidates(section))]
        if not sections:
            return []
        vectors = self._sentence_vectors(chunks[0].document_id, [c for section in sections for c in section])
        chosen: list[tuple[int, int, Statement]] = []
        offset = 0
        for section, slots in zip(sections, _slots([len(s) for s in sections], self._sentences), strict=True):
            section_vectors = vectors[offset : offset + len(section)]
            offset += len(section)
            for index in _central(section_vectors, section, slots):
                candidate = section[index]
                chunk = candidate.chunk
                citation = Citation(
                    0, chunk.document_id, chunk.source, chunk.id, candidate.text, chunk.title, chunk.heading_path, chunk.page
                )
                chosen.append((chunk.position, candidate.start, Statement(candidate.text, (citation,))))
        return [statement for *_, statement in sorted(chosen, key=lambda item: item[:2])]

    def _sentence_vectors(self, document_id: str, candidates: Sequence[Candidate]) -> np.ndarray:
        """A vector per candidate sentence from what ingestion stored, so a summary embeds nothing:
        the mean of the sentence windows holding it (chunking/windows.py), or the
        chunk's own vector for a chunk too short to have windows. A chunk whose stored windows do
        not match its sentences (stored by an older splitter) has its sentences embedded now."""
        stored, chunk_vectors, windows = self._store.export_chunks(document_id)
        by_position = {chunk.position: i for i, chunk in enumerate(stored)}
        vectors = np.zeros((len(candidates), chunk_vectors.shape[1]), dtype=np.float32)
        missing: list[int] = []
        for row, candidate in enumerate(candidates):
            i = by_position.get(candidate.chunk.position)
            if i is None:
                missing.append(row)
            elif not len(windows[i]) and candidate.count <= WINDOW_SENTENCES:
                vectors[row] = chunk_vectors[i]
            elif len(windows[i]) == candidate.count - WINDOW_SENTENCES + 1:
                around = windows[i][max(candidate.index - WINDOW_SENTENCES + 1, 0) : candidate.index + 1]
                mean = around.mean(axis=0)
                vectors[row] = mean / (np.linalg.norm(mean) or 1.0)
            else:
                missing.append(row)
        if missing:
            vectors[missing] = self._embedder().embed_documents([candidates[row].text for row in missing])
        return vectors

    def _map_reduce(
        self, title: str, chunks: Sequence[StoredChunk], usage: UsageLog, generator: Generator
    ) -> tuple[list[Statement], CitationCheck]:
        parts = _parts(_sections(chunks))
        total = sum(len(c.text) for c in chunks)
        statements: list[Statement] = []
        check: CitationCheck | None = None
        for part in parts:
            share = max(2, math.ceil(self._sentences * sum(len(c.text) for c in part) / total))
            sources = [Source(n, chunk, chunk.text) for n, chunk in enumerate(part, 1)]
            request = summary_map_request(title, sources, min(share, self._sentences), max_tokens=self._settings.llm_max_tokens)
            generation = generator.generate(request)
            usage.add("summary_map", generation)
            kept, check = self._checked(generation.text, sources)
            statements += kept
        assert check is not None  # a ready document has chunks, so at least one part
        if len(parts) == 1:
            return statements[: self._sentences], check
        return self._reduce(f'the document "{title}"', statements, usage, generator)

    # Collections -------------------------------------------------------------------------
    def collection(self, name: str, records: Sequence[DocumentRecord], *, refresh: bool = False) -> Summary:
        """The summary of a collection's ready documents (its largest `MAX_COLLECTION_DOCUMENTS`)."""
        ready = [r for r in records if r.status == DocumentStatus.READY and r.content_hash and r.chunk_count]
        if not ready:
            raise DocumentNotReadyError(f"collection {name!r} has no ready document to summarize")
        chosen = sorted(sorted(ready, key=lambda r: -r.chunk_count)[:MAX_COLLECTION_DOCUMENTS], key=lambda r: r.source)
        subject = COLLECTION_SUBJECT + name
        content_hash = sha256_text("\n".join(f"{r.id} {r.content_hash}" for r in chosen))
        if not refresh and (cached := self._store.get_summary(subject, content_hash, self.cache_key)):
            return Summary.from_dict(cached)
        per_document = [statements_of(self.document(r, refresh=refresh)) for r in chosen]
        usage = UsageLog()
        check: CitationCheck | None = None
        if self._generator is None:
            statements = _in_turns(per_document, self._sentences)
        else:
            every = [s for statements in per_document for s in statements]
            statements, check = self._reduce(f'the collection "{name}"', every, usage, self._generator)
        text, citations = render(statements)
        summary = Summary(
            None, None, name, name, text, citations, self.name, check, tuple(r.id for r in chosen), usage.to_dict(),
        )
        self._store.put_summary(subject, content_hash, self.cache_key, summary.to_dict())
        return summary

    # The LLM's words, checked ---------------------------------------------------------------
    def _reduce(
        self, subject: str, statements: list[Statement], usage: UsageLog, generator: Generator
    ) -> tuple[list[Statement], CitationCheck]:
        """One call combining cited statements, checked against the chunks they cite; when nothing
        it wrote is supported, the first statements themselves (each checked already)."""
        text, citations = render(statements)
        numbered = {c.n: c.chunk_id for c in citations}
        chunks = self._store.get_chunks(list(dict.fromkeys(numbered.values())))
        sources = [Source(n, chunks[chunk_id], chunks[chunk_id].text) for n, chunk_id in numbered.items() if chunk_id in chunks]
        request = summary_reduce_request(subject, sentence_texts(text), self._sentences, max_tokens=self._settings.llm_max_tokens)
        generation = generator.generate(request)
        usage.add("summary_reduce", generation)
        kept, check = self._checked(generation.text, sources)
        return (kept or statements)[: self._sentences], check

    def _checked(self, text: str, sources: list[Source]) -> tuple[list[Statement], CitationCheck]:
        """The sentences of `text` their cited sources support, each with the citations that do."""
        checked = CitationChecker(self._embedder(), self._settings.citation_min_support).check(text, sources)
        kept = [
            Statement(strip_citations(sentence.text), tuple(
                c for c in checked.citations if c.n in sentence.supported_by and c.supported
            ))
            for sentence in checked.check.sentences
            if sentence.status == "supported"
        ]
        return kept, checked.check


def render(statements: Sequence[Statement]) -> tuple[str, tuple[Citation, ...]]:
    """The summary text ("Sentence [1]." ...) and its citations, numbered by chunk in order of use."""
    numbers: dict[str, int] = {}
    parts: list[str] = []
    citations: dict[tuple[str, str], Citation] = {}
    for statement in statements:
        for citation in statement.citations:
            numbers.setdefault(citation.chunk_id, len(numbers) + 1)
            citations.setdefault((citation.chunk_id, citation.quote), replace(citation, n=numbers[citation.chunk_id]))
        markers = "".join(f"[{n}]" for n in dict.fromkeys(numbers[c.chunk_id] for c in statement.citations))
        body = " ".join(statement.text.split())  # a sentence over a line break reads as one line
        stop = body[-1] if body and body[-1] in ".!?" else "."
        body = body[:-1] if body and body[-1] in ".!?" else body
        parts.append(f"{body} {markers}{stop}" if markers else f"{body}{stop}")
    return " ".join(parts), tuple(sorted(citations.values(), key=lambda c: c.n))


def statements_of(summary: Summary) -> list[Statement]:
    """A summary's sentences back as statements, each with its own citations (a collection's material)."""
    text, _ = remove_invalid(summary.summary, {c.n for c in summary.citations})
    statements = []
    for sentence in sentence_texts(text):
        numbers = cited_numbers(sentence)
        claim = strip_citations(sentence)
        cited = [c for c in summary.citations if c.n in numbers]
        own = [c for c in cited if " ".join(c.quote.split()).rstrip(".!?") == claim.rstrip(".!?")]
        statements.append(Statement(claim, tuple(own or cited)))
    return statements


def _sections(chunks: Sequence[StoredChunk]) -> list[list[StoredChunk]]:
    """Consecutive chunks under the same two leading headings (else the same page, else four at a time)."""
    sections: list[list[StoredChunk]] = []
    last: object = None
    for chunk in chunks:
        key = chunk.heading_path[:2] or (("page", chunk.page) if chunk.page is not None else ("run", chunk.position // 4))
        if not sections or key != last:
            sections.append([])
        sections[-1].append(chunk)
        last = key
    return sections


def _candidates(section: Sequence[StoredChunk]) -> list[Candidate]:
    """The section's sentences that can stand in a summary (not headings, questions or table rows)."""
    found: list[Candidate] = []
    for chunk in section:
        headings = {" ".join(h.lower().split()) for h in (*chunk.heading_path, chunk.title)}
        spans = split_sentences(chunk.text)
        for index, (start, end) in enumerate(spans):
            text = chunk.text[start:end]
            if is_statement(text) and "|" not in text and " ".join(text.lower().split()) not in headings:
                found.append(Candidate(chunk, start, text, index, len(spans)))
    return found[:MAX_SECTION_CANDIDATES]


def _slots(sizes: Sequence[int], budget: int) -> list[int]:
    """How many sentences each section gets: one each for the biggest `budget` sections, then any
    left over in turns to the biggest ones again (never more than a section's sentences)."""
    slots = [0] * len(sizes)
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    left = budget
    while left > 0:
        given = 0
        for i in order:
            if left > 0 and slots[i] < sizes[i]:
                slots[i] += 1
                left -= 1
                given += 1
        if not given:
            break
    return slots


def _central(vectors: np.ndarray, candidates: Sequence[Candidate], count: int) -> list[int]:
    """Indexes of the `count` sentences closest to the section's mean (ones opening with a pronoun
    less so; ties in document order), skipping near-repeats of one picked already."""
    if count == 0:
        return []
    mean = vectors.mean(axis=0)
    mean = mean / (np.linalg.norm(mean) or 1.0)
    penalties = np.array([ANAPHORA_PENALTY if c.text.lower().startswith(ANAPHORA) else 0.0 for c in candidates])
    picked: list[int] = []
    for index in np.argsort(-(vectors @ mean - penalties), kind="stable"):
        if not any(_repeats(vectors, candidates, int(index), other) for other in picked):
            picked.append(int(index))
        if len(picked) == count:
            break
    return picked


def _repeats(vectors: np.ndarray, candidates: Sequence[Candidate], a: int, b: int) -> bool:
    """Whether sentence a says what b says. Neighbours in one chunk share a window (or, in a short
    chunk, the chunk's vector), so their likeness is the windows' and proves nothing."""
    first, second = candidates[a], candidates[b]
    if first.chunk.id == second.chunk.id and abs(first.index - second.index) < WINDOW_SENTENCES:
        return False
    return float(vectors[a] @ vectors[b]) >= REDUNDANT


def _parts(sections: list[list[StoredChunk]]) -> list[list[StoredChunk]]:
    """Sections packed in order into parts of at most PART_CHARS (a bigger section alone, chunk by chunk)."""
    parts: list[list[StoredChunk]] = [[]]
    size = 0
    for section in sections:
        section_size = sum(len(c.text) for c in section)
        if parts[-1] and size + section_size > PART_CHARS:
            parts.append([])
            size = 0
        for chunk in section:
            if parts[-1] and size + len(chunk.text) > PART_CHARS:
                parts.append([])
                size = 0
            parts[-1].append(chunk)
            size += len(chunk.text)
    return parts


def _in_turns(per_document: list[list[Statement]], budget: int) -> list[Statement]:
    """Each document's sentences in order, the documents taking turns, up to `budget`."""
    taken: list[Statement] = []
    for round_ in range(max((len(s) for s in per_document), default=0)):
        for statements in per_document:
            if round_ < len(statements) and len(taken) < budget:
                taken.append(statements[round_])
    return taken
