"""The typed values that flow between the pipeline's stages.

loader -> ParsedDocument -> chunker -> Chunk -> embedder/store -> Hit -> answerer -> Answer.
Plain frozen dataclasses: cheap, hashable where useful, and trivially turned into JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal

from .errors import InvalidMetadataError
from .locations import location

BlockKind = Literal["heading", "term", "paragraph", "list", "table", "code"]
"""A "term" is a reference entry's heading (an option, a variable, an API name): loaders/reference.py."""


def sha256_text(text: str) -> str:
    """Content hash used everywhere a text's identity matters (documents, chunks)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document, in reading order.

    `heading_path` is the chain of headings above the block (for a heading block,
    the chain ending with itself); `page` is 1-based for paged formats, else None.
    """

    kind: BlockKind
    text: str
    heading_path: tuple[str, ...] = ()
    page: int | None = None


@dataclass(frozen=True)
class ParsedDocument:
    """What a loader produces: a title, ordered blocks and facts about the source."""

    source: str
    title: str
    blocks: tuple[Block, ...]
    media_type: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The document's full text: blocks joined by blank lines (what chunks cover)."""
        return "\n\n".join(block.text for block in self.blocks)

    @property
    def content_hash(self) -> str:
        return sha256_text(self.title + "\x00" + self.text)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document sized for the embedding model.

    `start`/`end` are character offsets of `text` in `ParsedDocument.text`.
    `prefix` is the contextual prefix ("Title > Section") prepended for embedding
    and keyword search; `content_hash` covers prefix and text, so a changed prefix
    (a renamed section) re-embeds the chunk.
    """

    position: int
    text: str
    start: int
    end: int
    heading_path: tuple[str, ...]
    page: int | None
    token_count: int
    prefix: str

    @property
    def embedding_text(self) -> str:
        return f"{self.prefix}\n{self.text}" if self.prefix else self.text

    @property
    def content_hash(self) -> str:
        return sha256_text(self.embedding_text)


class DocumentStatus(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    READY = "ready"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    """Never stored: a pending or processing document whose owner process has ended (owners.py)."""


@dataclass(frozen=True)
class DocumentRecord:
    """A document as the store knows it."""

    id: str
    collection: str
    source: str
    title: str
    media_type: str
    status: DocumentStatus
    error: str | None
    chunk_count: int
    content_hash: str | None
    metadata: dict[str, Any]
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        return data


@dataclass(frozen=True)
class StoredChunk:
    """A chunk read back from the store, with what a hit needs of its document."""

    id: str
    document_id: str
    collection: str
    source: str
    title: str
    position: int
    text: str
    heading_path: tuple[str, ...]
    page: int | None
    prefix: str

    @property
    def location(self) -> str:
        """Where in its document it is: "page 3", "slide 2", "sheet Sales, rows 2-40", a heading path."""
        return location(self.source, self.title, self.heading_path, self.page)


@dataclass(frozen=True)
class SearchFilter:
    """Restricts a search. Empty fields do not filter."""

    collections: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    metadata: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def build(
        cls,
        collections: list[str] | tuple[str, ...] | str | None = None,
        document_ids: list[str] | tuple[str, ...] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SearchFilter:
        if isinstance(collections, str):
            collections = [collections]
        return cls(
            collections=tuple(collections or ()),
            document_ids=tuple(document_ids or ()),
            metadata=tuple(sorted((metadata or {}).items())),
        )


@dataclass(frozen=True)
class ScoredId:
    """One retriever's verdict on one chunk: its rank (1-based) and raw score."""

    chunk_id: str
    rank: int
    score: float


@dataclass(frozen=True)
class TermStatistics:
    """How common a query's keyword terms are in the whole knowledge base (the tenant's live chunks).

    Retrieval sees only its top chunks; these counts say whether a term the question names occurs
    anywhere at all, which is what tells "the documents never mention Overleaf" from "the chunk
    that mentions it ranked low"."""

    chunks: int
    """Live chunks in the knowledge base (BM25's N)."""
    frequencies: dict[str, int]
    """Each of the query's analysed terms (stores/bm25.py: stopwords dropped, Porter stems) ->
    how many live chunks hold it (0: none), in query order."""

    def rarity(self, term: str) -> float:
        """The term's inverse document frequency scaled to [0, 1]: ln((N + 0.5) / (n + 0.5)) over
        its value for a term no chunk holds, so knowledge bases of any size read alike (BM25's
        own idf grows with N). 1 for a term no chunk holds, 0 for one every chunk holds (and
        for an empty knowledge base)."""
        if self.chunks <= 0:
            return 0.0
        count = min(self.frequencies.get(term, 0), self.chunks)
        return math.log((self.chunks + 0.5) / (count + 0.5)) / math.log((self.chunks + 0.5) / 0.5)


