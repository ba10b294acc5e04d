"""Building the graph: extract each chunk (cached by chunk hash), merge per document, store.

Why per chunk: a chunk is the unit of provenance (every node and edge knows its chunks),
the unit an LLM call can afford, and the unit that stays unchanged when a document is
edited, so caching by its hash means re-ingestion pays only for chunks that changed.

Merging inside a document: names are keyed by `normalize.entity_key`; each key shows its
most frequent capitalised spelling; weak offline candidates survive only when confirmed
(a key phrase that recurs in the document, a sentence-opening name the document or the
graph also uses mid-sentence); aliases (acronym <-> expansion) go to the store, which
merges across documents.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import GeneratorError
from ..generators import Generation
from ..models import DocumentRecord, DocumentStatus, StoredChunk, sha256_text
from ..stores.base import DocumentStore, GraphStore
from .models import Alias, ChunkExtraction, DocumentGraph, Link, Mention
from .normalize import entity_key
from .offline import NAME as OFFLINE_NAME
from .offline import VERSION as OFFLINE_VERSION
from .offline import extract_offline

MAX_RELATION_CHARS = 80
_NUMBER = re.compile(r"[\d\s.,:%/-]+")


class Extractor(Protocol):
    """Turns one chunk into entities and relations. `name` keys the cache: change it when the
    output would change (another model, a new version of the rules)."""

    name: str

    def extract(self, chunk: StoredChunk) -> tuple[ChunkExtraction, Generation | None]: ...


class OfflineExtractor:
    """The deterministic extractor (offline.py) behind the `Extractor` protocol."""

    name = f"{OFFLINE_NAME}:{OFFLINE_VERSION}"

    def extract(self, chunk: StoredChunk) -> tuple[ChunkExtraction, Generation | None]:
        return extract_offline(chunk.text, chunk.heading_path), None


def chunk_hash(chunk: StoredChunk) -> str:
    """The cache key of a chunk: the hash of what it holds (prefix and text), as at ingestion."""
    return sha256_text(f"{chunk.prefix}\n{chunk.text}" if chunk.prefix else chunk.text)


@dataclass
class GraphBuildReport:
    """What a build did and what it cost."""

    extractor: str
    documents: int = 0
    """Documents whose graph was (re)written."""
    up_to_date: int = 0
    chunks: int = 0
    extracted: int = 0
    """Chunks sent to the extractor (cache misses)."""
    cached: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    """One entry per LLM call (Generation.record), empty offline."""
    stats: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor, "documents": self.documents, "up_to_date": self.up_to_date,
            "chunks": self.chunks, "extracted": self.extracted, "cached": self.cached, "failed": self.failed,
            "errors": self.errors[:20],
            "usage": {
                "calls": self.calls,
                "input_tokens": sum(c["input_tokens"] for c in self.calls),
                "output_tokens": sum(c["output_tokens"] for c in self.calls),
            },
            "graph": self.stats,
        }


GraphProgress = Callable[[DocumentRecord], None]


class GraphBuildStore(DocumentStore, GraphStore, Protocol):
    """What building a graph uses: the documents' chunks, and the graph it writes."""


