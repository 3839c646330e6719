"""What polyg's HTTP guard reads of a JSON-RPC request body before the SDK handles it.

The guard needs the method (rate limits count tool calls) and the id: the SDK answers a request
it cannot validate with `id: null` even when the id was readable, and a client then cannot tell
which of its requests failed. `answer_with_request_id` puts the id back into such an answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.types import Message, Receive, Send

RequestId = str | int


@dataclass(frozen=True)
class Incoming:
    """The parts of a JSON-RPC message the guard uses (None when absent or unreadable)."""

    method: str | None = None
    id: RequestId | None = None


def read_incoming(body: bytes) -> Incoming:
    try:
        message = json.loads(body)
    except ValueError:  # not JSON (or not UTF-8): nothing is readable
        return Incoming()
    if not isinstance(message, dict):
        return Incoming()
    method = message.get("method")
    request_id = message.get("id")
    # JSON-RPC ids are strings or numbers; MCP's are strings or integers (a bool is not one).
    readable = isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))
    return Incoming(method if isinstance(method, str) else None, request_id if readable else None)


async def read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a `receive` that hands it on to the app as if unread."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            return b"".join(chunks), _replaying([message], receive)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    return body, _replaying([{"type": "http.request", "body": body, "more_body": False}], receive)


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()  # later messages (a disconnect) come from the server

    return replay


def answer_with_request_id(send: Send, request_id: RequestId | None) -> Send:
    """`send`, with an error answer's `"id": null` replaced by the request's id."""
    if request_id is None:
        return send
    held: list[Message] = []
    body: list[bytes] = []

    async def patched(message: Message) -> None:
        if message["type"] == "http.response.start":
            if message["status"] >= 400 and _is_json(message):
                held.append(message)  # sent with the body, whose length may change
                return
        elif message["type"] == "http.response.body" and held:
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            start, fixed = held.pop(), _with_id(b"".join(body), request_id)
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(fixed)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": fixed, "more_body": False})
            return
        await send(message)

    return patched


def _is_json(start: Message) -> bool:
    return any(k.lower() == b"content-type" and v.startswith(b"application/json") for k, v in start["headers"])


def _with_id(body: bytes, request_id: RequestId) -> bytes:
    try:
        answer: Any = json.loads(body)
    except ValueError:
        return body
    if not (isinstance(answer, dict) and "error" in answer and answer.get("id", 0) is None):
        return body
    return json.dumps({**answer, "id": request_id}, ensure_ascii=False).encode()
