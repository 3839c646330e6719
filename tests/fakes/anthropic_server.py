"""A real, local HTTP server speaking the Anthropic Messages API, for tests.

    with FakeAnthropicServer(api_key="sk-ant-test") as srv:
        srv.replies.append({"answer": "42"})
        llm = AnthropicLLM(base_url=srv.base_url, api_key="sk-ant-test", model="fake-claude")
        ...

Endpoint: POST /v1/messages. Requests without `x-api-key` equal to `api_key` (when set) get
401; requests without an `anthropic-version` header get 400, as the real API answers.
`srv.replies` is a list popped from the front (one per request) or a callable taking the
decoded body. A reply is
- a dict: the input of a `tool_use` block calling the tool the request forced with
  `tool_choice` (how structured output is asked for), stop reason "tool_use";
- a str: one text block, stop reason "end_turn";
- a `RawMessage`: the given content blocks and stop reason verbatim (e.g. "refusal",
  "max_tokens").
No reply left: HTTP 500 with an explanation, so the test fails loudly. Failures, delays and
the request log are those of `tests.fakes.http_fake.FakeHTTPServer`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http_fake import FakeHTTPServer, RecordedRequest, Route


@dataclass
class RawMessage:
    content: list[dict[str, Any]]
    stop_reason: str


AnthropicReply = str | dict[str, Any] | RawMessage
AnthropicScript = list[AnthropicReply] | Callable[[dict[str, Any]], AnthropicReply]


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


@dataclass
class FakeAnthropicServer(FakeHTTPServer):
    api_key: str | None = None
    replies: AnthropicScript = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.root_url

    def _routes(self) -> dict[tuple[str, str], Route]:
        return {("POST", "/v1/messages"): self._messages}

    def _refuse(self, request: RecordedRequest) -> tuple[int, Any] | None:
        if self.api_key is not None and request.headers.get("x-api-key") != self.api_key:
            return 401, _error("authentication_error", "invalid x-api-key")
        if "anthropic-version" not in request.headers:
            return 400, _error("invalid_request_error", "anthropic-version header is required")
        return None

    def _messages(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or "max_tokens" not in body:
            return 400, _error("invalid_request_error", "'messages' and 'max_tokens' are required")
        with self._lock:
            script = self.replies
            if callable(script):
                reply: AnthropicReply | None = None
            elif script:
                reply = script.pop(0)
            else:
                return 500, _error("api_error", "FakeAnthropicServer: no scripted reply left")
            number = len(self.requests)
        if callable(script):
            reply = script(body)
        if isinstance(reply, RawMessage):
            content, stop = reply.content, reply.stop_reason
        elif isinstance(reply, dict):
            tool = (body.get("tool_choice") or {}).get("name", "respond")
            content = [{"type": "tool_use", "id": f"toolu_fake_{number}", "name": tool, "input": reply}]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": str(reply)}], "end_turn"
        return 200, {
            "id": f"msg_fake_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake-claude"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
