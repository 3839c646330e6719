"""Fixtures for the LLM port: the fake OpenAI-compatible and Anthropic servers, LLMs pointed
at them, and a small schema with a rule-based answer to fall back to."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from polyg.llm.anthropic import AnthropicLLM
from polyg.llm.openai_compat import OpenAICompatLLM
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer

OPENAI_KEY = "sk-test-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-test-0123456789"


class Plan(BaseModel):
    intents: list[Literal["semantic", "temporal", "causal", "entity"]] = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)


RULES_PLAN = Plan(intents=["semantic"], confidence=0.4)
GOOD_PLAN = {"intents": ["causal", "temporal"], "confidence": 0.9}


def rules_plan(query: str) -> Plan:
    """The rule-based implementation the LLM falls back to (trivial here on purpose)."""
    return RULES_PLAN


@pytest.fixture
def openai_srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=OPENAI_KEY) as server:
        yield server


@pytest.fixture
def anthropic_srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=ANTHROPIC_KEY) as server:
        yield server


@pytest.fixture
async def openai_llm(openai_srv: FakeOpenAIServer) -> AsyncIterator[OpenAICompatLLM]:
    llm = OpenAICompatLLM(
        base_url=openai_srv.base_url, model="fake-chat", api_key=OPENAI_KEY, timeout_s=5, retry_backoff_s=0
    )
    yield llm
    await llm.aclose()


@pytest.fixture
async def anthropic_llm(anthropic_srv: FakeAnthropicServer) -> AsyncIterator[AnthropicLLM]:
    llm = AnthropicLLM(
        base_url=anthropic_srv.base_url, model="fake-claude", api_key=ANTHROPIC_KEY, timeout_s=5, retry_backoff_s=0
    )
    yield llm
    await llm.aclose()
