"""recall and remember through the MCP client: memories stored then asked about (why, when,
what), the honest answer from an empty graph, the same memory twice, the classification."""

from __future__ import annotations

import pytest

from polyg.core.recall.synthesiser import NOTHING_STORED
from tests.tools.memory.conftest import Memory

pytestmark = pytest.mark.anyio
REF = "2026-01-09T12:00:00Z"
DEPLOY = [
    "We deployed v2.3.1 on Tuesday at 14:00.",
    "The auth service crashed because AUTH_SECRET was missing.",
    "AUTH_SECRET was missing because the v2.3.1 template dropped the variable.",
]


async def remember_all(mem: Memory, memories: list[str]) -> list[dict[str, object]]:
    return [await mem.ok("remember", content=m, reference_time=REF) for m in memories]


async def test_why_did_auth_crash_gives_the_chain_with_its_causes(mem: Memory) -> None:
    stored = await remember_all(mem, DEPLOY)
    assert all(s["duplicate"] is False and str(s["memory_id"]).startswith("evt") for s in stored)
    assert stored[1]["causal_links_added"] and stored[2]["causal_links_added"]

    out = await mem.ok("recall", query="Why did the auth service crash?", reference_time=REF)
    answer = out["answer"].lower()
    assert "auth service crashed because auth_secret was missing" in answer
    assert "template dropped the variable" in answer
    assert "causal" in out["sources"]
    chain = out["reasoning"]["causal_chain"]
    assert [(c["cause"], c["effect"]) for c in chain] == [
        ("AUTH_SECRET was missing", "The auth service crashed"),
        ("the v2.3.1 template dropped the variable", "AUTH_SECRET was missing"),
    ]
    cited = {e["id"] for e in out["evidence"]}
    assert {c["evidence_id"] for c in chain} <= cited
    assert out["confidence"] > 0
    assert out["failed_graphs"] == {} and out["timed_out_graphs"] == []
    assert out["classification"] is None


async def test_an_empty_graph_says_nothing_is_stored(mem: Memory) -> None:
    out = await mem.ok("recall", query="Why did the billing service fail?")
    assert out["answer"].startswith(NOTHING_STORED)
    assert (out["confidence"], out["evidence"], out["sources"]) == (0.0, [], [])


async def test_remembering_the_same_memory_twice_writes_nothing(mem: Memory) -> None:
    first = await mem.ok("remember", content=DEPLOY[1], reference_time=REF)
    before = await mem.stats()
    again = await mem.ok("remember", content=DEPLOY[1], reference_time=REF)
    assert again["duplicate"] is True and again["memory_id"] == first["memory_id"]
    assert all(not again[k] for k in ("entities_created", "events_logged", "facts_added", "causal_links_added"))
    assert await mem.stats() == before


async def test_a_memory_extraction_finds_nothing_in_is_still_found(mem: Memory) -> None:
    stored = await mem.ok("remember", content="the coffee machine on floor three makes odd noises", context="Dana")
    assert not stored["events_logged"] and not stored["causal_links_added"]
    out = await mem.ok("recall", query="What do we know about the coffee machine?")
    assert stored["memory_id"] in {e["id"] for e in out["evidence"]}
    assert "coffee machine" in out["answer"]


async def test_timeline_question_lists_the_events_in_order(mem: Memory) -> None:
    await remember_all(mem, ["We migrated the database on Monday.", DEPLOY[0]])
    out = await mem.ok("recall", query="What happened this week?", reference_time=REF, include_reasoning=True)
    assert "temporal" in out["classification"]["intents"]
    assert "temporal" in out["sources"]
    events = out["reasoning"]["temporal_context"]["events"]
    assert [e["at"] for e in events] == sorted(e["at"] for e in events)
    assert any("migrated the database" in e["description"] for e in events)
    assert any("deployed v2.3.1" in e["description"] for e in events)


async def test_include_reasoning_returns_the_classification(mem: Memory) -> None:
    await remember_all(mem, DEPLOY[1:])
    out = await mem.ok("recall", query="Why did the auth service crash?", include_reasoning=True)
    classification = out["classification"]
    assert classification["intents"][0] == "causal"
    assert classification["causal_direction"] == "upstream"
    assert 0 < classification["confidence"] <= 1


async def test_a_new_value_of_a_single_valued_fact_closes_the_old_one(mem: Memory) -> None:
    first = await mem.ok("remember", content="Alice works on Payments.", reference_time="2026-01-05T09:00:00Z")
    assert len(first["entities_created"]) == 2 and len(first["facts_added"]) == 1
    second = await mem.ok("remember", content="Alice works on Search.", reference_time=REF)
    assert first["entities_created"][0] in second["entities_merged"]
    assert second["facts_invalidated"] == first["facts_added"]
    out = await mem.ok("recall", query="What does Alice work on?", reference_time=REF)
    assert "Alice works on Search" in out["answer"]
    assert "Payments" not in out["answer"]


async def test_every_piece_of_evidence_cites_the_memory_it_came_from(mem: Memory) -> None:
    deployed, crashed, missing = await remember_all(mem, DEPLOY)
    why = await mem.ok("recall", query="Why did the auth service crash?", reference_time=REF)
    cites = {e["id"]: e["memories"] for e in why["evidence"]}
    chain = {(c["cause"], c["effect"]): cites[c["evidence_id"]] for c in why["reasoning"]["causal_chain"]}
    assert chain == {
        ("AUTH_SECRET was missing", "The auth service crashed"): [crashed["memory_id"]],
        ("the v2.3.1 template dropped the variable", "AUTH_SECRET was missing"): [missing["memory_id"]],
    }
    when = await mem.ok("recall", query="What happened this week?", reference_time=REF)
    logged = [e for e in when["evidence"] if e["id"] in deployed["events_logged"]]
    assert logged and all(e["memories"] == [deployed["memory_id"]] for e in logged)
    # A memory cites itself; whatever else is evidence cites a stored memory.
    stored = {s["memory_id"] for s in (deployed, crashed, missing)}
    for out in (why, when):
        for e in out["evidence"]:
            if e["kind"] == "memory":
                assert e["memories"] == [e["id"]]
            elif e["kind"] != "entity":
                assert e["memories"] and set(e["memories"]) <= stored, e


