"""Errors of the HTTP layer, and the one JSON shape every error takes.

Every failure answers `{"error": {"code", "message"}}`; the code is stable (the
`SourcebookError.code` of the library's errors, or one of the codes here), so clients
branch on it rather than on the message. The caller's mistakes are 4xx; a 500 means a bug.
"""

from __future__ import annotations

from ..errors import (
    ChatSessionNotFoundError,
    ChunkNotFoundError,
    CollectionNotFoundError,
    ConfigurationError,
    DocumentNotFoundError,
    DocumentNotReadyError,
    EmbeddingModelMismatchError,
    EntityNotFoundError,
    FileTooLargeError,
    GeneratorError,
    InvalidMetadataError,
    InvalidQueryError,
    InvalidTenantError,
    LoaderError,
    MissingAPIKeyError,
    ProviderUnavailableError,
    SourcebookError,
)


class ApiError(SourcebookError):
    """An error of the HTTP layer itself, with its status."""

    status = 400

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.headers = headers or {}


class UnauthorizedError(ApiError):
    code = "unauthorized"
    status = 401


class ForbiddenError(ApiError):
    code = "forbidden"
    status = 403


class ConflictError(ApiError):
    code = "conflict"
    status = 409


class LLMNotConfiguredError(ConflictError):
    """The request needs an LLM (full-context answers) and the server runs without one."""

    code = "llm_not_configured"


class PayloadTooLargeError(ApiError):
    code = "payload_too_large"
    status = 413


class RateLimitedError(ApiError):
    code = "rate_limited"
    status = 429


class InvalidRequestError(ApiError):
    """The request does not match the API's schema (FastAPI's validation errors land here)."""

    code = "invalid_request"
    status = 422


# Most specific first: the first class an error is an instance of decides its status.
_STATUS: tuple[tuple[type[SourcebookError], int], ...] = (
    (ApiError, 0),  # its own .status
    (DocumentNotFoundError, 404),
    (ChatSessionNotFoundError, 404),
    (ChunkNotFoundError, 404),
    (CollectionNotFoundError, 404),
    (EntityNotFoundError, 404),
    (InvalidTenantError, 400),
    (FileTooLargeError, 413),
    (LoaderError, 422),  # the caller's file or URL: unsupported, empty, unreachable, blocked
    (InvalidMetadataError, 422),
    (InvalidQueryError, 400),
    (EmbeddingModelMismatchError, 409),
    (DocumentNotReadyError, 409),
    (MissingAPIKeyError, 503),
    (ProviderUnavailableError, 503),
    (GeneratorError, 502),
    (ConfigurationError, 500),
)


def status_of(error: SourcebookError) -> int:
    """The HTTP status for a library or API error (500 for the store and anything unforeseen)."""
    for kind, status in _STATUS:
        if isinstance(error, kind):
            return error.status if isinstance(error, ApiError) else status
    return 500


# Documented on every route that can raise them (the OpenAPI `responses`).
ERROR_DESCRIPTIONS = {
    400: "Bad input the schema cannot express (an empty query, a bad tenant name)",
    401: "No API key, or an unknown or revoked one",
    403: "The API key's role does not cover this collection or action",
    404: "No such document, chunk, collection, chat session or graph entity",
    409: "Conflict with the server's state: the collection exists or was indexed with another embedding "
         "model, the request needs an LLM the server does not have, a graph build is running, or the "
         "document is not ready yet",
    413: "The request or upload is larger than the server allows",
    422: "The request does not match the schema, or a document cannot be read",
    429: "Too many requests for this API key; retry after the Retry-After header's seconds",
    502: "The LLM provider failed or answered with something unusable",
    503: "The LLM provider is unavailable (after retries and fallbacks) or not configured with a key",
}
