"""The `kg` toolset (spec 002) through the real MCP client over stdio (that it answers the same
over Streamable HTTP is tests/tools/test_transport_matrix.py's).

Every test runs against the module's server (the `kg_server` fixture) with the real MiniLM
embedder and an embedded FalkorDB. Each test works in its own project. Results are checked
whole; every error is checked for its code, its spec wording and for having written nothing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp_helpers import KG

pytestmark = pytest.mark.anyio

KG_TOOLS = {
    "create_entity",
    "get_entity",
    "list_entities",
    "update_entity_description",
    "delete_entity",
    "create_relationship",
    "get_relationships",
    "get_related_entities",
    "delete_relationship",
    "add_observation",
    "delete_observation",
}
READ_ONLY = {"get_entity", "list_entities", "get_relationships", "get_related_entities"}
DESTRUCTIVE = {"delete_entity", "delete_relationship", "delete_observation"}
REQUIRED = {
    "create_entity": {"name", "type"},
    "get_entity": {"entity_id"},
    "list_entities": set(),
    "update_entity_description": {"entity_id", "description"},
    "delete_entity": {"entity_id"},
    "create_relationship": {"source_id", "target_id", "type"},
    "get_relationships": {"entity_id"},
    "get_related_entities": {"entity_id"},
    "delete_relationship": {"relationship_id"},
    "add_observation": {"entity_id", "observation"},
    "delete_observation": {"entity_id", "observation_id"},
}
ENTITY_ID = re.compile(r"^ent_[0-9a-f]{16}$")
REL_ID = re.compile(r"^rel_[0-9a-f]{16}$")
OBS_ID = re.compile(r"^obs_[0-9a-f]{16}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

UPDATED = "Entity description updated successfully."
ENTITY_DELETED = "Entity, its observations, and related relationships deleted."
REL_DELETED = "Relationship deleted."
OBS_DELETED = "Observation deleted."
ENDS_NOT_FOUND = "Error: Source or Target entity not found."


# --- helpers ---------------------------------------------------------------------------------


async def create(kg: KG, project: str | None, name: str, type_: str = "file", **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"name": name, "type": type_, **extra}
    if project is not None:
        args["project_id"] = project
    entity: dict[str, Any] = (await kg.ok("create_entity", args))["entity"]
    return entity


async def relate(kg: KG, project: str, source: str, target: str, type_: str, **extra: Any) -> dict[str, Any]:
    args = {"project_id": project, "source_id": source, "target_id": target, "type": type_, **extra}
    rel: dict[str, Any] = (await kg.ok("create_relationship", args))["relationship"]
    return rel


async def concurrently(*calls: Callable[[], Awaitable[Any]]) -> list[Any]:
    """Run the calls at once over the one session; results in call order."""
    results: list[Any] = [None] * len(calls)

    async def run(i: int, fn: Callable[[], Awaitable[Any]]) -> None:
        results[i] = await fn()

    async with anyio.create_task_group() as tg:
        for i, fn in enumerate(calls):
            tg.start_soon(run, i, fn)
    return results


async def snapshot(kg: KG, project: str) -> dict[str, Any]:
    """Everything visible in a project: entities (with observations) and their relationships."""
    listed = (await kg.ok("list_entities", {"project_id": project, "limit": 1000}))["entities"]
    state: dict[str, Any] = {"entities": listed}
    for summary in listed:
        ref = {"project_id": project, "entity_id": summary["id"]}
        state[summary["id"]] = (
            await kg.ok("get_entity", ref),
            await kg.ok("get_relationships", {**ref, "limit": 1000}),
        )
    return state


def expected_entity(
    got: dict[str, Any],
    name: str,
    type_: str,
    *,
    description: str = "",
    parent: str | None = None,
    observations: list[str] | None = None,
) -> dict[str, Any]:
    """The whole entity a create/get must return; generated ids and timestamps are checked by pattern."""
    assert ENTITY_ID.match(got["id"]), got
    assert TIMESTAMP.match(got["created_at"]) and TIMESTAMP.match(got["updated_at"]), got
    assert got["updated_at"] >= got["created_at"]
    got_obs = got.get("observations", [])
    texts = observations or []
    assert len(got_obs) == len(texts), got
    for obs in got_obs:
        assert OBS_ID.match(obs["id"]), obs
    return {
        "id": got["id"],
        "name": name,
        "type": type_,
        "description": description,
        "parentId": parent,
        "created_at": got["created_at"],
        "updated_at": got["updated_at"],
        "observations": [{"id": o["id"], "text": t} for o, t in zip(got_obs, texts, strict=True)],
    }


# --- tools/list and prompts ----------------------------------------------------------------


async def test_tools_list_is_exactly_the_kg_toolset(kg: KG) -> None:
    tools = {t.name: t for t in (await kg.client.list_tools()).tools}
    assert set(tools) == KG_TOOLS
    for name, tool in tools.items():
        assert tool.description, name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        assert set(schema.get("required", [])) == REQUIRED[name], name
        assert "project_id" in schema["properties"] and "project_id" not in schema.get("required", [])
        ann = tool.annotations
        assert ann is not None, name
        assert ann.read_only_hint is (name in READ_ONLY), name
        assert ann.destructive_hint is (name in DESTRUCTIVE), name
        assert ann.open_world_hint is False, name
        if name in READ_ONLY:
            assert ann.idempotent_hint is True, name
    # Sentence results declare {"message": str}; JSON results declare their top-level key.
    for name, key in {
        "create_entity": "entity",
        "get_entity": "entity",
        "list_entities": "entities",
        "create_relationship": "relationship",
        "get_relationships": "relationships",
        "get_related_entities": "related_entities",
        "add_observation": "observation",
        "update_entity_description": "message",
        "delete_entity": "message",
        "delete_relationship": "message",
        "delete_observation": "message",
    }.items():
        out = tools[name].output_schema
        assert out is not None and out["required"] == [key], (name, out)


async def test_input_schema_defaults(kg: KG) -> None:
    tools = {t.name: t.input_schema["properties"] for t in (await kg.client.list_tools()).tools}
    create = tools["create_entity"]
    assert create["description"]["default"] == ""
    assert create["parentId"]["default"] is None
    assert create["observations"]["type"] == "array"
    for name in ("list_entities", "get_relationships", "get_related_entities"):
        assert tools[name]["limit"]["default"] == 50, name
        assert tools[name]["limit"]["maximum"] == 1000, name
    for name in ("get_relationships", "get_related_entities"):
        assert tools[name]["direction"]["default"] == "both"
        assert set(tools[name]["direction"]["enum"]) == {"incoming", "outgoing", "both"}
    assert tools["create_relationship"]["description"]["default"] == ""


SPEC_PROMPTS = {
    "create_file_entity": "Create a 'file' entity named 'src/utils.ts' under project 'proj_123'.",
    "link_entities": "In project 'proj_123', create an 'imports' relationship from entity 'file_abc' "
    "to entity 'func_xyz'.",
    "add_details": "For entity 'func_xyz' in project 'proj_123', add the observation: "
    "'Handles date formatting using moment.js'.",
    "query_contained": "In project 'proj_123', what functions does entity 'file_abc' contain?",
    "list_by_type": "List all 'class' entities in project 'proj_123'.",
}


async def test_list_prompts_has_the_spec_usage_examples(kg: KG) -> None:
    prompts = {p.name: p for p in (await kg.client.list_prompts()).prompts}
    assert set(prompts) == set(SPEC_PROMPTS)
    for name, prompt in prompts.items():
        assert prompt.description, name
        args = {a.name: a for a in prompt.arguments or []}
        assert "project_id" in args, name
        assert all(a.required is False for a in args.values()), name
    assert {a.name for a in prompts["link_entities"].arguments or []} == {
        "project_id",
        "type",
        "source_id",
        "target_id",
    }


@pytest.mark.parametrize("name", sorted(SPEC_PROMPTS))
async def test_get_prompt_renders_the_spec_example(kg: KG, name: str) -> None:
    result = await kg.client.get_prompt(name, {"project_id": "proj_123"})
    assert len(result.messages) == 1
    message = result.messages[0]
    assert message.role == "user"
    assert message.content.type == "text"
    assert message.content.text == SPEC_PROMPTS[name]


async def test_get_prompt_uses_given_arguments(kg: KG) -> None:
    result = await kg.client.get_prompt("list_by_type", {"project_id": "web", "type": "function"})
    assert result.messages[0].content.text == "List all 'function' entities in project 'web'."
    result = await kg.client.get_prompt(
        "link_entities", {"project_id": "p1", "type": "calls", "source_id": "a", "target_id": "b"}
    )
    assert result.messages[0].content.text == (
        "In project 'p1', create an 'calls' relationship from entity 'a' to entity 'b'."
    )


async def test_get_unknown_prompt_is_an_error(kg: KG) -> None:
    with pytest.raises(MCPError, match="Unknown prompt"):
        await kg.client.get_prompt("no_such_prompt", {})


# --- entities ------------------------------------------------------------------------------


async def test_create_entity_defaults(kg: KG, project: str) -> None:
    result = await kg.ok("create_entity", {"project_id": project, "name": "src/utils.ts", "type": "file"})
    entity = result["entity"]
    assert result == {"entity": expected_entity(entity, "src/utils.ts", "file")}
    assert entity["created_at"] == entity["updated_at"]
    assert await kg.ok("get_entity", {"project_id": project, "entity_id": entity["id"]}) == result


async def test_create_entity_with_description_observations_and_parent(kg: KG, project: str) -> None:
    parent = await create(kg, project, "src", "directory")
    observations = ["Handles date formatting", "Uses moment.js", "Exports 3 functions"]
    result = await kg.ok(
        "create_entity",
        {
            "project_id": project,
            "name": "src/utils.ts",
            "type": "file",
            "description": "Date helpers",
            "observations": observations,
            "parentId": parent["id"],
        },
    )
    entity = result["entity"]
    assert result == {
        "entity": expected_entity(
            entity,
            "src/utils.ts",
            "file",
            description="Date helpers",
            parent=parent["id"],
            observations=observations,
        )
    }
    assert len({o["id"] for o in entity["observations"]}) == 3
    # get_entity returns the same entity, observations in creation order.
    assert await kg.ok("get_entity", {"project_id": project, "entity_id": entity["id"]}) == result
    # Unicode survives the transport unchanged.
    uni = await create(kg, project, "café ☕ 東京", "ort", description="naïve — «quoted»")
    got = await kg.ok("get_entity", {"project_id": project, "entity_id": uni["id"]})
    assert got["entity"]["name"] == "café ☕ 東京"
    assert got["entity"]["description"] == "naïve — «quoted»"


async def test_create_entity_with_unknown_parent_creates_nothing(kg: KG, project: str) -> None:
    await create(kg, project, "existing")
    before = await snapshot(kg, project)
    result = await kg.fails(
        "create_entity",
        {"project_id": project, "name": "orphan", "type": "file", "observations": ["x"], "parentId": "ent_nope"},
        code=4004,
    )
    assert result.text == "Error: Parent entity ent_nope not found."
    assert await snapshot(kg, project) == before


async def test_get_entity_unknown(kg: KG, project: str) -> None:
    result = await kg.fails("get_entity", {"project_id": project, "entity_id": "ent_missing"}, code=4004)
    assert result.text == "Error: Entity ent_missing not found."
    assert (result.code, result.message) == (4004, "Entity ent_missing not found.")


async def test_list_entities_shape_order_and_filters(kg: KG, project: str) -> None:
    a = await create(kg, project, "Beta.ts", "file")
    b = await create(kg, project, "alpha", "function")
    c = await create(kg, project, "gamma_ALPHA", "function")
    d = await create(kg, project, "delta", "class")

    def summary(e: dict[str, Any]) -> dict[str, Any]:
        return {"id": e["id"], "name": e["name"], "type": e["type"]}

    everything = await kg.ok("list_entities", {"project_id": project})
    # Ordered by name (case-sensitive), then id.
    assert everything == {"entities": [summary(e) for e in (a, b, d, c)]}
    functions = await kg.ok("list_entities", {"project_id": project, "type": "function"})
    assert functions == {"entities": [summary(b), summary(c)]}
    named = await kg.ok("list_entities", {"project_id": project, "name_contains": "ALPHA"})
    assert named == {"entities": [summary(b), summary(c)]}
    both = await kg.ok("list_entities", {"project_id": project, "type": "function", "name_contains": "gam"})
    assert both == {"entities": [summary(c)]}
    none = await kg.ok("list_entities", {"project_id": project, "type": "module"})
    assert none == {"entities": []}
    nulls = await kg.ok("list_entities", {"project_id": project, "type": None, "name_contains": None})
    assert nulls == everything
    paged = await kg.ok("list_entities", {"project_id": project, "limit": 2, "offset": 1})
    assert paged == {"entities": [summary(b), summary(d)]}


async def test_list_entities_limit(kg: KG, project: str) -> None:
    names = [f"e{i:03d}" for i in range(55)]
    await concurrently(*(lambda n=n: create(kg, project, n, "thing") for n in names))
    default = (await kg.ok("list_entities", {"project_id": project}))["entities"]
    assert [e["name"] for e in default] == names[:50]
    most = (await kg.ok("list_entities", {"project_id": project, "limit": 1000}))["entities"]
    assert [e["name"] for e in most] == names
    assert len({e["id"] for e in most}) == 55
    assert len((await kg.ok("list_entities", {"project_id": project, "limit": 1}))["entities"]) == 1
    for bad in (1001, 0, -1):
        result = await kg.fails("list_entities", {"project_id": project, "limit": bad}, code=4002)
        assert result.text.startswith("Error: Invalid arguments for list_entities: limit: "), result.text


async def test_update_entity_description(kg: KG, project: str) -> None:
    entity = await create(kg, project, "svc", "service", description="old", observations=["kept"])
    ref = {"project_id": project, "entity_id": entity["id"]}
    result = await kg.call("update_entity_description", {**ref, "description": "new description"})
    assert result.is_error is False
    assert result.text == UPDATED
    assert result.structured == {"message": UPDATED}
    got = (await kg.ok("get_entity", ref))["entity"]
    assert got == {**entity, "description": "new description", "updated_at": got["updated_at"]}
    assert got["updated_at"] > entity["updated_at"]
    # Clearing it is allowed.
    assert (await kg.call("update_entity_description", {**ref, "description": ""})).text == UPDATED
    assert (await kg.ok("get_entity", ref))["entity"]["description"] == ""


async def test_update_unknown_entity(kg: KG, project: str) -> None:
    await create(kg, project, "other")
    before = await snapshot(kg, project)
    result = await kg.fails(
        "update_entity_description",
        {"project_id": project, "entity_id": "ent_nope", "description": "x"},
        code=4004,
    )
    assert result.text == "Error: Entity ent_nope not found."
    assert await snapshot(kg, project) == before


async def test_delete_entity_cascades(kg: KG, project: str) -> None:
    doomed = await create(kg, project, "doomed", "module", observations=["one", "two"])
    target = await create(kg, project, "target", "function")
    source = await create(kg, project, "source", "file")
    child = await create(kg, project, "child", "function", parentId=doomed["id"])
    grandchild = await create(kg, project, "grandchild", "function", parentId=child["id"])
    out = await relate(kg, project, doomed["id"], target["id"], "contains")
    inc = await relate(kg, project, source["id"], doomed["id"], "imports")
    keep = await relate(kg, project, source["id"], target["id"], "calls")

    result = await kg.call("delete_entity", {"project_id": project, "entity_id": doomed["id"]})
    assert (result.is_error, result.text, result.structured) == (False, ENTITY_DELETED, {"message": ENTITY_DELETED})

    gone = await kg.fails("get_entity", {"project_id": project, "entity_id": doomed["id"]}, code=4004)
    assert gone.text == f"Error: Entity {doomed['id']} not found."
    # Its relationships are gone from the other ends; unrelated ones stay.
    assert await kg.ok("get_relationships", {"project_id": project, "entity_id": target["id"]}) == {
        "relationships": [keep]
    }
    assert await kg.ok("get_relationships", {"project_id": project, "entity_id": source["id"]}) == {
        "relationships": [keep]
    }
    for rel in (out, inc):
        await kg.fails("delete_relationship", {"project_id": project, "relationship_id": rel["id"]}, code=4004)
    # Its observations are gone with it.
    for obs in doomed["observations"]:
        await kg.fails(
            "delete_observation",
            {"project_id": project, "entity_id": doomed["id"], "observation_id": obs["id"]},
            code=4004,
        )
    # Children lose their parent; grandchildren keep theirs.
    got_child = (await kg.ok("get_entity", {"project_id": project, "entity_id": child["id"]}))["entity"]
    assert got_child["parentId"] is None
    assert {k: v for k, v in got_child.items() if k not in ("parentId", "updated_at")} == {
        k: v for k, v in child.items() if k not in ("parentId", "updated_at")
    }
    got_grand = (await kg.ok("get_entity", {"project_id": project, "entity_id": grandchild["id"]}))["entity"]
    assert got_grand["parentId"] == child["id"]
    listed = (await kg.ok("list_entities", {"project_id": project}))["entities"]
    assert sorted(e["name"] for e in listed) == ["child", "grandchild", "source", "target"]
    # Deleting it again is an error.
    again = await kg.fails("delete_entity", {"project_id": project, "entity_id": doomed["id"]}, code=4004)
    assert again.text == f"Error: Entity {doomed['id']} not found."


async def test_delete_unknown_entity(kg: KG, project: str) -> None:
    await create(kg, project, "stays", observations=["o"])
    before = await snapshot(kg, project)
    result = await kg.fails("delete_entity", {"project_id": project, "entity_id": "ent_nope"}, code=4004)
    assert result.text == "Error: Entity ent_nope not found."
    assert await snapshot(kg, project) == before


# --- relationships ---------------------------------------------------------------------------


async def test_create_relationship(kg: KG, project: str) -> None:
    a = await create(kg, project, "file_abc")
    b = await create(kg, project, "func_xyz", "function")
    result = await kg.ok(
        "create_relationship", {"project_id": project, "source_id": a["id"], "target_id": b["id"], "type": "imports"}
    )
    rel = result["relationship"]
    assert REL_ID.match(rel["id"])
    assert result == {
        "relationship": {
            "id": rel["id"],
            "source_id": a["id"],
            "target_id": b["id"],
            "type": "imports",
            "description": "",
        }
    }
    described = await relate(kg, project, b["id"], a["id"], "USED_BY", description="called from the file")
    assert described == {
        "id": described["id"],
        "source_id": b["id"],
        "target_id": a["id"],
        "type": "USED_BY",
        "description": "called from the file",
    }
    assert described["id"] != rel["id"]
    listed = await kg.ok("get_relationships", {"project_id": project, "entity_id": a["id"]})
    assert listed == {"relationships": [rel, described]}


async def test_create_relationship_with_unknown_ends_writes_nothing(kg: KG, project: str) -> None:
    a = await create(kg, project, "a")
    before = await snapshot(kg, project)
    for src, dst in ((a["id"], "ent_nope"), ("ent_nope", a["id"]), ("ent_x", "ent_y")):
        result = await kg.fails(
            "create_relationship",
            {"project_id": project, "source_id": src, "target_id": dst, "type": "uses"},
            code=4004,
        )
        assert result.text == ENDS_NOT_FOUND
        assert (result.code, result.message) == (4004, "Source or Target entity not found.")
    assert await snapshot(kg, project) == before


@pytest.mark.parametrize(
    "bad_type",
    ["has space", "DROP`x", "1abc", "HAS_OBSERVATION", "has_observation", "imports\n", "a-b", "", "x" * 65, "é"],
)
async def test_invalid_relationship_type(kg: KG, project: str, bad_type: str) -> None:
    a = await create(kg, project, "a")
    b = await create(kg, project, "b")
    before = await snapshot(kg, project)
    result = await kg.fails(
        "create_relationship",
        {"project_id": project, "source_id": a["id"], "target_id": b["id"], "type": bad_type},
        code=4002,
    )
    assert result.text.startswith(f"Error: Invalid relationship type {bad_type!r}: "), result.text
    if bad_type.upper() == "HAS_OBSERVATION":
        assert "reserved" in result.text
    assert await snapshot(kg, project) == before


async def test_self_relationship(kg: KG, project: str) -> None:
    a = await create(kg, project, "recursive", "function")
    rel = await relate(kg, project, a["id"], a["id"], "calls")
    ref = {"project_id": project, "entity_id": a["id"]}
    for direction in ("both", "outgoing", "incoming"):
        assert await kg.ok("get_relationships", {**ref, "direction": direction}) == {"relationships": [rel]}


@pytest.fixture
async def graph(kg: KG, project: str) -> dict[str, Any]:
    """hub -contains-> f1, hub -imports-> f2, f3 -contains-> hub, f3 -calls-> f1."""
    hub, f1, f2, f3 = await concurrently(
        lambda: create(kg, project, "hub", "file"),
        lambda: create(kg, project, "f1", "function"),
        lambda: create(kg, project, "f2", "module"),
        lambda: create(kg, project, "f3", "file"),
    )
    r1 = await relate(kg, project, hub["id"], f1["id"], "contains")
    r2 = await relate(kg, project, hub["id"], f2["id"], "imports", description="lazy")
    r3 = await relate(kg, project, f3["id"], hub["id"], "contains")
    r4 = await relate(kg, project, f3["id"], f1["id"], "calls")
    return {"hub": hub, "f1": f1, "f2": f2, "f3": f3, "r1": r1, "r2": r2, "r3": r3, "r4": r4}


async def test_get_relationships_filters(kg: KG, project: str, graph: dict[str, Any]) -> None:
    g = graph
    ref = {"project_id": project, "entity_id": g["hub"]["id"]}

    async def rels(**args: Any) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = (await kg.ok("get_relationships", {**ref, **args}))["relationships"]
        return result

    # Ordered by creation.
    assert await rels() == [g["r1"], g["r2"], g["r3"]]
    assert await rels(direction="both") == [g["r1"], g["r2"], g["r3"]]
    assert await rels(direction="outgoing") == [g["r1"], g["r2"]]
    assert await rels(direction="incoming") == [g["r3"]]
    assert await rels(relationship_type="contains") == [g["r1"], g["r3"]]
    assert await rels(relationship_type="contains", direction="outgoing") == [g["r1"]]
    assert await rels(relationship_type="contains", direction="incoming") == [g["r3"]]
    assert await rels(relationship_type="imports", direction="incoming") == []
    assert await rels(relationship_type="nothing") == []
    assert await rels(limit=1) == [g["r1"]]
    assert await rels(limit=2, direction="both") == [g["r1"], g["r2"]]
    # An entity without relationships has an empty list.
    lonely = await create(kg, project, "lonely")
    assert await kg.ok("get_relationships", {"project_id": project, "entity_id": lonely["id"]}) == {"relationships": []}


async def test_get_related_entities_filters(kg: KG, project: str, graph: dict[str, Any]) -> None:
    g = graph

    def item(entity: str, rel: str, direction: str) -> dict[str, Any]:
        e, r = g[entity], g[rel]
        return {
            "entity": {"id": e["id"], "name": e["name"], "type": e["type"]},
            "relationship": {"id": r["id"], "type": r["type"], "direction": direction},
        }

    async def related(entity: str, **args: Any) -> list[dict[str, Any]]:
        ref = {"project_id": project, "entity_id": g[entity]["id"]}
        result: list[dict[str, Any]] = (await kg.ok("get_related_entities", {**ref, **args}))["related_entities"]
        return result

    assert await related("hub") == [
        item("f1", "r1", "outgoing"),
        item("f2", "r2", "outgoing"),
        item("f3", "r3", "incoming"),
    ]
    assert await related("hub", direction="outgoing") == [item("f1", "r1", "outgoing"), item("f2", "r2", "outgoing")]
    assert await related("hub", direction="incoming") == [item("f3", "r3", "incoming")]
    # The spec's example query: what does the file contain?
    assert await related("hub", relationship_type="contains", direction="outgoing") == [item("f1", "r1", "outgoing")]
    assert await related("hub", relationship_type="contains") == [
        item("f1", "r1", "outgoing"),
        item("f3", "r3", "incoming"),
    ]
    assert await related("hub", limit=1) == [item("f1", "r1", "outgoing")]
    assert await related("f1") == [item("hub", "r1", "incoming"), item("f3", "r4", "incoming")]
    assert await related("f1", direction="outgoing") == []
    assert await related("f3", direction="outgoing") == [item("hub", "r3", "outgoing"), item("f1", "r4", "outgoing")]
    assert await related("f3", relationship_type="calls", direction="incoming") == []


async def test_relationship_queries_default_limit(kg: KG, project: str) -> None:
    hub = await create(kg, project, "hub")
    leaves = await concurrently(*(lambda i=i: create(kg, project, f"leaf{i:02d}") for i in range(55)))
    rels = [await relate(kg, project, hub["id"], leaf["id"], "has") for leaf in leaves]
    ref = {"project_id": project, "entity_id": hub["id"]}
    assert (await kg.ok("get_relationships", ref))["relationships"] == rels[:50]
    assert (await kg.ok("get_relationships", {**ref, "limit": 1000}))["relationships"] == rels
    related = (await kg.ok("get_related_entities", ref))["related_entities"]
    assert [r["relationship"]["id"] for r in related] == [r["id"] for r in rels[:50]]
    assert len((await kg.ok("get_related_entities", {**ref, "limit": 1000}))["related_entities"]) == 55
    for tool in ("get_relationships", "get_related_entities"):
        await kg.fails(tool, {**ref, "limit": 1001}, code=4002)
        await kg.fails(tool, {**ref, "limit": 0}, code=4002)


@pytest.mark.parametrize("tool", ["get_relationships", "get_related_entities"])
async def test_relationship_queries_unknown_entity(kg: KG, project: str, tool: str) -> None:
    result = await kg.fails(tool, {"project_id": project, "entity_id": "ent_ghost"}, code=4004)
    assert result.text == "Error: Entity ent_ghost not found."
    bad = await kg.fails(tool, {"project_id": project, "entity_id": "ent_ghost", "direction": "sideways"}, code=4002)
    assert bad.text.startswith(f"Error: Invalid arguments for {tool}: direction: "), bad.text


async def test_delete_relationship(kg: KG, project: str, graph: dict[str, Any]) -> None:
    g = graph
    result = await kg.call("delete_relationship", {"project_id": project, "relationship_id": g["r1"]["id"]})
    assert (result.is_error, result.text, result.structured) == (False, REL_DELETED, {"message": REL_DELETED})
    for end in ("hub", "f1"):
        rels = (await kg.ok("get_relationships", {"project_id": project, "entity_id": g[end]["id"]}))["relationships"]
        assert g["r1"] not in rels
    assert (await kg.ok("get_relationships", {"project_id": project, "entity_id": g["hub"]["id"]}))[
        "relationships"
    ] == [g["r2"], g["r3"]]
    # Both entities are still there.
    for end in ("hub", "f1"):
        await kg.ok("get_entity", {"project_id": project, "entity_id": g[end]["id"]})
    for rid in (g["r1"]["id"], "rel_nope"):
        again = await kg.fails("delete_relationship", {"project_id": project, "relationship_id": rid}, code=4004)
        assert again.text == f"Error: Relationship {rid} not found."
    # An observation's or entity's id is not a relationship id.
    obs = await kg.ok("add_observation", {"project_id": project, "entity_id": g["f2"]["id"], "observation": "o"})
    before = await snapshot(kg, project)
    for rid in (obs["observation"]["id"], g["f2"]["id"]):
        await kg.fails("delete_relationship", {"project_id": project, "relationship_id": rid}, code=4004)
    assert await snapshot(kg, project) == before


async def test_ids_of_other_kinds_are_not_entities(kg: KG, project: str, graph: dict[str, Any]) -> None:
    g = graph
    obs = (await kg.ok("add_observation", {"project_id": project, "entity_id": g["f1"]["id"], "observation": "o"}))[
        "observation"
    ]
    before = await snapshot(kg, project)
    for wrong in (obs["id"], g["r1"]["id"]):
        ref = {"project_id": project, "entity_id": wrong}
        for tool, extra in (
            ("get_entity", {}),
            ("delete_entity", {}),
            ("update_entity_description", {"description": "x"}),
            ("add_observation", {"observation": "x"}),
            ("get_relationships", {}),
            ("get_related_entities", {}),
        ):
            result = await kg.fails(tool, {**ref, **extra}, code=4004)
            assert result.text == f"Error: Entity {wrong} not found.", tool
        await kg.fails(
            "create_relationship",
            {"project_id": project, "source_id": g["f1"]["id"], "target_id": wrong, "type": "t"},
            code=4004,
        )
    assert await snapshot(kg, project) == before


# --- observations ----------------------------------------------------------------------------


async def test_add_observation(kg: KG, project: str) -> None:
    entity = await create(kg, project, "func_xyz", "function", observations=["first"])
    ref = {"project_id": project, "entity_id": entity["id"]}
    result = await kg.ok("add_observation", {**ref, "observation": "Handles date formatting using moment.js"})
    obs = result["observation"]
    assert OBS_ID.match(obs["id"])
    assert result == {"observation": {"id": obs["id"], "text": "Handles date formatting using moment.js"}}
    got = (await kg.ok("get_entity", ref))["entity"]
    assert got["observations"] == [*entity["observations"], obs]
    # One rule with memory-compat: an entity holds a text once; adding it again returns it.
    again = (await kg.ok("add_observation", {**ref, "observation": obs["text"]}))["observation"]
    assert again == obs
    assert [o["id"] for o in (await kg.ok("get_entity", ref))["entity"]["observations"]] == [
        entity["observations"][0]["id"],
        obs["id"],
    ]


async def test_add_observation_errors_write_nothing(kg: KG, project: str) -> None:
    entity = await create(kg, project, "e", observations=["only"])
    ref = {"project_id": project, "entity_id": entity["id"]}
    before = await snapshot(kg, project)
    unknown = await kg.fails(
        "add_observation", {"project_id": project, "entity_id": "ent_nope", "observation": "x"}, code=4004
    )
    assert unknown.text == "Error: Entity ent_nope not found."
    for blank in ("", "   ", "\n\t"):
        result = await kg.fails("add_observation", {**ref, "observation": blank}, code=4002)
        assert result.text == "Error: observation must not be empty."
    huge = await kg.fails("add_observation", {**ref, "observation": "x" * 16_385}, code=4013)
    assert huge.text == "Error: observation is 16385 characters long; the limit is 16384."
    assert await snapshot(kg, project) == before


async def test_delete_observation(kg: KG, project: str) -> None:
    entity = await create(kg, project, "e", observations=["keep", "drop", "keep too"])
    ref = {"project_id": project, "entity_id": entity["id"]}
    keep, drop, keep_too = entity["observations"]
    result = await kg.call("delete_observation", {**ref, "observation_id": drop["id"]})
    assert (result.is_error, result.text, result.structured) == (False, OBS_DELETED, {"message": OBS_DELETED})
    assert (await kg.ok("get_entity", ref))["entity"]["observations"] == [keep, keep_too]
    again = await kg.fails("delete_observation", {**ref, "observation_id": drop["id"]}, code=4004)
    assert again.text == f"Error: Observation {drop['id']} not found or does not belong to entity {entity['id']}."
    unknown = await kg.fails(
        "delete_observation",
        {"project_id": project, "entity_id": "ent_nope", "observation_id": keep["id"]},
        code=4004,
    )
    assert unknown.text == f"Error: Observation {keep['id']} not found or does not belong to entity ent_nope."
    assert (await kg.ok("get_entity", ref))["entity"]["observations"] == [keep, keep_too]


async def test_delete_observation_of_another_entity(kg: KG, project: str) -> None:
    owner = await create(kg, project, "owner", observations=["mine"])
    other = await create(kg, project, "other", observations=["theirs"])
    before = await snapshot(kg, project)
    obs_id = owner["observations"][0]["id"]
    result = await kg.fails(
        "delete_observation",
        {"project_id": project, "entity_id": other["id"], "observation_id": obs_id},
        code=4004,
    )
    assert result.text == f"Error: Observation {obs_id} not found or does not belong to entity {other['id']}."
    assert result.message == (f"Observation {obs_id} not found or does not belong to entity {other['id']}.")
    assert await snapshot(kg, project) == before


# --- argument validation -----------------------------------------------------------------------

BIG = 16_385
# (tool, arguments, code, expected text prefix). "$A" is replaced by an existing entity's id,
# "$O" by one of its observations' ids, "$R" by one of its relationships' ids.
INVALID_CALLS: list[tuple[str, dict[str, Any], int, str]] = [
    ("create_entity", {"name": 3, "type": "file"}, 4002, "Error: Invalid arguments for create_entity: name: "),
    ("create_entity", {"type": "file"}, 4002, "Error: Invalid arguments for create_entity: name: Field required"),
    ("create_entity", {"name": "n"}, 4002, "Error: Invalid arguments for create_entity: type: Field required"),
    ("create_entity", {}, 4002, "Error: Invalid arguments for create_entity: name: Field required; type: Field"),
    (
        "create_entity",
        {"name": "n", "type": "t", "color": "red"},
        4002,
        "Error: Invalid arguments for create_entity: color: Extra inputs are not permitted",
    ),
    ("create_entity", {"name": "", "type": "t"}, 4002, "Error: name must not be empty."),
    ("create_entity", {"name": "  \t", "type": "t"}, 4002, "Error: name must not be empty."),
    ("create_entity", {"name": "n", "type": " "}, 4002, "Error: type must not be empty."),
    ("create_entity", {"name": "n", "type": "t", "description": None}, 4002, "Error: Invalid arguments"),
    ("create_entity", {"name": "n", "type": "t", "observations": "x"}, 4002, "Error: Invalid arguments"),
    ("create_entity", {"name": "n", "type": "t", "observations": [1]}, 4002, "Error: Invalid arguments"),
    (
        "create_entity",
        {"name": "n", "type": "t", "observations": ["ok", " "]},
        4002,
        "Error: observations[1] must not be empty.",
    ),
    ("create_entity", {"name": "n", "type": "t", "parentId": 5}, 4002, "Error: Invalid arguments"),
    ("create_entity", {"name": "n", "type": "t", "parentId": ""}, 4002, "Error: parentId must not be empty."),
    (
        "create_entity",
        {"name": "n", "type": "t", "description": "d" * BIG},
        4013,
        "Error: description is 16385 characters long; the limit is 16384.",
    ),
    (
        "create_entity",
        {"name": "n", "type": "t", "observations": ["o"] * 1001},
        4013,
        "Error: observations holds 1001 items; the limit is 1000.",
    ),
    (
        "create_entity",
        {"name": "n", "type": "t", "observations": ["o", "x" * BIG]},
        4013,
        "Error: observations[1] is 16385 characters long; the limit is 16384.",
    ),
    ("create_entity", {"name": "n" * 513, "type": "t"}, 4013, "Error: name is 513 characters long"),
    ("create_entity", {"name": "n", "type": "t" * 129}, 4013, "Error: type is 129 characters long"),
    ("get_entity", {}, 4002, "Error: Invalid arguments for get_entity: entity_id: Field required"),
    ("get_entity", {"entity_id": 3}, 4002, "Error: Invalid arguments for get_entity: entity_id: "),
    ("get_entity", {"entity_id": "$A", "verbose": True}, 4002, "Error: Invalid arguments for get_entity: verbose"),
    ("list_entities", {"limit": "10"}, 4002, "Error: Invalid arguments for list_entities: limit: "),
    ("list_entities", {"limit": 1.5}, 4002, "Error: Invalid arguments for list_entities: limit: "),
    ("list_entities", {"offset": -1}, 4002, "Error: Invalid arguments for list_entities: offset: "),
    ("list_entities", {"type": 3}, 4002, "Error: Invalid arguments for list_entities: type: "),
    ("update_entity_description", {"entity_id": "$A"}, 4002, "Error: Invalid arguments for update_entity_description"),
    ("update_entity_description", {"entity_id": "$A", "description": None}, 4002, "Error: Invalid arguments"),
    (
        "update_entity_description",
        {"entity_id": "$A", "description": "d" * BIG},
        4013,
        "Error: description is 16385 characters long; the limit is 16384.",
    ),
    ("delete_entity", {}, 4002, "Error: Invalid arguments for delete_entity: entity_id: Field required"),
    ("delete_entity", {"entity_id": None}, 4002, "Error: Invalid arguments for delete_entity"),
    ("delete_entity", {"entity_id": "$A", "force": True}, 4002, "Error: Invalid arguments for delete_entity"),
    ("create_relationship", {"source_id": "$A", "target_id": "$A"}, 4002, "Error: Invalid arguments"),
    ("create_relationship", {"source_id": "$A", "target_id": "$A", "type": 3}, 4002, "Error: Invalid arguments"),
    (
        "create_relationship",
        {"source_id": "$A", "target_id": "$A", "type": "calls", "description": "d" * BIG},
        4013,
        "Error: description is 16385 characters long; the limit is 16384.",
    ),
    ("get_relationships", {"entity_id": "$A", "direction": "up"}, 4002, "Error: Invalid arguments"),
    ("get_relationships", {"entity_id": "$A", "limit": 1001}, 4002, "Error: Invalid arguments"),
    ("get_related_entities", {"entity_id": "$A", "relationship_type": 1}, 4002, "Error: Invalid arguments"),
    ("delete_relationship", {}, 4002, "Error: Invalid arguments for delete_relationship: relationship_id: "),
    ("delete_relationship", {"relationship_id": ["$R"]}, 4002, "Error: Invalid arguments for delete_relationship"),
    ("add_observation", {"entity_id": "$A"}, 4002, "Error: Invalid arguments for add_observation: observation: "),
    ("add_observation", {"entity_id": "$A", "observation": ["x"]}, 4002, "Error: Invalid arguments"),
    ("delete_observation", {"entity_id": "$A"}, 4002, "Error: Invalid arguments for delete_observation"),
    ("delete_observation", {"observation_id": "$O"}, 4002, "Error: Invalid arguments for delete_observation"),
    ("get_entity", {"entity_id": "$A", "project_id": 7}, 4002, "Error: Invalid arguments for get_entity: project_id"),
]


def _substitute(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str) and value in ids:
        return ids[value]
    if isinstance(value, list):
        return [_substitute(v, ids) for v in value]
    return value


@pytest.fixture(scope="module")
async def populated(kg_server: KG) -> dict[str, Any]:
    """A project with two entities, an observation and a relationship, made once per server.

    Returns the project, the ids the INVALID_CALLS placeholders stand for, and a snapshot that
    every refused call must leave unchanged.
    """
    kg = kg_server
    project = f"t_populated_{uuid.uuid4().hex[:8]}"
    a = await create(kg, project, "existing", observations=["kept"])
    b = await create(kg, project, "peer")
    rel = await relate(kg, project, a["id"], b["id"], "uses")
    return {
        "project": project,
        "ids": {"$A": a["id"], "$O": a["observations"][0]["id"], "$R": rel["id"]},
        "snapshot": await snapshot(kg, project),
    }


@pytest.mark.parametrize(
    ("tool", "args", "code", "prefix"),
    INVALID_CALLS,
    ids=[f"{i:02d}-{c[0]}" for i, c in enumerate(INVALID_CALLS)],
)
async def test_invalid_arguments_are_refused_and_write_nothing(
    kg: KG, populated: dict[str, Any], tool: str, args: dict[str, Any], code: int, prefix: str
) -> None:
    project = populated["project"]
    full = {k: _substitute(v, populated["ids"]) for k, v in args.items()}
    full.setdefault("project_id", project)
    result = await kg.fails(tool, full, code=code)
    assert result.text.startswith(prefix), result.text
    assert await snapshot(kg, project) == populated["snapshot"]


async def test_wrong_type_error_names_every_problem(kg: KG, project: str) -> None:
    result = await kg.fails("create_entity", {"project_id": project, "name": 3}, code=4002)
    assert result.text == (
        "Error: Invalid arguments for create_entity: name: Input should be a valid string; type: Field required"
    )
    assert (result.code, result.message) == (
        4002,
        "Invalid arguments for create_entity: name: Input should be a valid string; type: Field required",
    )
    assert (await kg.ok("list_entities", {"project_id": project}))["entities"] == []


async def test_largest_accepted_payloads(kg: KG, project: str) -> None:
    """Exactly at the limits is accepted (16384-character texts, 1000 observations)."""
    text = "d" * 16_384
    entity = await create(kg, project, "n" * 512, "t" * 128, description=text, observations=[text])
    assert entity["description"] == text and entity["observations"][0]["text"] == text
    many = await create(kg, project, "many", observations=[f"o{i}" for i in range(1000)])
    ref = {"project_id": project, "entity_id": many["id"]}
    got = (await kg.ok("get_entity", {**ref, "observation_limit": 1000}))["entity"]
    assert [o["text"] for o in got["observations"]] == [f"o{i}" for i in range(1000)]
    first = (await kg.ok("get_entity", ref))["entity"]  # 100 by default, and where to read on
    assert [o["text"] for o in first["observations"]] == [f"o{i}" for i in range(100)]
    assert first["observations_total"] == 1000 and first["next_observation_offset"] == 100


# --- projects --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../x", "", "a" * 65, "with space", "-x", "a/b", "x:y", "ü"])
async def test_invalid_project_id(kg: KG, bad: str) -> None:
    marker = f"marker-{abs(hash(bad))}"
    for tool, args in (
        ("create_entity", {"name": marker, "type": "t"}),
        ("list_entities", {}),
        ("get_entity", {"entity_id": "ent_x"}),
        ("create_relationship", {"source_id": "a", "target_id": "b", "type": "t"}),
        ("delete_entity", {"entity_id": "ent_x"}),
    ):
        result = await kg.fails(tool, {**args, "project_id": bad}, code=4002)
        assert result.text == (
            f"Error: Invalid project_id {bad!r}: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit."
        )
    # Nothing landed in the default project instead.
    listed = await kg.ok("list_entities", {"name_contains": marker})
    assert listed == {"entities": []}


async def test_longest_project_id_is_accepted(kg: KG) -> None:
    project = "p" + "a" * 63
    entity = await create(kg, project, "edge")
    assert await kg.ok("list_entities", {"project_id": project}) == {
        "entities": [{"id": entity["id"], "name": "edge", "type": "file"}]
    }


async def test_projects_are_isolated(kg: KG, project: str) -> None:
    other = project + "_b"
    a = await create(kg, project, "shared-name", "file")
    b = await create(kg, other, "shared-name", "file")
    assert await kg.ok("list_entities", {"project_id": project}) == {
        "entities": [{"id": a["id"], "name": "shared-name", "type": "file"}]
    }
    assert await kg.ok("list_entities", {"project_id": other}) == {
        "entities": [{"id": b["id"], "name": "shared-name", "type": "file"}]
    }
    await kg.fails("get_entity", {"project_id": other, "entity_id": a["id"]}, code=4004)
    await kg.fails("get_entity", {"project_id": project, "entity_id": b["id"]}, code=4004)


async def test_ids_of_another_project_are_not_found(kg: KG, project: str) -> None:
    other = project + "_b"
    await create(kg, other, "resident of b")
    a1 = await create(kg, project, "a1", observations=["obs of a1"])
    a2 = await create(kg, project, "a2")
    rel = await relate(kg, project, a1["id"], a2["id"], "links")
    obs_id = a1["observations"][0]["id"]
    before_a, before_b = await snapshot(kg, project), await snapshot(kg, other)

    def in_b(**args: Any) -> dict[str, Any]:
        return {"project_id": other, **args}

    not_found = f"Error: Entity {a1['id']} not found."
    for tool, args, text in (
        ("get_entity", in_b(entity_id=a1["id"]), not_found),
        ("update_entity_description", in_b(entity_id=a1["id"], description="hijacked"), not_found),
        ("delete_entity", in_b(entity_id=a1["id"]), not_found),
        ("add_observation", in_b(entity_id=a1["id"], observation="sneaky"), not_found),
        ("get_relationships", in_b(entity_id=a1["id"]), not_found),
        ("get_related_entities", in_b(entity_id=a1["id"]), not_found),
        (
            "delete_observation",
            in_b(entity_id=a1["id"], observation_id=obs_id),
            f"Error: Observation {obs_id} not found or does not belong to entity {a1['id']}.",
        ),
        ("create_relationship", in_b(source_id=a1["id"], target_id=a2["id"], type="links"), ENDS_NOT_FOUND),
        ("delete_relationship", in_b(relationship_id=rel["id"]), f"Error: Relationship {rel['id']} not found."),
    ):
        result = await kg.fails(tool, args, code=4004)
        assert result.text == text, tool
    assert await snapshot(kg, project) == before_a
    assert await snapshot(kg, other) == before_b


async def test_relationship_between_projects_is_refused(kg: KG, project: str) -> None:
    other = project + "_b"
    a = await create(kg, project, "in a")
    b = await create(kg, other, "in b")
    before_a, before_b = await snapshot(kg, project), await snapshot(kg, other)
    for where, src, dst in ((project, a["id"], b["id"]), (other, a["id"], b["id"]), (other, b["id"], a["id"])):
        result = await kg.fails(
            "create_relationship",
            {"project_id": where, "source_id": src, "target_id": dst, "type": "crosses"},
            code=4004,
        )
        assert result.text == ENDS_NOT_FOUND
    assert await snapshot(kg, project) == before_a
    assert await snapshot(kg, other) == before_b


async def test_default_project_when_project_id_omitted(kg: KG, project: str) -> None:
    marker = f"default-{project}"
    entity = await create(kg, None, marker, "note")
    summary = {"id": entity["id"], "name": marker, "type": "note"}
    assert await kg.ok("list_entities", {"name_contains": marker}) == {"entities": [summary]}
    assert await kg.ok("list_entities", {"project_id": kg.default_project, "name_contains": marker}) == {
        "entities": [summary]
    }
    assert await kg.ok("list_entities", {"project_id": None, "name_contains": marker}) == {"entities": [summary]}
    assert await kg.ok("list_entities", {"project_id": project, "name_contains": marker}) == {"entities": []}
    got = await kg.ok("get_entity", {"entity_id": entity["id"]})
    assert got == {"entity": entity}
    await kg.fails("get_entity", {"project_id": project, "entity_id": entity["id"]}, code=4004)
    obs = await kg.ok("add_observation", {"entity_id": entity["id"], "observation": "in default"})
    assert (await kg.ok("get_entity", {"project_id": kg.default_project, "entity_id": entity["id"]}))["entity"][
        "observations"
    ] == [obs["observation"]]
    result = await kg.call("delete_entity", {"entity_id": entity["id"]})
    assert result.text == ENTITY_DELETED
    assert await kg.ok("list_entities", {"name_contains": marker}) == {"entities": []}


# --- concurrency -----------------------------------------------------------------------------


async def test_parallel_tool_calls_over_one_session(kg: KG, project: str) -> None:
    names = [f"parallel-{i:02d}" for i in range(50)]
    created = await concurrently(*(lambda n=n: create(kg, project, n, "thing", observations=[n]) for n in names))
    assert [e["name"] for e in created] == names
    ids = {e["id"] for e in created}
    assert len(ids) == 50
    listed = (await kg.ok("list_entities", {"project_id": project, "limit": 1000}))["entities"]
    assert {e["id"] for e in listed} == ids
    assert [e["name"] for e in listed] == names
    # Concurrent reads and observation writes on one entity all land.
    target = created[0]
    added = await concurrently(
        *(
            lambda i=i: kg.ok(
                "add_observation", {"project_id": project, "entity_id": target["id"], "observation": f"extra {i}"}
            )
            for i in range(20)
        )
    )
    got = (await kg.ok("get_entity", {"project_id": project, "entity_id": target["id"]}))["entity"]
    assert {o["id"] for o in got["observations"]} == {target["observations"][0]["id"]} | {
        a["observation"]["id"] for a in added
    }
