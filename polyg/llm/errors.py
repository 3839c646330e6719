"""What can go wrong with an LLM call. Every failure of the port is an `LLMError`, so a caller
(usually `polyg.llm.fallback.with_fallback`) can answer with the rules instead; messages
never carry the API key."""

from __future__ import annotations

from polyg.errors import PolygError


class LLMError(PolygError):
    code = 5003


class LLMUnavailable(LLMError):
    """The endpoint could not be reached or answered with an HTTP error (after retries)."""


class LLMTimeout(LLMError):
    """No valid answer within the call's time limit (retries included)."""


class LLMRefusal(LLMError):
    """The model declined to answer (a refusal, or a content filter stopped it)."""


class LLMInvalidOutput(LLMError):
    """The answer was not JSON, did not match the schema, or was cut off."""
