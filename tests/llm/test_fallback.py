"""with_fallback: the rules answer when no LLM is configured or the LLM fails; bugs propagate."""

from __future__ import annotations

import asyncio

import pytest

from polyg.llm import LLMInvalidOutput, LLMTimeout, LLMUnavailable, with_fallback
from tests.llm.conftest import GOOD_PLAN, RULES_PLAN, Plan, rules_plan

pytestmark = pytest.mark.anyio


async def llm_ok(query: str) -> Plan:
    return Plan.model_validate(GOOD_PLAN)


async def test_without_an_llm_the_rules_answer() -> None:
    classify = with_fallback(None, rules_plan)
    answer = await classify.run("anything")
    assert (answer.value, answer.source, answer.llm_error) == (RULES_PLAN, "rules", None)
    assert await classify("anything") is RULES_PLAN


async def test_the_llm_answers_when_it_can() -> None:
    answer = await with_fallback(llm_ok, rules_plan).run("why?")
    assert (answer.value, answer.source) == (Plan.model_validate(GOOD_PLAN), "llm")


async def test_async_rules_are_awaited_and_arguments_pass_through() -> None:
    seen: list[tuple[str, int]] = []

    async def failing(query: str, limit: int) -> str:
        raise LLMUnavailable("down")

    async def rules(query: str, limit: int) -> str:
        seen.append((query, limit))
        return query.upper()

    answer = await with_fallback(failing, rules).run("why", limit=3)
    assert answer.value == "WHY" and answer.source == "rules"
    assert isinstance(answer.llm_error, LLMUnavailable)
    assert seen == [("why", 3)]


async def test_llm_errors_fall_back_and_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def garbage(query: str) -> Plan:
        raise LLMInvalidOutput("openai answer is not JSON: lol")

    answer = await with_fallback(garbage, rules_plan, name="classifier").run("q")
    assert answer.value is RULES_PLAN and isinstance(answer.llm_error, LLMInvalidOutput)
    assert "classifier: LLM failed (LLMInvalidOutput: openai answer is not JSON: lol)" in caplog.text


async def test_the_fallback_time_limit_bounds_a_slow_llm() -> None:
    release = asyncio.Event()

    async def stuck(query: str) -> Plan:
        await release.wait()  # never set: only the time limit ends this call
        raise AssertionError("unreachable")

    answer = await with_fallback(stuck, rules_plan, timeout_s=0.05).run("q")
    assert answer.value is RULES_PLAN
    assert isinstance(answer.llm_error, LLMTimeout)


async def test_bugs_are_not_hidden_by_the_fallback() -> None:
    async def buggy(query: str) -> Plan:
        raise KeyError("prompt_template")

    with pytest.raises(KeyError):
        await with_fallback(buggy, rules_plan)("q")


async def test_rule_errors_propagate() -> None:
    def broken_rules(query: str) -> Plan:
        raise ValueError("bad query")

    async def failing(query: str) -> Plan:
        raise LLMUnavailable("down")

    with pytest.raises(ValueError, match="bad query"):
        await with_fallback(failing, broken_rules)("q")
