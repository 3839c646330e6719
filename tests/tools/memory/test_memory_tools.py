"""The `memory` toolset through the real MCP client: the tool list, the entity graph, bad input
(refused with 4002 and nothing written), statistics, clearing one view, and the export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from falkordb import FalkorDB

from polyg.core import limits
from tests.falkor_server import FalkorServer
from tests.mcp_helpers import KG, kg_session
from tests.tools.memory.conftest import Memory, seed
from tests.tools.memory.scenarios import deployment_failure, personal_knowledge

pytestmark = pytest.mark.anyio

TOOLS = {
    "add_entity",
    "link_entities",
    "get_entity",
    "add_event",
    "add_fact",
    "get_facts",
    "query_timeline",
    "list_invalidations",
    "undo_invalidation",
    "add_causal_link",
    "get_causal_chain",
    "explain_why",
    "add_concept",
    "search_semantic",
    "get_statistics",
    "clear_graph",
    "export_graph",
    "recall",
    "remember",
}


async def test_tool_list_and_annotations(memory_server: KG) -> None:
    listed = {t.name: t for t in (await memory_server.client.list_tools()).tools}
    assert set(listed) == TOOLS
    assert listed["clear_graph"].annotations is not None
    assert listed["clear_graph"].annotations.destructive_hint is True
    read_only = ("get_entity", "query_timeline", "get_causal_chain", "explain_why", "search_semantic", "export_graph")
    for name in (*read_only, "recall"):
        annotations = listed[name].annotations
        assert annotations is not None and annotations.read_only_hint is True, name
    assert "from" in listed["query_timeline"].input_schema["properties"]
    recall_out = listed["recall"].output_schema
    assert recall_out is not None and {"answer", "evidence", "classification"} <= set(recall_out["properties"])


# --- entity graph --------------------------------------------------------------------------


async def test_add_entity_then_get_by_name_any_case_and_by_id(mem: Memory) -> None:
    made = await mem.ok("add_entity", name="PostgreSQL", entity_type="Database", properties={"version": "15.2"})
    assert made["created"] is True
    entity = made["entity"]
    assert entity["properties"] == {"version": "15.2"}
    exact = await mem.ok("get_entity", name="PostgreSQL")
    folded = await mem.ok("get_entity", name="postgresql")
    by_id = await mem.ok("get_entity", entity_id=entity["id"])
    assert exact["entity"]["id"] == folded["entity"]["id"] == by_id["entity"]["id"] == entity["id"]
    assert exact["entity"]["type"] == "Database"
    await mem.fails("get_entity", name="MySQL", code=4004)


async def test_properties_merge_by_default_and_replace_on_request(mem: Memory) -> None:
    await mem.ok("add_entity", name="Alice", entity_type="Person", properties={"role": "Engineer", "team": "Core"})
    merged = await mem.ok("add_entity", name="Alice", entity_type="Person", properties={"role": "Tech Lead"})
    assert merged["created"] is False
    assert merged["entity"]["properties"] == {"role": "Tech Lead", "team": "Core"}
    replaced = await mem.ok(
        "add_entity", name="alice", entity_type="Person", properties={"level": 5}, replace_properties=True
    )
    assert replaced["entity"]["properties"] == {"level": 5}
    assert replaced["entity"]["id"] == merged["entity"]["id"]
    assert (await mem.stats())["graphs"]["entity"]["entities"] == 1


async def test_link_entities_by_name_unknown_is_an_error_unless_created(mem: Memory) -> None:
    await mem.ok("add_entity", name="Payments", entity_type="Team")
    await mem.ok("add_entity", name="payment-service", entity_type="Service")
    linked = await mem.ok("link_entities", source="payments", target="Payment-Service", relationship="owns")
    assert linked["created"] is True
    assert linked["relationship"]["source"]["name"] == "Payments"
    assert linked["relationship"]["target"]["name"] == "payment-service"
    again = await mem.ok("link_entities", source="Payments", target="payment-service", relationship="owns")
    assert again["created"] is False and again["relationship"]["id"] == linked["relationship"]["id"]

    before = await mem.stats()
    result = await mem.fails("link_entities", source="Payments", target="ledger", relationship="owns", code=4004)
    assert "ledger" in result.text
    assert await mem.stats() == before

    created = await mem.ok(
        "link_entities", source="Payments", target="ledger", relationship="depends on", create_missing=True
    )
    assert created["entities_created"] == ["ledger"]
    team = await mem.ok("get_entity", name="Payments")
    assert sorted((r["relationship"], r["entity"]["name"]) for r in team["relationships"]) == [
        ("depends on", "ledger"),
        ("owns", "payment-service"),
    ]


async def test_get_entity_pages_relationships(mem: Memory) -> None:
    await mem.ok("add_entity", name="hub", entity_type="Service")
    for i in range(7):
        await mem.ok("link_entities", source="hub", target=f"leaf-{i}", relationship="calls", create_missing=True)
    first = await mem.ok("get_entity", name="hub", limit=5)
    second = await mem.ok("get_entity", name="hub", limit=5, offset=5)
    assert first["has_more"] is True and second["has_more"] is False
    assert first["next_offset"] == 5 and second.get("next_offset") is None
    names = [r["entity"]["name"] for r in first["relationships"] + second["relationships"]]
    assert sorted(names) == [f"leaf-{i}" for i in range(7)]
    bare = await mem.ok("get_entity", name="hub", include_relationships=False)
    assert bare["relationships"] == []


async def test_get_entity_answers_within_the_response_budget_and_pages_on(mem: Memory) -> None:
    """Twelve relationships with the longest descriptions do not fit in one answer: the first
    page holds what fits, and paging on from next_offset gives the rest, in the same order as
    one relationship a page."""
    await mem.ok("add_entity", name="big-hub", entity_type="Service")
    for i in range(12):
        await mem.ok(
            "link_entities",
            source="big-hub",
            target=f"far-{i:02d}",
            relationship="feeds",
            description=f"{i:02d}" + "d" * (limits.MAX_TEXT - 2),
            create_missing=True,
        )
    one_by_one = [
        (await mem.ok("get_entity", name="big-hub", limit=1, offset=i))["relationships"][0]["id"] for i in range(12)
    ]
    pages: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        pages.append(await mem.ok("get_entity", name="big-hub", offset=offset))
        offset = pages[-1].get("next_offset")
    assert len(pages) > 1 and all(len(json.dumps(page)) <= limits.RESPONSE_BUDGET for page in pages)
    assert all(page["has_more"] for page in pages[:-1]) and not pages[-1]["has_more"]
    assert [r["id"] for page in pages for r in page["relationships"]] == one_by_one


# --- bad input: clear 4002 errors, nothing written ------------------------------------------


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("add_event", {"description": "x", "occurred_at": "the day after flurbsday"}, "could not read"),
    ("add_event", {"description": "x", "occurred_at": "2024-13-01"}, "2024-13-01"),
    ("add_event", {"description": "x", "occurred_at": "2024-03-01", "duration": "a while"}, "duration"),
    ("add_event", {"description": "x", "occurred_at": "2024-03-01T10:00Z", "ended_at": "2024-03-01T09:00Z"}, "before"),
    ("add_event", {"description": "x", "occurred_at": "2024-03-01", "timezone": "Mars/Olympus"}, "time zone"),
    # A name of many `/`s sent zoneinfo into a RecursionError (4000; found by tests/tools/test_fuzz.py).
    ("add_event", {"description": "x", "occurred_at": "2024-03-01", "timezone": "a" + "/b" * 600}, "time zone"),
    ("query_timeline", {"from": "2024-01-01", "timezone": "{{#a}}" * 100 + "{{/a}}" * 900}, "time zone"),
    ("add_fact", {"subject": "A", "predicate": "p", "object": "B", "valid_from": "someday"}, "could not read"),
    (
        "add_fact",
        {"subject": "A", "predicate": "p", "object": "B", "valid_from": "2024-02-01", "valid_to": "2024-01-01"},
        "valid_to",
    ),
    ("add_causal_link", {"cause": "a", "effect": "b", "confidence": 1.5}, "confidence"),
    ("add_causal_link", {"cause": "a", "effect": "b", "confidence": -0.1}, "confidence"),
    ("add_causal_link", {"cause": "same thing", "effect": "Same Thing"}, "same"),
    ("query_timeline", {"from": "2024-05-01", "to": "2024-04-01"}, "before"),
    ("query_timeline", {"from": "whenever"}, "could not read"),
    ("clear_graph", {"graph": "episodic", "confirm": True}, "graph"),
    ("clear_graph", {"graph": "all"}, "confirm"),
    ("get_causal_chain", {"event": "x", "depth": 11}, "depth"),
    ("add_entity", {"name": "x", "entity_type": "T", "properties": {"nested": {"a": 1}}}, "nested"),
]


@pytest.mark.parametrize(("tool", "args", "says"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)])
async def test_bad_input_is_4002_and_writes_nothing(mem: Memory, tool: str, args: dict[str, Any], says: str) -> None:
    await mem.ok("add_entity", name="A", entity_type="T")
    before = await mem.stats()
    result = await mem.fails(tool, code=4002, **args)
    assert says.lower() in result.text.lower(), result.text
    assert await mem.stats() == before


# --- management ----------------------------------------------------------------------------


async def test_statistics_count_each_graph(mem: Memory) -> None:
    await seed(mem, deployment_failure())
    await seed(mem, personal_knowledge())
    await mem.ok("add_concept", name="secrets management", represents=["AUTH_SECRET"])
    stats = (await mem.stats())["graphs"]
    # 5 + Alice, Auth Service, Payment Service (created by the facts)
    assert stats["entity"]["entities"] == 8
    assert stats["temporal"]["events"] == 10
    assert stats["temporal"]["t_before"] == 9  # one chain through the ten dated events
    assert stats["temporal"]["facts"] == 2
    assert stats["temporal"]["facts_current"] == 1
    assert stats["causal"]["causal_links"] == 4
    assert stats["causal"]["undated_events"] == 1  # "missing AUTH_SECRET", created by the first link
    assert stats["semantic"]["concepts"] == 1
    assert stats["semantic"]["represents"] == 1


async def test_orphan_detection(mem: Memory) -> None:
    await mem.ok("add_entity", name="lonely", entity_type="Service")
    await mem.ok("add_event", description="Nothing in particular happened", occurred_at="2026-01-01")
    await mem.ok("add_concept", name="loneliness")
    assert (await mem.stats())["orphans"] == {"events": 1, "concepts": 1, "entities": 1}
    await mem.ok("add_event", description="lonely restarted", occurred_at="2026-01-02")  # names the entity
    await mem.ok("add_concept", name="loneliness", represents=["lonely"])
    assert (await mem.stats())["orphans"] == {"events": 1, "concepts": 0, "entities": 0}


VIEW_KEYS = {
    "entity": ("entity", "entities"),
    "temporal": ("temporal", "events"),
    "causal": ("causal", "causal_links"),
    "semantic": ("semantic", "concepts"),
}


@pytest.mark.parametrize("view", ["entity", "temporal", "causal", "semantic"])
async def test_clear_graph_clears_exactly_that_view(mem: Memory, view: str) -> None:
    await seed(mem, deployment_failure())
    await seed(mem, personal_knowledge())
    await mem.ok("add_concept", name="deployments", description="shipping code")
    before = (await mem.stats())["graphs"]
    cleared = await mem.ok("clear_graph", graph=view, confirm=True)
    assert cleared["deleted"] > 0
    after = (await mem.stats())["graphs"]
    graph, key = VIEW_KEYS[view]
    assert after[graph][key] == 0
    for other, (other_graph, other_key) in VIEW_KEYS.items():
        if other == view:
            continue
        # Clearing entities or events takes the links that end at them: only the node counts
        # of the other views are untouched, whatever their links.
        if view in ("entity", "temporal") and other == "causal":
            continue
        assert after[other_graph][other_key] == before[other_graph][other_key], (view, other)
    if view == "temporal":
        assert after["temporal"]["facts"] == 0
        assert after["entity"]["entities"] == before["entity"]["entities"]


async def test_clear_all(mem: Memory) -> None:
    await seed(mem, deployment_failure())
    await mem.ok("clear_graph", graph="all", confirm=True)
    stats = (await mem.stats())["graphs"]
    assert stats["entity"]["entities"] == stats["temporal"]["events"] == stats["causal"]["causal_links"] == 0
    # the project still works after it
    await mem.ok("add_event", description="fresh start", occurred_at="2026-03-01")


def node_key(labels: list[str], props: dict[str, Any]) -> tuple[str, ...]:
    """What tells nodes apart: their own id, a relationship type's name, the schema's key."""
    return (*sorted(labels), str(props.get("id") or props.get("name") or props.get("key")))


def _without_vectors(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k not in ("embedding", "head_embedding")}


async def test_cypher_export_loads_into_an_empty_graph_and_gives_the_same_graph(mem: Memory) -> None:
    await seed(mem, deployment_failure())
    await seed(mem, personal_knowledge())
    await mem.ok("add_concept", name='it\'s a "quoted" concept', description="back\\slash and\nnewline")
    statements: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await mem.ok("export_graph", format="cypher", offset=offset, limit=7, include_embeddings=True)
        statements += page["statements"]
        offset = page["next_offset"]
    # The graph as polyg holds it, read through the JSON export: with vectors, pages of the
    # default size are cut to the response budget, and next_offset reads on.
    items: list[dict[str, Any]] = []
    offset = 0
    while offset is not None:
        exported = await mem.ok("export_graph", format="json", include_embeddings=True, offset=offset)
        items += exported["items"]
        offset = exported["next_offset"]
    nodes = {node_key(n["labels"], n["properties"]): n for n in items if n["kind"] == "node"}
    edges = sorted(
        (e["from"]["id"], e["type"], e["to"]["id"], sorted(e["properties"].items()))
        for e in items
        if e["kind"] == "edge"
    )
    with FalkorServer() as server:
        graph = FalkorDB(host=server.host, port=server.port).select_graph("loaded")
        for statement in statements:
            graph.query(statement)
        loaded_nodes = graph.ro_query("MATCH (n) RETURN labels(n), properties(n)").result_set
        loaded_edges = graph.ro_query("MATCH (a)-[r]->(b) RETURN a.id, type(r), b.id, properties(r)").result_set
    assert len(loaded_nodes) == len(nodes) > 10
    for labels, props in loaded_nodes:
        original = nodes[node_key(labels, props)]
        assert sorted(labels) == sorted(original["labels"])
        assert _without_vectors(dict(props)) == _without_vectors(original["properties"])
        for key in ("embedding", "head_embedding"):
            assert (key in props) == (key in original["properties"])
            if key in props:
                assert props[key] == pytest.approx(original["properties"][key], abs=1e-7)
    assert sorted((a, t, b, sorted(dict(p).items())) for a, t, b, p in loaded_edges) == edges


async def test_json_export_pages(mem: Memory) -> None:
    await seed(mem, personal_knowledge())
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = await mem.ok("export_graph", format="json", offset=offset, limit=2, include_embeddings=False)
        assert len(page["items"]) <= 2
        items += page["items"]
        offset = page["next_offset"]
    kinds = [item["kind"] for item in items]
    assert kinds.count("edge") == 2  # the two works_on facts
    assert all("embedding" not in item["properties"] for item in items)


async def test_get_entity_serves_kg_and_memory_forms_when_both_are_enabled(servers_root: Path) -> None:
    async with kg_session("stdio", servers_root / "memory-and-kg", "--toolsets", "kg,memory") as both:
        listed = {t.name: t for t in (await both.client.list_tools()).tools}
        assert {"create_entity", "add_fact"} <= set(listed)
        assert {"name", "entity_id"} <= set(listed["get_entity"].input_schema["properties"])
        made = (await both.ok("create_entity", {"project_id": "p", "name": "Alice", "type": "person"}))["entity"]
        await both.ok("add_fact", {"project_id": "p", "subject": "Alice", "predicate": "works_on", "object": "Auth"})
        # kg's form: kg's shape, exactly
        assert await both.ok("get_entity", {"project_id": "p", "entity_id": made["id"]}) == {"entity": made}
        # spec 003's form: by name, with the facts
        by_name = await both.ok("get_entity", {"project_id": "p", "name": "alice"})
        assert by_name["entity"]["id"] == made["id"]
        assert [r["entity"]["name"] for r in by_name["relationships"]] == ["Auth"]
        await both.fails("get_entity", {"project_id": "p"}, code=4002)
