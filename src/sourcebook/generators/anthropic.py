"""Anthropic's Messages API through the official `anthropic` SDK (the design documents' choice).

Structured output uses a forced tool call: the tool's input schema is the JSON schema, and
the tool input is the reply. That is Anthropic's documented way to get schema-valid JSON.
No temperature is sent: the current SDK no longer accepts sampling parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..settings import Settings
from .base import GenerationRequest, Usage
from .resilience import Failure, RetryPolicy, SDKGenerator, classify_stainless
from .sdk import api_key, base_url, import_sdk, retry_policy


class AnthropicGenerator(SDKGenerator):
    provider = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, *, key: str, url: str | None, timeout: float, retry: RetryPolicy) -> None:
        super().__init__(model, retry)
        self._sdk = import_sdk("anthropic", "anthropic")
        self._client = self._sdk.Anthropic(api_key=key, base_url=url, timeout=timeout, max_retries=0)

    def _params(self, request: GenerationRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "system": request.system,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
        }
        if request.json_schema is not None:
            schema = request.json_schema
            params["tools"] = [{"name": schema.name, "description": schema.description, "input_schema": schema.schema}]
            params["tool_choice"] = {"type": "tool", "name": schema.name}
        return params

    def _complete(self, request: GenerationRequest) -> tuple[str, Usage]:
        message = self._client.messages.create(**self._params(request))
        usage = Usage(message.usage.input_tokens, message.usage.output_tokens)
        if request.json_schema is not None:
            tool_inputs = [block.input for block in message.content if block.type == "tool_use"]
            return (json.dumps(tool_inputs[0]) if tool_inputs else ""), usage
        return "".join(block.text for block in message.content if block.type == "text"), usage

    def _open_stream(self, request: GenerationRequest) -> Iterator[str | Usage]:
        for event in self._client.messages.create(**self._params(request), stream=True):
            if event.type == "message_start":
                yield Usage(event.message.usage.input_tokens, event.message.usage.output_tokens)
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                yield event.delta.text
            elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                yield event.delta.partial_json
            elif event.type == "message_delta":
                yield Usage(0, event.usage.output_tokens)

    def _classify(self, exc: Exception) -> Failure | None:
        return classify_stainless(exc, self._sdk)


def create(model: str, settings: Settings) -> AnthropicGenerator:
    return AnthropicGenerator(
        model,
        key=api_key("anthropic", ("ANTHROPIC_API_KEY",)),
        url=base_url("anthropic", settings, "ANTHROPIC_BASE_URL"),
        timeout=settings.llm_timeout,
        retry=retry_policy(settings),
    )
