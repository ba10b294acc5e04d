"""Each hosted provider's real SDK against a mock server of its wire protocol on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pytest

from sourcebook.generators import create_generator
from sourcebook.generators.resilience import SDKGenerator
from sourcebook.settings import Settings
from tests.mock_servers import AnthropicProtocol, GeminiProtocol, MockServer, OpenAIProtocol

PROTOCOLS = {"anthropic": AnthropicProtocol, "openai": OpenAIProtocol, "gemini": GeminiProtocol}
API_KEYS = {"ANTHROPIC_API_KEY": "test-anthropic", "OPENAI_API_KEY": "test-openai", "GEMINI_API_KEY": "test-gemini"}


def base_url(provider: str, server: MockServer) -> str:
    return server.url + "/v1" if provider == "openai" else server.url


@dataclass
class Sleeps:
    """Stands in for time.sleep in the retry loop: records the waits, waits for nothing."""

    waits: list[float]

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture(autouse=True)
def api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in API_KEYS.items():
        monkeypatch.setenv(name, value)
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GEMINI_BASE_URL", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=list(PROTOCOLS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(provider: str) -> Iterator[MockServer]:
    with MockServer(PROTOCOLS[provider]()) as mock:
        yield mock


GeneratorMaker = Callable[..., SDKGenerator]


@pytest.fixture
def make(provider: str, server: MockServer) -> Callable[..., tuple[SDKGenerator, Sleeps]]:
    """Build the provider's generator against the mock: `generator, sleeps = make(**settings)`."""

    def build(model: str = "model-x", **overrides: object) -> tuple[SDKGenerator, Sleeps]:
        values = {"llm_base_urls": {provider: base_url(provider, server)}, "llm_timeout": 5.0, "llm_max_retries": 2}
        settings = Settings(**(values | overrides))  # type: ignore[arg-type]
        generator = create_generator(f"{provider}:{model}", settings)
        assert isinstance(generator, SDKGenerator)
        sleeps = Sleeps([])
        generator.retry = replace(generator.retry, sleep=sleeps)
        return generator, sleeps

    return build
