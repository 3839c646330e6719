"""Anthropic's Messages API over httpx (no SDK needed). Structured output is asked for the
way the API supports it: one tool whose input schema is the wanted schema, forced with
`tool_choice`, so the answer arrives as an already decoded `tool_use` input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from polyg.llm.base import LLM, Message, schema_instruction
from polyg.llm.errors import LLMInvalidOutput, LLMRefusal

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_MODEL = "claude-3-5-haiku-latest"
API_VERSION = "2023-06-01"
TOOL_NAME = "respond"


class AnthropicLLM(LLM):
    provider = "anthropic"

    def _endpoint(self) -> str:
        return f"{self.base_url}/v1/messages"

    def _headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def _body(self, messages: Sequence[Message], schema: type[BaseModel], max_tokens: int) -> dict[str, Any]:
        # The API takes system text apart from the conversation.
        system = [m["content"] for m in messages if m["role"] == "system"]
        conversation = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
        if not conversation:
            raise ValueError("the Messages API needs at least one user message")
        return {
            "model": self.model_id,
            "max_tokens": max_tokens,
            "temperature": 0,
            "system": "\n\n".join([*system, schema_instruction(schema)]),
            "messages": conversation,
            "tools": [
                {
                    "name": TOOL_NAME,
                    "description": f"Give the answer as a {schema.__name__} object.",
                    "input_schema": schema.model_json_schema(),
                }
            ],
            "tool_choice": {"type": "tool", "name": TOOL_NAME},
        }

    def _answer(self, payload: Any) -> str | dict[str, Any]:
        try:
            blocks = list(payload["content"])
            stop = payload.get("stop_reason")
        except (KeyError, TypeError) as exc:
            raise LLMInvalidOutput(f"{self.provider} response has no content") from exc
        if stop == "refusal":
            raise LLMRefusal(f"{self.provider} model {self.model_id!r} refused", details={"provider": self.provider})
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
                answer = block.get("input")
                if not isinstance(answer, dict):
                    raise LLMInvalidOutput(f"{self.provider} tool input is not an object")
                return answer
        if stop == "max_tokens":
            raise LLMInvalidOutput(f"{self.provider} answer was cut off at max_tokens", details={"stop": stop})
        # Some gateways ignore tool_choice and answer in text: read JSON from it.
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        if not text.strip():
            raise LLMInvalidOutput(f"{self.provider} answer is empty", details={"provider": self.provider})
        return text
