"""`polyg export --format json` then `polyg import` restores every toolset's data.

A project is filled through every toolset's MCP tools (kg, memory-compat, knowledge, memory,
graphrag, retrieval) on one server; the CLI exports it and imports the file into a fresh
project. Both projects are then read back through `export_graph` (vectors left out: they are
derived, and the import recomputes them) and compared node for node and relationship for
relationship: labels, types, ids and every property. The counts per label and per type are
compared too, so that a failure says what went missing.

The servers are real processes (MCP over stdio); the four CLI commands run in the test process
(tests/cli_runner.py), attached to one embedded FalkorDB held open between the two servers
rather than each starting and stopping one. Nothing here is about the process boundary: the
CLI's own processes are covered by tests/e2e/test_transfer.py, test_cli_partial.py and test_cli.py.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import held_store
from tests.e2e.test_transfer import EMBEDDER, succeeds
from tests.mcp_helpers import KG, kg_session, reap_embedded
from tests.tools.memory.conftest import Memory, seed
from tests.tools.memory.scenarios import deployment_failure, personal_knowledge
from tests.tools.memory.test_memory_import import graph_of

pytestmark = pytest.mark.anyio


async def fill(server: KG, project: str) -> None:
    """Something of every kind each toolset writes."""

    async def ok(tool: str, **args: Any) -> dict[str, Any]:
        return await server.ok(tool, {"project_id": project, **args})

    # memory: entities with properties, events, facts (one invalidated), causal links with
    # evidence, concepts, memories.
    mem = Memory(server, project)
    await seed(mem, deployment_failure())
    await seed(mem, personal_knowledge())
    await ok("add_fact", subject="Alice", predicate="works_on", object="Billing", valid_from="2026-01-01")
    await ok("add_concept", name="Authentication", description="Proving who a user is", represents=["Alice"])
    await ok("remember", content="Bob moved the billing service to Rust in March.", reference_time="2026-04-01")
    # kg: a parent, observations, a described relationship.
    repo = (await ok("create_entity", name="repo", type="project", description="the repository"))["entity"]["id"]
    app = await ok("create_entity", name="src/app.py", type="file", observations=["defines main()"], parentId=repo)
    await ok(
        "create_relationship",
        source_id=repo,
        target_id=app["entity"]["id"],
        type="CONTAINS",
        description="holds the entry point",
    )
    # memory-compat.
    await ok("create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": ["born 1815"]}])
    await ok("create_relations", relations=[{"from": "Ada", "to": "repo", "relationType": "works on"}])
    # knowledge: nodes with properties, a relationship with properties, a relationship type, a
    # template and a cached document.
    await ok(
        "manage_nodes",
        operation="create",
        nodes=[
            {"name": "Kansas City", "summary": "City in Missouri", "node_type": "Location"},
            {
                "name": "Charlie Parker",
                "summary": "Saxophonist",
                "node_type": "Person",
                "properties": {"birth_year": 1920, "tags": ["bebop", "alto"]},
                "relationships": [
                    {
                        "target_id": "Kansas City",
                        "relationship_type": "RESIDED_AT",
                        "relevance_strength": "strong",
                        "properties": {"start_date": "1930"},
                    }
                ],
            },
        ],
    )
    await ok(
        "manage_relationship_types",
        operation="create",
        relationship_types=[{"name": "MENTORED", "description": "taught and guided"}],
    )
    await ok(
        "manage_templates",
        operation="create",
        templates=[
            {
                "id": "person-card",
                "name": "Person card",
                "description": "one line",
                "structure": "{{name}} ({{birth_year}})",
                "node_types": ["Person"],
            }
        ],
    )
    await ok("generate_documents", node_identifiers=["Charlie Parker"])
    # graphrag: a weighted relationship.
    await ok(
        "add_entity_relationship", source_id=app["entity"]["id"], target_id=repo, relation_type="builds", weight=0.7
    )
    # retrieval: an article, its authors and chunks.
    await ok("add_article", title="Lighthouses", authors=["Ann"], text="The Fresnel lens made beams visible.")
    await ok("search_semantic", query="auth")  # waits until every vector is stored


async def whole_graph(server: KG, project: str) -> list[dict[str, Any]]:
    page = await server.ok(
        "export_graph", {"project_id": project, "format": "json", "limit": 20000, "include_embeddings": False}
    )
    assert page["next_offset"] is None
    items: list[dict[str, Any]] = page["items"]
    return items


def counts(items: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str]]:
    labels = Counter(
        ":".join(sorted(i["labels"])) for i in items if i["kind"] == "node" and "PolygMeta" not in i["labels"]
    )
    return labels, Counter(i["type"] for i in items if i["kind"] == "edge")


async def test_cli_json_export_and_import_restore_every_toolset(servers_root: Path, tmp_path: Path) -> None:
    root = servers_root / "export-roundtrip"
    async with kg_session("stdio", root, "--toolsets", "all", **EMBEDDER) as server:
        await fill(server, "source")
        before = await whole_graph(server, "source")
        page = await server.ok("generate_documents", {"project_id": "source", "node_identifiers": ["Charlie Parker"]})
    labels, types = counts(before)
    # What the source must hold for the comparison to mean something.
    for label in ("Entity", "Observation", "Event", "Template", "CachedDocument", "Article", "Author", "Chunk"):
        assert any(label in key.split(":") for key in labels), (label, labels)
    for rel_type in ("HAS_OBSERVATION", "CAUSES", "INVOLVES", "REPRESENTS", "CACHED_AT", "HAS_CHUNK", "WROTE"):
        assert types[rel_type], (rel_type, types)

    file = tmp_path / "source.json"
    vectors_file = tmp_path / "with-vectors.json"
    # One database for the four commands (the servers' sessions each end theirs: kg_session
    # reaps whatever it leaves running, so it is not held across them).
    with held_store(root / "data") as store:
        pid = store.server_pid()
        succeeds(root, "export", "--format", "json", "--project", "source", "--output", str(file))
        exported = file.read_text(encoding="utf-8")
        assert '"embedding"' not in exported, "vectors are left out unless asked"
        assert json.loads(exported)["project"] == "source"
        succeeds(root, "export", "--project", "source", "--embeddings", "--output", str(vectors_file))
        with_vectors = json.loads(vectors_file.read_text(encoding="utf-8"))
        assert any("embedding" in item["properties"] for item in with_vectors["items"])
        succeeds(root, "import", str(file), "--project", "restored")
        succeeds(root, "import", str(vectors_file), "--project", "vectors")  # restored as exported
        assert pid is not None and store.server_pid() == pid, "a command stopped the held database"
    assert not reap_embedded(root / "data"), "an embedded FalkorDB outlived the CLI"

    async with kg_session("stdio", root, "--toolsets", "all", **EMBEDDER) as server:
        after = await whole_graph(server, "restored")
        # The cached document came back valid: served from the cache, as it was.
        again = await server.ok(
            "generate_documents", {"project_id": "restored", "node_identifiers": ["Charlie Parker"]}
        )
        assert again["documents"][0]["from_cache"] and again["documents"] == page["documents"]
        assert counts(await whole_graph(server, "vectors")) == (labels, types)
        # The vectors were recomputed: the restored article is found by meaning.
        found = await server.ok("graph_retrieve", {"project_id": "restored", "query": "Fresnel lens beams"})
        assert found["total_results"] >= 1
    assert counts(after) == (labels, types)
    nodes, edges = graph_of([{"items": before}])
    nodes_after, edges_after = graph_of([{"items": after}])
    assert nodes_after.keys() == nodes.keys()
    for key, props in nodes.items():
        changed = {k: (v, nodes_after[key].get(k)) for k, v in props.items() if nodes_after[key].get(k) != v}
        # A node written with its vectors (a chunk) has no text revision; restored without
        # them it gets one, so that the vectorizer computes them (polyg.core.graph.vectors).
        added = set(nodes_after[key]) - set(props) - {"rev"}
        assert not changed and not added, (key, changed, added)
    assert edges_after == edges