@dataclass(frozen=True)
class Hit:
    """A search result: a chunk, its fused score, and how each retriever ranked it."""

    rank: int
    score: float
    chunk: StoredChunk
    keyword_rank: int | None = None
    keyword_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    graph_rank: int | None = None
    """Rank in the knowledge graph's list (graph-augmented retrieval), else None."""
    graph_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of a hit (the scripts' contract, plus extra fields)."""
        c = self.chunk
        data: dict[str, Any] = {
            "rank": self.rank,
            "score": self.score,
            "document_id": c.document_id,
            "source": c.source,
            "title": c.title,
            "chunk_id": c.id,
            "text": c.text,
            "heading_path": list(c.heading_path),
            "page": c.page,
            "location": c.location,
            "collection": c.collection,
            "position": c.position,
            "retrievers": {
                "keyword": {"rank": self.keyword_rank, "score": self.keyword_score},
                "vector": {"rank": self.vector_rank, "score": self.vector_score},
            },
        }
        if self.graph_rank is not None:
            data["retrievers"]["graph"] = {"rank": self.graph_rank, "score": self.graph_score}
        return data


@dataclass(frozen=True)
class Citation:
    """A numbered source of an answer and the span of it that supports the answer."""

    n: int
    document_id: str
    source: str
    chunk_id: str
    quote: str
    title: str
    heading_path: tuple[str, ...]
    page: int | None
    supported: bool | None = None
    """The citation check's verdict on this quote; None where nothing was checked (verbatim extractive quotes)."""

    @property
    def location(self) -> str:
        """Where in its document the quote is (see `locations.location`)."""
        return location(self.source, self.title, self.heading_path, self.page)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["heading_path"] = list(self.heading_path)
        data["location"] = self.location
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Citation:
        """A citation read back from `to_dict`'s output (a stored answer or summary)."""
        fields = {key: value for key, value in data.items() if key != "location"}  # derived, not stored
        return cls(**{**fields, "heading_path": tuple(data["heading_path"])})


SentenceStatus = Literal["supported", "unsupported", "uncited"]
Verdict = Literal["supported", "partially_supported", "unsupported", "no_claims"]


@dataclass(frozen=True)
class SentenceCheck:
    """One sentence of an LLM answer as the citation check saw it."""

    text: str
    cited: tuple[int, ...]
    supported_by: tuple[int, ...]
    support: float
    status: SentenceStatus

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "cited": list(self.cited), "supported_by": list(self.supported_by),
                "support": round(self.support, 4), "status": self.status}


@dataclass(frozen=True)
class CitationCheck:
    """The citation check's verdict on a whole answer (see answering/citations.py)."""

    verdict: Verdict
    supported_ratio: float
    """Supported sentences / all sentences, cited or not."""
    removed: tuple[int, ...]
    """Citation numbers that named no source and were removed from the text."""
    sentences: tuple[SentenceCheck, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "supported_ratio": round(self.supported_ratio, 4),
                "removed_citations": list(self.removed), "sentences": [s.to_dict() for s in self.sentences]}


@dataclass(frozen=True)
class RelatedDocument:
    """A document like another one (related.py), or one an answer did not cite but may interest its reader."""

    document_id: str
    source: str
    title: str
    collection: str
    score: float
    """Cosine similarity of the best matching chunk (higher is closer)."""
    chunk_id: str
    """That chunk: where to start reading."""

    def to_dict(self) -> dict[str, Any]:
        return {"document_id": self.document_id, "source": self.source, "title": self.title,
                "collection": self.collection, "score": round(self.score, 4), "chunk_id": self.chunk_id}


