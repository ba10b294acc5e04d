"""LLM back ends: the `Generator` protocol, the built-in providers and the fallback chain.

`create_llm(settings)` builds what `Settings.llm` (plus `llm_fallbacks`) names, or returns
None when no LLM is configured -- the extractive answerer then stays in charge. Providers are
the `GENERATORS` kind of the plugin registry; their modules, and the SDKs they import, load
only when chosen, so `import sourcebook` never pays for them.
"""

from __future__ import annotations

from ..settings import Settings
from .base import (
    GENERATORS,
    Generation,
    GenerationRequest,
    Generator,
    GeneratorFactory,
    JsonSchema,
    Message,
    StreamEvent,
    Usage,
    create_generator,
    parse_spec,
    register_generator,
)
from .resilience import FallbackGenerator, RetryPolicy


def create_llm(settings: Settings, spec: str | None = None) -> Generator | None:
    """The generator for `spec` (else settings.llm), wrapped with settings.llm_fallbacks; None = no LLM."""
    primary = spec or settings.llm
    if not primary:
        return None
    chain = [create_generator(s, settings) for s in (primary, *settings.llm_fallbacks) if s]
    return chain[0] if len(chain) == 1 else FallbackGenerator(chain)  # type: ignore[return-value]


__all__ = [
    "GENERATORS", "FallbackGenerator", "Generation", "GenerationRequest", "Generator", "GeneratorFactory",
    "JsonSchema", "Message", "RetryPolicy", "StreamEvent", "Usage", "create_generator", "create_llm", "parse_spec",
    "register_generator",
]
