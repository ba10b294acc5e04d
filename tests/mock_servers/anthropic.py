"""The Anthropic Messages API (POST /v1/messages), plain and streamed (SSE)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .core import Recorded, Reply, sse

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_error", 529: "overloaded_error"}


class AnthropicProtocol:
    def is_stream(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def is_embedding(self, path: str) -> bool:
        return False

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        return str(body.get("model", ""))

    def _content(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        if reply.data is not None:
            tool = request.body["tools"][0]["name"]
            return {"type": "tool_use", "id": "toolu_mock", "name": tool, "input": reply.data}
        return {"type": "text", "text": reply.text}

    def reply(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        content = self._content(reply, request)
        return {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": self.model_of("", request.body),
            "content": [content], "stop_reason": "tool_use" if content["type"] == "tool_use" else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }

    def stream_events(self, reply: Reply, request: Recorded) -> Iterator[bytes]:
        message = self.reply(Reply(""), request) | {"content": [], "stop_reason": None,
                                                     "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1}}
        yield sse({"type": "message_start", "message": message}, "message_start")
        yield sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                  "content_block_start")
        for piece in reply.stream_chunks():
            yield sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
                      "content_block_delta")
        yield sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        yield sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                   "usage": {"output_tokens": reply.output_tokens}}, "message_delta")
        yield sse({"type": "message_stop"}, "message_stop")

    def embeddings(self, texts: list[str], dimension: int, request: Recorded) -> dict[str, Any]:
        raise NotImplementedError("Anthropic has no embeddings API")

    def embedding_inputs(self, body: dict[str, Any]) -> list[str]:
        return []

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
