"""The optional providers the configuration names, made from its settings (the ports themselves
know nothing of configuration)."""

from __future__ import annotations

from polyg.config import Settings
from polyg.llm import LLM, create_llm


def llm_from_settings(settings: Settings) -> LLM | None:
    """The LLM the settings configure. The key is `llm_api_key`, else the provider's own
    variable (OPENAI_API_KEY, ANTHROPIC_API_KEY); Ollama's URL may come from OLLAMA_BASE_URL."""
    provider = settings.llm_provider
    keys = {"openai": settings.openai_api_key, "anthropic": settings.anthropic_api_key}
    secret = settings.llm_api_key or keys.get(provider)
    base_url = settings.llm_base_url or (settings.ollama_base_url if provider == "ollama" else None)
    return create_llm(
        provider,
        model=settings.llm_model,
        base_url=base_url,
        api_key=secret.get_secret_value() if secret is not None else None,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
    )
