"""The `memory-compat` toolset (the official MCP memory server's tools) through the real MCP client.

One `polyg serve` subprocess (stdio, every toolset, the real MiniLM embedder, an embedded
FalkorDB) serves the whole module; each test works in its own project. Results are checked
whole, every error for its `Error: ` text and 4-digit code and for having written nothing,
and the same entities are driven through both vocabularies (names here, ids in `kg`).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.mcp_helpers import KG, open_log, reap_embedded, server_env

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[3]
# The installed console script, as a desktop client would be configured to run it.
POLYG = REPO / ".venv" / "bin" / "polyg"
if not POLYG.exists():  # a venv elsewhere (VENV=...): the script next to this interpreter
    POLYG = Path(sys.executable).with_name("polyg")

DEFAULT_PROJECT = "compat_default"
MEMORY_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}
READ_ONLY = {"read_graph", "search_nodes", "open_nodes"}
DELETED = {
    "delete_entities": "Entities deleted successfully",
    "delete_observations": "Observations deleted successfully",
    "delete_relations": "Relations deleted successfully",
}


@pytest.fixture(scope="module")
async def mc(servers_root: Path) -> AsyncIterator[KG]:
    """`polyg serve` over stdio with every toolset; default project `compat_default`."""
    root = servers_root / "memory-compat"
    params = StdioServerParameters(
        command=str(POLYG),
        args=["serve", "--data-dir", str(root / "data"), "--project", DEFAULT_PROJECT, "--toolsets", "all"],
        env=server_env(root),
    )
    with open_log(root / "stderr.log") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield KG(client, "stdio", root, DEFAULT_PROJECT)
        finally:
            reap_embedded(root / "data")


# --- helpers ---------------------------------------------------------------------------------


def ent(name: str, entity_type: str = "person", *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def rel(source: str, target: str, relation_type: str) -> dict[str, str]:
    return {"from": source, "to": target, "relationType": relation_type}


def names(graph: dict[str, Any]) -> list[str]:
    return [e["name"] for e in graph["entities"]]


def rel_set(graph: dict[str, Any]) -> set[tuple[str, str, str]]:
    rels = [(r["from"], r["to"], r["relationType"]) for r in graph["relations"]]
    assert len(rels) == len(set(rels)), f"a relation appears twice: {rels}"
    return set(rels)


def by_name(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in graph["entities"]}


async def snapshot(mc: KG, project: str) -> dict[str, Any]:
    """The whole (small) project: entities in name order, relations as a set."""
    graph = await mc.ok("read_graph", {"project_id": project, "limit": 1000})
    assert "nextOffset" not in graph
    return {"entities": graph["entities"], "relations": rel_set(graph)}


async def seed(mc: KG, project: str) -> None:
    await mc.ok(
        "create_entities",
        {
            "project_id": project,
            "entities": [
                ent("Ada", "person", "wrote the first program", "worked with Babbage"),
                ent("Babbage", "person", "designed the Analytical Engine"),
                ent("Engine", "machine"),
            ],
        },
    )
    await mc.ok(
        "create_relations",
        {
            "project_id": project,
            "relations": [rel("Ada", "Babbage", "worked with"), rel("Babbage", "Engine", "designed")],
        },
    )


async def kg_id(mc: KG, project: str, name: str) -> str:
    found = (await mc.ok("list_entities", {"project_id": project, "name_contains": name}))["entities"]
    matches = [e["id"] for e in found if e["name"] == name]
    assert len(matches) == 1, found
    return matches[0]


# --- listing -----------------------------------------------------------------------------------


async def test_tools_are_listed_with_annotations_and_schemas(mc: KG) -> None:
    tools = {t.name: t for t in (await mc.client.list_tools()).tools}
    assert set(tools) >= MEMORY_TOOLS
    for name in MEMORY_TOOLS:
        tool = tools[name]
        assert tool.description, name
        assert tool.input_schema["type"] == "object"
        assert "project_id" in tool.input_schema["properties"], name
        assert "project_id" not in tool.input_schema.get("required", []), name
        assert tool.output_schema is not None, name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
        assert tool.annotations.destructive_hint is (name in DELETED), name
    relation = tools["create_relations"].input_schema["$defs"]["Relation"]
    assert set(relation["properties"]) == {"from", "to", "relationType"}
    assert set(relation["required"]) == {"from", "to", "relationType"}


# --- create_entities -----------------------------------------------------------------------------


async def test_create_entities_returns_only_the_entities_created(mc: KG, project: str) -> None:
    first = await mc.ok(
        "create_entities",
        {
            "project_id": project,
            "entities": [
                ent("Ada", "person", "wrote the first program", "wrote the first program", "born 1815"),
                ent("Babbage", "person"),
                ent("Ada", "robot", "a repeat within the batch is skipped"),
                {"name": "Engine", "entityType": "machine"},  # observations are optional
            ],
        },
    )
    assert first == {
        "entities": [
            ent("Ada", "person", "wrote the first program", "born 1815"),
            ent("Babbage", "person"),
            ent("Engine", "machine"),
        ]
    }
    second = await mc.ok(
        "create_entities",
        {"project_id": project, "entities": [ent("Babbage", "machine", "ignored"), ent("Lovelace", "title")]},
    )
    assert second == {"entities": [ent("Lovelace", "title")]}
    again = await mc.ok("create_entities", {"project_id": project, "entities": [ent("Ada"), ent("Lovelace")]})
    assert again == {"entities": []}
    assert await snapshot(mc, project) == {
        "entities": [
            ent("Ada", "person", "wrote the first program", "born 1815"),
            ent("Babbage", "person"),
            ent("Engine", "machine"),
            ent("Lovelace", "title"),
        ],
        "relations": set(),
    }
    empty = await mc.ok("create_entities", {"project_id": project, "entities": []})
    assert empty == {"entities": []}


async def test_names_and_text_are_stored_verbatim(mc: KG, project: str) -> None:
    odd = [
        ent("Zoë O'Brien-Smith", "person (fictional)", 'said "hi"; then left', "line one\nline two"),
        ent("C:\\path\\to\\file.txt", "file"),
        ent("MATCH (n) DETACH DELETE n", "query`type", "}]) RETURN 1 //"),
        ent("東京", "city", "日本の首都"),
    ]
    created = await mc.ok("create_entities", {"project_id": project, "entities": odd})
    assert created == {"entities": odd}
    opened = await mc.ok("open_nodes", {"project_id": project, "names": [e["name"] for e in odd]})
    assert opened == {"entities": odd, "relations": []}


# --- create_relations ----------------------------------------------------------------------------


async def test_create_relations_returns_new_relations_and_skips_duplicates(mc: KG, project: str) -> None:
    await seed(mc, project)
    made = await mc.ok(
        "create_relations",
        {
            "project_id": project,
            "relations": [
                rel("Ada", "Babbage", "worked with"),  # exists already
                rel("Ada", "Engine", "programmed"),
                rel("Ada", "Engine", "programmed"),  # repeat within the batch
                rel("Engine", "Ada", "programmed"),  # the other direction is another relation
                rel("Ada", "Engine", "wrote about"),  # another type between the same entities
                rel("Ada", "Ada", "admires"),  # to itself
            ],
        },
    )
    assert made == {
        "relations": [
            rel("Ada", "Engine", "programmed"),
            rel("Engine", "Ada", "programmed"),
            rel("Ada", "Engine", "wrote about"),
            rel("Ada", "Ada", "admires"),
        ]
    }
    again = await mc.ok("create_relations", {"project_id": project, "relations": [rel("Ada", "Engine", "programmed")]})
    assert again == {"relations": []}
    assert (await snapshot(mc, project))["relations"] == {
        ("Ada", "Babbage", "worked with"),
        ("Babbage", "Engine", "designed"),
        ("Ada", "Engine", "programmed"),
        ("Engine", "Ada", "programmed"),
        ("Ada", "Engine", "wrote about"),
        ("Ada", "Ada", "admires"),
    }


async def test_create_relations_with_an_unknown_entity_writes_nothing(mc: KG, project: str) -> None:
    await seed(mc, project)
    before = await snapshot(mc, project)
    for unknown, relations in (
        ("Nobody", [rel("Ada", "Engine", "programmed"), rel("Ada", "Nobody", "knows")]),
        ("Ghost", [rel("Ghost", "Ada", "haunts"), rel("Ada", "Engine", "programmed")]),
        ("ada", [rel("ada", "Engine", "programmed")]),  # names are case-sensitive
    ):
        result = await mc.fails("create_relations", {"project_id": project, "relations": relations}, code=4004)
        assert unknown in result.text
        assert await snapshot(mc, project) == before
    # The same relations in a project where the entities do not exist at all.
    await mc.fails(
        "create_relations", {"project_id": f"{project}_x", "relations": [rel("Ada", "Engine", "programmed")]}, code=4004
    )


async def test_free_text_relation_types_round_trip_exactly(mc: KG, project: str) -> None:
    types = [
        "works at",
        "is-part-of",
        "works_at",  # differs from "works at" only in how polyg has to store it
        "WORKS AT",
        "2nd cousin of",
        "a.k.a.",
        "été à",
        "HAS_OBSERVATION",  # polyg's own type: stored under another name
        "knows",
        " padded ",
        "](x) DETACH DELETE x //",
    ]
    await mc.ok("create_entities", {"project_id": project, "entities": [ent("Ada"), ent("Acme", "company")]})
    made = await mc.ok("create_relations", {"project_id": project, "relations": [rel("Ada", "Acme", t) for t in types]})
    assert made["relations"] == [rel("Ada", "Acme", t) for t in types]
    expected = {("Ada", "Acme", t) for t in types}
    assert (await snapshot(mc, project))["relations"] == expected
    assert rel_set(await mc.ok("open_nodes", {"project_id": project, "names": ["Acme"]})) == expected
    assert rel_set(await mc.ok("search_nodes", {"project_id": project, "query": "Ada"})) == expected
    # Each is its own relation: creating them again adds nothing, deleting one leaves the rest.
    again = await mc.ok(
        "create_relations", {"project_id": project, "relations": [rel("Ada", "Acme", t) for t in types]}
    )
    assert again == {"relations": []}
    await mc.ok(
        "delete_relations",
        {"project_id": project, "relations": [rel("Ada", "Acme", "works at"), rel("Ada", "Acme", "HAS_OBSERVATION")]},
    )
    assert (await snapshot(mc, project))["relations"] == expected - {
        ("Ada", "Acme", "works at"),
        ("Ada", "Acme", "HAS_OBSERVATION"),
    }
    # polyg's own observation links are untouched (they are not relations).
    assert (await mc.ok("open_nodes", {"project_id": project, "names": ["Ada"]}))["entities"] == [ent("Ada")]
    # In kg, a free-text relation is a relationship under a valid type name.
    ada = await kg_id(mc, project, "Ada")
    kg_types = {
        r["type"]
        for r in (await mc.ok("get_relationships", {"project_id": project, "entity_id": ada}))["relationships"]
    }
    assert "is_part_of" in kg_types and "knows" in kg_types and "HAS_OBSERVATION" not in kg_types


# --- add_observations ----------------------------------------------------------------------------


async def test_add_observations_adds_only_new_ones(mc: KG, project: str) -> None:
    await seed(mc, project)
    result = await mc.ok(
        "add_observations",
        {
            "project_id": project,
            "observations": [
                {"entityName": "Ada", "contents": ["wrote the first program", "a mathematician", "a mathematician"]},
                {"entityName": "Engine", "contents": ["never completed"]},
                {"entityName": "Ada", "contents": ["a mathematician", "daughter of Byron"]},
                {"entityName": "Babbage", "contents": []},
            ],
        },
    )
    assert result == {
        "results": [
            {"entityName": "Ada", "addedObservations": ["a mathematician"]},
            {"entityName": "Engine", "addedObservations": ["never completed"]},
            {"entityName": "Ada", "addedObservations": ["daughter of Byron"]},
            {"entityName": "Babbage", "addedObservations": []},
        ]
    }
    graph = await mc.ok("open_nodes", {"project_id": project, "names": ["Ada", "Engine"]})
    assert graph["entities"] == [
        ent("Ada", "person", "wrote the first program", "worked with Babbage", "a mathematician", "daughter of Byron"),
        ent("Engine", "machine", "never completed"),
    ]
    repeat = await mc.ok(
        "add_observations",
        {"project_id": project, "observations": [{"entityName": "Engine", "contents": ["never completed"]}]},
    )
    assert repeat == {"results": [{"entityName": "Engine", "addedObservations": []}]}
    # The new observations are searchable.
    found = await mc.ok("search_nodes", {"project_id": project, "query": "daughter of Byron", "limit": 1})
    assert names(found) == ["Ada"]


async def test_add_observations_to_an_unknown_entity_writes_nothing(mc: KG, project: str) -> None:
    await seed(mc, project)
    before = await snapshot(mc, project)
    result = await mc.fails(
        "add_observations",
        {
            "project_id": project,
            "observations": [
                {"entityName": "Ada", "contents": ["a mathematician"]},
                {"entityName": "Nobody", "contents": ["does not exist"]},
            ],
        },
        code=4004,
    )
    assert "Nobody" in result.text
    assert await snapshot(mc, project) == before


# --- deletes -------------------------------------------------------------------------------------


async def test_delete_entities_removes_their_relations(mc: KG, project: str) -> None:
    await seed(mc, project)
    await mc.ok("create_relations", {"project_id": project, "relations": [rel("Engine", "Ada", "inspired")]})
    done = await mc.ok("delete_entities", {"project_id": project, "entityNames": ["Babbage", "Nobody", "Babbage"]})
    assert done == {"success": True, "message": DELETED["delete_entities"]}
    assert await snapshot(mc, project) == {
        "entities": [ent("Ada", "person", "wrote the first program", "worked with Babbage"), ent("Engine", "machine")],
        "relations": {("Engine", "Ada", "inspired")},
    }
    # Its observations went with it: a new entity of that name starts empty.
    created = await mc.ok("create_entities", {"project_id": project, "entities": [ent("Babbage", "person")]})
    assert created == {"entities": [ent("Babbage", "person")]}
    assert (await mc.ok("open_nodes", {"project_id": project, "names": ["Babbage"]})) == {
        "entities": [ent("Babbage", "person")],
        "relations": [],
    }
    # Deleting what does not exist succeeds (idempotent).
    assert await mc.ok("delete_entities", {"project_id": project, "entityNames": ["Nobody"]}) == done
    assert await mc.ok("delete_entities", {"project_id": project, "entityNames": []}) == done


async def test_delete_observations(mc: KG, project: str) -> None:
    await seed(mc, project)
    await mc.ok(
        "add_observations",
        {
            "project_id": project,
            "observations": [{"entityName": "Ada", "contents": ["plays the theremin", "born 1815"]}],
        },
    )
    done = await mc.ok(
        "delete_observations",
        {
            "project_id": project,
            "deletions": [
                {"entityName": "Ada", "observations": ["plays the theremin", "never said this"]},
                {"entityName": "Nobody", "observations": ["ignored"]},
                {"entityName": "Babbage", "observations": []},
            ],
        },
    )
    assert done == {"success": True, "message": DELETED["delete_observations"]}
    graph = await mc.ok("open_nodes", {"project_id": project, "names": ["Ada", "Babbage"]})
    assert graph["entities"] == [
        ent("Ada", "person", "wrote the first program", "worked with Babbage", "born 1815"),
        ent("Babbage", "person", "designed the Analytical Engine"),
    ]
    # An observation deleted by text can be added again.
    again = await mc.ok(
        "add_observations",
        {"project_id": project, "observations": [{"entityName": "Ada", "contents": ["plays the theremin"]}]},
    )
    assert again["results"] == [{"entityName": "Ada", "addedObservations": ["plays the theremin"]}]


async def test_delete_relations_removes_exactly_the_relations_named(mc: KG, project: str) -> None:
    await seed(mc, project)
    await mc.ok(
        "create_relations",
        {"project_id": project, "relations": [rel("Ada", "Babbage", "admired"), rel("Babbage", "Ada", "worked with")]},
    )
    done = await mc.ok(
        "delete_relations",
        {
            "project_id": project,
            "relations": [
                rel("Ada", "Babbage", "worked with"),
                rel("Engine", "Babbage", "designed"),  # wrong direction: nothing
                rel("Ada", "Babbage", "worked  with"),  # other text: nothing
                rel("Nobody", "Ada", "knows"),  # unknown entity: nothing, no error
            ],
        },
    )
    assert done == {"success": True, "message": DELETED["delete_relations"]}
    assert (await snapshot(mc, project))["relations"] == {
        ("Babbage", "Engine", "designed"),
        ("Ada", "Babbage", "admired"),
        ("Babbage", "Ada", "worked with"),
    }
    # The entities and their observations stay.
    assert len((await snapshot(mc, project))["entities"]) == 3


# --- read_graph, search_nodes, open_nodes --------------------------------------------------------


async def test_read_graph_pages_through_everything_exactly_once(mc: KG, project: str) -> None:
    count = 250
    all_names = [f"Item {i:03d}" for i in range(count)]
    created = await mc.ok(
        "create_entities",
        {"project_id": project, "entities": [ent(n, "item", f"observation of {n}") for n in all_names]},
    )
    assert len(created["entities"]) == count
    chain = [rel(all_names[i], all_names[i + 1], "comes before") for i in range(count - 1)]
    chain.append(rel(all_names[-1], all_names[0], "wraps to"))
    assert len((await mc.ok("create_relations", {"project_id": project, "relations": chain}))["relations"]) == count
    every = {(r["from"], r["to"], r["relationType"]) for r in chain}

    # By default a graph of a few hundred small entities comes back whole, as a client written
    # for the official server expects; a smaller page says in words where to read on.
    first = await mc.ok("read_graph", {"project_id": project})
    assert names(first) == all_names and "nextOffset" not in first and "note" not in first
    paged = await mc.ok("read_graph", {"project_id": project, "limit": 100})
    assert len(paged["entities"]) == 100 and paged["nextOffset"] == 100
    assert "call read_graph again with offset 100" in paged["note"]

    seen: list[str] = []
    offsets: list[int] = []
    relations_seen: set[tuple[str, str, str]] = set()
    args: dict[str, Any] = {"project_id": project, "limit": 100}
    while True:
        page = await mc.ok("read_graph", args)
        page_names = set(names(page))
        assert by_name(page) == {n: ent(n, "item", f"observation of {n}") for n in page_names}
        seen += names(page)
        # Exactly the relations with at least one end on this page.
        assert rel_set(page) == {r for r in every if r[0] in page_names or r[1] in page_names}
        relations_seen |= rel_set(page)
        if "nextOffset" not in page:
            break
        offsets.append(page["nextOffset"])
        args = {"project_id": project, "limit": 100, "offset": page["nextOffset"]}
    assert offsets == [100, 200]
    assert seen == all_names  # name order, each exactly once
    assert relations_seen == every

    small = await mc.ok("read_graph", {"project_id": project, "limit": 7, "offset": 245})
    assert names(small) == all_names[245:] and "nextOffset" not in small
    edge = await mc.ok("read_graph", {"project_id": project, "limit": 5, "offset": 240})
    assert names(edge) == all_names[240:245] and edge["nextOffset"] == 245
    del edge["note"]
    beyond = await mc.ok("read_graph", {"project_id": project, "offset": 5000})
    assert beyond == {"entities": [], "relations": []}
    whole = await mc.ok("read_graph", {"project_id": project, "limit": 1000})
    assert names(whole) == all_names and "nextOffset" not in whole and rel_set(whole) == every


async def test_read_graph_of_an_empty_project(mc: KG, project: str) -> None:
    assert await mc.ok("read_graph", {"project_id": project}) == {"entities": [], "relations": []}
    assert await mc.ok("search_nodes", {"project_id": project, "query": "anything"}) == {
        "entities": [],
        "relations": [],
    }
    assert await mc.ok("open_nodes", {"project_id": project, "names": ["a"]}) == {"entities": [], "relations": []}


async def test_search_nodes_ranks_and_limits(mc: KG, project: str) -> None:
    await mc.ok(
        "create_entities",
        {
            "project_id": project,
            "entities": [
                ent("Miles Davis", "person", "He played the trumpet in jazz bands", "Born in Alton, Illinois"),
                ent("John Coltrane", "person", "A tenor saxophonist", "Recorded A Love Supreme"),
                ent("Kind of Blue", "album", "Best-selling jazz record of 1959"),
                ent("Davis Cup", "event", "A tennis competition between nations"),
                ent("Sourdough", "recipe", "Flour, water, salt and a starter"),
            ],
        },
    )
    await mc.ok(
        "create_relations",
        {
            "project_id": project,
            "relations": [
                rel("Miles Davis", "Kind of Blue", "recorded"),
                rel("John Coltrane", "Kind of Blue", "played on"),
                rel("Miles Davis", "John Coltrane", "hired"),
            ],
        },
    )
    exact = await mc.ok("search_nodes", {"project_id": project, "query": "Kind of Blue", "limit": 1})
    assert exact == {
        "entities": [ent("Kind of Blue", "album", "Best-selling jazz record of 1959")],
        "relations": [
            rel("Miles Davis", "Kind of Blue", "recorded"),
            rel("John Coltrane", "Kind of Blue", "played on"),
        ],
    }
    sax = await mc.ok("search_nodes", {"project_id": project, "query": "saxophone player", "limit": 1})
    assert names(sax) == ["John Coltrane"]
    # A relation is in the result when either end is.
    assert rel_set(sax) == {("John Coltrane", "Kind of Blue", "played on"), ("Miles Davis", "John Coltrane", "hired")}
    tennis = await mc.ok("search_nodes", {"project_id": project, "query": "tennis"})
    assert names(tennis)[0] == "Davis Cup"
    for limit in (1, 2, 3):
        result = await mc.ok("search_nodes", {"project_id": project, "query": "jazz music", "limit": limit})
        assert 1 <= len(result["entities"]) <= limit
    default = await mc.ok("search_nodes", {"project_id": project, "query": "jazz"})
    assert len(default["entities"]) <= 10
    assert len(names(default)) == len(set(names(default)))


async def test_open_nodes(mc: KG, project: str) -> None:
    await seed(mc, project)
    await mc.ok("create_entities", {"project_id": project, "entities": [ent("Loner", "thing")]})
    graph = await mc.ok("open_nodes", {"project_id": project, "names": ["Engine", "Nobody", "Ada", "Engine"]})
    # The order asked for, unknown names left out, each entity once; relations with either end in it.
    assert graph == {
        "entities": [ent("Engine", "machine"), ent("Ada", "person", "wrote the first program", "worked with Babbage")],
        "relations": [rel("Ada", "Babbage", "worked with"), rel("Babbage", "Engine", "designed")],
    }
    assert await mc.ok("open_nodes", {"project_id": project, "names": ["Loner"]}) == {
        "entities": [ent("Loner", "thing")],
        "relations": [],
    }
    assert await mc.ok("open_nodes", {"project_id": project, "names": []}) == {"entities": [], "relations": []}
    many = await mc.ok("open_nodes", {"project_id": project, "names": [f"n{i}" for i in range(999)] + ["Loner"]})
    assert names(many) == ["Loner"]


async def test_every_relation_of_a_hub_is_returned(mc: KG, project: str) -> None:
    spokes = [f"Spoke {i:03d}" for i in range(150)]
    await mc.ok(
        "create_entities", {"project_id": project, "entities": [ent("Hub", "hub"), *(ent(n, "spoke") for n in spokes)]}
    )
    relations = [rel("Hub", n, "links to") for n in spokes] + [rel(n, "Hub", "points at") for n in spokes[:60]]
    assert len((await mc.ok("create_relations", {"project_id": project, "relations": relations}))["relations"]) == 210
    expected = {(r["from"], r["to"], r["relationType"]) for r in relations}
    assert rel_set(await mc.ok("open_nodes", {"project_id": project, "names": ["Hub"]})) == expected
    assert rel_set(await mc.ok("search_nodes", {"project_id": project, "query": "Hub", "limit": 1})) == expected
    first = await mc.ok("read_graph", {"project_id": project, "limit": 1})
    assert names(first) == ["Hub"] and rel_set(first) == expected
    spoke = await mc.ok("read_graph", {"project_id": project, "limit": 1, "offset": 1})
    assert rel_set(spoke) == {("Hub", "Spoke 000", "links to"), ("Spoke 000", "Hub", "points at")}


async def test_concurrent_creates_of_one_name_make_one_entity(mc: KG, project: str) -> None:
    results: list[dict[str, Any]] = []

    async def create(i: int) -> None:
        batch = [ent("Shared", "thing", f"from caller {i}"), ent(f"Own {i}", "thing")]
        results.append(await mc.ok("create_entities", {"project_id": project, "entities": batch}))

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(create, i)
    shared = [e for r in results for e in r["entities"] if e["name"] == "Shared"]
    assert len(shared) == 1
    assert names(await mc.ok("read_graph", {"project_id": project})) == [
        "Own 0",
        *[f"Own {i}" for i in range(1, 8)],
        "Shared",
    ]
    assert (await mc.ok("open_nodes", {"project_id": project, "names": ["Shared"]}))["entities"] == shared


# --- projects --------------------------------------------------------------------------------------


async def test_project_id_is_optional_and_defaults_to_the_configured_project(mc: KG, project: str) -> None:
    name = f"Default entity {project}"
    created = await mc.ok("create_entities", {"entities": [ent(name, "note", "in the default project")]})
    assert created == {"entities": [ent(name, "note", "in the default project")]}
    try:
        assert names(await mc.ok("open_nodes", {"names": [name]})) == [name]
        assert names(await mc.ok("open_nodes", {"project_id": DEFAULT_PROJECT, "names": [name]})) == [name]
        assert names(await mc.ok("open_nodes", {"project_id": project, "names": [name]})) == []
        # The kg tools default to the same project and see the same entity.
        listed = (await mc.ok("list_entities", {"name_contains": project}))["entities"]
        assert [e["name"] for e in listed] == [name]
        # A second project with an entity of the same name is separate.
        assert (await mc.ok("create_entities", {"project_id": project, "entities": [ent(name, "other")]}))[
            "entities"
        ] == [ent(name, "other")]
        await mc.ok("create_relations", {"relations": [rel(name, name, "refers to")]})
        await mc.ok("add_observations", {"observations": [{"entityName": name, "contents": ["more"]}]})
        assert await mc.ok("open_nodes", {"project_id": project, "names": [name]}) == {
            "entities": [ent(name, "other")],
            "relations": [],
        }
        found = await mc.ok("search_nodes", {"query": name, "limit": 1})
        assert found == {
            "entities": [ent(name, "note", "in the default project", "more")],
            "relations": [rel(name, name, "refers to")],
        }
        graph = await mc.ok("read_graph", {"limit": 1000})
        assert name in names(graph)
        await mc.ok("delete_relations", {"relations": [rel(name, name, "refers to")]})
        await mc.ok("delete_observations", {"deletions": [{"entityName": name, "observations": ["more"]}]})
        assert await mc.ok("open_nodes", {"names": [name]}) == {
            "entities": [ent(name, "note", "in the default project")],
            "relations": [],
        }
    finally:
        await mc.ok("delete_entities", {"entityNames": [name]})
    assert names(await mc.ok("open_nodes", {"names": [name]})) == []
    assert names(await mc.ok("open_nodes", {"project_id": project, "names": [name]})) == [name]


# --- kg and memory-compat on the same entities -------------------------------------------------------


async def test_entities_made_here_are_kg_entities(mc: KG, project: str) -> None:
    await seed(mc, project)
    ada = await kg_id(mc, project, "Ada")
    babbage = await kg_id(mc, project, "Babbage")
    engine = await kg_id(mc, project, "Engine")
    entity = (await mc.ok("get_entity", {"project_id": project, "entity_id": ada}))["entity"]
    assert entity["name"] == "Ada" and entity["type"] == "person"
    assert entity["description"] == "" and entity["parentId"] is None
    assert [o["text"] for o in entity["observations"]] == ["wrote the first program", "worked with Babbage"]
    listed = (await mc.ok("list_entities", {"project_id": project, "type": "person"}))["entities"]
    assert sorted(e["name"] for e in listed) == ["Ada", "Babbage"]

    # Changes made through kg show in open_nodes and read_graph.
    await mc.ok("add_observation", {"project_id": project, "entity_id": ada, "observation": "a mathematician"})
    await mc.ok(
        "delete_observation",
        {"project_id": project, "entity_id": ada, "observation_id": entity["observations"][1]["id"]},
    )
    made = await mc.ok(
        "create_relationship",
        {
            "project_id": project,
            "source_id": engine,
            "target_id": ada,
            "type": "INSPIRED",
            "description": "poetical science",
        },
    )
    await mc.ok("update_entity_description", {"project_id": project, "entity_id": babbage, "description": "polymath"})
    expected_ada = ent("Ada", "person", "wrote the first program", "a mathematician")
    assert await mc.ok("open_nodes", {"project_id": project, "names": ["Ada"]}) == {
        "entities": [expected_ada],
        "relations": [rel("Ada", "Babbage", "worked with"), rel("Engine", "Ada", "INSPIRED")],
    }
    assert await snapshot(mc, project) == {
        "entities": [
            expected_ada,
            ent("Babbage", "person", "designed the Analytical Engine"),
            ent("Engine", "machine"),
        ],
        "relations": {
            ("Ada", "Babbage", "worked with"),
            ("Babbage", "Engine", "designed"),
            ("Engine", "Ada", "INSPIRED"),
        },
    }
    # A kg relationship is deleted by (from, to, type) here, and duplicates of it are skipped.
    assert (
        await mc.ok("create_relations", {"project_id": project, "relations": [rel("Engine", "Ada", "INSPIRED")]})
    ) == {"relations": []}
    await mc.ok("delete_relations", {"project_id": project, "relations": [rel("Engine", "Ada", "INSPIRED")]})
    await mc.fails(
        "delete_relationship", {"project_id": project, "relationship_id": made["relationship"]["id"]}, code=4004
    )
    # A free-text relation made here is a kg relationship (type made valid) kg can delete by id.
    rels = (await mc.ok("get_relationships", {"project_id": project, "entity_id": ada, "direction": "outgoing"}))[
        "relationships"
    ]
    assert [(r["source_id"], r["target_id"], r["type"]) for r in rels] == [(ada, babbage, "worked_with")]
    related = (await mc.ok("get_related_entities", {"project_id": project, "entity_id": babbage}))["related_entities"]
    assert {r["entity"]["name"] for r in related} == {"Ada", "Engine"}
    await mc.ok("delete_relationship", {"project_id": project, "relationship_id": rels[0]["id"]})
    assert (await snapshot(mc, project))["relations"] == {("Babbage", "Engine", "designed")}
    # delete_entities is kg's delete_entity.
    await mc.ok("delete_entities", {"project_id": project, "entityNames": ["Engine"]})
    await mc.fails("get_entity", {"project_id": project, "entity_id": engine}, code=4004)
    assert (await mc.ok("get_relationships", {"project_id": project, "entity_id": babbage}))["relationships"] == []


async def test_kg_entities_are_seen_and_changed_here(mc: KG, project: str) -> None:
    parent = (
        await mc.ok(
            "create_entity",
            {"project_id": project, "name": "src", "type": "directory", "description": "sources"},
        )
    )["entity"]
    child = (
        await mc.ok(
            "create_entity",
            {
                "project_id": project,
                "name": "src/app.py",
                "type": "file",
                "description": "the entry point",
                "observations": ["defines main()", "imports polyg"],
                "parentId": parent["id"],
            },
        )
    )["entity"]
    await mc.ok(
        "create_relationship",
        {"project_id": project, "source_id": parent["id"], "target_id": child["id"], "type": "CONTAINS"},
    )
    expected_child = ent("src/app.py", "file", "defines main()", "imports polyg")
    assert await mc.ok("open_nodes", {"project_id": project, "names": ["src/app.py"]}) == {
        "entities": [expected_child],
        "relations": [rel("src", "src/app.py", "CONTAINS")],
    }
    assert await snapshot(mc, project) == {
        "entities": [ent("src", "directory"), expected_child],
        "relations": {("src", "src/app.py", "CONTAINS")},
    }
    found = await mc.ok("search_nodes", {"project_id": project, "query": "entry point", "limit": 1})
    assert names(found) == ["src/app.py"]
    # Here, the kg entity's name is taken.
    assert await mc.ok("create_entities", {"project_id": project, "entities": [ent("src/app.py", "file")]}) == {
        "entities": []
    }

    # Changes made here show in kg.
    added = await mc.ok(
        "add_observations",
        {
            "project_id": project,
            "observations": [{"entityName": "src/app.py", "contents": ["imports polyg", "has tests"]}],
        },
    )
    assert added == {"results": [{"entityName": "src/app.py", "addedObservations": ["has tests"]}]}
    await mc.ok(
        "delete_observations",
        {"project_id": project, "deletions": [{"entityName": "src/app.py", "observations": ["defines main()"]}]},
    )
    await mc.ok("create_entities", {"project_id": project, "entities": [ent("tests/test_app.py", "file")]})
    await mc.ok(
        "create_relations", {"project_id": project, "relations": [rel("tests/test_app.py", "src/app.py", "tests")]}
    )
    got = (await mc.ok("get_entity", {"project_id": project, "entity_id": child["id"]}))["entity"]
    assert [o["text"] for o in got["observations"]] == ["imports polyg", "has tests"]
    # What memory-compat does not know about is kept: description, parent, id.
    assert got["description"] == "the entry point" and got["parentId"] == parent["id"] and got["id"] == child["id"]
    incoming = (
        await mc.ok("get_related_entities", {"project_id": project, "entity_id": child["id"], "direction": "incoming"})
    )["related_entities"]
    assert {(r["entity"]["name"], r["relationship"]["type"]) for r in incoming} == {
        ("src", "CONTAINS"),
        ("tests/test_app.py", "tests"),
    }
    # Deleting the parent by name: its relationships go, the child stays and loses its parent.
    await mc.ok("delete_entities", {"project_id": project, "entityNames": ["src"]})
    await mc.fails("get_entity", {"project_id": project, "entity_id": parent["id"]}, code=4004)
    got = (await mc.ok("get_entity", {"project_id": project, "entity_id": child["id"]}))["entity"]
    assert got["parentId"] is None
    assert (await snapshot(mc, project))["relations"] == {("tests/test_app.py", "src/app.py", "tests")}


# --- validation ----------------------------------------------------------------------------------------

LONG = "x" * 513
OK_ENTITY = ent("Fresh", "thing", "an observation")
CASES: list[tuple[str, str, dict[str, Any], int]] = [
    # (id, tool, arguments, code); project_id is added unless the case sets it
    ("ce-missing", "create_entities", {}, 4002),
    ("ce-not-a-list", "create_entities", {"entities": "Ada"}, 4002),
    ("ce-item-not-object", "create_entities", {"entities": ["Ada"]}, 4002),
    ("ce-no-type", "create_entities", {"entities": [OK_ENTITY, {"name": "Bob"}]}, 4002),
    ("ce-no-name", "create_entities", {"entities": [OK_ENTITY, {"entityType": "t"}]}, 4002),
    ("ce-name-int", "create_entities", {"entities": [OK_ENTITY, {"name": 5, "entityType": "t"}]}, 4002),
    ("ce-type-null", "create_entities", {"entities": [OK_ENTITY, {"name": "Bob", "entityType": None}]}, 4002),
    (
        "ce-obs-str",
        "create_entities",
        {"entities": [OK_ENTITY, {"name": "B", "entityType": "t", "observations": "o"}]},
        4002,
    ),
    (
        "ce-obs-int",
        "create_entities",
        {"entities": [OK_ENTITY, {"name": "B", "entityType": "t", "observations": [1]}]},
        4002,
    ),
    ("ce-extra-field", "create_entities", {"entities": [OK_ENTITY, {**ent("B"), "id": "x"}]}, 4002),
    ("ce-extra-arg", "create_entities", {"entities": [OK_ENTITY], "overwrite": True}, 4002),
    ("ce-empty-name", "create_entities", {"entities": [OK_ENTITY, ent("")]}, 4002),
    ("ce-blank-name", "create_entities", {"entities": [OK_ENTITY, ent("  \n")]}, 4002),
    ("ce-empty-type", "create_entities", {"entities": [OK_ENTITY, ent("B", "")]}, 4002),
    ("ce-empty-obs", "create_entities", {"entities": [OK_ENTITY, ent("B", "t", "fine", "")]}, 4002),
    ("ce-long-name", "create_entities", {"entities": [OK_ENTITY, ent(LONG)]}, 4013),
    ("ce-1001", "create_entities", {"entities": [ent(f"E{i}") for i in range(1001)]}, 4013),
    ("ce-1001-obs", "create_entities", {"entities": [ent("B", "t", *[f"o{i}" for i in range(1001)])]}, 4013),
    ("cr-missing", "create_relations", {}, 4002),
    ("cr-no-type", "create_relations", {"relations": [{"from": "Ada", "to": "Babbage"}]}, 4002),
    ("cr-no-from", "create_relations", {"relations": [{"to": "Ada", "relationType": "knows"}]}, 4002),
    ("cr-from_", "create_relations", {"relations": [{"from_": "Ada", "to": "Babbage", "relationType": "k"}]}, 4002),
    ("cr-to-int", "create_relations", {"relations": [{"from": "Ada", "to": 1, "relationType": "k"}]}, 4002),
    ("cr-extra", "create_relations", {"relations": [{**rel("Ada", "Babbage", "k"), "weight": 1}]}, 4002),
    ("cr-empty-type", "create_relations", {"relations": [rel("Ada", "Babbage", "k"), rel("Ada", "Babbage", "")]}, 4002),
    ("cr-empty-from", "create_relations", {"relations": [rel("Ada", "Babbage", "k"), rel("", "Babbage", "k")]}, 4002),
    ("cr-unknown", "create_relations", {"relations": [rel("Ada", "Babbage", "k"), rel("Ada", "Nobody", "k")]}, 4004),
    ("cr-1001", "create_relations", {"relations": [rel("Ada", "Babbage", f"k{i}") for i in range(1001)]}, 4013),
    ("ao-missing", "add_observations", {}, 4002),
    ("ao-no-contents", "add_observations", {"observations": [{"entityName": "Ada"}]}, 4002),
    ("ao-contents-str", "add_observations", {"observations": [{"entityName": "Ada", "contents": "x"}]}, 4002),
    ("ao-extra", "add_observations", {"observations": [{"entityName": "Ada", "contents": [], "x": 1}]}, 4002),
    ("ao-empty-name", "add_observations", {"observations": [{"entityName": "", "contents": ["x"]}]}, 4002),
    (
        "ao-empty-obs",
        "add_observations",
        {"observations": [{"entityName": "Ada", "contents": ["x"]}, {"entityName": "Ada", "contents": [""]}]},
        4002,
    ),
    (
        "ao-unknown",
        "add_observations",
        {"observations": [{"entityName": "Ada", "contents": ["x"]}, {"entityName": "Nobody", "contents": ["y"]}]},
        4004,
    ),
    ("ao-1001", "add_observations", {"observations": [{"entityName": "Ada", "contents": ["x"]}] * 1001}, 4013),
    ("ao-1001-contents", "add_observations", {"observations": [{"entityName": "Ada", "contents": ["x"] * 1001}]}, 4013),
    ("de-missing", "delete_entities", {}, 4002),
    ("de-str", "delete_entities", {"entityNames": "Ada"}, 4002),
    ("de-int", "delete_entities", {"entityNames": ["Babbage", 1]}, 4002),
    ("de-1001", "delete_entities", {"entityNames": ["Ada"] + [f"n{i}" for i in range(1000)]}, 4013),
    ("do-missing", "delete_observations", {}, 4002),
    ("do-no-obs", "delete_observations", {"deletions": [{"entityName": "Ada"}]}, 4002),
    ("do-wrong-key", "delete_observations", {"deletions": [{"entityName": "Ada", "contents": ["x"]}]}, 4002),
    (
        "do-1001",
        "delete_observations",
        {"deletions": [{"entityName": "Ada", "observations": ["wrote the first program"]}] * 1001},
        4013,
    ),
    ("dr-missing", "delete_relations", {}, 4002),
    ("dr-no-to", "delete_relations", {"relations": [{"from": "Ada", "relationType": "worked with"}]}, 4002),
    ("dr-1001", "delete_relations", {"relations": [rel("Ada", "Babbage", "worked with")] * 1001}, 4013),
    ("rg-limit-0", "read_graph", {"limit": 0}, 4002),
    ("rg-limit-1001", "read_graph", {"limit": 1001}, 4002),
    ("rg-limit-str", "read_graph", {"limit": "10"}, 4002),
    ("rg-offset-neg", "read_graph", {"offset": -1}, 4002),
    ("rg-extra", "read_graph", {"query": "x"}, 4002),
    ("sn-missing", "search_nodes", {}, 4002),
    ("sn-empty", "search_nodes", {"query": "  "}, 5001),
    ("sn-int", "search_nodes", {"query": 5}, 4002),
    ("sn-limit-0", "search_nodes", {"query": "Ada", "limit": 0}, 4002),
    ("sn-limit-101", "search_nodes", {"query": "Ada", "limit": 101}, 4002),
    ("on-missing", "open_nodes", {}, 4002),
    ("on-str", "open_nodes", {"names": "Ada"}, 4002),
    ("on-int", "open_nodes", {"names": [1]}, 4002),
    ("on-1001", "open_nodes", {"names": [f"n{i}" for i in range(1001)]}, 4013),
    ("project-invalid", "create_entities", {"project_id": "no spaces!", "entities": [OK_ENTITY]}, 4002),
    ("project-int", "read_graph", {"project_id": 7}, 4002),
    ("project-empty", "open_nodes", {"project_id": "", "names": ["Ada"]}, 4002),
]


@pytest.fixture(scope="module")
async def seeded(mc: KG) -> tuple[str, dict[str, Any]]:
    """One project seeded for all the invalid calls (none of which may change it), and its contents."""
    project = "compat_refused"
    await seed(mc, project)
    return project, await snapshot(mc, project)


@pytest.mark.parametrize(("tool", "args", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_invalid_calls_fail_and_write_nothing(
    mc: KG, seeded: tuple[str, dict[str, Any]], tool: str, args: dict[str, Any], code: int
) -> None:
    project, before = seeded
    result = await mc.fails(tool, {"project_id": project, **args}, code=code)
    assert result.text.startswith("Error: ")
    assert await snapshot(mc, project) == before
