"""The OpenAI Chat Completions and Embeddings APIs (also what OpenAI-compatible servers speak)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .core import Recorded, Reply, fake_vector


def _chunk(model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


class OpenAIProtocol:
    def is_stream(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def is_embedding(self, path: str) -> bool:
        return path.endswith("/embeddings")

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        return str(body.get("model", ""))

    def _usage(self, reply: Reply) -> dict[str, int]:
        return {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
                "total_tokens": reply.input_tokens + reply.output_tokens}

    def reply(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        text = json.dumps(reply.data) if reply.data is not None else reply.text
        return {
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": self.model_of("", request.body),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": self._usage(reply),
        }

    def stream_events(self, reply: Reply, request: Recorded) -> Iterator[bytes]:
        model = self.model_of("", request.body)
        yield _data(_chunk(model, {"role": "assistant", "content": ""}, None))
        for piece in reply.stream_chunks():
            yield _data(_chunk(model, {"content": piece}, None))
        yield _data(_chunk(model, {}, "stop"))
        if (request.body.get("stream_options") or {}).get("include_usage"):
            yield _data({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
                         "choices": [], "usage": self._usage(reply)})
        yield b"data: [DONE]\n\n"

    def embedding_inputs(self, body: dict[str, Any]) -> list[str]:
        given = body.get("input", [])
        return [given] if isinstance(given, str) else list(given)

    def embeddings(self, texts: list[str], dimension: int, request: Recorded) -> dict[str, Any]:
        return {
            "object": "list", "model": self.model_of("", request.body),
            "data": [{"object": "embedding", "index": i, "embedding": fake_vector(t, dimension)} for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": sum(len(t.split()) for t in texts)},
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        code = {404: "model_not_found", 429: "rate_limit_exceeded"}.get(status)
        return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                          "param": None, "code": code}}


def _data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()
