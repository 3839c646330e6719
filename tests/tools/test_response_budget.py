"""Every toolset's results stay within the response budget and say what they left out (issue 26:
"a response budget for every result, as the other toolsets have"), through the real MCP client.

Each test fills a project with large texts, so that the tool's whole answer would be several
times the budget, and checks the answer is under `limits.RESPONSE_BUDGET` characters of JSON and
tells, in its own fields, what was left out and how to see it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from polyg.core import limits
from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio
HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
LONG = "n" * (limits.MAX_NAME - 12)  # names of about 500 characters


@pytest.fixture(scope="module")
async def server(servers_root: Path) -> AsyncIterator[KG]:
    toolsets = "memory-compat,memory,knowledge,graphrag,retrieval"
    async with kg_session("stdio", servers_root / "response-budget", "--toolsets", toolsets, **HASHING) as kg:
        yield kg


def within_budget(result: dict[str, Any]) -> None:
    assert limits.size(result) <= limits.RESPONSE_BUDGET, limits.size(result)


async def hub_and_spokes(server: KG, project: str, spokes: int) -> list[str]:
    """An entity `hub` linked to `spokes` entities of 500-character names; their names."""
    names = [f"{i:03d} {LONG}" for i in range(spokes)]
    entities = [{"name": n, "entityType": "thing", "observations": []} for n in ["hub", *names]]
    await server.ok("create_entities", {"project_id": project, "entities": entities})
    relations = [{"from": "hub", "to": n, "relationType": "links"} for n in names]
    await server.ok("create_relations", {"project_id": project, "relations": relations})
    return names


async def test_export_graph_pages_are_cut_to_the_budget_and_page_on(server: KG, project: str) -> None:
    p = {"project_id": project}
    big = "w" * 4_000  # 40 entities x 4 observations of 4,000 characters: 640k characters
    entities = [
        {"name": f"big {i:02d}", "entityType": "thing", "observations": [f"{j} {big}" for j in range(4)]}
        for i in range(40)
    ]
    await server.ok("create_entities", {**p, "entities": entities})
    for fmt, key in (("json", "items"), ("cypher", "statements")):
        page = await server.ok("export_graph", {**p, "format": fmt})
        within_budget(page)
        shown = page["nodes"] + page["edges"]
        assert page["next_offset"] == shown and f"offset {shown}" in page["note"]
        seen = json.dumps(page[key]).count(big)
        while page["next_offset"] is not None:
            page = await server.ok("export_graph", {**p, "format": fmt, "offset": page["next_offset"]})
            within_budget(page)
            seen += json.dumps(page[key]).count(big)
        assert seen == 160, fmt  # every observation, once


async def test_query_timeline_is_cut_to_the_budget_and_pages_on(server: KG, project: str) -> None:
    p = {"project_id": project}
    for day in range(1, 21):  # 20 events of 10,000 characters
        event = {**p, "description": f"{day} " + "e" * 10_000, "occurred_at": f"2026-01-{day:02d}T10:00:00Z"}
        await server.ok("add_event", {**event, "find_entities": False})
    window = {**p, "from": "2026-01-01", "to": "2026-01-31", "limit": 50}
    timeline = await server.ok("query_timeline", window)
    within_budget(timeline)
    shown = len(timeline["items"])
    assert 0 < shown < 20 and timeline["has_more"] and timeline["next_offset"] == shown
    assert "left out" in timeline["note"]
    rest = await server.ok("query_timeline", {**window, "offset": shown})
    within_budget(rest)
    assert rest["items"][0]["event"]["description"].startswith(f"{shown + 1} ")


async def test_get_facts_is_cut_to_the_budget_and_pages_on(server: KG, project: str) -> None:
    p = {"project_id": project}
    subject = f"subject {LONG}"
    for i in range(130):  # 130 facts naming two 500-character entities each
        fact = {"subject": subject, "predicate": "knows", "object": f"{i:03d} {LONG}", "single_valued": False}
        await server.ok("add_fact", {**p, **fact})
    facts = await server.ok("get_facts", {**p, "subject": subject, "limit": 1000})
    within_budget(facts)
    shown = len(facts["facts"])
    assert 0 < shown < 130 and facts["has_more"] and facts["next_offset"] == shown
    assert f"offset {shown}" in facts["note"]
    rest = await server.ok("get_facts", {**p, "subject": subject, "limit": 1000, "offset": shown})
    assert len(rest["facts"]) == 130 - shown and not rest["has_more"]


async def test_graphrag_neighbours_and_local_graph_are_cut_to_the_budget(server: KG, project: str) -> None:
    p = {"project_id": project}
    names = await hub_and_spokes(server, project, 250)
    neighbours = await server.ok("get_entity_neighbors", {**p, "entity_id": "hub", "limit": 1000})
    within_budget(neighbours)
    shown = len(neighbours["neighbors"])
    assert neighbours["omitted"] == 250 - shown > 0 and neighbours["neighbor_count"] == shown
    assert neighbours["truncated"] and "left out" in neighbours["note"]

    local = await server.ok("build_local_graph", {**p, "entity_ids": ["hub", *names[:199]]})
    within_budget(local)
    graph = local["graph"]
    shown = len(graph["nodes"]) + len(graph["edges"])
    assert graph["omitted"] == 200 + 199 - shown > 0 and graph["truncated"] and "left out" in graph["note"]
    assert graph["nodes"][0]["name"] == "hub"


async def test_graph_retrieve_is_cut_to_the_budget(server: KG, project: str) -> None:
    p = {"project_id": project}
    words = " ".join(f"budget{i} retrieval chunk text" for i in range(12_000))  # about 400k characters
    await server.ok("add_article", {**p, "title": "Long", "authors": ["A. Writer"], "text": f"# Long\n\n{words}"})
    found = await server.ok("graph_retrieve", {**p, "query": "retrieval chunk text", "limit": 100})
    within_budget(found)
    shown = len(found["results"])
    assert found["omitted"] > 0 and found["total_results"] == shown and "left out" in found["note"]


async def test_knowledge_documents_and_neighbourhoods_are_cut_to_the_budget(server: KG, project: str) -> None:
    p = {"project_id": project}
    spokes = [{"name": f"spoke {i:02d} {LONG}", "summary": "s" * 4_000, "node_type": "Thing"} for i in range(60)]
    hub = {
        "name": "hub",
        "summary": "the centre",
        "node_type": "Thing",
        "relationships": [{"target_id": s["name"], "relationship_type": "LINKS"} for s in spokes],
    }
    made = await server.ok("manage_nodes", {**p, "operation": "create", "nodes": [*spokes, hub]})
    assert all(r["status"] == "success" for r in made["results"]), made
    names = [s["name"] for s in spokes[:40]]  # 40 documents of 4,000 characters and more
    documents = await server.ok("generate_documents", {**p, "node_identifiers": names})
    within_budget(documents)
    shown = len(documents["documents"])
    assert documents["omitted"] == 40 - shown > 0 and "left out" in documents["note"]

    explored = await server.ok(
        "explore_neighborhoods",
        {**p, "search_terms": ["spoke", "hub"], "search_strategy": "text", "max_results_per_term": 3},
    )
    within_budget(explored)
    assert explored["omitted"] > 0 and "left out" in explored["note"]


async def test_a_result_still_over_the_budget_is_logged_not_cut(server: KG, project: str) -> None:
    """One document larger than the budget (its template lists 250 referrers of 500-character
    names) is kept whole, as a document cut short would mislead; the server logs
    the tool and the size so that an operator sees it."""
    p = {"project_id": project}
    referrers = [
        {
            "name": f"ref {i:03d} {LONG}",
            "summary": "points",
            "node_type": "Thing",
            "relationships": [{"target_id": "target", "relationship_type": "POINTS_AT"}],
        }
        for i in range(250)
    ]
    target = {"name": "target", "summary": "pointed at", "node_type": "Thing"}
    made = await server.ok("manage_nodes", {**p, "operation": "create", "nodes": [target, *referrers]})
    assert all(r["status"] == "success" for r in made["results"]), made
    refs = {"refs": "MATCH (m)-[:POINTS_AT]->(n) RETURN m.name AS name"}
    template = {"id": "refs", "name": "Refs", "description": "every referrer", "variables": refs}
    template["structure"] = "{{#refs}}* {{name}}\n{{/refs}}"
    await server.ok("manage_templates", {**p, "operation": "create", "templates": [template]})
    asked = {**p, "node_identifiers": ["target"], "template_override": "refs"}
    result = await server.call("generate_documents", asked)
    [document] = result.structured["documents"]
    assert document["content"].count("ref ") == 250
    chars = len(result.text)
    assert chars > limits.RESPONSE_BUDGET
    # The server may write its warning just after the reply is sent: read the log until it is
    # there (an earlier test's warning for the same tool is in the same log).
    expected = {"tool": "generate_documents", "chars": chars}.items()
    deadline = time.monotonic() + 30
    while True:
        text = (server.root / "stderr.log").read_text()
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        warned = [x for x in lines if x.get("msg") == "result over the response budget"]
        if (warned and expected <= warned[-1].items()) or time.monotonic() > deadline:
            break
        await anyio.sleep(0.05)
    assert warned and expected <= warned[-1].items(), warned[-1:]


async def test_graph_enhanced_search_is_cut_to_the_budget(server: KG, project: str) -> None:
    """250 entities of 500-character names reached through a hub the search finds."""
    p = {"project_id": project}
    await hub_and_spokes(server, project, 250)
    found = await server.ok("graph_enhanced_search", {**p, "query": "hub", "depth": 1, "limit": 250})
    within_budget(found)
    shown = len(found["results"])
    assert found["omitted"] > 0 and found["result_count"] == shown and "left out" in found["note"]


async def test_relationship_paths_are_cut_to_the_budget(server: KG, project: str) -> None:
    """Strong two-hop paths between a and b, each through a node of a 500-character name (the
    search reads 32 of them, some 56k characters), asked for three times in one call."""
    p = {"project_id": project}
    middles = [{"name": f"mid {i:02d} {LONG}", "summary": "between", "node_type": "Thing"} for i in range(100)]
    ends = [{"name": n, "summary": "an end", "node_type": "Thing"} for n in ("a", "b")]
    made = await server.ok("manage_nodes", {**p, "operation": "create", "nodes": [*ends, *middles]})
    assert all(r["status"] == "success" for r in made["results"]), made
    links = [
        {"source_id": end, "target_id": m["name"], "relationship_type": "LINKS", "relevance_strength": "strong"}
        for m in middles
        for end in ("a", "b")
    ]
    await server.ok("manage_relationships", {**p, "operation": "create", "relationships": links})
    pair = {"source_node_id": "a", "target_node_id": "b"}
    found = await server.ok(
        "find_relationship_paths", {**p, "node_pairs": [pair] * 3, "max_paths_per_pair": 100, "max_path_length": 2}
    )
    within_budget(found)
    shown = [len(result["paths"]) for result in found["path_results"]]
    assert [result["summary"]["paths_returned"] for result in found["path_results"]] == shown
    assert shown[0] == 32 and shown[2] < 32 and found["omitted"] == 96 - sum(shown) and "left out" in found["note"]


async def test_causal_chain_is_cut_to_the_budget(server: KG, project: str) -> None:
    """A root cause of 20 effects of 10,000 characters each, with evidence of 2,000."""
    p = {"project_id": project}
    root = await server.ok("add_event", {**p, "description": "the root cause", "occurred_at": "2026-01-01T09:00:00Z"})
    root_id = root["event"]["id"]
    for i in range(20):
        effect = await server.ok(
            "add_event",
            {**p, "description": f"{i} " + "e" * 10_000, "occurred_at": "2026-01-02T09:00:00Z", "find_entities": False},
        )
        link = {"cause": root_id, "effect": effect["event"]["id"], "evidence": "v" * 2_000}
        await server.ok("add_causal_link", {**p, **link})
    chain = await server.ok("get_causal_chain", {**p, "event": root_id, "direction": "downstream", "depth": 1})
    within_budget(chain)
    shown = {n["id"] for n in chain["nodes"]}
    assert 0 < len(shown) < 20 and chain["truncated_by_limit"] and "left out" in chain["note"]
    # Every shown effect with its link, and no link to an effect left out.
    assert sorted(x["effect_id"] for x in chain["links"]) == sorted(shown - {root_id})
    assert chain["omitted"] == 2 * (20 - len(chain["links"]))


async def test_recall_is_cut_to_the_budget(server: KG, project: str) -> None:
    p = {"project_id": project}
    for i in range(20):  # 20 events of 10,000 characters about one topic
        text = f"Falcon review {i} " + "f" * 10_000
        event = {**p, "description": text, "occurred_at": f"2026-02-{i + 1:02d}T10:00:00Z", "find_entities": False}
        await server.ok("add_event", event)
    recalled = await server.ok("recall", {**p, "query": "What happened in the Falcon review?", "max_results": 100})
    within_budget(recalled)
    assert recalled["omitted"] > 0 and recalled["truncated"] and "left out" in recalled["note"]
