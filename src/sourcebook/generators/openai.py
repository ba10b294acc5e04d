"""OpenAI Chat Completions through the official `openai` SDK, and any OpenAI-compatible server.

Ollama, vLLM, LM Studio and the llama.cpp server speak the same protocol: point
`llm_base_urls["openai"]` (or OPENAI_BASE_URL) at them. Such a server usually needs no
key, so one is required only when no base URL is set. The official endpoint takes
`max_completion_tokens` (newer models refuse `max_tokens`); compatible servers get the
`max_tokens` they all understand.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..settings import Settings
from .base import GenerationRequest, Usage
from .resilience import Failure, RetryPolicy, SDKGenerator, classify_stainless
from .sdk import api_key, base_url, import_sdk, retry_policy


class OpenAIGenerator(SDKGenerator):
    provider = "openai"
    key_variable = "OPENAI_API_KEY"

    def __init__(self, model: str, *, key: str | None, url: str | None, timeout: float, retry: RetryPolicy) -> None:
        super().__init__(model, retry)
        self._sdk = import_sdk("openai", "openai")
        self._compatible = url is not None
        self._client = self._sdk.OpenAI(api_key=key or "unused", base_url=url, timeout=timeout, max_retries=0)

    def _params(self, request: GenerationRequest) -> dict[str, Any]:
        messages = [{"role": "system", "content": request.system}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        limit = "max_tokens" if self._compatible else "max_completion_tokens"
        params: dict[str, Any] = {"model": self.model, "messages": messages, limit: request.max_tokens,
                                  "temperature": request.temperature}
        if request.json_schema is not None:
            schema = request.json_schema
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "description": schema.description, "schema": schema.schema, "strict": True},
            }
        return params

    def _complete(self, request: GenerationRequest) -> tuple[str, Usage]:
        completion = self._client.chat.completions.create(**self._params(request))
        text = (completion.choices[0].message.content or "") if completion.choices else ""
        usage = completion.usage
        return text, (Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage())

    def _open_stream(self, request: GenerationRequest) -> Iterator[str | Usage]:
        chunks = self._client.chat.completions.create(
            **self._params(request), stream=True, stream_options={"include_usage": True}
        )
        for chunk in chunks:
            if chunk.usage is not None:
                yield Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content

    def _classify(self, exc: Exception) -> Failure | None:
        return classify_stainless(exc, self._sdk)


def create(model: str, settings: Settings) -> OpenAIGenerator:
    url = base_url("openai", settings, "OPENAI_BASE_URL")
    return OpenAIGenerator(
        model,
        key=api_key("openai", ("OPENAI_API_KEY",), required=url is None),
        url=url,
        timeout=settings.llm_timeout,
        retry=retry_policy(settings),
    )
