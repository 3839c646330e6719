"""Natural relationship names that polyg also uses for its own structure (`wrote`, `mentions`,
`depends_on`) are a user's to take between two entities, through every toolset that creates
relationships (the real MCP client over stdio), and polyg's own edges of those types (an
author's article, a chunk's mentions, a cached page's sources) stay out of what the tools
traverse. Types polyg writes between entities or to their observations stay reserved."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_helpers import kg_session

pytestmark = pytest.mark.anyio


async def test_wrote_mentions_and_depends_on_are_a_users_to_take(servers_root: Path) -> None:
    root = servers_root / "relationship-names"
    async with kg_session("stdio", root, "--toolsets", "all", POLYG_EMBEDDING_PROVIDER="hashing") as s:
        p = {"project_id": "names"}

        async def entity(name: str) -> str:
            return str((await s.ok("create_entity", {**p, "name": name, "type": "thing"}))["entity"]["id"])

        ann, book, paper, lib = [await entity(n) for n in ("Ann", "Book", "Paper", "Lib")]
        # An article whose chunk names Book: polyg's own MENTIONS edge to it, WROTE from Ann Doe.
        await s.ok("add_article", {**p, "title": "Review", "authors": ["Ann Doe"], "text": "Book is a fine read."})
        made = await s.ok("create_relationship", {**p, "source_id": ann, "target_id": book, "type": "WROTE"})
        assert made["relationship"]["type"] == "WROTE"
        linked = await s.ok(
            "add_entity_relationship", {**p, "source_id": book, "target_id": paper, "relation_type": "MENTIONS"}
        )
        assert linked["relation_type"] == "MENTIONS"
        out = await s.ok(
            "manage_relationships",
            {
                **p,
                "operation": "create",
                "relationships": [
                    {
                        "source_id": paper,
                        "target_id": lib,
                        "relationship_type": "DEPENDS_ON",
                        "relevance_strength": "strong",
                    }
                ],
            },
        )
        assert out["results"][0]["status"] == "success", out
        memory = await s.ok("link_entities", {**p, "source": "Lib", "target": "Ann", "relationship": "wrote"})
        assert memory["relationship"]["type"] == "wrote"

        # Traversed like any user type; polyg's own edges of those names are not.
        near = await s.ok("get_entity_neighbors", {**p, "entity_id": book})
        assert sorted((n["neighbor_name"], n["relation_type"]) for n in near["neighbors"]) == [
            ("Ann", "WROTE"),
            ("Paper", "MENTIONS"),
        ]
        rels = await s.ok("get_relationships", {**p, "entity_id": paper})
        assert sorted(r["type"] for r in rels["relationships"]) == ["DEPENDS_ON", "MENTIONS"]
        found = await s.ok(
            "find_relationship_paths",
            {**p, "node_pairs": [{"source_node_id": "Ann", "target_node_id": "Lib"}], "min_path_strength": 0.0},
        )
        hops = [[r["type"] for r in path["relationships"]] for path in found["path_results"][0]["paths"]]
        assert ["WROTE", "MENTIONS", "DEPENDS_ON"] in hops and ["wrote"] in hops
        page = await s.ok("generate_documents", {**p, "node_identifiers": ["Paper"]})
        assert "* DEPENDS_ON Lib" in page["documents"][0]["content"]

        # polyg's structural types between entities stay refused.
        await s.fails(
            "create_relationship", {**p, "source_id": ann, "target_id": book, "type": "HAS_OBSERVATION"}, code=4002
        )
        await s.fails(
            "add_entity_relationship",
            {**p, "source_id": ann, "target_id": book, "relation_type": "similar_to"},
            code=4002,
        )