@dataclass(frozen=True)
class Answer:
    """The one answer object: text with [n] markers, its citations, and how sure it is."""

    question: str
    answer: str
    abstained: bool
    citations: tuple[Citation, ...]
    confidence: float
    hits: tuple[Hit, ...] = ()
    mode: Literal["retrieval", "full-context"] = "retrieval"
    """How the sources were chosen: the top retrieved chunks, or the whole documents in scope."""
    queries: tuple[str, ...] = ()
    """The queries actually searched (the question, a chat follow-up made standalone, rewrites)."""
    usage: dict[str, Any] = field(default_factory=dict)
    """LLM calls: per call provider, model, tokens, latency and attempts, plus totals; empty offline."""
    follow_up_questions: tuple[str, ...] = ()
    citation_check: CitationCheck | None = None
    """None for extractive answers, whose quotes are verbatim."""
    answerer: str = "extractive"
    """"extractive", or the "provider:model" that wrote the answer."""
    related: tuple[RelatedDocument, ...] = ()
    """"You may also want to read": retrieved documents the answer did not cite (related.py)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "abstained": self.abstained,
            "citations": [c.to_dict() for c in self.citations],
            "confidence": self.confidence,
            "mode": self.mode,
            "queries": list(self.queries),
            "usage": self.usage,
            "follow_up_questions": list(self.follow_up_questions),
            "citation_check": None if self.citation_check is None else self.citation_check.to_dict(),
            "answerer": self.answerer,
            "related": [r.to_dict() for r in self.related],
        }


@dataclass(frozen=True)
class Summary:
    """A document's or a collection's summary: sentences with [n] markers and their citations.

    `document_id` and `source` name the document (None for a collection summary, whose
    `documents` lists the documents it drew from). `summarizer` is "extractive" or the
    "provider:model" that wrote it; `citation_check` is None for extractive summaries, whose
    sentences are verbatim. `cached` says it came from the summary cache without any work."""

    document_id: str | None
    source: str | None
    title: str
    collection: str
    summary: str
    citations: tuple[Citation, ...]
    summarizer: str
    citation_check: CitationCheck | None = None
    documents: tuple[str, ...] = ()
    usage: dict[str, Any] = field(default_factory=dict)
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "source": self.source,
            "title": self.title,
            "collection": self.collection,
            "summary": self.summary,
            "citations": [c.to_dict() for c in self.citations],
            "summarizer": self.summarizer,
            "citation_check": None if self.citation_check is None else self.citation_check.to_dict(),
            "documents": list(self.documents),
            "usage": self.usage,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Summary:
        """A summary read back from the cache (`to_dict`'s output)."""
        check = data["citation_check"]
        return cls(
            data["document_id"], data["source"], data["title"], data["collection"], data["summary"],
            tuple(Citation.from_dict(c) for c in data["citations"]),
            data["summarizer"],
            None if check is None else CitationCheck(
                check["verdict"], check["supported_ratio"], tuple(check["removed_citations"]),
                tuple(SentenceCheck(s["text"], tuple(s["cited"]), tuple(s["supported_by"]), s["support"], s["status"])
                      for s in check["sentences"]),
            ),
            tuple(data["documents"]), data["usage"], cached=True,
        )


@dataclass(frozen=True)
class IngestResult:
    """What happened to one source during `add` or `sync`.

    `action` is "added", "updated", "unchanged", "removed", "failed" or "cancelled" (the document
    was deleted while it was being ingested: nothing of it was written);
    `embedded` counts chunks that needed new vectors (0 when nothing changed).
    """

    source: str
    action: str
    document_id: str | None = None
    status: str | None = None
    chunks: int = 0
    embedded: int = 0
    error: str | None = None
    error_code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_metadata(value: Any) -> Any:
    """`value`, if every store can keep it as JSON and give it back: finite numbers only, text that
    is valid Unicode (JSON's \\ud800 escape decodes to a lone surrogate UTF-8 cannot encode) and
    holds no NUL character (PostgreSQL's jsonb and text refuse \\u0000), nesting Python can walk.
    Raises ValueError saying which rule failed (the API answers 422 with it)."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
        has_nul = any("\x00" in text for text in _strings(value))
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (no lone surrogates such as \\ud800)") from None
    except ValueError:
        raise ValueError("numbers must be finite (not NaN, Infinity or 1e999)") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if has_nul:
        raise ValueError("text must not hold the NUL character (\\u0000)")
    return value


def checked_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The metadata a caller gave with its documents, refused before anything is stored when a
    store could not keep it (every store, so a knowledge base moves between back ends)."""
    try:
        return check_metadata(dict(metadata or {}))
    except ValueError as exc:
        raise InvalidMetadataError(f"metadata {exc}") from None


def without_nul(value: Any) -> Any:
    """`value` with NUL characters dropped from its text and keys: what a loader read from a file's
    own metadata (a PDF's title padded with NULs) is kept rather than failing the document."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [without_nul(item) for item in value]
    return value


def _strings(value: Any) -> Iterator[str]:
    """Every text in a JSON-like value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def parse_metadata_value(text: str) -> Any:
    """A `key=value` metadata value as the CLI's --meta and the API's form fields take it: the JSON
    it spells (numbers, true/false, lists keep their type), else the text itself.

    Python's json takes NaN, Infinity and 1e999, which JSON does not and the store refuses, raises
    RecursionError on deep nesting and decodes "\\ud800" to text UTF-8 cannot encode: those stay
    text, so no user input becomes a crash."""
    try:
        return check_metadata(json.loads(text, parse_float=_finite, parse_constant=_no_constant))
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return text

