"""Embedders: the protocol, the local default, and the `EMBEDDERS` kind of the plugin registry.

`create_embedder(settings)` picks the implementation. A plain model spec
("all-MiniLM-L6-v2", a folder path) is served by `LocalEmbedder`; "name:model" by the
embedder registered as "name" (`sourcebook.plugins`): the built-in hosted ones, "openai"
and "gemini" (hosted.py, whose SDKs are imported only when chosen), and those third parties
install under the entry-point group "sourcebook.embedders" (a callable taking Settings,
whose `embedding_model` is the bare model, and returning an Embedder).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..plugins import Builtin, PluginKind
from ..settings import Settings
from .base import Embedder
from .local import LocalEmbedder

EmbedderFactory = Callable[[Settings], Embedder]

EMBEDDERS: PluginKind[EmbedderFactory] = PluginKind(
    "embedder",
    "sourcebook.embedders",
    [
        Builtin("openai", "sourcebook.embedders.hosted:openai_embedder"),
        Builtin("gemini", "sourcebook.embedders.hosted:gemini_embedder"),
    ],
)


def create_embedder(settings: Settings) -> Embedder:
    provider, sep, model = settings.embedding_model.partition(":")
    if sep and len(provider) > 1:  # "C:\\models" is a Windows path, not a provider
        factory = EMBEDDERS.get(provider)
        if factory is not None:
            return factory(settings.model_copy(update={"embedding_model": model}))
    return _cached_local(
        settings.embedding_model, settings.embedding_batch_size, settings.embedding_threads, settings.embedding_precision,
        settings.embedding_query_precision,
    )


@functools.lru_cache(maxsize=4)
def _cached_local(model: str, batch_size: int, threads: int, precision: str, query_precision: str) -> Embedder:
    """Loading a model costs a couple of seconds; reuse it across knowledge bases in one process."""
    return LocalEmbedder(model, batch_size, threads, precision, query_precision)


__all__ = ["EMBEDDERS", "Embedder", "EmbedderFactory", "LocalEmbedder", "create_embedder"]
