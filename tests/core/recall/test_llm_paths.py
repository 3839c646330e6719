"""The classifier, synthesiser and remember's extraction with an LLM, against the fake OpenAI-compatible and Anthropic
servers: a valid answer is used (checked against the query and the evidence); invalid JSON, a
timeout, a refusal or an answer citing no stored evidence each falls back to the rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from polyg.core.memory.extract_memory import ExtractedFact, MemoryExtractor, extract
from polyg.core.recall.classifier import Classifier, rule_classify
from polyg.core.recall.evidence import Evidence
from polyg.core.recall.executor import Execution
from polyg.core.recall.synthesiser import NOTHING_STORED, Synthesiser, rule_synthesise
from polyg.llm import LLMInvalidOutput, LLMRefusal, LLMTimeout
from polyg.llm.anthropic import AnthropicLLM
from polyg.llm.openai_compat import OpenAICompatLLM
from tests.fakes.anthropic_server import FakeAnthropicServer, RawMessage
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.anyio

REF = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)
QUERY = "Why did the auth service fail after Tuesday's deploy?"
LLM_PLAN = {
    "intents": ["causal"],
    "entities": [{"mention": "auth service", "type": "Service"}, {"mention": "Kubernetes"}],
    "timeframe": {"type": "specific", "value": "2026-01-13"},
    "causal_direction": "upstream",
    "semantic_query": "auth service failure after deploy",
    "confidence": 0.97,
}
EVIDENCE = [
    Evidence(
        "c1",
        "missing AUTH_SECRET -> auth failure",
        "causal",
        "cause",
        0.9,
        cause="missing AUTH_SECRET",
        effect="auth failure",
    ),
    Evidence("e1", "Deploy v2.3.1", "temporal", "event", 0.8, at="2026-01-13T14:00:00.000000Z"),
]
LLM_ANSWER = {
    "answer": "The auth service failed because AUTH_SECRET was missing after deploy v2.3.1 [c1][e1].",
    "confidence": 0.99,
    "cited_ids": ["c1", "e1"],
    "follow_ups": ["Which other services read AUTH_SECRET?"],
}


def script(server: FakeOpenAIServer | FakeAnthropicServer, reply: Any) -> None:
    if isinstance(server, FakeOpenAIServer):
        server.chat_replies = [json.dumps(reply) if isinstance(reply, dict) else reply]
    else:
        server.replies = [reply]


EXPECTED_ERROR = {
    "invalid_json": LLMInvalidOutput,
    "uncited": LLMInvalidOutput,
    "refusal": LLMRefusal,
    "timeout": LLMTimeout,
}


def time_limit(failure: str) -> float:
    """Short only where the time limit is what is tested: the first rules call loads the date
    parser, which takes a moment on a busy machine."""
    return 0.3 if failure == "timeout" else 30.0


def fail(server: FakeOpenAIServer | FakeAnthropicServer, failure: str) -> None:
    """Make the next answer text that is no JSON, a refusal, or none at all (held)."""
    if failure == "invalid_json":
        script(server, "{not json at all, it broke")
    elif failure == "refusal" and isinstance(server, FakeOpenAIServer):
        # The whole assistant message (a dict given to script() would be sent as content).
        server.chat_replies = [{"role": "assistant", "content": None, "refusal": "I can't help with that."}]
    elif failure == "refusal":
        script(server, RawMessage([{"type": "text", "text": "I won't answer that."}], "refusal"))
    else:
        server.hold()


@pytest.fixture(params=["openai", "anthropic"])
def provider(
    request: pytest.FixtureRequest,
    openai_srv: FakeOpenAIServer,
    anthropic_srv: FakeAnthropicServer,
    openai_llm: OpenAICompatLLM,
    anthropic_llm: AnthropicLLM,
) -> tuple[Any, Any]:
    return (openai_srv, openai_llm) if request.param == "openai" else (anthropic_srv, anthropic_llm)


async def test_classifier_uses_a_valid_llm_answer_checked_against_the_query(provider: tuple[Any, Any]) -> None:
    server, llm = provider
    script(server, LLM_PLAN)
    answer = await Classifier(llm).classify(QUERY, reference=REF)
    assert answer.source == "llm"
    out = answer.value
    # The time the rules read wins; the model's 'temporal' omission is corrected by it, and a
    # name that is not in the query (Kubernetes) is dropped.
    assert set(out.intents) == {"causal", "temporal", "entity"}
    assert [e.mention for e in out.entities] == ["auth service"]
    assert out.timeframe is not None and out.timeframe.value == "2026-01-13T00:00:00.000000Z"
    assert out.semantic_query == "auth service failure after deploy"
    assert out.confidence == 0.95  # never certain: capped
    assert QUERY in server.requests[-1].raw_body.decode()


@pytest.mark.parametrize("failure", ["invalid_json", "refusal", "timeout"])
async def test_classifier_falls_back_to_the_rules(provider: tuple[Any, Any], failure: str) -> None:
    server, llm = provider
    fail(server, failure)
    try:
        answer = await Classifier(llm, timeout_s=time_limit(failure)).classify(QUERY, reference=REF)
    finally:
        server.release()
    assert answer.source == "rules"
    assert isinstance(answer.llm_error, EXPECTED_ERROR[failure])
    assert answer.llm_error is not None
    assert answer.value == rule_classify(QUERY, REF)


async def test_synthesiser_uses_a_cited_llm_answer(provider: tuple[Any, Any]) -> None:
    server, llm = provider
    script(server, LLM_ANSWER)
    plan = rule_classify(QUERY, REF)
    execution = Execution(results={"causal": EVIDENCE[:1], "temporal": EVIDENCE[1:]})
    answer = await Synthesiser(llm).synthesise(QUERY, plan, execution, REF)
    assert answer.source == "llm"
    rules = rule_synthesise(QUERY, plan, execution, REF)
    assert answer.value.answer == LLM_ANSWER["answer"]
    assert answer.value.reasoning == rules.reasoning  # the structured evidence stays the graphs'
    assert answer.value.sources == ["causal", "temporal"]
    assert answer.value.confidence <= rules.confidence + 0.2
    assert answer.value.follow_ups == ["Which other services read AUTH_SECRET?"]
    prompt = server.requests[-1].raw_body.decode()
    assert "missing AUTH_SECRET" in prompt and "c1" in prompt


@pytest.mark.parametrize("failure", ["invalid_json", "uncited", "refusal", "timeout"])
async def test_synthesiser_falls_back_to_the_rules(provider: tuple[Any, Any], failure: str) -> None:
    server, llm = provider
    if failure == "uncited":
        script(server, {**LLM_ANSWER, "cited_ids": ["c1", "made-up-id"]})
    else:
        fail(server, failure)
    plan = rule_classify(QUERY, REF)
    execution = Execution(results={"causal": EVIDENCE[:1], "temporal": EVIDENCE[1:]})
    try:
        answer = await Synthesiser(llm, timeout_s=time_limit(failure)).synthesise(QUERY, plan, execution, REF)
    finally:
        server.release()
    assert answer.source == "rules"
    assert isinstance(answer.llm_error, EXPECTED_ERROR[failure])
    assert answer.value == rule_synthesise(QUERY, plan, execution, REF)


async def test_synthesiser_asks_no_model_when_there_is_no_evidence(provider: tuple[Any, Any]) -> None:
    server, llm = provider
    plan = rule_classify(QUERY, REF)
    answer = await Synthesiser(llm).synthesise(QUERY, plan, Execution(results={"causal": []}), REF)
    assert answer.value.answer == NOTHING_STORED
    assert server.requests == []


MEMORY = "The deploy failed on Tuesday because AUTH_SECRET was missing. Alice works on the auth service."
LLM_EXTRACTION = {
    "entities": [
        {"name": "AUTH_SECRET", "type": "EnvVar"},
        {"name": "Kubernetes"},
        {"name": "Alice", "type": "Person"},
    ],
    "events": [
        {"description": "The deploy failed", "occurred_at": "2026-01-13T10:00:00Z"},
        {"description": "Something undated", "occurred_at": "whenever"},
    ],
    "facts": [
        {"subject": "Alice", "predicate": "Works on", "object": "auth service"},
        {"subject": "Bob", "predicate": "owns", "object": "billing"},
    ],
    "causal_links": [{"cause": "AUTH_SECRET was missing", "effect": "The deploy failed", "confidence": 0.9}],
}


async def test_extraction_uses_the_llm_checked_against_the_text(provider: tuple[Any, Any]) -> None:
    server, llm = provider
    script(server, LLM_EXTRACTION)
    answer = await MemoryExtractor(llm).extract(MEMORY, REF)
    assert answer.source == "llm"
    out = answer.value
    # Names and subjects the text does not hold, and times that read as no time, are dropped.
    assert [(e.name, e.type) for e in out.entities] == [("AUTH_SECRET", "EnvVar"), ("Alice", "Person")]
    assert [(e.description, e.occurred_at) for e in out.events] == [
        ("The deploy failed", datetime(2026, 1, 13, 10, tzinfo=UTC))
    ]
    assert out.facts == [ExtractedFact("Alice", "works_on", "auth service")]
    assert [(c.cause, c.effect, c.evidence) for c in out.causes] == [
        (
            "AUTH_SECRET was missing",
            "The deploy failed",
            "The deploy failed on Tuesday because AUTH_SECRET was missing.",
        )
    ]


@pytest.mark.parametrize("failure", ["invalid_json", "refusal", "timeout"])
async def test_extraction_falls_back_to_the_rules(provider: tuple[Any, Any], failure: str) -> None:
    server, llm = provider
    fail(server, failure)
    try:
        answer = await MemoryExtractor(llm, timeout_s=time_limit(failure)).extract(MEMORY, REF)
    finally:
        server.release()
    assert answer.source == "rules"
    assert isinstance(answer.llm_error, EXPECTED_ERROR[failure])
    assert answer.value == extract(MEMORY, REF)
