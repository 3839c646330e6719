"""recall and remember through the MCP server started with an LLM configured (the fake
OpenAI-compatible server): the classification and the extraction are the model's when it
answers well, and the rules' when it answers garbage.

One fake model and one server for the module (a memory server start loads the embedding model
and the NLP pipeline: seconds of CPU); each test sets the fake's replies, works in a project of
its own and reads the requests made since it began."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio
REF = "2026-01-14T12:00:00Z"
MEMORY = "Kestrel is run by the platform group since the reorg."
QUERY = "Who looks after Kestrel these days?"
PLAN = {
    "intents": ["entity"],
    "entities": [{"mention": "Kestrel", "type": "Service"}],
    "timeframe": None,
    "causal_direction": None,
    "semantic_query": "team responsible for Kestrel",
    "confidence": 0.9,
}
EXTRACTION = {
    "entities": [{"name": "Kestrel", "type": "Service"}, {"name": "platform group", "type": "Team"}],
    "events": [],
    "facts": [{"subject": "Kestrel", "predicate": "run by", "object": "platform group"}],
    "causal_links": [],
}


def answers(good: bool) -> Any:
    """The fake model: the spec's JSON for each prompt (classifier, extraction), or garbage."""

    def reply(body: dict[str, Any]) -> str:
        if not good:
            return "{this is not json"
        prompt = body["messages"][-1]["content"]
        if "Extract structured memory" in prompt:
            return json.dumps(EXTRACTION)
        if "query intent classifier" in prompt:
            return json.dumps(PLAN)
        return "{no synthesis today"  # the synthesiser falls back to its rules

    return reply


def llm_env(fake: FakeOpenAIServer) -> dict[str, str]:
    return {
        "POLYG_LLM_PROVIDER": "openai",
        "POLYG_LLM_BASE_URL": fake.base_url,
        "POLYG_LLM_API_KEY": "sk-fake",
        "POLYG_LLM_MODEL": "fake-chat",
        "POLYG_LLM_MAX_RETRIES": "0",
    }


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
async def srv(fake: FakeOpenAIServer, servers_root: Path) -> AsyncIterator[KG]:
    async with kg_session("stdio", servers_root / "llm-server", "--toolsets", "memory", **llm_env(fake)) as kg:
        yield kg


async def test_the_configured_llm_classifies_and_extracts(fake: FakeOpenAIServer, srv: KG, project: str) -> None:
    fake.chat_replies = answers(good=True)
    since = len(fake.requests)
    p = {"project_id": project, "reference_time": REF}
    stored = await srv.ok("remember", {**p, "content": MEMORY})
    # "is run by" is no pattern of the rules: only the model's extraction holds this fact.
    assert len(stored["facts_added"]) == 1
    out = await srv.ok("recall", {**p, "query": QUERY, "include_reasoning": True})
    prompts = [r.raw_body.decode() for r in fake.requests[since:] if r.path.endswith("/chat/completions")]
    assert out["classification"]["semantic_query"] == PLAN["semantic_query"]
    assert [e["mention"] for e in out["classification"]["entities"]] == ["Kestrel"]
    assert any(QUERY in p for p in prompts) and any("Extract structured memory" in p for p in prompts)
    fact = next(e for e in out["evidence"] if e["id"] == stored["facts_added"][0])
    assert fact["memories"] == [stored["memory_id"]]


async def test_garbage_from_the_llm_falls_back_to_the_rules(fake: FakeOpenAIServer, srv: KG, project: str) -> None:
    fake.chat_replies = answers(good=False)
    since = len(fake.requests)
    p = {"project_id": project, "reference_time": REF}
    stored = await srv.ok("remember", {**p, "content": MEMORY})
    out = await srv.ok("recall", {**p, "query": QUERY, "include_reasoning": True})
    asked = [r for r in fake.requests[since:] if r.path.endswith("/chat/completions")]
    assert len(asked) >= 3  # extraction, classification and synthesis were each asked
    assert stored["facts_added"] == []  # the rules know no "is run by"
    assert stored["memory_id"] in {e["id"] for e in out["evidence"]}
    assert out["classification"]["semantic_query"] != PLAN["semantic_query"]
    assert "Kestrel" in out["answer"]
