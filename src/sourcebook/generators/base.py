"""The `Generator` protocol (an LLM back end), its value types and its registry.

A generator turns a `GenerationRequest` (system prompt, messages, optional JSON schema
for structured output) into a `Generation` (text, token usage, latency, attempts), either
at once (`generate`) or as a stream of text deltas ending with the `Generation`
(`stream`). Providers are chosen by name, "provider:model" ("anthropic:claude-sonnet-4-5",
"openai:gpt-4o-mini", "gemini:gemini-2.5-flash", "llamacpp:/models/x.gguf"). Providers are
the `GENERATORS` kind of the plugin registry (`sourcebook.plugins`): the built-in ones are
declared there by module, so a provider's module (and its SDK) is imported only when chosen,
and third parties add providers through the entry-point group "sourcebook.generators" (a
callable `(model: str, settings: Settings) -> Generator`), so no fork is needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import ConfigurationError, MalformedResponseError
from ..plugins import Builtin, PluginKind
from ..settings import Settings


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class JsonSchema:
    """Structured output: the reply must be one JSON object matching `schema`."""

    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class GenerationRequest:
    system: str
    messages: tuple[Message, ...]
    max_tokens: int = 1024
    temperature: float = 0.0
    json_schema: JsonSchema | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass(frozen=True)
class Generation:
    """One finished LLM call: what it said and what it cost."""

    text: str
    provider: str
    model: str
    usage: Usage = Usage()
    latency_ms: float = 0.0
    attempts: int = 1
    failures: tuple[str, ...] = field(default=())
    """Errors of providers tried before this one answered (fallback chain)."""

    def record(self, purpose: str) -> dict[str, Any]:
        """The per-call entry of `Answer.usage["calls"]`."""
        return {
            "purpose": purpose,
            "provider": self.provider,
            "model": self.model,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "latency_ms": round(self.latency_ms, 1),
            "attempts": self.attempts,
            "fallback_failures": list(self.failures),
        }

    def json(self) -> dict[str, Any]:
        """The reply parsed as the JSON object structured output promised."""
        try:
            data = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise MalformedResponseError(
                f"{self.provider}:{self.model} returned invalid JSON for structured output ({exc.msg}); "
                f"use a model that supports structured output"
            ) from exc
        if not isinstance(data, dict):
            raise MalformedResponseError(f"{self.provider}:{self.model} returned JSON that is not an object")
        return data


StreamEvent = str | Generation
"""`Generator.stream` yields text deltas (str), then exactly one final `Generation`."""


@runtime_checkable
class Generator(Protocol):
    provider: str
    model: str

    @property
    def spec(self) -> str:
        """"provider:model", as the user names it."""

    def generate(self, request: GenerationRequest) -> Generation: ...

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]: ...


GeneratorFactory = Callable[[str, Settings], Generator]

GENERATORS: PluginKind[GeneratorFactory] = PluginKind(
    "generator",
    "sourcebook.generators",
    [Builtin(name, f"sourcebook.generators.{name}:create") for name in ("anthropic", "openai", "gemini", "llamacpp")],
)


def register_generator(provider: str, factory: GeneratorFactory) -> None:
    """Make `create_generator` build "provider:model" with `factory` (replacing any earlier one)."""
    GENERATORS.register(provider, factory)


def parse_spec(spec: str) -> tuple[str, str]:
    provider, sep, model = spec.partition(":")
    if not sep or not provider or not model:
        raise ConfigurationError(
            f"LLM {spec!r} is not 'provider:model'; e.g. anthropic:claude-sonnet-4-5, openai:gpt-4o-mini, "
            f"gemini:gemini-2.5-flash, llamacpp:/path/to/model.gguf"
        )
    return provider.lower(), model


def create_generator(spec: str, settings: Settings) -> Generator:
    """The generator "provider:model" names. Raises ConfigurationError for an unknown provider
    and MissingAPIKeyError when the provider's key is not set."""
    provider, model = parse_spec(spec)
    factory = GENERATORS.get(provider)
    if factory is None:
        raise ConfigurationError(
            f"unknown LLM provider {provider!r} (known: {', '.join(GENERATORS.names())}); install a package "
            f"with a {GENERATORS.group!r} entry point named {provider!r}, or pick a known provider"
        )
    return factory(model, settings)
