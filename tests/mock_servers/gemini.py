"""The Gemini API: generateContent, streamGenerateContent (?alt=sse) and batchEmbedContents."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .core import Recorded, Reply, fake_vector

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


class GeminiProtocol:
    def is_stream(self, path: str, body: dict[str, Any]) -> bool:
        return ":streamGenerateContent" in path

    def is_embedding(self, path: str) -> bool:
        return path.endswith((":batchEmbedContents", ":embedContent"))

    def model_of(self, path: str, body: dict[str, Any]) -> str:
        return path.rsplit("/", 1)[-1].split(":", 1)[0]

    def _response(self, text: str, reply: Reply, model: str, finish: str | None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": reply.input_tokens, "candidatesTokenCount": reply.output_tokens,
                              "totalTokenCount": reply.input_tokens + reply.output_tokens},
            "modelVersion": model,
        }

    def reply(self, reply: Reply, request: Recorded) -> dict[str, Any]:
        text = json.dumps(reply.data) if reply.data is not None else reply.text
        return self._response(text, reply, self.model_of(request.path, request.body), "STOP")

    def stream_events(self, reply: Reply, request: Recorded) -> Iterator[bytes]:
        model = self.model_of(request.path, request.body)
        pieces = reply.stream_chunks()
        for i, piece in enumerate(pieces):
            finish = "STOP" if i == len(pieces) - 1 else None
            yield f"data: {json.dumps(self._response(piece, reply, model, finish))}\r\n\r\n".encode()

    def embedding_inputs(self, body: dict[str, Any]) -> list[str]:
        requests = body.get("requests") or [body]
        return [" ".join(p.get("text", "") for p in r["content"]["parts"]) for r in requests]

    def embeddings(self, texts: list[str], dimension: int, request: Recorded) -> dict[str, Any]:
        vectors = [{"values": fake_vector(t, dimension)} for t in texts]
        if request.path.endswith(":embedContent"):
            return {"embedding": vectors[0]}
        return {"embeddings": vectors}

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}
