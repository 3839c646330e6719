"""The LLM port and its providers, and the factory that picks one from configuration.

Off by default (provider "none"): polyg's classifier, synthesiser and extractors are
rule-based and need no key and no network. Providers: "openai" (any OpenAI-compatible
endpoint through `base_url`: OpenAI, vLLM, LM Studio), "ollama" (the same protocol, local
default URL, no key) and "anthropic" (Messages API). All speak HTTP through httpx; no SDK is
required. Another provider can be added with `register_llm` without touching this package.
"""

from __future__ import annotations

from typing import Protocol

from polyg.errors import ConfigError
from polyg.llm.base import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, LLM, Message
from polyg.llm.errors import LLMError, LLMInvalidOutput, LLMRefusal, LLMTimeout, LLMUnavailable
from polyg.llm.fallback import Answer, Fallback, with_fallback

__all__ = [
    "LLM",
    "NO_LLM",
    "Answer",
    "Fallback",
    "LLMError",
    "LLMFactory",
    "LLMInvalidOutput",
    "LLMRefusal",
    "LLMTimeout",
    "LLMUnavailable",
    "Message",
    "available_llm_providers",
    "create_llm",
    "register_llm",
    "with_fallback",
]

NO_LLM = "none"


class LLMFactory(Protocol):
    def __call__(
        self, *, model: str | None, base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int
    ) -> LLM: ...


_FACTORIES: dict[str, LLMFactory] = {}


def register_llm(name: str, factory: LLMFactory) -> None:
    """Make `factory` selectable as provider `name` (replacing any provider of that name)."""
    _FACTORIES[name.strip().lower()] = factory


def available_llm_providers() -> list[str]:
    return [NO_LLM, *sorted(_FACTORIES)]


def create_llm(
    provider: str = NO_LLM,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> LLM | None:
    """The configured LLM, or None for provider "none"; connects to nothing yet."""
    name = provider.strip().lower()
    if name == NO_LLM:
        return None
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigError(
            f"unknown LLM provider {provider!r}; choose one of {', '.join(available_llm_providers())}",
            details={"provider": provider},
        )
    if timeout_s <= 0:
        raise ConfigError(f"the LLM time limit must be positive, got {timeout_s:g} s")
    return factory(model=model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries)


def _openai(*, model: str | None, base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int) -> LLM:
    from polyg.llm.openai_compat import OPENAI_BASE_URL, OPENAI_MODEL, OpenAICompatLLM

    url = base_url or OPENAI_BASE_URL
    # Self-hosted OpenAI-compatible servers need no key; OpenAI itself always does.
    if url.rstrip("/") == OPENAI_BASE_URL and not api_key:
        raise ConfigError("the openai LLM provider needs an API key (OPENAI_API_KEY or POLYG_LLM_API_KEY)")
    return OpenAICompatLLM(
        base_url=url, model=model or OPENAI_MODEL, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries
    )


def _ollama(*, model: str | None, base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int) -> LLM:
    from polyg.llm.openai_compat import OLLAMA_MODEL, OllamaLLM, ollama_base_url

    return OllamaLLM(
        base_url=ollama_base_url(base_url),
        model=model or OLLAMA_MODEL,
        api_key=api_key,
        timeout_s=timeout_s,
        max_retries=max_retries,
    )


def _anthropic(
    *, model: str | None, base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int
) -> LLM:
    from polyg.llm.anthropic import ANTHROPIC_BASE_URL, ANTHROPIC_MODEL, AnthropicLLM

    url = base_url or ANTHROPIC_BASE_URL
    if url.rstrip("/") == ANTHROPIC_BASE_URL and not api_key:
        raise ConfigError("the anthropic LLM provider needs an API key (ANTHROPIC_API_KEY or POLYG_LLM_API_KEY)")
    return AnthropicLLM(
        base_url=url, model=model or ANTHROPIC_MODEL, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries
    )


register_llm("openai", _openai)
register_llm("ollama", _ollama)
register_llm("anthropic", _anthropic)