async def test_a_fact_or_link_stated_again_cites_both_memories_and_writes_nothing_new(mem: Memory) -> None:
    first = await mem.ok("remember", content="Alice works on Payments.", reference_time=REF)
    link = await mem.ok("remember", content="The queue filled up because the worker crashed.", reference_time=REF)
    before = await mem.stats()
    again = await mem.ok("remember", content="Alice works on Payments, as before.", reference_time=REF)
    assert again["duplicate"] is False and again["facts_added"] == [] and again["facts_invalidated"] == []
    link_again = await mem.ok("remember", content="The queue filled up because the worker crashed!", reference_time=REF)
    assert link_again["causal_links_added"] == [] and link_again["causal_links_updated"] == link["causal_links_added"]
    after = await mem.stats()
    # Two memories more, and nothing else: the fact and the link were not written twice.
    assert after["graphs"]["temporal"]["events"] == before["graphs"]["temporal"]["events"] + 2
    assert after["graphs"]["temporal"]["facts"] == before["graphs"]["temporal"]["facts"]
    assert after["graphs"]["causal"] == before["graphs"]["causal"]

    out = await mem.ok("recall", query="What does Alice work on?", reference_time=REF)
    fact = next(e for e in out["evidence"] if e["id"] == first["facts_added"][0])
    assert fact["memories"] == [first["memory_id"], again["memory_id"]]
    why = await mem.ok("recall", query="Why did the queue fill up?", reference_time=REF)
    cause = next(e for e in why["evidence"] if e["id"] == link["causal_links_added"][0])
    assert cause["memories"] == [link["memory_id"], link_again["memory_id"]]


async def remember_elsewhere(mem: Memory, *, first_month: int, months: int) -> None:
    """Six things Eli said on other days (from `first_month`, over `months` months), sharing no
    word with the questions asked."""
    for i, other in enumerate(
        [
            "I repainted the kitchen walls blue.",
            "My bike needs new tyres before summer.",
            "The quarterly report is due on Friday.",
            "We adopted a rescue dog called Biscuit.",
            "The new espresso machine at work is great.",
            "I started learning the cello again.",
        ]
    ):
        at = f"2024-0{first_month + i % months}-1{i}T10:00:00Z"
        await mem.ok("remember", content=other, context="Eli", reference_time=at)


async def test_the_reply_to_the_turn_that_matched_is_cited_with_it(mem: Memory) -> None:
    """The answer is often the next turn of the conversation, which shares no word with the
    question: recall cites the memories around a good hit in the same conversation."""
    lisbon = "2024-03-02T18:00:00Z"
    asked = await mem.ok(
        "remember", content="Did you bring anything back from Lisbon?", context="Dana", reference_time=lisbon
    )
    reply = await mem.ok(
        "remember", content="Yes, a tiny ceramic owl for my desk.", context="Eli", reference_time=lisbon
    )
    await remember_elsewhere(mem, first_month=4, months=5)
    out = await mem.ok("recall", query="What was brought back from Lisbon?", reference_time="2024-06-01T00:00:00Z")
    cited = [e["id"] for e in out["evidence"] if e["kind"] == "memory"]
    assert cited[:2] == [asked["memory_id"], reply["memory_id"]]


async def test_the_speakers_next_turn_after_the_reply_is_cited_with_the_turn_that_matched(mem: Memory) -> None:
    """A story goes on in the speaker's own next turn, after the other's reply, in words the
    question does not use: recall cites the nearest memories of the same context around a hit.
    The named speaker's two turns come first. (The reply between them, which names nobody the
    question asks about, is cited too, but among the speaker's memories of other days: which of
    them the last places keep depends on which vectors are stored by then.)"""
    porto = "2024-05-04T20:00:00Z"
    turns = [
        ("Eli", "I finally went to the lantern festival in Porto last weekend."),
        ("Dana", "Oh nice, how was it?"),
        ("Eli", "Magical. Thousands of lights drifting down the river until midnight."),
    ]
    ids = [
        (await mem.ok("remember", content=text, context=who, reference_time=porto))["memory_id"] for who, text in turns
    ]
    await remember_elsewhere(mem, first_month=6, months=3)
    out = await mem.ok("recall", query="What did Eli think of the lantern festival in Porto?")
    cited = [e["id"] for e in out["evidence"] if e["kind"] == "memory"]
    assert set(cited[:2]) == {ids[0], ids[2]}


async def created_names(mem: Memory, content: str) -> list[str]:
    stored = await mem.ok("remember", content=content, reference_time=REF)
    return [(await mem.ok("get_entity", entity_id=i))["entity"]["name"] for i in stored["entities_created"]]


async def test_remember_keeps_initials_in_a_name_and_makes_no_entity_of_a_topic_noun(mem: Memory) -> None:
    assert await created_names(mem, "J.K. Rowling wrote Harry Potter.") == ["J.K. Rowling", "Harry Potter"]
    assert await created_names(mem, "Art is my passion.") == []
