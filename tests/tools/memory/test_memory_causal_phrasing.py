"""Causal tools reached by a natural phrasing of a stored event (issue 25, item 3), through the
MCP client over stdio: the event found by words and meaning, with the match's score; causes
stored without the sentence's time words."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.memory.conftest import Memory

pytestmark = pytest.mark.anyio

REF = "2026-01-14T12:00:00Z"  # a Wednesday
FREEZER = "Yesterday at 21:15 the walk-in freezer failed because the compressor overheated."


async def remember(mem: Memory, content: str) -> dict[str, Any]:
    return await mem.ok("remember", content=content, reference_time=REF)


async def test_a_remembered_cause_is_found_by_the_event_as_said_without_its_time(mem: Memory) -> None:
    out = await remember(mem, FREEZER)
    chain = await mem.ok("get_causal_chain", event="the walk-in freezer failed")
    assert chain["start"]["text"] == "the walk-in freezer failed"
    # The cause attaches to the dated event the memory logged, not to an undated copy.
    assert chain["start"]["id"] == out["events_logged"][0]
    assert chain["start"]["occurred_at"] == "2026-01-13T21:15:00.000000Z"
    assert [n["text"] for n in chain["nodes"][1:]] == ["the compressor overheated"]
    await remember(mem, "Yesterday at 21:15 the walk-in freezer failed, so we threw out the custard.")
    why = await mem.ok("explain_why", event="we threw out the custard")
    assert [r["text"] for r in why["root_causes"]] == ["the compressor overheated"]
    assert "yesterday" not in why["answer"].lower() and "21:" not in why["answer"]
    # How long something lasted is the effect itself, not a time to strip from it.
    await remember(mem, "The schema change resulted in a six hour outage.")
    outage = await mem.ok("get_causal_chain", event="a six hour outage")
    assert [n["text"] for n in outage["nodes"]] == ["a six hour outage", "The schema change"]


async def test_a_dated_event_is_found_by_a_phrasing_of_it_with_the_score_shown(mem: Memory) -> None:
    logged = await mem.ok(
        "add_event",
        description="Right after Tuesday's deploy the auth service failed",
        occurred_at="2026-01-13T10:05:00Z",
    )
    event_id = logged["event"]["id"]
    # The cause attaches to the dated event the phrasing means, not to an undated copy of it.
    link = await mem.ok("add_causal_link", cause="the signing key was rotated", effect="the auth service failed")
    assert link["resolved"] == {"cause": "created", "effect": "search"}
    assert link["effect"]["id"] == event_id and link["effect"]["occurred_at"] == "2026-01-13T10:05:00.000000Z"
    assert 0.0 < link["scores"]["effect"] <= 1.0
    for tool in ("get_causal_chain", "explain_why"):
        found = await mem.ok(tool, event="the auth service failed")
        start = found["start"] if tool == "get_causal_chain" else found["event"]
        assert start["id"] == event_id
        assert found["match"]["how"] == "search" and 0.0 < found["match"]["score"] <= 1.0
    why = await mem.ok("explain_why", event="auth service failed after the deploy")
    assert [r["text"] for r in why["root_causes"]] == ["the signing key was rotated"]
    exact = await mem.ok("get_causal_chain", event=event_id)
    assert exact["match"] == {"how": "id", "score": 1.0} and len(exact["nodes"]) == 2
    # Nothing stored says it: still not found, however many events there are.
    await mem.fails("get_causal_chain", event="the payroll export was late", code=4004)
    await mem.fails("explain_why", event="the auth service failed on Friday 3", code=4004)
