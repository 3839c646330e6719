"""Chat completions from any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, LM Studio
(anything that serves `POST {base_url}/chat/completions`), over httpx; no SDK needed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from polyg.llm.base import LLM, Message, schema_instruction
from polyg.llm.errors import LLMInvalidOutput, LLMRefusal

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_MODEL = "gpt-4o-mini"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
OLLAMA_MODEL = "llama3.2"


class OpenAICompatLLM(LLM):
    provider = "openai"

    def _endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def _body(self, messages: Sequence[Message], schema: type[BaseModel], max_tokens: int) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "messages": [{"role": "system", "content": schema_instruction(schema)}, *messages],
            "temperature": 0,
            "max_tokens": max_tokens,
            # Structured output where the server supports it (OpenAI, recent Ollama, vLLM, LM
            # Studio); not strict, because strict mode refuses many ordinary pydantic schemas.
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False},
            },
        }

    def _answer(self, payload: Any) -> str | dict[str, Any]:
        try:
            choice = payload["choices"][0]
            message = choice["message"]
            finish = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMInvalidOutput(f"{self.provider} response has no choices[0].message") from exc
        refusal = message.get("refusal") if isinstance(message, dict) else None
        if refusal or finish == "content_filter":
            raise LLMRefusal(
                f"{self.provider} model {self.model_id!r} refused: {self._excerpt(str(refusal or finish))}",
                details={"provider": self.provider},
            )
        if finish == "length":
            raise LLMInvalidOutput(f"{self.provider} answer was cut off at max_tokens", details={"finish": finish})
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str) or not content.strip():
            raise LLMInvalidOutput(f"{self.provider} answer is empty", details={"provider": self.provider})
        return content


class OllamaLLM(OpenAICompatLLM):
    provider = "ollama"


def ollama_base_url(url: str | None) -> str:
    """Ollama's OpenAI-compatible API lives under /v1; `OLLAMA_BASE_URL` usually omits it."""
    if not url:
        return OLLAMA_BASE_URL
    url = url.rstrip("/")
    return url if url.endswith("/v1") else f"{url}/v1"
