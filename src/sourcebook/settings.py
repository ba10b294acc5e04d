"""Configuration: one `Settings` object from `sourcebook.toml` and `SOURCEBOOK_*` variables.

Precedence, highest first: explicit keyword arguments, environment variables,
`./sourcebook.toml` (or the file named by SOURCEBOOK_CONFIG), then the defaults here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

RetrievalMode = Literal["keyword", "vector", "hybrid"]

DEFAULT_INCLUDE = ("*.txt", "*.md", "*.markdown", "*.html", "*.htm", "*.pdf", "*.rst", "*.text")
DEFAULT_EXCLUDE = (".git/*", "*/.git/*", "node_modules/*", "*/node_modules/*", ".*", "*/.*")


class Settings(BaseSettings):
    """Every tunable of Sourcebook, with the default a laptop user wants."""

    model_config = SettingsConfigDict(env_prefix="SOURCEBOOK_", extra="ignore")

    db: str = Field("sourcebook.db", description="SQLite file path of the knowledge base")

    # Embeddings
    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        description="'all-MiniLM-L6-v2' (bundled), or a path to a sentence-transformers/ONNX model folder",
    )
    embedding_batch_size: int = Field(32, ge=1, le=1024)
    embedding_threads: int = Field(0, ge=0, description="0 = let onnxruntime choose")

    # Chunking
    chunk_max_tokens: int = Field(
        256, ge=32, description="largest chunk incl. its prefix, in the model's tokens (capped at the model's limit)"
    )
    chunk_overlap: float = Field(0.15, ge=0.0, le=0.5, description="fraction of a chunk repeated in the next")

    # Loading
    max_file_bytes: int = Field(50 * 1024 * 1024, ge=1)
    url_timeout: float = Field(20.0, gt=0)
    url_max_bytes: int = Field(20 * 1024 * 1024, ge=1)
    allow_private_urls: bool = Field(False, description="allow fetching loopback/private network addresses")
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE

    # Retrieval
    retrieval_mode: RetrievalMode = "hybrid"
    top_k: int = Field(10, ge=1)
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant")
    candidates: int = Field(100, ge=1, description="hits each retriever contributes to fusion")
    per_document: int = Field(1, ge=0, description="most chunks per document in search results; 0 = no limit")
    min_score: float | None = Field(None, description="drop hits whose score (in the mode's units) is below this")

    # Answers
    answer_min_score: float = Field(
        0.40,
        description="abstain when no sentence reaches this relevance (0.75 cosine + 0.25 word overlap with the question)",
    )
    answer_sources: int = Field(5, ge=1, description="chunks considered when composing an answer")
    answer_sentences: int = Field(4, ge=1, description="most sentences in an extractive answer")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = Path(os.environ.get("SOURCEBOOK_CONFIG", "sourcebook.toml"))
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