class GraphBuilder:
    def __init__(self, store: GraphBuildStore, extractor: Extractor) -> None:
        self.store = store
        self.extractor = extractor

    def build(
        self, documents: Sequence[DocumentRecord], *, force: bool = False, progress: GraphProgress | None = None
    ) -> GraphBuildReport:
        """Build the graph of each ready document whose graph is missing or stale (all with `force`).

        A chunk whose extraction fails is left out and uncached; its document is recorded as
        incomplete, so the next build retries it (and only it: the others are cached).
        """
        report = GraphBuildReport(self.extractor.name)
        built = self.store.graph_documents()
        for record in documents:
            if record.status != DocumentStatus.READY or record.content_hash is None:
                continue
            if not force and built.get(record.id) == (self.extractor.name, record.content_hash):
                report.up_to_date += 1
                continue
            self._build_document(record, report)
            if progress:
                progress(record)
        report.stats = self.store.graph_stats()
        return report

    def _build_document(self, record: DocumentRecord, report: GraphBuildReport) -> None:
        chunks = self.store.document_chunks(record.id)
        hashes = [chunk_hash(c) for c in chunks]
        cached = self.store.get_graph_extractions(hashes, self.extractor.name)
        fresh: dict[str, dict[str, Any]] = {}
        extractions: dict[str, ChunkExtraction] = {}
        failed = False
        for chunk, key in zip(chunks, hashes, strict=True):
            report.chunks += 1
            if key in cached or key in fresh:
                report.cached += 1
                extractions[chunk.id] = ChunkExtraction.from_json(cached.get(key) or fresh[key])
                continue
            try:
                extraction, generation = self.extractor.extract(chunk)
            except GeneratorError as exc:
                report.failed += 1
                report.errors.append(f"{chunk.id}: {exc}")
                failed = True
                continue
            report.extracted += 1
            if generation is not None:
                report.calls.append(generation.record("graph"))
            fresh[key] = extraction.to_json()
            extractions[chunk.id] = extraction
        if fresh:
            self.store.put_graph_extractions(fresh, self.extractor.name)
        content_hash = "incomplete" if failed else str(record.content_hash)
        self.store.replace_document_graph(merge_document(self.store, record.id, self.extractor.name, content_hash, extractions))
        report.documents += 1


def merge_document(
    store: GraphStore, document_id: str, extractor: str, content_hash: str, extractions: dict[str, ChunkExtraction]
) -> DocumentGraph:
    """One document's chunk extractions as mentions, links and aliases under normalised keys."""
    entries = [(chunk_id, e, key) for chunk_id, x in extractions.items() for e in x.entities if (key := _key(e.name))]
    strong = {key for _, e, key in entries if not e.weak}
    totals: Counter[str] = Counter()
    for _, e, key in entries:
        totals[key] += e.count
    weak_keys = {key for _, e, key in entries if e.weak and key not in strong}
    known = set(store.find_entities(sorted(weak_keys))) if weak_keys else set()
    kept = strong | known | {key for _, e, key in entries if e.weak and e.type == "phrase" and totals[key] >= 2}

    spellings: dict[str, Counter[str]] = defaultdict(Counter)
    details: dict[str, tuple[str, str]] = {}
    for _, e, key in entries:
        if key in kept:
            spellings[key][e.name] += e.count
            type_, summary = details.get(key, ("", ""))
            if not type_ or (type_ in ("phrase", "name") and not e.weak):
                type_ = e.type
            details[key] = (type_, summary or e.summary)
    names = {key: max(c, key=lambda n: (not n.islower(), c[n], -len(n))) for key, c in spellings.items()}

    mentions = tuple(
        Mention(key, names[key], *details[key], chunk_id, e.count)
        for chunk_id, e, key in entries if key in kept
    )
    aliases = tuple(
        Alias(alias_key, key, chunk_id)
        for chunk_id, e, key in entries if key in kept
        for alias in e.aliases if (alias_key := _key(alias)) and alias_key != key
    )
    links = tuple(
        Link(source, relation, target, chunk_id, r.weight)
        for chunk_id, x in extractions.items() for r in x.relations
        if (source := _key(r.source)) in kept and (target := _key(r.target)) in kept and source != target
        and (relation := " ".join(r.relation.split()).lower()[:MAX_RELATION_CHARS])
    )
    return DocumentGraph(document_id, extractor, content_hash, _merged(mentions), links, aliases)


def _key(name: str) -> str:
    """The entity key of a name, or "" for names that cannot be nodes (numbers, one letter)."""
    key = entity_key(name)
    return "" if len(key) < 2 or _NUMBER.fullmatch(key) else key


def _merged(mentions: tuple[Mention, ...]) -> tuple[Mention, ...]:
    """One mention per (key, chunk), counts summed (a chunk may name a key in several spellings)."""
    merged: dict[tuple[str, str], Mention] = {}
    for m in mentions:
        previous = merged.get((m.key, m.chunk_id))
        merged[(m.key, m.chunk_id)] = m if previous is None else Mention(
            m.key, m.name, m.type, m.summary, m.chunk_id, previous.count + m.count
        )
    return tuple(merged.values())


