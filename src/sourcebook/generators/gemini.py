"""Google Gemini through the official `google-genai` SDK.

Structured output uses `response_mime_type="application/json"` with the JSON schema.
The SDK's HTTP layer is httpx (or its fork httpx2, when installed); transport errors of
either count as transient.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from ..settings import Settings
from .base import GenerationRequest, Usage
from .resilience import Failure, RetryPolicy, SDKGenerator, classify_parse_error, classify_status
from .sdk import api_key, base_url, import_sdk, retry_policy

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def transport_errors() -> tuple[type[Exception], ...]:
    """Connection and timeout errors of whichever httpx flavours are installed."""
    found: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


class GeminiClient:
    """The parts shared by the Gemini generator and embedder: the client and error meaning."""

    def __init__(self, *, key: str, url: str | None, timeout: float) -> None:
        genai = import_sdk("google.genai", "gemini")
        self.types = importlib.import_module("google.genai.types")
        self._errors = importlib.import_module("google.genai.errors")
        self._transport = transport_errors()
        options = self.types.HttpOptions(base_url=url, timeout=int(timeout * 1000))
        self.client = genai.Client(api_key=key, http_options=options)

    def classify(self, exc: Exception) -> Failure | None:
        if isinstance(exc, self._errors.APIError):
            headers = exc.response.headers if getattr(exc, "response", None) is not None else None
            return classify_status(exc.code or 0, exc.message or str(exc), headers)
        if isinstance(exc, self._transport):
            return Failure("transient", f"{type(exc).__name__}: {exc}")
        return classify_parse_error(exc)


class GeminiGenerator(SDKGenerator):
    provider = "gemini"
    key_variable = "GEMINI_API_KEY"

    def __init__(self, model: str, *, key: str, url: str | None, timeout: float, retry: RetryPolicy) -> None:
        super().__init__(model, retry)
        self._gemini = GeminiClient(key=key, url=url, timeout=timeout)

    def _params(self, request: GenerationRequest) -> dict[str, Any]:
        types = self._gemini.types
        contents = [
            types.Content(role="model" if m.role == "assistant" else "user", parts=[types.Part(text=m.content)])
            for m in request.messages
        ]
        config: dict[str, Any] = {"system_instruction": request.system, "max_output_tokens": request.max_tokens,
                                  "temperature": request.temperature}
        if request.json_schema is not None:
            config |= {"response_mime_type": "application/json", "response_json_schema": request.json_schema.schema}
        return {"model": self.model, "contents": contents, "config": types.GenerateContentConfig(**config)}

    @staticmethod
    def _usage(response: Any) -> Usage:
        meta = response.usage_metadata
        if meta is None:
            return Usage()
        return Usage(meta.prompt_token_count or 0, meta.candidates_token_count or 0)

    def _complete(self, request: GenerationRequest) -> tuple[str, Usage]:
        response = self._gemini.client.models.generate_content(**self._params(request))
        return response.text or "", self._usage(response)

    def _open_stream(self, request: GenerationRequest) -> Iterator[str | Usage]:
        for response in self._gemini.client.models.generate_content_stream(**self._params(request)):
            yield self._usage(response)
            if response.text:
                yield response.text

    def _classify(self, exc: Exception) -> Failure | None:
        return self._gemini.classify(exc)


def create(model: str, settings: Settings) -> GeminiGenerator:
    return GeminiGenerator(
        model,
        key=api_key("gemini", KEY_VARIABLES),  # type: ignore[arg-type]
        url=base_url("gemini", settings, "GEMINI_BASE_URL"),
        timeout=settings.llm_timeout,
        retry=retry_policy(settings),
    )
