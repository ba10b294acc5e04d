"""Typed errors. Every error names what failed and what to do about it.

One root, `SourcebookError`, so callers can catch everything Sourcebook raises
without catching programming errors; subclasses let them react precisely
(as httpx does with its exception hierarchy).
"""

from __future__ import annotations


class SourcebookError(Exception):
    """Root of every error Sourcebook raises on purpose."""

    code = "sourcebook_error"


class ConfigurationError(SourcebookError):
    """Settings are invalid or a required component is missing."""

    code = "configuration_error"


class LoaderError(SourcebookError):
    """A source could not be read or parsed. Names the source and the cause."""

    code = "loader_error"

    def __init__(self, source: str, cause: str) -> None:
        self.source = source
        self.cause = cause
        super().__init__(f"{source}: {cause}")


class SourceNotFoundError(LoaderError):
    """The named file does not exist: ingestion records nothing for it (a typo must not leave a
    permanent error document), though a document already queued for it records the failure.
    Keeps LoaderError's code, which clients already branch on."""


class UnsupportedFormatError(LoaderError):
    """No loader handles this kind of source."""

    code = "unsupported_format"


class EmptyDocumentError(LoaderError):
    """The source holds no extractable text."""

    code = "empty_document"


class FileTooLargeError(LoaderError):
    """The source is larger than the configured limit."""

    code = "file_too_large"


class SourceTooLargeError(LoaderError):
    """The parsed source has more pages or characters than the configured limit (max_pages,
    max_characters): one huge document must not hold the ingestion of everyone else."""

    code = "source_too_large"


class IngestTimeoutError(LoaderError):
    """Ingesting the source took longer than the configured limit (max_ingest_seconds); nothing of
    it was written."""

    code = "ingest_timeout"


class FetchError(LoaderError):
    """A URL could not be fetched (unreachable, refused, bad status, too large)."""

    code = "fetch_error"


class BlockedURLError(FetchError):
    """A URL points at a private or loopback address and settings do not allow it."""

    code = "blocked_url"


class EmbeddingError(SourcebookError):
    """The embedding model could not be loaded or run."""

    code = "embedding_error"


class EmbeddingModelMismatchError(EmbeddingError):
    """A collection was indexed with another model or dimension than the one configured."""

    code = "embedding_model_mismatch"


class StoreError(SourcebookError):
    """The store could not be opened, read or written."""

    code = "store_error"


class DocumentNotFoundError(StoreError):
    """No document matches the given id or source."""

    code = "document_not_found"


class InvalidTenantError(ConfigurationError):
    """A tenant name is not one Sourcebook accepts (see sourcebook.tenants)."""

    code = "invalid_tenant"


class InvalidQueryError(SourcebookError):
    """A search request is malformed (empty query, bad mode, bad filter)."""

    code = "invalid_query"


class DocumentNotReadyError(SourcebookError):
    """A document has no chunks yet (pending, processing or in error): nothing to summarize."""

    code = "document_not_ready"


class ChunkNotFoundError(StoreError):
    """No chunk has the given id (in this tenant)."""

    code = "chunk_not_found"


class InvalidMetadataError(SourcebookError):
    """Metadata given with a document that a store cannot keep (models.check_metadata's rules)."""

    code = "invalid_metadata"


class GeneratorError(SourcebookError):
    """An LLM call failed. Names the provider and model, and what to do."""

    code = "generator_error"


class MissingAPIKeyError(GeneratorError):
    """A hosted provider was chosen but its API key is not set."""

    code = "missing_api_key"


class UnknownModelError(GeneratorError):
    """The provider does not know the model (or the local model file does not exist)."""

    code = "unknown_model"


class ProviderUnavailableError(GeneratorError):
    """The provider kept failing (rate limits, 5xx, timeouts) after every retry and fallback."""

    code = "provider_unavailable"


class MalformedResponseError(GeneratorError):
    """The provider answered with something that is not what its protocol promises."""

    code = "malformed_response"


class ChatSessionNotFoundError(StoreError):
    """No chat session has the given id."""

    code = "chat_session_not_found"


class CollectionNotFoundError(StoreError):
    """No collection has the given name."""

    code = "collection_not_found"


class EntityNotFoundError(StoreError):
    """No knowledge-graph entity matches the given name (or several do)."""

    code = "entity_not_found"


class IngestJobError(SourcebookError):
    """An ingestion job's attempt failed. `retry` says whether the queue tries it again
    (a transient failure with attempts left); `code` is the underlying error's code."""

    code = "ingest_job_failed"

    def __init__(self, source: str, reason: str, *, retry: bool, code: str | None = None) -> None:
        self.source = source
        self.reason = reason
        self.retry = retry
        if code:
            self.code = code
        super().__init__(f"{source}: {reason}")


class InvalidSettingsError(ConfigurationError):
    """A setting's value (from sourcebook.toml, a SOURCEBOOK_* variable or an option) is invalid;
    the message names the setting, the value and where it came from."""

    code = "invalid_settings"


class MissingExtraError(ConfigurationError):
    """What was asked needs an optional extra that is not installed; the message says which."""

    code = "missing_extra"


class DatabaseNotFoundError(StoreError):
    """A command that only reads was pointed at a knowledge base that does not exist (a typo,
    most likely: reading must not create an empty one)."""

    code = "database_not_found"
