"""What the `kg` and `memory-compat` tools store and return at the edges, through the real MCP
client: what a name is, duplicates, refused input that must write nothing, the response budget,
and input schemas that publish the limits the server enforces.

One `polyg serve` (stdio, both toolsets, the deterministic `hashing` embedder) serves the
module; each test works in its own project.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import types

from polyg.core import limits
from tests.mcp_helpers import KG, kg_session, server_env

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
EMBEDDER = {"POLYG_EMBEDDING_PROVIDER": "hashing"}


@pytest.fixture(scope="module")
async def both(servers_root: Path) -> AsyncIterator[KG]:
    root = servers_root / "data-paths"
    async with kg_session("stdio", root, "--toolsets", "kg,memory-compat", **EMBEDDER) as session:
        yield session


def ent(name: str, entity_type: str = "thing", *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def rel(source: str, target: str, relation_type: str) -> dict[str, str]:
    return {"from": source, "to": target, "relationType": relation_type}


async def everything(mc: KG, project: str) -> dict[str, Any]:
    return await mc.ok("read_graph", {"project_id": project})


# --- what a name is --------------------------------------------------------------------------


async def test_names_differing_only_in_surrounding_whitespace_are_one_name(both: KG, project: str) -> None:
    p = {"project_id": project}
    made = await both.ok("create_entities", {**p, "entities": [ent("beta\n"), ent("beta\n"), ent(" beta ")]})
    assert made == {"entities": [ent("beta")]}
    assert await both.ok("create_entities", {**p, "entities": [ent("beta")]}) == {"entities": []}
    for spelling in ("beta", "beta\n", "\tbeta "):
        opened = await both.ok("open_nodes", {**p, "names": [spelling]})
        assert opened["entities"] == [ent("beta")], spelling
    added = await both.ok("add_observations", {**p, "observations": [{"entityName": "beta ", "contents": ["x"]}]})
    assert added == {"results": [{"entityName": "beta", "addedObservations": ["x"]}]}
    kg_made = (await both.ok("create_entity", {**p, "name": "  gamma\n", "type": "t"}))["entity"]
    assert kg_made["name"] == "gamma"
    await both.ok("delete_entities", {**p, "entityNames": ["beta\n"]})
    assert [e["name"] for e in (await everything(both, project))["entities"]] == ["gamma"]


async def test_names_are_unicode_normalised(both: KG, project: str) -> None:
    p = {"project_id": project}
    composed, decomposed = "Zoë", unicodedata.normalize("NFD", "Zoë")
    assert composed != decomposed
    await both.ok("create_entities", {**p, "entities": [ent(decomposed)]})
    assert (await both.ok("open_nodes", {**p, "names": [composed]}))["entities"] == [ent(composed)]


@pytest.mark.parametrize("bad", ["\u200b", " \u200b\ufeff ", "a\x00b", "be\x07ta", "x\u0085y", "", "   "])
async def test_names_without_visible_characters_or_with_control_characters_are_refused(
    both: KG, project: str, bad: str
) -> None:
    p = {"project_id": project}
    await both.fails("create_entities", {**p, "entities": [ent("ok"), ent(bad)]}, code=4002)
    await both.fails("create_entity", {**p, "name": bad, "type": "t"}, code=4002)
    assert (await everything(both, project))["entities"] == []


async def test_kg_stores_a_repeated_observation_once(both: KG, project: str) -> None:
    made = (
        await both.ok(
            "create_entity", {"project_id": project, "name": "e", "type": "t", "observations": ["same", "same", "b"]}
        )
    )["entity"]
    assert [o["text"] for o in made["observations"]] == ["same", "b"]
    got = (await both.ok("get_entity", {"project_id": project, "entity_id": made["id"]}))["entity"]
    assert got["observations"] == made["observations"]


# --- refused input writes nothing ------------------------------------------------------------


async def test_a_nul_character_refuses_the_whole_batch_up_front(both: KG, project: str) -> None:
    p = {"project_id": project}
    # Several labels and relationship types in one batch: each used to be its own write.
    batch = [ent("a", "person"), ent("b", "place"), ent("c", "thing", "fine", "bad\x00text")]
    await both.fails("create_entities", {**p, "entities": batch}, code=4002)
    assert (await everything(both, project))["entities"] == []

    await both.ok("create_entities", {**p, "entities": [ent("a", "person"), ent("b", "place")]})
    rels = [rel("a", "b", "knows"), rel("b", "a", "works at"), rel("a", "b", "z\x00")]
    await both.fails("create_relations", {**p, "relations": rels}, code=4002)
    assert (await everything(both, project))["relations"] == []
    await both.ok("create_relations", {**p, "relations": rels[:2]})
    await both.fails("delete_relations", {**p, "relations": [rels[0], rel("a", "b\x00", "x")]}, code=4002)
    assert len((await everything(both, project))["relations"]) == 2
    add = [{"entityName": "a", "contents": ["ok"]}, {"entityName": "b", "contents": ["\x00"]}]
    await both.fails("add_observations", {**p, "observations": add}, code=4002)
    entity = (await both.ok("open_nodes", {**p, "names": ["a"]}))["entities"][0]
    assert entity["observations"] == []


async def test_a_nul_character_in_an_id_or_a_deletion_is_refused_not_sent_to_the_store(both: KG, project: str) -> None:
    """FalkorDB cannot parse a NUL in a query parameter: it answered 2004 after the call began."""
    p = {"project_id": project}
    made = (await both.ok("create_entity", {**p, "name": "a", "type": "t", "observations": ["o"]}))["entity"]
    nul = "ent_\x00"
    for tool, args in [
        ("get_entity", {"entity_id": nul}),
        ("delete_entity", {"entity_id": nul}),
        ("update_entity_description", {"entity_id": nul, "description": "d"}),
        ("add_observation", {"entity_id": nul, "observation": "o"}),
        ("delete_observation", {"entity_id": made["id"], "observation_id": nul}),
        ("create_relationship", {"source_id": made["id"], "target_id": nul, "type": "t"}),
        ("get_relationships", {"entity_id": made["id"], "relationship_type": "a\x00"}),
        ("delete_relationship", {"relationship_id": nul}),
        ("delete_observations", {"deletions": [{"entityName": "a", "observations": ["o", "\x00"]}]}),
    ]:
        await both.fails(tool, {**p, **args}, code=4002)
    assert (await both.ok("open_nodes", {**p, "names": ["a"]}))["entities"] == [ent("a", "t", "o")]


async def test_a_batch_of_many_labels_and_types_is_written_whole(both: KG, project: str) -> None:
    p = {"project_id": project}
    batch = [ent(f"e{i}", ("person", "place", "thing", "free text type")[i % 4], f"o{i}") for i in range(40)]
    assert len((await both.ok("create_entities", {**p, "entities": batch}))["entities"]) == 40
    rels = [rel(f"e{i}", f"e{i + 1}", ("knows", "works at", "part_of", "HAS_OBSERVATION")[i % 4]) for i in range(39)]
    assert (await both.ok("create_relations", {**p, "relations": rels}))["relations"] == rels
    graph = await everything(both, project)
    assert len(graph["entities"]) == 40 and len(graph["relations"]) == 39
    people = await both.ok("list_entities", {**p, "type": "person"})
    assert len(people["entities"]) == 10


# --- one rule for duplicates -----------------------------------------------------------------


async def test_an_exact_duplicate_edge_is_the_existing_edge(both: KG, project: str) -> None:
    p = {"project_id": project}
    a = (await both.ok("create_entity", {**p, "name": "a", "type": "t"}))["entity"]
    b = (await both.ok("create_entity", {**p, "name": "b", "type": "t"}))["entity"]
    ends = {**p, "source_id": a["id"], "target_id": b["id"]}
    first = (await both.ok("create_relationship", {**ends, "type": "uses", "description": "first"}))["relationship"]
    again = (await both.ok("create_relationship", {**ends, "type": "uses", "description": "other"}))["relationship"]
    assert again == first
    reverse = await both.ok("create_relationship", {**p, "source_id": b["id"], "target_id": a["id"], "type": "uses"})
    assert reverse["relationship"]["id"] != first["id"]
    # memory-compat's relation of the same text is that edge too, and shows once.
    assert (await both.ok("create_relations", {**p, "relations": [rel("a", "b", "uses")]})) == {"relations": []}
    assert (await both.ok("open_nodes", {**p, "names": ["a"]}))["relations"] == [
        rel("a", "b", "uses"),
        rel("b", "a", "uses"),
    ]


async def test_delete_entities_acts_on_the_entity_every_other_tool_opens(both: KG, project: str) -> None:
    p = {"project_id": project}
    await both.ok("create_entities", {**p, "entities": [ent("X", "thing", "the first X")]})
    await both.ok("create_entity", {**p, "name": "X", "type": "thing", "observations": ["the second X"]})
    opened = await both.ok("open_nodes", {**p, "names": ["X"]})
    assert opened["entities"] == [ent("X", "thing", "the first X")]
    await both.ok("delete_entities", {**p, "entityNames": ["X"]})
    assert (await both.ok("open_nodes", {**p, "names": ["X"]}))["entities"] == [ent("X", "thing", "the second X")]


# --- offsets and published limits ------------------------------------------------------------


@pytest.mark.parametrize("offset", [2**32, 2**32 + 1, 2**40])
async def test_huge_offsets_are_refused_not_wrapped(both: KG, project: str, offset: int) -> None:
    p = {"project_id": project}
    await both.ok("create_entities", {**p, "entities": [ent("only")]})
    await both.fails("read_graph", {**p, "offset": offset}, code=4002)
    await both.fails("list_entities", {**p, "offset": offset}, code=4002)
    assert (await both.ok("read_graph", {**p, "offset": limits.MAX_OFFSET}))["entities"] == []


NAME_CANDIDATES = [
    "x",
    "n" * limits.MAX_NAME,
    "n" * (limits.MAX_NAME + 1),
    " padded ",
    "Zoë",
    "東京",
    "a\u200bb",
    "",
    " ",
    "\u200b",
    "\ufeff\u2060",
    "bad\x01name",
    "tab\tinside",
    "nul\x00",
]
TEXT_CANDIDATES = ["text", "d" * limits.MAX_TEXT, "d" * (limits.MAX_TEXT + 1), "", "\u200b", "a\x00", "line\nbreak"]


async def _schemas(both: KG) -> dict[str, dict[str, Any]]:
    """Each served tool's full input schema, as its page (`polyg://tools/{name}`) publishes it:
    tools/list's lean form leaves the NUL refusal and the reserved type names to the server."""
    schemas = {}
    for tool in (await both.client.list_tools()).tools:
        (page,) = (await both.client.read_resource(f"polyg://tools/{tool.name}")).contents
        assert isinstance(page, types.TextResourceContents)
        block = page.text.split("## Input schema", 1)[1].split("```json", 1)[1].split("```", 1)[0]
        schemas[tool.name] = json.loads(block)
    return schemas


