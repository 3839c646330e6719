"""The semantic graph through the MCP client: concepts with similarity links kept as data,
concepts representing entities, semantic search (k results, threshold, events among the hits),
and the team-structure scenario read through the entity graph."""

from __future__ import annotations

import pytest

from tests.tools.memory.conftest import Memory, seed
from tests.tools.memory.scenarios import team_structure

pytestmark = pytest.mark.anyio


async def test_similar_concepts_are_linked_with_their_score(mem: Memory) -> None:
    await mem.ok("add_concept", name="caching", description="keeping copies of data close to where it is read")
    await mem.ok("add_concept", name="gardening", description="growing vegetables and flowers")
    cache = await mem.ok("add_concept", name="cache", description="a store of copies of data kept for fast reads")
    assert cache["created"] is True
    [similar] = cache["similar"]
    assert similar["name"] == "caching" and 0.6 <= similar["score"] <= 1.0
    stats = (await mem.stats())["graphs"]["semantic"]
    assert stats["concepts"] == 3 and stats["similar_to"] == 1
    # The link is data: get_entity shows it from either end, with its score.
    caching = await mem.ok("get_entity", name="caching")
    [link] = [r for r in caching["relationships"] if r["type"] == "SIMILAR_TO"]
    assert link["entity"]["name"] == "cache" and link["score"] == pytest.approx(similar["score"])
    # Adding the same concept again changes nothing but what it says.
    again = await mem.ok("add_concept", name="cache", description="a store of copies of data kept for fast reads")
    assert again["created"] is False and again["concept"]["id"] == cache["concept"]["id"]
    assert (await mem.stats())["graphs"]["semantic"]["similar_to"] == 1


async def test_concepts_represent_entities(mem: Memory) -> None:
    await mem.ok("add_entity", name="redis-cluster", entity_type="Service")
    made = await mem.ok("add_concept", name="in-memory storage", represents=["Redis-Cluster"])
    assert made["represents"] == ["Redis-Cluster"]
    redis = await mem.ok("get_entity", name="redis-cluster")
    assert [(r["type"], r["direction"], r["entity"]["name"]) for r in redis["relationships"]] == [
        ("REPRESENTS", "incoming", "in-memory storage")
    ]
    before = await mem.stats()
    await mem.fails("add_concept", name="ghosts", represents=["no-such-service"], code=4004)
    assert await mem.stats() == before


async def test_search_semantic_finds_entities_concepts_and_events_above_the_threshold(mem: Memory) -> None:
    await mem.ok("add_entity", name="PostgreSQL", entity_type="Database", description="relational database server")
    await mem.ok("add_entity", name="Grafana", entity_type="Tool", description="dashboards for metrics")
    await mem.ok("add_concept", name="database replication", description="copying data between database servers")
    await mem.ok("add_event", description="Primary database failed over to the replica", occurred_at="2026-01-03")
    await mem.ok("add_event", description="Team lunch at the pizza place", occurred_at="2026-01-04")
    found = await mem.ok("search_semantic", query="database failover and replicas", limit=10)
    kinds = {r["text"]: r["kind"] for r in found["results"]}
    assert kinds.get("Primary database failed over to the replica") == "event"
    assert kinds.get("database replication") == "concept"
    assert "Team lunch at the pizza place" not in kinds
    assert all(r["similarity"] is None or r["similarity"] >= 0.3 for r in found["results"])
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True)
    top = await mem.ok("search_semantic", query="database failover and replicas", limit=1)
    assert len(top["results"]) == 1 and top["results"][0]["id"] == found["results"][0]["id"]
    strict = await mem.ok("search_semantic", query="database failover and replicas", threshold=0.95)
    assert strict["results"] == []
    exact = await mem.ok("search_semantic", query="Grafana", threshold=0.99)
    assert [r["text"] for r in exact["results"]] == ["Grafana"]  # the name itself always counts
    no_events = await mem.ok("search_semantic", query="database failover and replicas", include_events=False)
    assert all(r["kind"] != "event" for r in no_events["results"])
    await mem.fails("search_semantic", query="   ", code=5001)


async def test_search_k_nearest(mem: Memory) -> None:
    for i in range(15):
        await mem.ok("add_entity", name=f"kafka-broker-{i}", entity_type="Broker", description="kafka message broker")
    ten = await mem.ok("search_semantic", query="kafka broker", limit=10, include_events=False)
    assert len(ten["results"]) == 10
    assert all(r["text"].startswith("kafka-broker-") for r in ten["results"])


async def test_team_structure_scenario(mem: Memory) -> None:
    await seed(mem, team_structure())
    stats = (await mem.stats())["graphs"]
    assert stats["entity"]["entities"] == 20
    assert stats["entity"]["relationship_types"] == {"leads": 2, "member_of": 16, "reports_to": 16}
    assert stats["temporal"]["events"] == 5
    team = await mem.ok("get_entity", name="platform", limit=100)
    members = sorted(r["entity"]["name"] for r in team["relationships"] if r["relationship"] == "member_of")
    assert members == [f"Engineer {i:02d}" for i in range(0, 16, 2)]
    assert [r["entity"]["name"] for r in team["relationships"] if r["relationship"] == "leads"] == ["Lead Platform"]
    assert len(team["events"]) == 5  # "Team offsite ... of Platform" names the team
    lead = await mem.ok("get_entity", name="Lead Payments", limit=3)
    assert lead["has_more"] is True and len(lead["relationships"]) == 3
