"""Anthropic, OpenAI and Gemini generators, each through its real SDK against a local mock server:
plain and streamed replies, structured output, usage, retries (429 retry-after, 5xx, timeouts),
malformed bodies, unknown models and missing keys."""

from __future__ import annotations

import json
import time

import pytest

from sourcebook.errors import MalformedResponseError, MissingAPIKeyError, ProviderUnavailableError, UnknownModelError
from sourcebook.generators import Generation, GenerationRequest, JsonSchema, Message, create_generator
from sourcebook.settings import Settings
from tests.mock_servers import Fail, Hang, Malformed, MockServer, OpenAIProtocol, Reply

REQUEST = GenerationRequest(system="You answer from sources.", messages=(Message("user", "How long is leave?"),), max_tokens=50)
SCHEMA = JsonSchema("queries", "search queries", {
    "type": "object", "properties": {"queries": {"type": "array", "items": {"type": "string"}}},
    "required": ["queries"], "additionalProperties": False,
})


def test_generate_returns_text_usage_and_sends_the_prompt(provider, server, make):
    generator, _ = make()
    server.script(Reply("Leave is 27 days [1].", input_tokens=120, output_tokens=9))
    result = generator.generate(REQUEST)
    assert (result.text, result.provider, result.model) == ("Leave is 27 days [1].", provider, "model-x")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (120, 9)
    assert result.attempts == 1 and result.latency_ms > 0
    (request,) = server.requests
    assert "You answer from sources." in json.dumps(request.body)
    assert "How long is leave?" in json.dumps(request.body)
    assert f"test-{provider}" in json.dumps(request.headers)


def test_stream_yields_deltas_as_they_arrive_then_the_generation(provider, server, make):
    generator, _ = make()
    server.script(Reply("one two three four", chunks=("one ", "two ", "three ", "four"), chunk_delay=0.1,
                        input_tokens=30, output_tokens=4))
    arrivals: list[tuple[float, object]] = []
    start = time.monotonic()
    for event in generator.stream(REQUEST):
        arrivals.append((time.monotonic() - start, event))
    deltas = [e for _, e in arrivals if isinstance(e, str)]
    final = arrivals[-1][1]
    assert "".join(deltas) == "one two three four" and len(deltas) == 4
    assert isinstance(final, Generation) and final.text == "one two three four"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (30, 4)
    # the first delta reached us well before the last one was sent: a real stream, not a buffered reply
    assert arrivals[0][0] < arrivals[-1][0] - 0.2


def test_structured_output_is_parsed(provider, server, make):
    generator, _ = make()
    server.script(Reply(data={"queries": ["annual leave days", "holiday allowance"]}))
    result = generator.generate(GenerationRequest("s", (Message("user", "q"),), json_schema=SCHEMA))
    assert result.json() == {"queries": ["annual leave days", "holiday allowance"]}
    assert '"queries"' in json.dumps(server.requests[0].body)  # the schema went out with the request


def test_429_retry_after_is_honoured(provider, server, make):
    generator, sleeps = make()
    server.script(Fail(429, "slow down", {"retry-after": "3"}), Reply("ok"))
    result = generator.generate(REQUEST)
    assert result.text == "ok" and result.attempts == 2
    assert sleeps.waits == [3.0]


def test_5xx_is_retried_with_exponential_backoff(provider, server, make):
    generator, sleeps = make(llm_max_retries=3, llm_retry_base_delay=0.5)
    server.script(Fail(500), Fail(503), Fail(502), Reply("finally"))
    assert generator.generate(REQUEST).attempts == 4
    assert len(sleeps.waits) == 3
    for attempt, wait in enumerate(sleeps.waits, 1):  # jitter keeps each wait in [b/2, b]
        assert 0.5 * 2 ** (attempt - 1) / 2 <= wait <= 0.5 * 2 ** (attempt - 1)


def test_persistent_5xx_becomes_provider_unavailable(provider, server, make):
    generator, _ = make(llm_max_retries=2)
    server.script(Fail(500), Fail(500), Fail(500))
    with pytest.raises(ProviderUnavailableError, match=rf"{provider}:model-x failed after 3 attempt"):
        generator.generate(REQUEST)
    assert len(server.requests) == 3


def test_a_retry_after_beyond_the_limit_is_not_waited_for(provider, server, make):
    generator, sleeps = make()
    server.script(Fail(429, "quota", {"retry-after": "3600"}))
    with pytest.raises(ProviderUnavailableError, match="retry after 3600s"):
        generator.generate(REQUEST)
    assert sleeps.waits == [] and len(server.requests) == 1


def test_timeouts_are_retried_then_reported(provider, server, make):
    generator, sleeps = make(llm_timeout=0.3, llm_max_retries=1)
    server.script(Hang(1.0), Hang(1.0))
    with pytest.raises(ProviderUnavailableError, match="after 2 attempt"):
        generator.generate(REQUEST)
    assert len(sleeps.waits) == 1


def test_a_timeout_then_success(provider, server, make):
    generator, _ = make(llm_timeout=0.3)
    server.script(Hang(1.0), Reply("on time"))
    assert generator.generate(REQUEST).text == "on time"


def test_malformed_json_is_a_typed_error_not_retried(provider, server, make):
    generator, _ = make()
    server.script(Malformed())
    with pytest.raises(MalformedResponseError, match=provider):
        generator.generate(REQUEST)
    assert len(server.requests) == 1


def test_unknown_model_is_a_clear_error(provider, server, make):
    generator, _ = make(model="no-such-model")
    server.script(Fail(404, "model no-such-model not found"))
    with pytest.raises(UnknownModelError, match="no-such-model"):
        generator.generate(REQUEST)


def test_rejected_credentials_name_the_variable(provider, server, make):
    generator, _ = make()
    server.script(Fail(401, "invalid x-api-key"))
    with pytest.raises(MissingAPIKeyError, match="API_KEY"):
        generator.generate(REQUEST)


def test_stream_is_retried_until_its_first_token(provider, server, make):
    generator, sleeps = make()
    server.script(Fail(429, "busy", {"retry-after": "1"}), Fail(500), Reply("streamed fine"))
    events = list(generator.stream(REQUEST))
    assert "".join(e for e in events if isinstance(e, str)) == "streamed fine"
    assert events[-1].attempts == 3 and sleeps.waits[0] == 1.0


def test_stream_unavailable_after_retries(provider, server, make):
    generator, _ = make(llm_max_retries=0)
    server.script(Fail(503))
    with pytest.raises(ProviderUnavailableError):
        list(generator.stream(REQUEST))


def test_missing_key_is_a_clear_error(provider, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingAPIKeyError, match=f"{provider.upper()}_API_KEY"):
        create_generator(f"{provider}:some-model", Settings())


def test_openai_compatible_server_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with MockServer(OpenAIProtocol()) as server:
        settings = Settings(llm_base_urls={"openai": server.url + "/v1"})
        server.script(Reply("local model says hi"))
        assert create_generator("openai:llama3", settings).generate(REQUEST).text == "local model says hi"
    assert "max_tokens" in server.requests[0].body  # compatible servers get the classic parameter