def _valid(schema: dict[str, Any], args: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(args)


async def _agrees(both: KG, tool: str, schema: dict[str, Any], args: dict[str, Any]) -> None:
    """Valid by the published schema: accepted. Invalid: refused (the schema is not looser)."""
    result = await both.call(tool, args)
    if _valid(schema, args):
        assert not result.is_error or result.code not in (4002, 4013), (tool, args, result.text)
    else:
        assert result.is_error and result.code in (4002, 4013), (tool, args, result.text)


async def test_values_valid_by_the_published_schemas_are_accepted(both: KG, project: str) -> None:
    schemas = await _schemas(both)
    p = {"project_id": project}
    for i, name in enumerate(NAME_CANDIDATES):
        await _agrees(both, "create_entities", schemas["create_entities"], {**p, "entities": [ent(name)]})
        await _agrees(both, "create_entity", schemas["create_entity"], {**p, "name": name, "type": f"t{i}"})
        await _agrees(both, "open_nodes", schemas["open_nodes"], {**p, "names": [name]})
    for text in TEXT_CANDIDATES:
        args = {**p, "entities": [ent("holder", "thing", text)]}
        await _agrees(both, "create_entities", schemas["create_entities"], args)
        await _agrees(
            both, "create_entity", schemas["create_entity"], {**p, "name": "h", "type": "t", "description": text}
        )
    made = (await both.ok("create_entity", {**p, "name": "src", "type": "t"}))["entity"]
    rel_types = ("uses", "_x", "A" * 64, "A" * 65, "1abc", "has space", "HAS_OBSERVATION", "has_Observation", "uses\n")
    for rel_type in rel_types:
        args = {**p, "source_id": made["id"], "target_id": made["id"], "type": rel_type}
        await _agrees(both, "create_relationship", schemas["create_relationship"], args)
    many = [ent(f"m{i}") for i in range(limits.MAX_BATCH + 1)]
    await _agrees(both, "create_entities", schemas["create_entities"], {**p, "entities": many[:-1]})
    await _agrees(both, "create_entities", schemas["create_entities"], {**p, "entities": many})
    for entity_id in ("ent_x", "", "e" * limits.MAX_NAME, "e" * (limits.MAX_NAME + 1), "ent_\x00"):
        await _agrees(both, "get_entity", schemas["get_entity"], {**p, "entity_id": entity_id})
    for offset in (0, limits.MAX_OFFSET, limits.MAX_OFFSET + 1):
        await _agrees(both, "read_graph", schemas["read_graph"], {**p, "offset": offset})
        await _agrees(both, "list_entities", schemas["list_entities"], {**p, "offset": offset})


# --- the response budget ---------------------------------------------------------------------


async def test_reads_stay_within_the_budget_and_say_what_they_left_out(both: KG, project: str) -> None:
    p = {"project_id": project}
    big = "w" * 4_000  # 40 entities x 4 observations of 4,000 characters: 640k characters in all
    batch = [ent(f"big {i:02d}", "thing", *(f"{j} {big}" for j in range(4))) for i in range(40)]
    await both.ok("create_entities", {**p, "entities": batch})
    graph = await both.ok("read_graph", p)
    shown = len(graph["entities"])
    assert 0 < shown < 40 and graph["nextOffset"] == shown
    assert f"call read_graph again with offset {shown}" in graph["note"]
    assert limits.size(graph) <= limits.RESPONSE_BUDGET
    seen = shown
    while "nextOffset" in graph:
        graph = await both.ok("read_graph", {**p, "offset": graph["nextOffset"]})
        seen += len(graph["entities"])
        assert limits.size(graph) <= limits.RESPONSE_BUDGET
    assert seen == 40

    searched = await both.ok("search_nodes", {**p, "query": "big", "limit": 40})
    assert limits.size(searched) <= limits.RESPONSE_BUDGET
    assert searched["entitiesOmitted"] == 40 - len(searched["entities"]) > 0
    assert "left out" in searched["note"]


async def test_observations_are_capped_per_entity_and_paged(both: KG, project: str) -> None:
    p = {"project_id": project}
    texts = [f"fact {i:03d}" for i in range(250)]
    await both.ok("create_entities", {**p, "entities": [ent("busy", "thing", *texts)]})
    opened = await both.ok("open_nodes", {**p, "names": ["busy"]})
    (entity,) = opened["entities"]
    assert entity["observations"] == texts[: limits.OBSERVATIONS_SHOWN] and entity["observationsTotal"] == 250
    assert "observationOffset" in opened["note"]
    rest = await both.ok("open_nodes", {**p, "names": ["busy"], "observationOffset": 200})
    assert rest["entities"][0]["observations"] == texts[200:]
    assert (await both.ok("search_nodes", {**p, "query": "busy"}))["entities"][0]["observationsTotal"] == 250

    huge = "h" * (limits.MAX_TEXT - 2)  # 100 of them would be 1.6 MB
    made = await both.ok(
        "create_entity", {**p, "name": "huge", "type": "t", "observations": [f"{i}{huge}" for i in range(20)]}
    )
    got = (await both.ok("get_entity", {**p, "entity_id": made["entity"]["id"]}))["entity"]
    assert limits.size(got) <= limits.RESPONSE_BUDGET
    assert got["next_observation_offset"] == len(got["observations"]) < 20 and got["observations_total"] == 20


async def test_kg_lists_stay_within_the_budget_and_say_what_they_left_out(both: KG, project: str) -> None:
    """get_relationships, get_related_entities and list_entities return up to 1,000 rows each
    of names up to 512 and descriptions up to 16k characters: cut to the budget, said in words."""
    p = {"project_id": project}
    long = "n" * (limits.MAX_NAME - 4)
    spokes = [ent(f"{i:03d}{long}") for i in range(250)]  # 250 names of 511 characters
    await both.ok("create_entities", {**p, "entities": [ent("hub"), *spokes]})
    await both.ok("create_relations", {**p, "relations": [rel("hub", e["name"], "links") for e in spokes]})
    hub = (await both.ok("list_entities", {**p, "name_contains": "hub"}))["entities"][0]["id"]
    related = await both.ok("get_related_entities", {**p, "entity_id": hub, "limit": 1000})
    assert limits.size(related) <= limits.RESPONSE_BUDGET
    assert related["omitted"] == 250 - len(related["related_entities"]) > 0 and "left out" in related["note"]
    listed = await both.ok("list_entities", {**p, "limit": 1000})
    assert limits.size(listed) <= limits.RESPONSE_BUDGET
    shown = len(listed["entities"])
    assert listed["omitted"] == 251 - shown > 0 and f"offset {shown}" in listed["note"]

    other = (await both.ok("create_entity", {**p, "name": "other", "type": "t"}))["entity"]["id"]
    description = "d" * (limits.MAX_TEXT - 100)
    for rel_type in [f"kind{i}" for i in range(12)]:  # 12 x 16k characters of description
        args = {**p, "source_id": hub, "target_id": other, "type": rel_type, "description": description}
        await both.ok("create_relationship", args)
    rels = await both.ok("get_relationships", {**p, "entity_id": other})
    assert limits.size(rels) <= limits.RESPONSE_BUDGET
    assert rels["omitted"] == 12 - len(rels["relationships"]) > 0 and "left out" in rels["note"]


# --- a misspelt project stays unmade ---------------------------------------------------------


async def test_refused_and_no_op_calls_do_not_create_a_project(both: KG, project: str, tmp_path: Path) -> None:
    # On the module's server: `project` is this test's, and the misspelt one is its own too.
    s = both
    real = project
    typo = {"project_id": f"typo_{project}"}
    await s.ok("create_entities", {"project_id": real, "entities": [ent("a")]})
    await s.fails("create_entities", {**typo, "entities": [ent("\u200b")]}, code=4002)
    await s.fails("create_relations", {**typo, "relations": [rel("a", "b", "x")]}, code=4004)
    await s.fails("add_observations", {**typo, "observations": [{"entityName": "a", "contents": ["x"]}]}, code=4004)
    await s.ok("create_entities", {**typo, "entities": []})
    await s.ok("delete_entities", {**typo, "entityNames": ["a"]})
    await s.ok("delete_relations", {**typo, "relations": [rel("a", "b", "x")]})
    await s.ok("delete_observations", {**typo, "deletions": [{"entityName": "a", "observations": ["x"]}]})
    await s.ok("read_graph", typo)
    await s.ok("open_nodes", {**typo, "names": ["a"]})
    await s.fails("get_entity", {**typo, "entity_id": "ent_x"}, code=4004)
    await s.fails("delete_entity", {**typo, "entity_id": "ent_x"}, code=4004)
    await s.fails("delete_relationship", {**typo, "relationship_id": "rel_x"}, code=4004)
    await s.fails("add_observation", {**typo, "entity_id": "ent_x", "observation": "o"}, code=4004)
    await s.fails("create_relationship", {**typo, "source_id": "a", "target_id": "b", "type": "t"}, code=4004)
    # `polyg status` on the server's data directory (it attaches to the running database).
    status = await anyio.run_process(
        [sys.executable, "-m", "polyg", "status", "--data-dir", str(s.root / "data")],
        env=server_env(tmp_path, **EMBEDDER),
        check=True,
    )
    listed = status.stdout.decode()
    assert real in listed and typo["project_id"] not in listed, listed
