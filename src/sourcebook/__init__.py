"""Sourcebook: a knowledge base with hybrid retrieval and cited answers.

    from sourcebook import KnowledgeBase
    with KnowledgeBase.open("kb.db") as kb:
        kb.add("docs/")
        print(kb.ask("How many days of leave do we get?").answer)
"""

from .errors import (
    ChatSessionNotFoundError,
    ConfigurationError,
    DatabaseNotFoundError,
    DocumentNotFoundError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    EmptyDocumentError,
    FetchError,
    FileTooLargeError,
    GeneratorError,
    IngestTimeoutError,
    InvalidQueryError,
    InvalidSettingsError,
    InvalidTenantError,
    LoaderError,
    MalformedResponseError,
    MissingAPIKeyError,
    MissingExtraError,
    ProviderUnavailableError,
    SourceNotFoundError,
    SourceTooLargeError,
    SourcebookError,
    StoreError,
    UnknownModelError,
    UnsupportedFormatError,
)
from .answering.llm import AnswerStream
from .chat import ChatSession
from .kb import KnowledgeBase
from .models import (
    Answer,
    Citation,
    CitationCheck,
    DocumentRecord,
    DocumentStatus,
    Hit,
    IngestResult,
    RelatedDocument,
    Summary,
)
from .settings import Settings

__all__ = [
    "Answer",
    "AnswerStream",
    "ChatSession",
    "ChatSessionNotFoundError",
    "Citation",
    "CitationCheck",
    "ConfigurationError",
    "DatabaseNotFoundError",
    "DocumentNotFoundError",
    "DocumentRecord",
    "DocumentStatus",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "EmptyDocumentError",
    "FetchError",
    "FileTooLargeError",
    "GeneratorError",
    "Hit",
    "IngestResult",
    "IngestTimeoutError",
    "InvalidQueryError",
    "InvalidSettingsError",
    "InvalidTenantError",
    "KnowledgeBase",
    "LoaderError",
    "MalformedResponseError",
    "MissingAPIKeyError",
    "MissingExtraError",
    "RelatedDocument",
    "ProviderUnavailableError",
    "Settings",
    "Summary",
    "SourceNotFoundError",
    "SourceTooLargeError",
    "SourcebookError",
    "StoreError",
    "UnknownModelError",
    "UnsupportedFormatError",
]
