"""Every toolset through the MCP client, on a polyg served from a real FalkorDB cluster: a
project per shard, each written and read through the tools, then listed across the shards by
the command line (`polyg status`, `polyg export`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio.to_thread
import pytest

from tests.falkor_cluster import ON_SHARD, FalkorCluster
from tests.mcp_helpers import kg_session, polyg_command, server_env

pytestmark = pytest.mark.anyio

HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
KG_P, MEMORY_P, DOCS_P = ON_SHARD  # one project on each shard
REF = "2026-03-02T10:00:00Z"


async def test_each_toolset_on_its_own_shard(cluster: FalkorCluster, tmp_path: Path) -> None:
    args = ("--toolsets", "all", "--store", cluster.url, "--project", MEMORY_P)
    async with kg_session("stdio", tmp_path, *args, **HASHING) as mcp:
        # kg and memory-compat: writes, reads and word search in the first shard's project.
        kg = {"project_id": KG_P}
        made = await mcp.ok(
            "create_entity",
            {**kg, "name": "Ada Lovelace", "type": "person", "observations": ["wrote the first program"]},
        )
        ada = made["entity"]["id"]
        await mcp.ok("create_entity", {**kg, "name": "Analytical Engine", "type": "machine"})
        got = await mcp.ok("get_entity", {**kg, "entity_id": ada})
        assert got["entity"]["name"] == "Ada Lovelace"
        found = await mcp.ok("search_nodes", {**kg, "query": "Ada"})
        assert [e["name"] for e in found["entities"]] == ["Ada Lovelace"]

        # memory: remember, then recall, in the second shard's (the default) project.
        await mcp.ok(
            "remember", {"content": "The auth service crashed after the Redis upgrade.", "reference_time": REF}
        )
        recalled = await mcp.ok("recall", {"query": "Why did the auth service crash?", "reference_time": REF})
        assert "Redis upgrade" in json.dumps(recalled)

        # knowledge: a node, a template and its document; retrieval: an article ingested and
        # retrieved; graphrag: a search; all in the third shard's project.
        docs = {"project_id": DOCS_P}
        nodes = await mcp.ok(
            "manage_nodes",
            {
                **docs,
                "operation": "create",
                "nodes": [{"name": "Charlie Parker", "summary": "Jazz saxophonist", "node_type": "Person"}],
            },
        )
        assert nodes["results"][0]["status"] == "success"
        template = {
            "id": "person-card",
            "name": "Person card",
            "description": "A person in one line",
            "structure": "# {{name}}\n{{summary}}\n{{#friends}}* {{name}}\n{{/friends}}",
            "variables": {"friends": "MATCH (n)-[:KNOWS]->(p:Person) RETURN p.name AS name"},
            "node_types": ["Person"],
        }
        await mcp.ok("manage_templates", {**docs, "operation": "create", "templates": [template]})
        out = await mcp.ok("generate_documents", {**docs, "node_identifiers": ["Charlie Parker"]})
        assert "Jazz saxophonist" in out["documents"][0]["content"]
        added = await mcp.ok(
            "add_article",
            {**docs, "title": "GPT-4 report", "authors": ["Alice", "Bob"], "text": "GPT-4 is a multimodal model."},
        )
        assert added["status"] == "created"
        retrieved = await mcp.ok("graph_retrieve", {**docs, "query": "Who wrote about GPT-4?"})
        assert retrieved["results"][0]["article"] == "GPT-4 report"
        searched = await mcp.ok("graph_enhanced_search", {**kg, "query": "first program"})
        assert searched["results"][0]["entity_id"] == ada

    # Every project, on every shard, is listed and exported from the command line.
    env = server_env(tmp_path, **HASHING)
    status = await anyio.to_thread.run_sync(cli, env, "status", "--store", cluster.url)
    for project in ON_SHARD:
        assert project in status
    exported = await anyio.to_thread.run_sync(cli, env, "export", "--store", cluster.url, "--project", KG_P)
    assert "Ada Lovelace" in exported


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*polyg_command(), *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout
