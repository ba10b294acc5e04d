"""Request size limits: 413 before a large body is read, and while one without a length streams in.

Multipart uploads may be up to `max_upload_bytes`; every other body up to
`max_request_bytes` (a JSON question needs little). A declared Content-Length over the
limit is refused at once; a chunked body is counted as it arrives and cut off at the limit.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import PayloadTooLargeError


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_request_bytes: int, max_upload_bytes: int) -> None:
        self.app = app
        self.max_request_bytes = max_request_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        multipart = headers.get(b"content-type", b"").startswith(b"multipart/")
        limit = self.max_upload_bytes if multipart else self.max_request_bytes
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(send, _message(int(declared), limit, multipart))
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:  # an HTTPException: FastAPI's body parsing lets only those through
                    raise HTTPException(413, _message(received, limit, multipart))
            return message

        await self.app(scope, counting_receive, send)


def _message(size: int, limit: int, multipart: bool) -> str:
    what = "upload" if multipart else "request body"
    return f"the {what} is over {limit} bytes ({size} bytes or more); send less, or raise the server's limit"


async def _refuse(send: Send, message: str) -> None:
    body = json.dumps({"error": {"code": PayloadTooLargeError.code, "message": message}}).encode()
    await send({
        "type": "http.response.start", "status": 413,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")],
    })
    await send({"type": "http.response.body", "body": body})
