"""Sourcebook: a knowledge base with hybrid retrieval and cited answers.

    from sourcebook import KnowledgeBase
    with KnowledgeBase.open("kb.db") as kb:
        kb.add("docs/")
        print(kb.ask("How many days of leave do we get?").answer)
"""

from .errors import (
    ConfigurationError,
    DocumentNotFoundError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    EmptyDocumentError,
    FetchError,
    FileTooLargeError,
    InvalidQueryError,
    LoaderError,
    SourcebookError,
    StoreError,
    UnsupportedFormatError,
)
from .kb import KnowledgeBase
from .models import Answer, Citation, DocumentRecord, DocumentStatus, Hit, IngestResult
from .settings import Settings

__all__ = [
    "Answer",
    "Citation",
    "ConfigurationError",
    "DocumentNotFoundError",
    "DocumentRecord",
    "DocumentStatus",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "EmptyDocumentError",
    "FetchError",
    "FileTooLargeError",
    "Hit",
    "IngestResult",
    "InvalidQueryError",
    "KnowledgeBase",
    "LoaderError",
    "Settings",
    "SourcebookError",
    "StoreError",
    "UnsupportedFormatError",
]
