"""The fallback chain, the registry and retry-after parsing."""

from __future__ import annotations

import email.utils
import time
from dataclasses import replace

import pytest

from sourcebook.errors import ConfigurationError, ProviderUnavailableError, UnknownModelError
from sourcebook.generators import (
    FallbackGenerator,
    Generation,
    GenerationRequest,
    Message,
    create_generator,
    create_llm,
    register_generator,
)
from sourcebook.generators.resilience import retry_after_seconds
from sourcebook.settings import Settings
from tests.mock_servers import AnthropicProtocol, Fail, Malformed, MockServer, OpenAIProtocol, Reply

REQUEST = GenerationRequest("system", (Message("user", "question"),))


@pytest.fixture
def servers():
    with MockServer(AnthropicProtocol()) as primary, MockServer(OpenAIProtocol()) as secondary:
        yield primary, secondary


def chain(primary: MockServer, secondary: MockServer) -> FallbackGenerator:
    settings = Settings(
        llm="anthropic:claude-x", llm_fallbacks=("openai:gpt-x",), llm_max_retries=1,
        llm_base_urls={"anthropic": primary.url, "openai": secondary.url + "/v1"},
    )
    generator = create_llm(settings)
    assert isinstance(generator, FallbackGenerator)
    for member in generator.generators:
        member.retry = replace(member.retry, sleep=lambda seconds: None)
    return generator


def test_fallback_moves_on_when_the_primary_is_unavailable(servers):
    primary, secondary = servers
    primary.script(Fail(500), Fail(503))
    secondary.script(Reply("from the fallback"))
    result = chain(primary, secondary).generate(REQUEST)
    assert (result.provider, result.text) == ("openai", "from the fallback")
    assert len(result.failures) == 1 and "anthropic:claude-x" in result.failures[0]
    assert len(primary.requests) == 2  # retried once before falling back


def test_fallback_on_malformed_replies_and_in_streams(servers):
    primary, secondary = servers
    primary.script(Malformed())
    secondary.script(Reply("streamed by the fallback"))
    events = list(chain(primary, secondary).stream(REQUEST))
    assert "".join(e for e in events if isinstance(e, str)) == "streamed by the fallback"
    assert isinstance(events[-1], Generation) and events[-1].provider == "openai" and events[-1].failures


def test_fallback_does_not_hide_configuration_mistakes(servers):
    primary, secondary = servers
    primary.script(Fail(404, "no model claude-x"))
    with pytest.raises(UnknownModelError):
        chain(primary, secondary).generate(REQUEST)
    assert secondary.requests == []


def test_every_provider_failing_names_each_failure(servers):
    primary, secondary = servers
    primary.script(Fail(500), Fail(500))
    secondary.script(Fail(429), Fail(429))
    with pytest.raises(ProviderUnavailableError, match="anthropic:claude-x.*openai:gpt-x"):
        chain(primary, secondary).generate(REQUEST)


def test_no_llm_configured_means_none():
    assert create_llm(Settings()) is None


def test_unknown_provider_and_bad_spec_are_configuration_errors():
    with pytest.raises(ConfigurationError, match="unknown LLM provider 'nope'.*anthropic"):
        create_generator("nope:model", Settings())
    with pytest.raises(ConfigurationError, match="provider:model"):
        create_generator("claude", Settings())


def test_third_party_providers_register_by_name():
    class Echo:
        provider, model = "echo", "v1"
        spec = "echo:v1"

        def generate(self, request):
            return Generation(request.messages[-1].content, "echo", "v1")

    register_generator("echo", lambda model, settings: Echo())
    assert create_generator("echo:v1", Settings()).generate(REQUEST).text == "question"


def test_retry_after_forms():
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= retry_after_seconds({"retry-after": in_ten}) <= 10
    assert retry_after_seconds({}) is None and retry_after_seconds({"retry-after": "soon"}) is None
