"""Wiring: the one place that builds a knowledge base's parts from `Settings`.

`KnowledgeBase` (kb.py) is the user's API; what it runs on is built here: the store, the
embedding model (loaded lazily: listing or removing documents never pays for a model),
the LLM clients (one per "provider:model" spec, built once), the contextual enricher and
the ingestion runner (jobs/). The same `Components` feed the job runners and `sourcebook
worker`, so a document ingested by a worker on another machine is built exactly like one
ingested in-process. Dependencies point one way: interfaces -> kb -> wiring -> jobs,
ingest, stores.
"""

from __future__ import annotations

from typing import Self

from .embedders import create_embedder
from .embedders.base import INT8_SUFFIX, Embedder
from .enrichment import ContextualEnricher
from .errors import ConfigurationError
from .generators import Generator, create_llm
from .ingest import Ingestor, ProgressHandler
from .jobs import IngestionRunner, runner_for
from .query_cache import QueryCache
from .usage import MeteredEmbedder, MeteredGenerator
from .settings import Settings
from .stores import open_store
from .stores.base import Store


class Components:
    """A store with the model, LLM clients and ingestion runner built for it from `settings`.

    A tenant's view (`for_tenant`) shares the root's model and LLM clients: one model in
    memory however many tenants a server holds.
    """

    def __init__(
        self,
        store: Store,
        settings: Settings,
        embedder: Embedder | None = None,
        generators: dict[str, Generator] | None = None,
        *,
        root: Components | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self._embedder = embedder
        self._generators: dict[str, Generator] = {} if generators is None else generators
        self._root = root
        self._runner: IngestionRunner | None = None
        self._query_cache = QueryCache(settings.query_cache_entries) if settings.query_cache_entries and not root else None

    @classmethod
    def build(cls, settings: Settings) -> Components:
        """Open the store settings.db names, for settings.tenant (creating the database if needed)."""
        return cls(open_store(settings.db, settings.tenant), settings)

    def for_tenant(self, tenant: str) -> Components:
        """The same database, model and LLM clients, scoped to `tenant` (the store enforces it)."""
        settings = self.settings.model_copy(update={"tenant": tenant})
        return Components(self.store.for_tenant(tenant), settings, self._embedder, self._generators, root=self._root or self)

    @property
    def query_cache(self) -> QueryCache | None:
        """The root's cache, shared by every tenant's view (its keys say whose); None while off."""
        return self._root.query_cache if self._root else self._query_cache

    def enable_query_cache(self, max_entries: int) -> None:
        """Turn the cache on (the server does), unless one at least this large is on already."""
        if self._root:
            self._root.enable_query_cache(max_entries)
        elif max_entries and (self._query_cache is None or self._query_cache.max_entries < max_entries):
            self._query_cache = QueryCache(max_entries)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._root.embedder if self._root else MeteredEmbedder(create_embedder(self._embedding_settings()))
        return self._embedder

    def _embedding_settings(self) -> Settings:
        """The settings, with int8 when the knowledge base's vectors were made at int8 and the user
        chose no precision: a collection refuses vectors of another model, and int8 vectors are
        recorded as one, so a base built at int8 keeps working whatever the default is (the
        default, auto, gives fp32 or bf16 vectors, which share the fp32 model's name)."""
        if "embedding_precision" in self.settings.model_fields_set:
            return self.settings
        recorded = {collection.embedding_model.endswith(INT8_SUFFIX) for collection in self.store.collections()}
        if recorded == {True}:
            return self.settings.model_copy(update={"embedding_precision": "int8"})
        return self.settings

    def generator(self, spec: str | None = None) -> Generator | None:
        """The LLM `spec` ("provider:model", else settings.llm) names, built once; None when none is set."""
        spec = spec or self.settings.llm
        if spec is None:
            return None
        if spec not in self._generators:
            built = create_llm(self.settings, spec)
            self._generators[spec] = MeteredGenerator(built) if built else built  # type: ignore[assignment]
        return self._generators[spec]

    def enricher(self) -> ContextualEnricher | None:
        """The contextual enricher when settings.enrich_chunks asks for one (it needs an LLM)."""
        if not self.settings.enrich_chunks:
            return None
        generator = self.generator(self.settings.enrich_llm)
        if generator is None:
            raise ConfigurationError("enrich_chunks needs an LLM: set enrich_llm or llm to 'provider:model'")
        return ContextualEnricher(generator, self.store)

    def ingestor(self, progress: ProgressHandler | None = None) -> Ingestor:
        """The in-process pipeline on this store (what a runner or a worker's job drives)."""
        return Ingestor(self.store, self.embedder, self.settings, progress, self.enricher())

    @property
    def runner(self) -> IngestionRunner:
        """The ingestion runner: the job queue on Postgres, in-process otherwise (jobs/)."""
        if self._runner is None:
            self._runner = runner_for(self)
        return self._runner

    def close(self) -> None:
        """Close the store (every tenant's view of it)."""
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
