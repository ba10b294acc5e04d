"""Embedders: the protocol, the local default, and a registry keyed by name.

`create_embedder(settings)` picks the implementation. A plain model spec
("all-MiniLM-L6-v2", a folder path) is served by `LocalEmbedder`; "openai:<model>" and
"gemini:<model>" by the hosted embedders (hosted.py); third parties register more through
the entry-point group "sourcebook.embedders" (a callable taking Settings, returning an
Embedder), selected with "name:model".
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import entry_points

from ..settings import Settings
from .base import Embedder
from .local import LocalEmbedder

EmbedderFactory = Callable[[Settings], Embedder]


def _hosted(name: str) -> EmbedderFactory:
    """A built-in hosted embedder's factory, importing its SDK only when chosen."""

    def factory(settings: Settings) -> Embedder:
        from . import hosted

        return getattr(hosted, f"{name}_embedder")(settings)  # type: ignore[no-any-return]

    return factory


HOSTED: dict[str, EmbedderFactory] = {"openai": _hosted("openai"), "gemini": _hosted("gemini")}


def _plugin_factories() -> dict[str, EmbedderFactory]:
    return HOSTED | {ep.name: ep.load() for ep in entry_points(group="sourcebook.embedders")}


def create_embedder(settings: Settings) -> Embedder:
    provider, sep, model = settings.embedding_model.partition(":")
    if sep and len(provider) > 1:  # "C:\\models" is a Windows path, not a provider
        factories = _plugin_factories()
        if provider in factories:
            return factories[provider](settings.model_copy(update={"embedding_model": model}))
    return _cached_local(settings.embedding_model, settings.embedding_batch_size, settings.embedding_threads)


@functools.lru_cache(maxsize=4)
def _cached_local(model: str, batch_size: int, threads: int) -> Embedder:
    """Loading a model costs a couple of seconds; reuse it across knowledge bases in one process."""
    return LocalEmbedder(model, batch_size, threads)


__all__ = ["Embedder", "LocalEmbedder", "create_embedder"]
