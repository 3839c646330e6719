"""recall answers the question, end to end over the real MCP client (stdio): the spec's curated
sets and the dev answer sets (../shared/eval/answers_dev.yaml, bench/data/answers_dev.yaml),
told to `remember` in sentences and asked with `recall`, scored by bench/quality/answers_bench.py's rules.
One server for the module; each scenario in its own project."""

from __future__ import annotations

from typing import Any

import pytest

from bench.quality.answers_bench import REPO_SET, SHARED_SET, load_scenarios, passes
from tests.mcp_helpers import KG

# Spec 003's own curated sets, told in sentences: every question must pass.
CURATED = ("deployment-failure", "personal-knowledge", "database-connections")
SCENARIOS = load_scenarios([SHARED_SET.resolve(), REPO_SET])
# The whole dev set's floor (117 / 118 measured with bench/quality/answers_bench.py; the target is 95%,
# the floor leaves room for the order in which vectors of just-told memories are indexed).
DEV_FLOOR = 0.9

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not SCENARIOS, reason="no answer set found")]


async def _asked(server: KG, scenario: dict[str, Any], tag: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    project = f"{tag}-{scenario['name']}"[:60]
    for memory in scenario["memories"]:
        args: dict[str, Any] = {"project_id": project, "content": memory["text"], "reference_time": memory["at"]}
        if memory.get("context"):
            args["context"] = memory["context"]
        await server.ok("remember", args)
    out = []
    for question in scenario["questions"]:
        args = {"project_id": project, "query": question["q"], "reference_time": question["at"]}
        out.append((question, await server.ok("recall", {**args, "include_reasoning": True})))
    return out


@pytest.mark.parametrize("name", CURATED)
async def test_the_spec_curated_sets_pass(memory_server: KG, name: str) -> None:
    scenario = next((s for s in SCENARIOS if s["name"] == name), None)
    if scenario is None:  # the curated sets are in ../shared/eval, beside the repository
        pytest.skip(f"no {name!r} scenario: {SHARED_SET} is missing")
    for question, out in await _asked(memory_server, scenario, "curated"):
        assert passes(question, out["answer"]), (question["q"], out["answer"])


async def test_why_walks_the_chain_to_its_root_and_lists_it(memory_server: KG) -> None:
    scenario = next(s for s in SCENARIOS if s["name"] == "incident-response")
    asked = {q["q"]: out for q, out in await _asked(memory_server, scenario, "chain")}
    out = asked["Why did the auth service crash?"]
    assert "connection pool was exhausted, because the new retry logic opened too many connections" in out["answer"]
    assert out["reasoning"]["causal_chain"], out["reasoning"]
    assert "which followed" not in out["answer"] and not out["answer"].endswith("Auth Service.")
    when = asked["When did Sam restart the database cluster?"]["answer"]
    assert "2025-11-19 at 14:30 UTC" in when and "Database cluster." not in when


async def test_the_dev_answer_sets_pass_at_their_floor(memory_server: KG) -> None:
    asked = [
        (question, out)
        for scenario in SCENARIOS
        if scenario["name"] not in CURATED
        for question, out in await _asked(memory_server, scenario, "dev")
    ]
    failed = [(q["q"], out["answer"]) for q, out in asked if not passes(q, out["answer"])]
    assert len(asked) >= 80
    assert 1 - len(failed) / len(asked) >= DEV_FLOOR, failed


async def test_answers_state_the_fact_not_the_entity_name(memory_server: KG) -> None:
    """The cases a new user saw answered with a bare name: told as "Maya"."""
    project = "brief-maya"
    told = [
        ("2025-03-01T09:00:00Z", "I joined the Search team on 1 March 2025."),
        ("2025-03-02T09:00:00Z", "Alice is the tech lead of the Platform team."),
        ("2025-06-02T09:00:00Z", "Since June 2025 Alice works on the Auth Service."),
    ]
    for at, text in told:
        await memory_server.ok(
            "remember", {"project_id": project, "content": text, "reference_time": at, "context": "Maya"}
        )

    async def answer(query: str) -> str:
        out = await memory_server.ok(
            "recall", {"project_id": project, "query": query, "reference_time": "2026-01-08T09:00:00Z"}
        )
        return str(out["answer"])

    assert (await answer("Who leads the Platform team?")).startswith("Alice leads the Platform team.")
    assert "Maya is a member of the Search team" in await answer("What team is Maya on?")
    working = await answer("What is Alice working on?")
    assert working.startswith("Alice works on the Auth Service")
    assert not working.rstrip(".").endswith(("Alice", "Auth Service", "Platform team"))
