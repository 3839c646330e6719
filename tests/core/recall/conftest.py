"""The LLM fixtures (fake OpenAI-compatible and Anthropic servers and LLMs pointed at them)."""

from tests.llm.conftest import anthropic_llm, anthropic_srv, openai_llm, openai_srv

__all__ = ["anthropic_llm", "anthropic_srv", "openai_llm", "openai_srv"]
