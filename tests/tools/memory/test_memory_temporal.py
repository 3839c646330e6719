"""The temporal graph through the MCP client: events (times, zones, durations, involved
entities, order), facts with validity windows (point-in-time reads, invalidation and its undo,
overlapping intervals), timelines (windows, entity filter, paging), and the spec's
personal-knowledge, project-timeline and knowledge-evolution scenarios."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.memory.conftest import Memory, seed
from tests.tools.memory.scenarios import knowledge_evolution, personal_knowledge, project_timeline

pytestmark = pytest.mark.anyio


def works_on(entity: dict[str, Any]) -> list[str]:
    return [r["entity"]["name"] for r in entity["relationships"] if r["relationship"] == "works_on"]


# --- the personal-knowledge scenario -------------------------------------------------------


async def test_alice_works_on_auth_service_now_and_payment_service_as_of_june_2024(mem: Memory) -> None:
    seeded = await seed(mem, personal_knowledge())
    # The data declares only Alice; the services are created by the facts, and said so.
    assert [f["entities_created"] for f in seeded["facts"]] == [["Auth Service"], ["Payment Service"]]
    now = await mem.ok("get_entity", name="Alice")
    assert works_on(now) == ["Auth Service"]
    assert now["entity"]["properties"] == {"role": "Tech Lead", "team": "Platform"}
    then = await mem.ok("get_entity", name="Alice", as_of="2024-06")
    assert works_on(then) == ["Payment Service"]
    facts = await mem.ok("get_facts", subject="alice", predicate="works_on")
    assert [(f["object"], f["current"]) for f in facts["facts"]] == [("Auth Service", True)]
    history = await mem.ok("get_facts", subject="Alice", include_history=True)
    assert sorted(f["object"] for f in history["facts"]) == ["Auth Service", "Payment Service"]
    everything = await mem.ok("get_entity", name="Alice", include_history=True)
    assert sorted(works_on(everything)) == ["Auth Service", "Payment Service"]


# --- events --------------------------------------------------------------------------------


async def test_event_times_zones_and_durations(mem: Memory) -> None:
    berlin = await mem.ok(
        "add_event", description="Standup in Berlin", occurred_at="2026-01-07 15:00", timezone="Europe/Berlin"
    )
    assert berlin["event"]["occurred_at"] == "2026-01-07T14:00:00.000000Z"
    offset = await mem.ok("add_event", description="Call", occurred_at="2026-07-01T09:00:00-04:00")
    assert offset["event"]["occurred_at"] == "2026-07-01T13:00:00.000000Z"
    # Naive phrases are read in the reference time's zone: 14:30 in Berlin (UTC+1 in January).
    relative = await mem.ok(
        "add_event",
        description="Deploy",
        occurred_at="yesterday 14:30",
        reference_time="2026-01-08T10:00:00+01:00",
        duration="PT45M",
    )
    assert relative["event"]["occurred_at"] == "2026-01-07T13:30:00.000000Z"
    assert relative["event"]["ended_at"] == "2026-01-07T14:15:00.000000Z"
    assert relative["event"]["duration_seconds"] == 2700
    summer = await mem.ok(
        "add_event",
        description="Summer deploy",
        occurred_at="2026-07-07 14:30",
        timezone="Europe/Berlin",
        duration="1 hour 30 minutes",
    )
    assert summer["event"]["occurred_at"] == "2026-07-07T12:30:00.000000Z"  # UTC+2 in summer
    assert summer["event"]["duration_seconds"] == 5400


async def test_event_entities_given_or_found_in_the_text(mem: Memory) -> None:
    await mem.ok("add_entity", name="PostgreSQL", entity_type="Database")
    await mem.ok("add_entity", name="pool", entity_type="Component")
    made = await mem.ok(
        "add_event",
        description="Database connection pool exhausted on postgresql",
        occurred_at="2026-01-05T09:15:00Z",
        entities=["connection-pool-exhaustion"],
    )
    event = made["event"]
    assert made["entities_created"] == ["connection-pool-exhaustion"]
    assert event["entities"] == ["PostgreSQL", "connection-pool-exhaustion", "pool"]
    alone = await mem.ok(
        "add_event", description="pool resized", occurred_at="2026-01-05T10:30:00Z", find_entities=False
    )
    assert alone["event"]["entities"] == []
    db = await mem.ok("get_entity", name="PostgreSQL")
    assert [e["description"] for e in db["events"]] == ["Database connection pool exhausted on postgresql"]


@pytest.mark.parametrize(
    "times",
    [
        ["2026-01-03", "2026-01-01", "2026-01-05", "2026-01-02", "2026-01-04", "2026-01-02"],
        # Neighbours within a day of each other, and far beyond it on either side.
        ["2026-01-03", "2024-01-01", "2026-06-05", "2025-03-02", "2026-01-03T12:00:00Z", "2030-01-01", "2026-01-03"],
    ],
)
async def test_events_are_chained_in_time_order_whatever_the_order_they_arrive_in(
    mem: Memory, times: list[str]
) -> None:
    for i, at in enumerate(times):
        await mem.ok("add_event", description=f"event {i}", occurred_at=at)
    export = await mem.ok("export_graph", format="json", include_embeddings=False)
    by_id = {
        i["properties"]["id"]: i["properties"]
        for i in export["items"]
        if i["kind"] == "node" and "id" in i["properties"]
    }
    before = {
        e["from"]["id"]: e["to"]["id"] for e in export["items"] if e["kind"] == "edge" and e["type"] == "T_BEFORE"
    }
    assert len(before) == len(times) - 1
    first = (set(before) - set(before.values())).pop()
    order = [first]
    while order[-1] in before:
        order.append(before[order[-1]])
    keys = [(by_id[i]["occurred_at"], i) for i in order]
    assert keys == sorted(keys) and len(order) == len(times)
    timeline = await mem.ok("query_timeline", **{"from": min(times)[:10], "to": max(times)[:10]})
    assert [i["event"]["id"] for i in timeline["items"]] == order


# --- facts ---------------------------------------------------------------------------------


async def test_fact_invalidation_is_recorded_listed_and_undone(mem: Memory) -> None:
    await mem.ok("add_fact", subject="Bob", predicate="lives_in", object="Berlin", valid_from="2020-01-01")
    moved = await mem.ok("add_fact", subject="Bob", predicate="lives in", object="Paris", valid_from="2023-06-01")
    assert moved["entities_created"] == ["Paris"]
    [closed] = moved["invalidated"]
    assert closed["object"] == "Berlin"
    assert closed["valid_to"] == "2023-06-01T00:00:00.000000Z"
    assert closed["invalidated_by"] == moved["fact"]["id"]
    # Nothing was deleted: both facts are there, each with its window.
    history = await mem.ok("get_facts", subject="Bob", include_history=True)
    assert sorted((f["object"], f["valid_to"]) for f in history["facts"]) == [
        ("Berlin", "2023-06-01T00:00:00.000000Z"),
        ("Paris", None),
    ]
    assert [f["object"] for f in (await mem.ok("get_facts", subject="Bob", as_of="2021-03-01"))["facts"]] == ["Berlin"]
    assert [f["object"] for f in (await mem.ok("get_facts", subject="Bob"))["facts"]] == ["Paris"]

    listed = await mem.ok("list_invalidations", entity="Bob")
    [entry] = listed["invalidations"]
    assert entry["fact"]["id"] == closed["id"]
    assert entry["invalidated_by"] == moved["fact"]["id"]
    assert entry["invalidated_at"] is not None and entry["valid_to_before"] is None
    assert (await mem.stats())["graphs"]["temporal"]["facts_invalidated"] == 1

    undone = await mem.ok("undo_invalidation", fact_id=closed["id"])
    assert undone["fact"]["valid_to"] is None and undone["fact"]["current"] is True
    assert (await mem.ok("list_invalidations"))["invalidations"] == []
    await mem.fails("undo_invalidation", fact_id=closed["id"], code=4002)  # nothing left to undo


async def test_undo_with_retract_newer_deletes_the_wrong_fact(mem: Memory) -> None:
    await mem.ok("add_fact", subject="svc", predicate="status", object="healthy", valid_from="2026-01-01")
    wrong = await mem.ok("add_fact", subject="svc", predicate="status", object="degraded", valid_from="2026-01-02")
    old_id = wrong["invalidated"][0]["id"]
    await mem.ok("undo_invalidation", fact_id=old_id, retract_newer=True)
    history = await mem.ok("get_facts", subject="svc", include_history=True)
    assert [(f["object"], f["valid_to"]) for f in history["facts"]] == [("healthy", None)]


async def test_overlapping_intervals(mem: Memory) -> None:
    # A fact stated late about an earlier time: the later fact already there closes it.
    await mem.ok("add_fact", subject="Carol", predicate="works_at", object="Acme", valid_from="2024-01-01")
    early = await mem.ok("add_fact", subject="Carol", predicate="works_at", object="Initech", valid_from="2022-01-01")
    assert early["fact"]["valid_to"] == "2024-01-01T00:00:00.000000Z"
    assert early["invalidated"] == []
    assert [f["object"] for f in (await mem.ok("get_facts", subject="Carol", as_of="2023-01-01"))["facts"]] == [
        "Initech"
    ]
    assert [f["object"] for f in (await mem.ok("get_facts", subject="Carol", as_of="2024-01-01"))["facts"]] == ["Acme"]
    # A multi-valued predicate: overlapping facts all hold.
    await mem.ok("add_fact", subject="Carol", predicate="knows", object="Python", valid_from="2020-01-01")
    both = await mem.ok("add_fact", subject="Carol", predicate="knows", object="Rust", valid_from="2021-01-01")
    assert both["invalidated"] == []
    known = await mem.ok("get_facts", subject="Carol", predicate="knows", as_of="2022-01-01")
    assert sorted(f["object"] for f in known["facts"]) == ["Python", "Rust"]
    # ... unless the caller says the predicate holds one value at a time.
    only = await mem.ok(
        "add_fact", subject="Carol", predicate="knows", object="Go", valid_from="2025-01-01", single_valued=True
    )
    assert sorted(f["object"] for f in only["invalidated"]) == ["Python", "Rust"]
    # Windows are half-open: at valid_to the old fact no longer holds, the new one does.
    at_switch = await mem.ok("get_facts", subject="Carol", predicate="knows", as_of="2025-01-01")
    assert [f["object"] for f in at_switch["facts"]] == ["Go"]


async def test_the_same_fact_twice_adds_nothing(mem: Memory) -> None:
    first = await mem.ok("add_fact", subject="Dan", predicate="role", object="SRE", valid_from="2025-01-01")
    again = await mem.ok("add_fact", subject="dan", predicate="role", object="SRE", valid_from="2025-03-01")
    assert again["duplicate"] is True and again["fact"]["id"] == first["fact"]["id"]
    assert again["entities_created"] == []
    assert (await mem.stats())["graphs"]["temporal"]["facts"] == 1


async def test_fact_without_valid_from_starts_at_the_reference_time(mem: Memory) -> None:
    made = await mem.ok(
        "add_fact", subject="Eve", predicate="title", object="Director", reference_time="2026-02-03T04:05:06Z"
    )
    assert made["fact"]["valid_from"] == "2026-02-03T04:05:06.000000Z"


# --- timelines -----------------------------------------------------------------------------


async def test_project_timeline_scenario_range_queries_entity_filter_and_paging(mem: Memory) -> None:
    scenario = project_timeline()
    await seed(mem, scenario)
    march = await mem.ok("query_timeline", during="in March 2026", limit=100)
    expected = [e["description"] for e in scenario["events"] if e["occurred_at"].startswith("2026-03")]
    assert [i["event"]["description"] for i in march["items"]] == expected
    assert len(expected) == 10
    # from/to: `to` includes the day it names
    window = await mem.ok("query_timeline", **{"from": "2026-01-05", "to": "2026-01-11"})
    assert [i["event"]["description"] for i in window["items"]] == [
        "Milestone 00: work on Apollo",
        "Milestone 01: work on Design Doc",
        "Milestone 02: work on Backend API",
    ]
    frontend = await mem.ok("query_timeline", entity="frontend", limit=100)
    assert [i["event"]["description"][:12] for i in frontend["items"]] == [
        f"Milestone {i:02d}" for i in range(3, 50, 8)
    ]
    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await mem.ok("query_timeline", limit=15, offset=offset)
        assert len(page["items"]) <= 15
        pages += [i["event"]["description"] for i in page["items"]]
        offset = page["next_offset"]
    assert pages == [e["description"] for e in scenario["events"]]
    await mem.fails("query_timeline", entity="Nobody", code=4004)


async def test_timeline_holds_facts_that_began_in_the_window(mem: Memory) -> None:
    await mem.ok("add_event", description="kickoff", occurred_at="2026-03-02T10:00:00Z")
    await mem.ok("add_fact", subject="Frank", predicate="works_on", object="Apollo", valid_from="2026-03-01")
    await mem.ok(
        "add_fact", subject="Frank", predicate="works_on", object="Zeus", valid_from="2025-01-01", valid_to="2025-02-01"
    )
    march = await mem.ok("query_timeline", during="March 2026")
    assert [(i["kind"], i["at"][:10]) for i in march["items"]] == [("fact", "2026-03-01"), ("event", "2026-03-02")]
    assert march["items"][0]["fact"]["object"] == "Apollo"
    events_only = await mem.ok("query_timeline", during="March 2026", include_facts=False)
    assert [i["kind"] for i in events_only["items"]] == ["event"]


async def test_knowledge_evolution_scenario(mem: Memory) -> None:
    scenario = knowledge_evolution()
    seeded = await seed(mem, scenario)
    statuses: list[str] = scenario["statuses"]
    # Each new status closed the one before it.
    assert [len(f["invalidated"]) for f in seeded["facts"]] == [0] + [1] * 9
    for month, status in enumerate(statuses, start=1):
        facts = await mem.ok("get_facts", subject="service-0", predicate="status", as_of=f"2025-{month:02d}-15")
        assert [f["object"] for f in facts["facts"]] == [status], month
    now = await mem.ok("get_facts", subject="service-0", predicate="status")
    assert [f["object"] for f in now["facts"]] == ["deprecated"]
    assert now["has_more"] is False
    pages = [await mem.ok("get_facts", subject="service-0", include_history=True, limit=4, offset=o) for o in (0, 4, 8)]
    assert [p["has_more"] for p in pages] == [True, True, False]
    assert [f["object"] for p in pages for f in p["facts"]] == statuses
    listed = await mem.ok("list_invalidations", entity="service-0", limit=5)
    assert len(listed["invalidations"]) == 5 and listed["has_more"] is True
    stats = (await mem.stats())["graphs"]
    assert stats["temporal"]["facts"] == 10
    assert stats["temporal"]["facts_invalidated"] == 9
    assert stats["temporal"]["facts_current"] == 1
    assert stats["temporal"]["events"] == 30
    assert stats["causal"]["causal_links"] == 10


@pytest.mark.parametrize("graph", ["temporal", "all"])
async def test_facts_written_after_a_clear_are_on_the_timeline(mem: Memory, graph: str) -> None:
    # The process remembers which types it marked as holding facts; a clear deletes the marks.
    await mem.ok("add_fact", subject="Gus", predicate="works_on", object="Apollo", valid_from="2026-03-01")
    await mem.ok("clear_graph", graph=graph, confirm=True)
    await mem.ok("add_fact", subject="Gus", predicate="works_on", object="Hermes", valid_from="2026-03-03")
    timeline = await mem.ok("query_timeline", **{"from": "2026-03-01", "to": "2026-03-05"})
    assert [i["fact"]["object"] for i in timeline["items"] if i.get("fact")] == ["Hermes"]
