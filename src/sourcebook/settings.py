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

from .tenants import DEFAULT_TENANT

RetrievalMode = Literal["keyword", "vector", "hybrid", "graph"]
AnswerMode = Literal["retrieval", "full-context", "auto"]

DEFAULT_INCLUDE = (
    "*.txt", "*.md", "*.markdown", "*.html", "*.htm", "*.pdf", "*.rst", "*.text",
    "*.docx", "*.pptx", "*.xlsx", "*.xlsm", "*.odt", "*.csv", "*.tsv", "*.epub", "*.eml", "*.mbox",
)  # fmt: skip
DEFAULT_EXCLUDE = (".git/*", "*/.git/*", "node_modules/*", "*/node_modules/*", ".*", "*/.*")


class Settings(BaseSettings):
    """Every tunable of Sourcebook, with the default a laptop user wants."""

    model_config = SettingsConfigDict(env_prefix="SOURCEBOOK_", extra="ignore")

    db: str = Field("sourcebook.db", description="SQLite file path (or store URL) of the knowledge base")
    tenant: str = Field(DEFAULT_TENANT, description="the tenant whose documents every call sees and changes")

    # Embeddings
    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        description="'all-MiniLM-L6-v2' (bundled), or a path to a sentence-transformers/ONNX model folder",
    )
    embedding_precision: Literal["auto", "bf16", "int8", "fp32"] = Field(
        "auto",
        description="arithmetic of a model built from safetensors (the bundled one): bf16 (the fp32 weights run by "
        "OpenVINO in bfloat16, `pip install 'sourcebook[openvino]'` and a CPU with AVX-512 BF16 or AMX: about 1.8x "
        "faster than fp32, vectors within cosine 0.9999 of fp32's and recorded as the same model), fp32 "
        "(onnxruntime), or int8 (8-bit weights: about 1.6x faster, SciFact hybrid nDCG@10 0.004 lower, recorded as "
        "a different model, so a knowledge base keeps int8 unless this is set); auto (the default) is bf16 where "
        "it runs natively, else fp32",
    )
    embedding_query_precision: Literal["fp32", "int8"] = Field(
        "fp32",
        description="weights that embed queries when documents are int8: fp32 (a second graph, loaded at the first "
        "query) keeps SciFact nDCG@10 within 0.004 of all-fp32 with sentence windows, where int8 queries lose 0.005-0.008; "
        "int8 saves that graph's memory and a little query time",
    )
    embedding_batch_size: int = Field(32, ge=1, le=1024)
    embedding_threads: int = Field(
        0, ge=0, description="0 = two model sessions with half the cores each, running two batches at once; N = one session of N threads"
    )

    # Chunking
    chunk_max_tokens: int = Field(
        256, ge=32, description="largest chunk incl. its prefix, in the model's tokens (capped at the model's limit)"
    )
    chunk_overlap: float = Field(0.15, ge=0.0, le=0.5, description="fraction of a chunk repeated in the next")
    vector_windows: bool = Field(
        True,
        description="also give each chunk's two-sentence windows vectors; vector search scores a chunk by its best",
    )
    window_pooling: Literal["auto", "confined", "late", "pairs", "sentences", "separate"] = Field(
        "auto",
        description="how windows get vectors: 'separate' embeds each window as a text (about 2.7x the model time "
        "of the chunks alone); 'confined' pools them from the chunk's own model pass with each token attending "
        "only to its window's neighbourhood (1.2x); 'late' from the plain pass (1x, lower on SciFact); 'sentences' "
        "embeds the prefix and each sentence alone and pools the windows and the chunk's vector from those passes; "
        "'pairs' embeds every other window as a text and pools the ones between and the chunk's vector (1.2x); "
        "'auto' (the default) is 'pairs'; an embedder that cannot pool (a hosted API) embeds them as texts "
        "(README, The quality push)",
    )
    late_windows: bool = Field(False, description="deprecated: the same as window_pooling = 'late'")

    # Loading
    max_file_bytes: int = Field(50 * 1024 * 1024, ge=1)
    max_pages: int = Field(10_000, ge=1, description="most pages of one source (a PDF); more is a source_too_large error")
    max_characters: int = Field(
        50 * 1024 * 1024, ge=1, description="most characters of text in one parsed source; more is a source_too_large error"
    )
    max_ingest_seconds: float = Field(
        3600.0, gt=0, description="longest ingestion of one source, checked between steps; longer is an ingest_timeout error"
    )
    url_timeout: float = Field(20.0, gt=0)
    url_max_bytes: int = Field(20 * 1024 * 1024, ge=1)
    allow_private_urls: bool = Field(False, description="allow fetching loopback/private network addresses")
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE

    # Retrieval
    retrieval_mode: RetrievalMode = "hybrid"
    top_k: int = Field(10, ge=1)
    fusion: Literal["zscore", "rrf"] = Field(
        "zscore", description="hybrid fusion: z-score normalised weighted sum, or reciprocal rank fusion"
    )
    fusion_keyword_weight: float = Field(0.3, ge=0.0, le=1.0, description="keyword share of a z-score fusion")
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant")
    candidates: int = Field(200, ge=1, description="hits each retriever contributes to fusion")
    per_document: int = Field(1, ge=0, description="most chunks per document in search results; 0 = no limit")
    min_score: float | None = Field(None, description="drop hits whose score (in the mode's units) is below this")
    rerank: bool = Field(
        False, description="reorder hybrid search's first candidates by the offline reranker (README, Quality)"
    )
    rerank_candidates: int = Field(30, ge=1, description="how many of hybrid search's first hits the reranker reorders")
    rerank_model: str | None = Field(
        None, description="folder of an ONNX cross-encoder (model.onnx, tokenizer.json) that scores the reranking "
        "stage instead of its linear model; not measured here (none offline)",
    )
    query_cache_entries: int = Field(
        0, ge=0,
        description="cache this many query embeddings, search results and answers in memory (0 = off; "
        "the server turns it on); a write never serves a stale result",
    )

    # Answers
    answer_min_score: float = Field(
        0.40,
        description="abstain when no sentence reaches this relevance (0.75 cosine + 0.25 word overlap with the question)",
    )
    answer_min_answerable: float | None = Field(
        None, ge=0, le=1,
        description="abstain when the calibrated probability that the documents hold an answer is below this "
        "(None = the threshold fitted with the calibration, answering/confidence.py; 0 = the gate off: never "
        "on this ground, nor because the question is set in something no document names, answering/evidence.py)",
    )
    answer_sources: int = Field(5, ge=1, description="chunks considered when composing an answer")
    answer_sentences: int = Field(4, ge=1, description="most sentences in an extractive answer")

    # LLM answers (see README "LLM answers"); keys come from ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY
    llm: str | None = Field(None, description="'provider:model' that writes answers; None = extractive answers")
    llm_fallbacks: tuple[str, ...] = Field((), description="'provider:model's tried in order when the LLM is unavailable")
    llm_base_urls: dict[str, str] = Field(
        default_factory=dict, description="base URL per provider, e.g. {'openai': 'http://localhost:11434/v1'}"
    )
    llm_timeout: float = Field(60.0, gt=0, description="seconds per LLM request")
    llm_max_retries: int = Field(3, ge=0, description="retries on 429/5xx/timeouts, with exponential backoff")
    llm_retry_base_delay: float = Field(0.5, ge=0, description="first backoff in seconds (doubles per retry)")
    llm_max_tokens: int = Field(1024, ge=16, description="longest answer, in the LLM's tokens")
    llm_temperature: float = Field(0.0, ge=0, le=2)
    llm_follow_ups: bool = Field(True, description="ask the LLM for 3 follow-up questions (one extra short call)")
    answer_mode: AnswerMode = Field(
        "auto", description="'retrieval' (top chunks), 'full-context' (whole documents) or 'auto' (full when they fit)"
    )
    full_context_max_chars: int = Field(50_000, ge=1000, description="scope size up to which 'auto' sends whole documents")
    query_rewrite: bool = Field(False, description="search 3-5 LLM-written variations of the question too (RRF-fused)")
    citation_min_support: float = Field(0.5, ge=0, le=1, description="support a cited sentence needs from its source")
    chat_history_tokens: int = Field(2000, ge=0, description="most history (approximate tokens) sent with a chat turn")
    llamacpp_context_tokens: int = Field(8192, ge=512, description="context window of a local GGUF model")
    llamacpp_threads: int = Field(0, ge=0, description="CPU threads for a local GGUF model; 0 = up to 4")

    # Contextual chunk enrichment at ingestion (Anthropic's Contextual Retrieval); off by default
    enrich_chunks: bool = Field(False, description="have the LLM write a sentence situating each chunk (cached)")
    enrich_llm: str | None = Field(None, description="'provider:model' for enrichment; None = the answering LLM")
    embedding_base_url: str | None = Field(None, description="base URL of a hosted/OpenAI-compatible embedding API")

    # Knowledge graph (README "Knowledge graph")
    graph_extractor: Literal["auto", "offline", "llm"] = Field(
        "auto", description="'llm' (graph_llm, else llm), 'offline' (deterministic rules), 'auto' = llm when one is set"
    )
    graph_llm: str | None = Field(None, description="'provider:model' for graph extraction; None = the answering LLM")
    graph_retrieval: bool = Field(False, description="fuse the graph's list into hybrid search too (RRF)")

    # Ingestion jobs (README "Scaling ingestion"): on Postgres, `add` queues one job per source
    ingest_jobs: Literal["auto", "inline"] = Field(
        "auto", description="'auto': through the job queue on Postgres, in-process on SQLite; 'inline': always in-process"
    )
    job_attempts: int = Field(3, ge=1, description="attempts of an ingestion job before its document is in error")
    job_retry_delay: float = Field(2.0, ge=0, description="seconds before a failed job's first retry (doubles per retry)")
    ingest_workers: int = Field(
        2, ge=1, description="jobs ingested at once by a server's runner, each of another tenant (round robin between tenants)"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=config_path()))


def config_path() -> Path:
    """The settings file: $SOURCEBOOK_CONFIG, else ./sourcebook.toml (read only if it exists).

    A function, not a constant, so a changed environment or working directory is seen; the CLI
    uses it too, to say which file a bad value came from."""
    return Path(os.environ.get("SOURCEBOOK_CONFIG", "sourcebook.toml"))
