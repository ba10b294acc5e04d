"""Hosted embedders: OpenAI (and any OpenAI-compatible endpoint: Ollama, vLLM...) and Gemini.

Chosen with `embedding_model="openai:text-embedding-3-small"` or `"gemini:gemini-embedding-001"`;
the collection records that name, so vectors of another model never mix in. Texts go out
in batches of `embedding_batch_size`, each batch retried like an LLM call (backoff on
429/5xx/timeouts, retry-after honoured: generators/resilience.py). Vectors are normalised
here: not every model returns unit vectors (Gemini below 3072 dimensions does not).

Token counts are estimated (4 characters a token): the chunker only needs sizes, and hosted
models read 2,000-8,000 tokens, far above Sourcebook's chunk sizes.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from ..errors import EmbeddingError
from ..generators.resilience import Failure, RetryPolicy, classify_stainless, typed_error, with_retries
from ..generators.sdk import api_key, import_sdk
from ..settings import Settings
from .base import ProgressCallback

CHARS_PER_TOKEN = 4
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "gemini-embedding-001": 3072,
    "text-embedding-004": 768,
}


class HostedEmbedder(ABC):
    provider: ClassVar[str]
    key_variable: ClassVar[str]
    max_tokens: int = 2048

    def __init__(self, model: str, batch_size: int, retry: RetryPolicy) -> None:
        self.model = model
        self.name = f"{self.provider}:{model}"
        self._batch_size = batch_size
        self._retry = retry
        self._dimension = KNOWN_DIMENSIONS.get(model)

    @abstractmethod
    def _embed(self, texts: list[str], query: bool) -> list[list[float]]:
        """One request's vectors, in the order of `texts`."""

    @abstractmethod
    def _classify(self, exc: Exception) -> Failure | None: ...

    @property
    def dimension(self) -> int:
        """Known for the common models; otherwise learnt from one probe request."""
        if self._dimension is None:
            self._dimension = int(self.embed_query("dimension probe").shape[0])
        return self._dimension

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [max(1, len(text) // CHARS_PER_TOKEN) for text in texts]

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        batches = [list(texts[i : i + self._batch_size]) for i in range(0, len(texts), self._batch_size)]
        parts = []
        for batch in batches:
            parts.append(self._request(batch, query=False))
            if progress:
                progress(len(batch))
        return np.concatenate(parts) if parts else np.zeros((0, self._dimension or 1), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([text], query=True)[0]

    def _request(self, texts: list[str], *, query: bool) -> np.ndarray:
        fail = lambda failure, attempts: typed_error(self.name, failure, attempts, self.key_variable)  # noqa: E731
        vectors, _ = with_retries(lambda: self._embed(texts, query), self._classify, self._retry, fail)
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.shape[0] != len(texts) or matrix.ndim != 2:
            raise EmbeddingError(f"{self.name} returned {matrix.shape[0]} vectors for {len(texts)} texts")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise EmbeddingError(f"{self.name} returned a zero vector; the model or the input is broken")
        if self._dimension is not None and matrix.shape[1] != self._dimension:
            raise EmbeddingError(
                f"{self.name} returned {matrix.shape[1]}-dimensional vectors where {self._dimension} were expected; "
                f"check the model name and the endpoint"
            )
        self._dimension = matrix.shape[1]
        return matrix / norms


class OpenAIEmbedder(HostedEmbedder):
    provider = "openai"
    key_variable = "OPENAI_API_KEY"
    max_tokens = 8191

    def __init__(self, model: str, batch_size: int, retry: RetryPolicy, *, key: str | None, url: str | None, timeout: float) -> None:
        super().__init__(model, batch_size, retry)
        self._sdk = import_sdk("openai", "openai")
        self._client = self._sdk.OpenAI(api_key=key or "unused", base_url=url, timeout=timeout, max_retries=0)

    def _embed(self, texts: list[str], query: bool) -> list[list[float]]:
        response = self._client.embeddings.create(model=self.model, input=texts)
        return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]

    def _classify(self, exc: Exception) -> Failure | None:
        return classify_stainless(exc, self._sdk)


class GeminiEmbedder(HostedEmbedder):
    provider = "gemini"
    key_variable = "GEMINI_API_KEY"

    def __init__(self, model: str, batch_size: int, retry: RetryPolicy, *, key: str, url: str | None, timeout: float) -> None:
        super().__init__(model, batch_size, retry)
        from ..generators.gemini import GeminiClient

        self._gemini = GeminiClient(key=key, url=url, timeout=timeout)

    def _embed(self, texts: list[str], query: bool) -> list[list[float]]:
        config = self._gemini.types.EmbedContentConfig(task_type="RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT")
        response = self._gemini.client.models.embed_content(model=self.model, contents=texts, config=config)
        return [list(e.values or []) for e in response.embeddings or []]

    def _classify(self, exc: Exception) -> Failure | None:
        return self._gemini.classify(exc)


def _retry(settings: Settings) -> RetryPolicy:
    return RetryPolicy(max_retries=settings.llm_max_retries, base_delay=settings.llm_retry_base_delay)


def openai_embedder(settings: Settings) -> OpenAIEmbedder:
    """`settings.embedding_model` is the bare model name here (create_embedder strips "openai:")."""
    url = settings.embedding_base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = api_key("openai", ("OPENAI_API_KEY",), required=url is None)
    return OpenAIEmbedder(settings.embedding_model, settings.embedding_batch_size, _retry(settings),
                          key=key, url=url, timeout=settings.llm_timeout)


def gemini_embedder(settings: Settings) -> GeminiEmbedder:
    from ..generators.gemini import KEY_VARIABLES

    url = settings.embedding_base_url or os.environ.get("GEMINI_BASE_URL") or None
    key = api_key("gemini", KEY_VARIABLES)
    return GeminiEmbedder(settings.embedding_model, min(settings.embedding_batch_size, 100), _retry(settings),
                          key=key, url=url, timeout=settings.llm_timeout)  # type: ignore[arg-type]
