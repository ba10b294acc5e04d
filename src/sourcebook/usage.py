"""What a tenant's work costs, counted where the cost is paid: each LLM call and each embedding call.

Why here and not from the answers: an LLM is called for answers, chat follow-ups, rewrites,
summaries, graph extraction and chunk enrichment, and the embedding model for queries and for
ingestion; counting at the two model boundaries (`MeteredGenerator`, `MeteredEmbedder`, which
wiring.py puts around every model it builds) misses none of them. The counts go to the tally of
the work in progress (`metering()`, a context variable, so the server's concurrent requests and the
ingestion threads each count their own), and whoever opened the tally writes it to the store's
usage table (`UsageStore.record_usage`: per tenant, day and API key), which the `usage` report and
the per-tenant quotas read (design document 004: "cost monitoring and quotas per organization").
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from .embedders.base import Embedder, ProgressCallback
from .generators import Generator
from .generators.base import Generation, GenerationRequest, StreamEvent

if TYPE_CHECKING:
    from .stores.base import UsageStore


@dataclass
class UsageTally:
    """Counts of one unit of work (an HTTP request, a CLI command, an ingestion job)."""

    requests: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    embedding_calls: int = 0
    embedded_texts: int = 0

    def add_generation(self, generation: Generation) -> None:
        self.llm_calls += 1
        self.input_tokens += generation.usage.input_tokens
        self.output_tokens += generation.usage.output_tokens

    def add(self, other: UsageTally) -> None:
        """Add `other`'s counts to these (the server sums requests' tallies before writing them)."""
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def counts(self) -> dict[str, int]:
        return asdict(self)

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


USAGE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(UsageTally))
_current: contextvars.ContextVar[UsageTally | None] = contextvars.ContextVar("sourcebook_usage", default=None)


@contextmanager
def metering() -> Iterator[UsageTally]:
    """Count the model calls made inside the block (this thread or task only) into a new tally."""
    tally = UsageTally()
    token = _current.set(tally)
    try:
        yield tally
    finally:
        _current.reset(token)


@contextmanager
def recorded(store: UsageStore, api_key: str = "", *, request: bool = False) -> Iterator[UsageTally]:
    """Meter the block and add its tally to `store`'s tenant for today under `api_key` (a request
    also counts itself). The server wraps each request in one, the CLI each command, the ingestion
    runners each job; the library alone records nothing (its file may be read-only)."""
    with metering() as tally:
        try:
            yield tally
        finally:
            tally.requests += int(request)
            store.record_usage(today(), api_key, tally)


def today() -> str:
    """The usage table's day: UTC, so a report and a daily quota mean the same day everywhere."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


def _count(update: Callable[[UsageTally], None]) -> None:
    tally = _current.get()
    if tally is not None:
        update(tally)


def _count_embedding(texts: int) -> None:
    def update(tally: UsageTally) -> None:
        tally.embedding_calls += 1
        tally.embedded_texts += texts

    _count(update)


class MeteredGenerator:
    """A `Generator` that adds each finished call (streamed or not) to the current tally."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model

    @property
    def spec(self) -> str:
        return self.inner.spec

    def generate(self, request: GenerationRequest) -> Generation:
        generation = self.inner.generate(request)
        _count(lambda tally: tally.add_generation(generation))
        return generation

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        for event in self.inner.stream(request):
            if isinstance(event, Generation):
                _count(lambda tally, done=event: tally.add_generation(done))
            yield event

    def __getattr__(self, name: str) -> Any:
        """Everything else (a local model's context window, a provider's options) is the inner one's."""
        return getattr(self.inner, name)


class MeteredEmbedder:
    """An `Embedder` that counts each call to the model and the texts it embedded."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        vectors = self.inner.embed_documents(texts, progress)
        _count_embedding(len(texts))
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        vector = self.inner.embed_query(text)
        _count_embedding(1)
        return vector

    def __getattr__(self, name: str) -> Any:
        """Other capabilities of the model (late-chunked windows) pass through, counted alike when
        they embed: one call, its first argument's texts."""
        attribute = getattr(self.inner, name)
        if not (name.startswith("embed") and callable(attribute)):
            return attribute

        def counted(texts: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
            result = attribute(texts, *args, **kwargs)
            _count_embedding(len(texts))
            return result

        return counted
