"""The `graphrag` toolset (spec 004) through the real MCP client over stdio (that it answers the
same over Streamable HTTP is tests/tools/test_transport_matrix.py's), with the real MiniLM
embedder and an embedded FalkorDB: the spec's usage examples (the research query, causal chains
inbound and outbound, building a graph by hand then extracting, a cluster subgraph), scores
checked against their definition, and errors. Entities and observations are written with the
`kg` toolset, as a user of both would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

TOOLS = {
    "graph_enhanced_search",
    "get_entity_neighbors",
    "add_entity_relationship",
    "get_graph_statistics",
    "extract_entity_relationships",
    "extract_all_relationships",
    "build_local_graph",
}
READ_ONLY = {"graph_enhanced_search", "get_entity_neighbors", "get_graph_statistics", "build_local_graph"}
RESULT_KEYS = {
    "entity_id",
    "entity_name",
    "entity_type",
    "content",
    "vector_score",
    "vector_similarity",
    "graph_score",
    "combined_score",
    "neighbors",
    "neighbor_count",
}


@pytest.fixture(scope="module")
async def server(servers_root: Path) -> AsyncIterator[KG]:
    async with kg_session("stdio", servers_root / "graphrag-stdio", "--toolsets", "kg,graphrag") as kg:
        yield kg


@pytest.fixture
def g(server: KG, project: str) -> Graph:
    return Graph(server, project)


class Graph:
    """Shorthands in one project."""

    def __init__(self, kg: KG, project: str) -> None:
        self.kg = kg
        self.project = project

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        return await self.kg.ok(tool, {"project_id": self.project, **args})

    async def fails(self, tool: str, code: int, **args: Any) -> str:
        return (await self.kg.fails(tool, {"project_id": self.project, **args}, code=code)).text

    async def entity(self, name: str, *observations: str, type_: str = "concept", description: str = "") -> str:
        made = await self.ok(
            "create_entity", name=name, type=type_, description=description, observations=list(observations)
        )
        return str(made["entity"]["id"])

    async def link(self, source: str, target: str, relation: str, **extra: Any) -> dict[str, Any]:
        return await self.ok(
            "add_entity_relationship", source_id=source, target_id=target, relation_type=relation, **extra
        )


async def test_tools_are_listed_with_annotations_and_string_ids(server: KG) -> None:
    listed = {t.name: t for t in (await server.client.list_tools()).tools}
    assert TOOLS <= set(listed)
    for name in TOOLS:
        tool = listed[name]
        assert tool.annotations is not None and tool.output_schema is not None
        assert bool(tool.annotations.read_only_hint) == (name in READ_ONLY), name
    for name in ("graph_enhanced_search", "get_entity_neighbors", "add_entity_relationship", "build_local_graph"):
        assert "string ids" in (listed[name].description or ""), name


def check_scores(result: dict[str, Any], vector_weight: float, graph_weight: float) -> None:
    combined = [r["combined_score"] for r in result["results"]]
    assert combined == sorted(combined, reverse=True)
    for r in result["results"]:
        assert set(r) == RESULT_KEYS
        assert 0.0 <= r["vector_score"] <= 1.0 and 0.0 <= r["graph_score"] <= 1.0
        expected = vector_weight * r["vector_score"] + graph_weight * r["graph_score"]
        assert r["combined_score"] == pytest.approx(expected, abs=2e-6), r


async def test_research_query_expands_through_the_graph(g: Graph) -> None:
    """Spec example 1: hybrid hits, connected concepts two hops out, combined scores."""
    consolidation = await g.entity(
        "Memory Consolidation",
        "Memory consolidation turns short-term memories into long-term storage during sleep.",
        description="How memories are stabilised after learning.",
    )
    replay = await g.entity("Hippocampal Replay", "Replay of neural sequences during sleep.")
    sleep = await g.entity("Slow-Wave Sleep", "The deepest stage of non-REM sleep.")
    cortex = await g.entity("Neocortex", "Outer layer of the brain.")
    await g.entity("Gardening", "Tomatoes need sun and water.")
    await g.link(replay, consolidation, "implements", weight=0.9)
    await g.link(replay, sleep, "part_of", weight=0.8)
    await g.link(sleep, cortex, "relates_to", weight=0.5)

    found = await g.ok(
        "graph_enhanced_search",
        query="memory consolidation patterns",
        depth=2,
        include_neighbors=True,
        vector_weight=0.6,
        graph_weight=0.4,
    )
    assert found["success"] is True and found["query"] == "memory consolidation patterns"
    assert found["search_params"] == {
        "depth": 2,
        "vector_weight": 0.6,
        "graph_weight": 0.4,
        "limit": 10,
        "include_neighbors": True,
    }
    assert found["result_count"] == len(found["results"])
    check_scores(found, 0.6, 0.4)
    by_id = {r["entity_id"]: r for r in found["results"]}
    top = found["results"][0]
    assert top["entity_id"] == consolidation
    assert top["content"] == "How memories are stabilised after learning."
    assert top["vector_score"] == 1.0 and top["vector_similarity"] is not None
    assert top["neighbors"][0] == {
        "entity_id": replay,
        "name": "Hippocampal Replay",
        "entity_type": "concept",
        "relation": "implements",
        "weight": 0.9,
        "depth": 1,
        "direction": "inbound",
    }
    assert [(n["entity_id"], n["depth"]) for n in top["neighbors"]] == [(replay, 1), (sleep, 2)]
    assert top["neighbor_count"] == 2
    # Two hops from the hit, found through the graph only.
    assert cortex in by_id
    assert by_id[cortex]["vector_score"] == 0.0 and by_id[cortex]["graph_score"] > 0.0
    # Depth is clamped to 1-3.
    shallow = await g.ok("graph_enhanced_search", query="memory consolidation patterns", depth=0)
    assert shallow["search_params"]["depth"] == 1
    assert (await g.ok("graph_enhanced_search", query="memory consolidation", depth=9))["search_params"]["depth"] == 3


async def test_connected_entity_outranks_isolated_one_only_with_graph_weight(g: Graph) -> None:
    text = "Quantum widget calibration procedure."
    first = await g.entity("Unit Alpha", text, type_="device")
    second = await g.entity("Unit Beta", text, type_="device")
    query = "quantum widget calibration"
    plain = await g.ok("graph_enhanced_search", query=query, vector_weight=1.0, graph_weight=0.0, depth=1)
    ranked = [r["entity_id"] for r in plain["results"]]
    assert set(ranked[:2]) == {first, second}
    leader, other = ranked[0], ranked[1]
    sims = {r["entity_id"]: r["vector_similarity"] for r in plain["results"]}
    assert sims[leader] == pytest.approx(sims[other], abs=1e-6)  # equal similarity
    # The search's runner-up gets four neighbours; the leader stays isolated.
    for name in ("Sunflower", "Glacier", "Violin", "Harbour"):
        await g.link(other, await g.entity(name, f"{name} facts.", type_="misc"), "relates_to", weight=1.0)

    vector_only = await g.ok("graph_enhanced_search", query=query, vector_weight=1.0, graph_weight=0.0, depth=1)
    check_scores(vector_only, 1.0, 0.0)
    assert [r["entity_id"] for r in vector_only["results"][:2]] == [leader, other]

    blended = await g.ok("graph_enhanced_search", query=query, vector_weight=0.5, graph_weight=0.5, depth=1)
    check_scores(blended, 0.5, 0.5)
    scores = {r["entity_id"]: r for r in blended["results"]}
    assert blended["results"][0]["entity_id"] == other
    assert scores[other]["graph_score"] > scores[leader]["graph_score"]
    assert scores[other]["vector_score"] < scores[leader]["vector_score"] == 1.0
    assert scores[other]["neighbor_count"] == 4 and scores[leader]["neighbor_count"] == 0


async def test_bad_weights_and_queries_are_refused(g: Graph) -> None:
    await g.entity("Anything", "Some text.")
    for weights in ({"vector_weight": 1.5}, {"graph_weight": -0.1}, {"vector_weight": 0.0, "graph_weight": 0.0}):
        text = await g.fails("graph_enhanced_search", 4002, query="text", **weights)
        assert "weight" in text
    await g.fails("graph_enhanced_search", 5001, query="   ")
    await g.fails("graph_enhanced_search", 4002, query="text", limit=0)


async def test_causal_chains_inbound_and_outbound(g: Graph) -> None:
    """Spec example 2: what causes memory fragmentation, and what it causes (two hops)."""
    fragmentation = await g.entity("Memory fragmentation", "Free memory split into small blocks.")
    allocation = await g.entity("Frequent allocation")
    uptime = await g.entity("Long uptime")
    gc = await g.entity("Slow garbage collection")
    spikes = await g.entity("Latency spikes")
    allocator = await g.entity("Slab allocator")
    await g.link(allocation, fragmentation, "causes", weight=0.9)
    await g.link(uptime, allocation, "causes", weight=0.6)
    await g.link(fragmentation, gc, "causes", weight=0.8)
    await g.link(gc, spikes, "causes", weight=0.2)
    await g.link(fragmentation, allocator, "uses", weight=1.0)

    causes = await g.ok(
        "get_entity_neighbors", entity_id=fragmentation, relation_type="causes", direction="inbound", depth=2
    )
    assert causes["entity_id"] == fragmentation and causes["neighbor_count"] == 2
    assert causes["search_params"] == {
        "relation_type": "causes",
        "direction": "inbound",
        "depth": 2,
        "min_weight": 0.0,
        "limit": 50,
    }
    assert causes["neighbors"] == [
        {
            "neighbor_id": allocation,
            "neighbor_name": "Frequent allocation",
            "entity_type": "concept",
            "relation_type": "causes",
            "weight": 0.9,
            "is_causal": True,
            "direction": "inbound",
            "depth": 1,
            "via_id": fragmentation,
        },
        {
            "neighbor_id": uptime,
            "neighbor_name": "Long uptime",
            "entity_type": "concept",
            "relation_type": "causes",
            "weight": 0.6,
            "is_causal": True,
            "direction": "inbound",
            "depth": 2,
            "via_id": allocation,
        },
    ]
    effects = await g.ok(
        "get_entity_neighbors", entity_id=fragmentation, relation_type="causes", direction="outbound", depth=2
    )
    assert [(n["neighbor_id"], n["depth"], n["direction"]) for n in effects["neighbors"]] == [
        (gc, 1, "outbound"),
        (spikes, 2, "outbound"),
    ]
    strong = await g.ok(
        "get_entity_neighbors",
        entity_id=fragmentation,
        relation_type="causes",
        direction="outbound",
        depth=2,
        min_weight=0.3,
    )
    assert [n["neighbor_id"] for n in strong["neighbors"]] == [gc]
    everything = await g.ok("get_entity_neighbors", entity_id=fragmentation)
    assert {(n["neighbor_id"], n["relation_type"], n["is_causal"]) for n in everything["neighbors"]} == {
        (allocation, "causes", True),
        (gc, "causes", True),
        (allocator, "uses", False),
    }
    limited = await g.ok("get_entity_neighbors", entity_id=fragmentation, limit=1)
    assert limited["neighbor_count"] == 1
    await g.fails("get_entity_neighbors", 4002, entity_id=fragmentation, depth=4)
    await g.fails("get_entity_neighbors", 4002, entity_id=fragmentation, min_weight=2.0)
    await g.fails("get_entity_neighbors", 4004, entity_id="ent_0000000000000000")
    # The same causal link the other toolsets see: a CAUSES relationship.
    rels = await g.ok("get_relationships", entity_id=fragmentation, direction="incoming")
    assert [(r["source_id"], r["type"]) for r in rels["relationships"]] == [(allocation, "CAUSES")]


async def test_build_by_hand_then_extract_then_check_health(g: Graph) -> None:
    """Spec example 3: a relationship by hand, extraction from text, statistics."""
    trap = await g.entity(
        "TRAP Framework",
        "TRAP Framework implements Sequential Thinking.",
        "It uses Claude and depends on the Planner.",
        "It does not use Redis.",
        "It relates to Unknown Gadget.",
    )
    thinking = await g.entity("Sequential Thinking", "Sequential Thinking is used by the Agent Loop.")
    claude = await g.entity("Claude")
    planner = await g.entity("planner")  # resolved in any case
    await g.entity("Redis")
    loop = await g.entity("Agent Loop")
    dup_a = await g.entity("Agent Loop")  # an exact-name duplicate
    lonely = await g.entity("Lonely Note")

    manual = await g.link(
        trap, thinking, "implements", weight=0.9, context={"discovered_by": "code_review", "date": "2025-11-28"}
    )
    assert manual == {
        "success": True,
        "relationship_id": manual["relationship_id"],
        "source_id": trap,
        "target_id": thinking,
        "relation_type": "implements",
        "weight": 0.9,
        "is_causal": False,
        "context": {"discovered_by": "code_review", "date": "2025-11-28"},
        "created": True,
    }
    assert manual["relationship_id"].startswith("rel_") and manual["relationship_id"].endswith("_IMPLEMENTS")

    one = await g.ok("extract_entity_relationships", entity_id=trap)
    assert one["success"] is True and one["entity_id"] == trap and one["extracted_by"] == "rules"
    found = {(r["relation_type"], r["target_id"], r["target_name"], r["created"]) for r in one["relationships"]}
    assert found == {
        ("implements", thinking, "Sequential Thinking", False),
        ("uses", claude, "Claude", True),
        ("depends_on", planner, "planner", True),
    }
    assert one["relationships_found"] == 3 and one["relationships_created"] == 2
    assert [(u["text"], u["relation_type"], u["role"]) for u in one["unresolved"]] == [
        ("Unknown Gadget", "relates_to", "object")
    ]
    assert one["negated"] == 1

    everything = await g.ok("extract_all_relationships", limit=100)
    stats = everything["statistics"]
    assert stats["total_processed"] == 7  # every entity but the TRAP Framework, done above
    assert stats["total_relationships"] == 1 and stats["entities_with_relationships"] == 1
    assert stats["remaining"] == 0
    assert everything["summary"] == "Processed 7 entities, found 1 relationships in 1 entities"
    (listed,) = everything["entities"]
    assert listed["entity_id"] == thinking
    (rel,) = listed["relationships"]
    assert (rel["source_id"], rel["relation_type"], rel["target_id"]) in {
        (loop, "uses", thinking),
        (dup_a, "uses", thinking),
    }
    again = await g.ok("extract_all_relationships")
    assert again["statistics"]["total_processed"] == 0

    health = await g.ok("get_graph_statistics")
    st = health["statistics"]
    assert st["entities"] == 8 and st["relationships"] == 4
    assert st["relationship_types"] == [
        {"relation_type": "uses", "count": 2},
        {"relation_type": "depends_on", "count": 1},
        {"relation_type": "implements", "count": 1},
    ]
    assert st["avg_relationships_per_entity"] == 0.5
    assert st["causal_relationships"] == 0
    assert st["duplicate_names"] == [
        {"name": "Agent Loop", "count": 2, "entity_ids": st["duplicate_names"][0]["entity_ids"]}
    ]
    assert set(st["duplicate_names"][0]["entity_ids"]) == {loop, dup_a}
    assert st["orphan_entities"] == 3  # Redis, one Agent Loop, the lonely note
    assert st["communities"] == 1 and st["largest_community"] == 5
    assert st["vector_index_status"] in {"operational", "building"}
    assert 0 <= st["entities_without_vectors"] <= 8
    assert health["health"] == {
        "entities": 8,
        "relationships": 4,
        "avg_relationships_per_entity": 0.5,
        "causal_relationships": 0,
        "vector_index_status": st["vector_index_status"],
    }
    assert lonely not in {r["target_id"] for r in one["relationships"]}


async def test_cluster_subgraph(g: Graph) -> None:
    """Spec example 4: the top entities for a topic, then their subgraph."""
    hub = await g.entity("Self-Improvement Loop", "An algorithm that improves its own algorithms.")
    ids = [hub]
    for i, name in enumerate(("Reflection Step", "Critique Model", "Reward Signal")):
        node = await g.entity(name, f"Part {i} of self-improvement algorithms.")
        await g.link(node, hub, "part_of", weight=0.7)
        ids.append(node)
    outside = await g.entity("Bread Recipe", "Flour, water, salt.")
    await g.link(outside, hub, "relates_to", weight=0.1)

    search = await g.ok("graph_enhanced_search", query="self-improvement algorithms", limit=5)
    entity_ids = [r["entity_id"] for r in search["results"]]
    assert set(ids) <= set(entity_ids)
    sub = await g.ok("build_local_graph", entity_ids=[*ids, "ent_missing"])
    graph = sub["graph"]
    assert sub["success"] is True
    assert [n["id"] for n in graph["nodes"]] == ids
    assert graph["node_count"] == 4 and graph["edge_count"] == 3 and graph["missing"] == ["ent_missing"]
    assert {(e["from_entity_id"], e["to_entity_id"], e["relation_type"]) for e in graph["edges"]} == {
        (ids[1], hub, "part_of"),
        (ids[2], hub, "part_of"),
        (ids[3], hub, "part_of"),
    }
    tiers = {n["id"]: (n["tier"], n["salience_score"]) for n in graph["nodes"]}
    assert tiers[hub][0] == "core"  # most linked in its project, either way
    assert all(0.0 <= s <= 1.0 for _, s in tiers.values())
    assert all(tiers[hub][1] > tiers[i][1] for i in ids[1:])
    await g.fails("build_local_graph", 4002, entity_ids=[f"ent_{i}" for i in range(201)])
    await g.fails("build_local_graph", 4002, entity_ids=[])


async def test_relationship_input_errors(g: Graph) -> None:
    a = await g.entity("A one")
    b = await g.entity("B two")
    await g.fails("add_entity_relationship", 4002, source_id=a, target_id=b, relation_type="uses", weight=1.2)
    await g.fails("add_entity_relationship", 4002, source_id=a, target_id=b, relation_type="no spaces")
    await g.fails("add_entity_relationship", 4002, source_id=a, target_id=b, relation_type="has_observation")
    await g.fails("add_entity_relationship", 4004, source_id=a, target_id="ent_0000000000000000", relation_type="uses")
    await g.fails("extract_entity_relationships", 4004, entity_id="ent_0000000000000000")
    causal = await g.link(a, b, "causes", weight=0.4)
    assert causal["is_causal"] is True and causal["relation_type"] == "causes"
    custom = await g.link(a, b, "MENTORS", is_causal=True)
    assert (custom["relation_type"], custom["is_causal"], custom["context"]) == ("MENTORS", True, None)


async def test_entities_are_named_by_id_or_by_name(g: Graph) -> None:
    """Every tool that takes an entity id takes the entity's name too (exact, then in any case),
    resolved as the memory toolset resolves names; an unknown name is still not found."""
    ada = await g.entity("Ada Lovelace", "Ada worked with Charles Babbage.", type_="person")
    charles = await g.entity("Charles Babbage", type_="person")
    engine = await g.entity("Analytical Engine", type_="machine")
    by_name = await g.link("Ada Lovelace", "analytical engine", "programmed", weight=0.9)
    assert (by_name["source_id"], by_name["target_id"]) == (ada, engine)
    await g.link(charles, engine, "designed")
    near = await g.ok("get_entity_neighbors", entity_id="charles babbage")
    assert near["entity_id"] == charles
    assert [n["neighbor_id"] for n in near["neighbors"]] == [engine]
    local = (await g.ok("build_local_graph", entity_ids=["Ada Lovelace", engine, "Nobody Here"]))["graph"]
    assert sorted(n["id"] for n in local["nodes"]) == sorted([ada, engine])
    assert local["missing"] == ["Nobody Here"]
    extracted = await g.ok("extract_entity_relationships", entity_id="Ada Lovelace")
    assert extracted["entity_id"] == ada
    await g.fails("get_entity_neighbors", 4004, entity_id="Nobody Here")
    await g.fails("add_entity_relationship", 4004, source_id="Ada Lovelace", target_id="Nobody", relation_type="uses")
