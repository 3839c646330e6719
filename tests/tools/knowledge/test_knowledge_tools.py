"""The `knowledge` toolset (spec 000) through the real MCP client over stdio (that it answers the
same over Streamable HTTP is tests/tools/test_transport_matrix.py's), with the spec's examples:
Miles Davis and Charlie Parker, the historical-person template, and path strengths worked out by
hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_helpers import KG, kg_session

pytestmark = pytest.mark.anyio

TOOLS = {
    "manage_nodes",
    "manage_relationships",
    "manage_relationship_types",
    "manage_templates",
    "generate_documents",
    "explore_neighborhoods",
    "find_relationship_paths",
}

# The spec's historical-person template, as the spec writes it.
STRUCTURE = (
    "# {{name}} ({{birth_year}}-{{death_year}})\n\n{{summary}}\n\n{{#has_residences}}## Places Lived\n"
    "{{#residences}}* {{location}} (from {{start_date}})\n{{/residences}}{{/has_residences}}\n\n"
    "{{#has_collaborators}}## Collaborations\n{{#collaborators}}* Collaborated with {{name}} {{when}} on "
    "{{projects}}\n{{/collaborators}}{{/has_collaborators}}\n\n{{#has_influences}}## Influences\n"
    "{{#influences}}* {{#strength}}Strongly{{/strength}}{{^strength}}Moderately{{/strength}} influenced by "
    "{{name}}'s {{work_type}}\n{{/influences}}{{/has_influences}}"
)
VARIABLES = {
    "residences": (
        "MATCH (n)-[r:RESIDED_AT]->(loc:Location) RETURN loc.name as location, r.start_date as start_date "
        "ORDER BY r.start_date"
    ),
    "collaborators": (
        "MATCH (n)-[r:COLLABORATED_WITH]->(p:Person) WHERE r.relevance_strength IN ['medium', 'strong'] "
        "RETURN p.name as name, r.projects as projects, r.when as when ORDER BY r.when"
    ),
    "influences": (
        "MATCH (n)-[r:INFLUENCED_BY]->(p:Person) RETURN p.name as name, CASE WHEN r.relevance_strength = 'strong' "
        "THEN true ELSE false END as strength, p.summary as work_type ORDER BY r.relevance_strength DESC"
    ),
}
# The spec's "Resulting Document", line for line; Mustache's rules give two blank lines between
# sections where the spec's picture shows one (the line closing a section is not standalone).
CHARLIE_PARKER = (
    "# Charlie Parker (1920-1955)\n\nAmerican jazz saxophonist and composer\n\n"
    "## Places Lived\n* Kansas City (from 1930)\n* New York (from 1939)\n\n\n"
    "## Collaborations\n* Collaborated with Miles Davis 1945-1948 on Recordings\n\n\n"
    "## Influences\n* Strongly influenced by Lester Young's Jazz saxophonist\n"
)


@pytest.fixture(scope="module")
async def kn(servers_root: Path) -> AsyncIterator[KG]:
    root = servers_root / "knowledge-stdio"
    async with kg_session("stdio", root, "--toolsets", "knowledge", "--project", "kdef") as client:
        yield client


async def nodes(kn: KG, project: str, operation: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = await kn.ok("manage_nodes", {"project_id": project, "operation": operation, "nodes": items})
    results: list[dict[str, Any]] = out["results"]
    return results


async def rels(kn: KG, project: str, operation: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = await kn.ok("manage_relationships", {"project_id": project, "operation": operation, "relationships": items})
    results: list[dict[str, Any]] = out["results"]
    return results


async def ids(kn: KG, project: str, items: list[dict[str, Any]]) -> dict[str, str]:
    results = await nodes(kn, project, "create", items)
    assert all(r["status"] == "success" for r in results), results
    return {item["name"]: r["node_id"] for item, r in zip(items, results, strict=True)}


async def document(kn: KG, project: str, ident: str, **options: Any) -> dict[str, Any]:
    out = await kn.ok("generate_documents", {"project_id": project, "node_identifiers": [ident], **options})
    [doc] = out["documents"]
    return dict(doc)


async def paths(kn: KG, project: str, a: str, b: str, **options: Any) -> dict[str, Any]:
    out = await kn.ok(
        "find_relationship_paths",
        {"project_id": project, "node_pairs": [{"source_node_id": a, "target_node_id": b}], **options},
    )
    [result] = out["path_results"]
    return dict(result)


async def charlie_parker(kn: KG, project: str) -> dict[str, str]:
    """The spec's Charlie Parker graph, made through manage_nodes with its relationships; the
    relationships' ids under "<type> <other end>"."""
    items = [
        {"name": "Kansas City", "summary": "City in Missouri", "node_type": "Location"},
        {"name": "New York", "summary": "City in New York State", "node_type": "Location"},
        {"name": "Miles Davis", "summary": "American jazz trumpeter", "node_type": "Person"},
        {"name": "Lester Young", "summary": "Jazz saxophonist", "node_type": "Person"},
        {
            "name": "Charlie Parker",
            "summary": "American jazz saxophonist and composer",
            "node_type": "Person",
            "properties": {"birth_year": 1920, "death_year": 1955},
            "relationships": [
                # New York first: the template orders by start_date, not by creation.
                {"target_id": "New York", "relationship_type": "RESIDED_AT", "properties": {"start_date": "1939"}},
                {"target_id": "Kansas City", "relationship_type": "RESIDED_AT", "properties": {"start_date": "1930"}},
                {
                    "target_id": "Miles Davis",
                    "relationship_type": "COLLABORATED_WITH",
                    "relevance_strength": "strong",
                    "properties": {"projects": ["Recordings"], "when": "1945-1948"},
                },
                {"target_id": "Lester Young", "relationship_type": "INFLUENCED_BY", "relevance_strength": "strong"},
            ],
        },
    ]
    results = await nodes(kn, project, "create", items)
    assert [r["status"] for r in results] == ["success"] * 5, results
    made = {item["name"]: r["node_id"] for item, r in zip(items, results, strict=True)}
    assert results[4]["created_relationships"] == 4
    for rel, rel_id in zip(items[4]["relationships"], results[4]["relationship_ids"], strict=True):
        made[f"{rel['relationship_type']} {rel['target_id']}"] = rel_id
    template = {
        "id": "historical-person-template",
        "name": "Historical Person Template",
        "description": "Template for historical persons with dynamic data",
        "structure": STRUCTURE,
        "variables": VARIABLES,
        "node_types": ["Person"],
    }
    out = await kn.ok("manage_templates", {"project_id": project, "operation": "create", "templates": [template]})
    assert out["results"] == [{"template_id": "historical-person-template", "operation": "create", "status": "success"}]
    return made


# --- the tools ---------------------------------------------------------------------------------


async def test_tools_listed_with_annotations(kn: KG) -> None:
    tools = {t.name: t for t in (await kn.client.list_tools()).tools}
    assert set(tools) == TOOLS
    for name in ("explore_neighborhoods", "find_relationship_paths"):
        assert tools[name].annotations is not None and tools[name].annotations.read_only_hint
    assert tools["manage_nodes"].annotations is not None and tools["manage_nodes"].annotations.destructive_hint
    assert all(t.output_schema for t in tools.values())


async def test_miles_davis_influenced_by_charlie_parker_forward_and_reverse(kn: KG, project: str) -> None:
    cp = (await ids(kn, project, [{"name": "Charlie Parker", "summary": "Saxophonist", "node_type": "Person"}]))[
        "Charlie Parker"
    ]
    # The spec's example: Miles Davis -[INFLUENCED_BY]-> Charlie Parker, the target by id.
    [made] = await nodes(
        kn,
        project,
        "create",
        [
            {
                "name": "Miles Davis",
                "summary": "American jazz trumpeter",
                "node_type": "Person",
                "relationships": [
                    {
                        "target_id": cp,
                        "relationship_type": "INFLUENCED_BY",
                        "direction": "forward",
                        "relevance_strength": "strong",
                    }
                ],
            }
        ],
    )
    assert made["status"] == "success" and made["created_relationships"] == 1 and made["operation"] == "create"
    md = made["node_id"]
    # The reverse: Charlie Parker -[INFLUENCED_BY]-> a student, made from the student's side.
    [student] = await nodes(
        kn,
        project,
        "create",
        [
            {
                "name": "A Teacher",
                "summary": "Taught Parker",
                "relationships": [
                    {"target_id": "Charlie Parker", "relationship_type": "INFLUENCED_BY", "direction": "reverse"}
                ],
            }
        ],
    )
    forward = await paths(kn, project, md, cp, min_path_strength=0.0)
    [hop] = forward["paths"][0]["relationships"]
    assert (hop["type"], hop["direction"], hop["source"], hop["target"]) == ("INFLUENCED_BY", "forward", md, cp)
    assert hop["properties"] == {"relevance_strength": "strong"}
    assert forward["paths"][0]["narrative"] == "Miles Davis was influenced by Charlie Parker"
    reverse = await paths(kn, project, student["node_id"], cp, min_path_strength=0.0)
    [hop] = reverse["paths"][0]["relationships"]
    assert (hop["direction"], hop["source"], hop["target"]) == ("backward", cp, student["node_id"])
    assert hop["properties"] == {"relevance_strength": "medium"}  # medium unless given
    assert reverse["paths"][0]["narrative"] == "A Teacher influenced Charlie Parker"


async def test_relationships_tool_reverse_migration_update_delete(kn: KG, project: str) -> None:
    made = await ids(kn, project, [{"name": n, "summary": n, "node_type": "Person"} for n in ("Parent", "Kid", "Boss")])
    created = await rels(
        kn,
        project,
        "create",
        [
            # PARENT_OF is stored as CHILD_OF with the ends swapped (spec 000's migration).
            {
                "source_id": "Parent",
                "target_id": "Kid",
                "relationship_type": "PARENT_OF",
                "relevance_strength": "strong",
            },
            {
                "source_id": made["Boss"],
                "target_id": made["Kid"],
                "relationship_type": "EMPLOYED_BY",
                "direction": "reverse",
            },
            {"source_id": "Kid", "target_id": "Nobody Here", "relationship_type": "KNOWS"},
        ],
    )
    assert [r["status"] for r in created] == ["success", "success", "error"]
    assert "Nobody Here" in created[2]["message"]
    child = await paths(kn, project, made["Kid"], made["Parent"], min_path_strength=0.0)
    [hop] = child["paths"][0]["relationships"]
    assert (hop["type"], hop["source"], hop["target"], hop["direction"]) == (
        "CHILD_OF",
        made["Kid"],
        made["Parent"],
        "forward",
    )
    employed = await paths(kn, project, made["Kid"], made["Boss"], min_path_strength=0.0)
    [hop] = employed["paths"][0]["relationships"]
    assert (hop["type"], hop["source"], hop["target"]) == ("EMPLOYED_BY", made["Kid"], made["Boss"])
    rel_id = created[0]["relationship_id"]
    updated = await rels(
        kn, project, "update", [{"id": rel_id, "relevance_strength": "weak", "properties": {"since": 1990}}]
    )
    assert updated == [{"relationship_id": rel_id, "operation": "update", "status": "success"}]
    [hop] = (await paths(kn, project, made["Kid"], made["Parent"], min_path_strength=0.0))["paths"][0]["relationships"]
    assert hop["properties"] == {"relevance_strength": "weak", "since": 1990}
    wrong = await rels(kn, project, "update", [{"id": rel_id, "relationship_type": "KNOWS"}])
    assert wrong[0]["status"] == "error" and "cannot change" in wrong[0]["message"]
    deleted = await rels(kn, project, "delete", [{"id": rel_id}, {"id": rel_id}])
    assert [r["status"] for r in deleted] == ["success", "error"]
    assert (await paths(kn, project, made["Kid"], made["Parent"], min_path_strength=0.0))["paths"] == []


async def test_batch_refers_to_earlier_items_and_failures_leave_nothing(kn: KG, project: str) -> None:
    results = await nodes(
        kn,
        project,
        "create",
        [
            {"name": "Alpha Quartz", "summary": "first"},
            {
                "name": "Beta Quartz",
                "summary": "second",
                "relationships": [{"target_id": "Alpha Quartz", "relationship_type": "KNOWS"}],
            },
            {"name": "Gamma Nested", "summary": "x", "properties": {"address": {"city": "Paris"}}},
            {"name": "Delta Reserved", "summary": "x", "properties": {"embedding": [1.0]}},
            {"name": "Epsilon Injected", "summary": "x", "properties": {"x}) DETACH DELETE n //": 1}},
            {
                "name": "Zeta Dangling",
                "summary": "x",
                "relationships": [
                    {"target_id": "Alpha Quartz", "relationship_type": "KNOWS"},
                    {"target_id": "Not There", "relationship_type": "KNOWS"},
                ],
            },
            {
                "name": "Eta BadType",
                "summary": "x",
                "relationships": [{"target_id": "Alpha Quartz", "relationship_type": "KNOWS]->() DETACH DELETE n //"}],
            },
            {"name": "Theta Nosummary"},
        ],
    )
    assert [r["status"] for r in results] == ["success", "success"] + ["error"] * 6
    assert results[1]["created_relationships"] == 1
    assert "nested objects" in results[2]["message"]
    assert "reserved" in results[3]["message"]
    assert "Invalid property name" in results[4]["message"]
    assert "Not There" in results[5]["message"]
    assert "Invalid relationship type" in results[6]["message"]
    # Nothing of a failed item exists: not the node, nor its first (valid) relationship.
    for name in (
        "Gamma Nested",
        "Delta Reserved",
        "Epsilon Injected",
        "Zeta Dangling",
        "Eta BadType",
        "Theta Nosummary",
    ):
        await kn.fails("generate_documents", {"project_id": project, "node_identifiers": [name]}, code=4004)
    alpha = results[0]["node_id"]
    found = await paths(kn, project, results[1]["node_id"], alpha, min_path_strength=0.0)
    assert found["summary"]["total_paths_found"] == 1
    # Updates and deletes report per item too.
    updated = await nodes(
        kn, project, "update", [{"id": alpha, "summary": "changed"}, {"id": "ent_nope"}, {"name": "no id"}]
    )
    assert [r["status"] for r in updated] == ["success", "error", "error"]
    deleted = await nodes(kn, project, "delete", [{"id": alpha}, {"id": alpha}])
    assert [r["status"] for r in deleted] == ["success", "error"]


async def test_relationship_types_managed_and_weights_used(kn: KG, project: str) -> None:
    async def manage(operation: str, items: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        args: dict[str, Any] = {"project_id": project, "operation": operation}
        if items is not None:
            args["relationship_types"] = items
        return await kn.ok("manage_relationship_types", args)

    out = await manage(
        "create",
        [
            {
                "name": "MENTORED_BY",
                "description": "learned from",
                "directionality": "strong",
                "source_types": ["Person"],
            },
            {"name": "BAD NAME"},
            {"name": "HAS_OBSERVATION"},  # DEPENDS_ON was the reserved example: a user's to take now
            {"name": "PARENT_OF"},
        ],
    )
    assert [r["status"] for r in out["results"]] == ["success", "error", "error", "error"]
    assert "reserved" in out["results"][2]["message"]
    assert "stored as CHILD_OF" in out["results"][3]["message"]
    listed = {t["name"]: t for t in (await manage("list"))["relationship_types"]}
    assert listed["MENTORED_BY"] == {
        "name": "MENTORED_BY",
        "description": "learned from",
        "directionality": "strong",
        "source_types": ["Person"],
        "target_types": [],
        "forward_weight": 1.0,
        "backward_weight": 0.2,
    }
    await manage("update", [{"name": "MENTORED_BY", "directionality": "balanced"}])
    listed = {t["name"]: t for t in (await manage("list"))["relationship_types"]}
    assert (listed["MENTORED_BY"]["forward_weight"], listed["MENTORED_BY"]["description"]) == (0.7, "learned from")
    made = await ids(
        kn,
        project,
        [
            {"name": "Teacher", "summary": "t"},
            {
                "name": "Pupil",
                "summary": "p",
                "relationships": [
                    {"target_id": "Teacher", "relationship_type": "MENTORED_BY", "relevance_strength": "strong"}
                ],
            },
        ],
    )
    found = await paths(kn, project, made["Pupil"], made["Teacher"], min_path_strength=0.0)
    assert found["paths"][0]["strength"] == 0.7  # strong (1.0) x balanced (0.7), length 1
    out = await manage("delete", [{"name": "MENTORED_BY"}, {"name": "NEVER_MADE"}])
    assert [r["status"] for r in out["results"]] == ["success", "error"]
    found = await paths(kn, project, made["Pupil"], made["Teacher"], min_path_strength=0.0)
    assert found["paths"][0]["strength"] == 0.5  # an unknown type weighs 0.5


async def test_path_strengths_by_hand(kn: KG, project: str) -> None:
    await kn.ok(
        "manage_relationship_types",
        {
            "project_id": project,
            "operation": "create",
            "relationship_types": [
                {"name": "INFLUENCED_BY", "directionality": "weak"},
                {"name": "COLLABORATED_WITH", "directionality": "balanced"},
                {"name": "CHILD_OF", "directionality": "strong"},
            ],
        },
    )
    made = await ids(
        kn,
        project,
        [
            {"name": "Target", "summary": "t", "node_type": "Person"},
            {
                "name": "Middle",
                "summary": "m",
                "node_type": "Person",
                "relationships": [
                    {"target_id": "Target", "relationship_type": "CHILD_OF", "relevance_strength": "strong"}
                ],
            },
            {
                "name": "Source",
                "summary": "s",
                "node_type": "Person",
                "relationships": [
                    {"target_id": "Target", "relationship_type": "COLLABORATED_WITH", "relevance_strength": "weak"},
                    {"target_id": "Middle", "relationship_type": "INFLUENCED_BY", "relevance_strength": "strong"},
                ],
            },
            {
                "name": "Uncle",
                "summary": "u",
                "relationships": [
                    {"target_id": "Source", "relationship_type": "CHILD_OF", "relevance_strength": "medium"},
                    {"target_id": "Target", "relationship_type": "COLLABORATED_WITH", "relevance_strength": "strong"},
                ],
            },
        ],
    )
    found = await paths(kn, project, made["Source"], "Target", min_path_strength=0.0)
    # Source -INFLUENCED_BY(strong, weak type, forward)-> Middle -CHILD_OF(strong, strong type, forward)-> Target:
    #   (1.0 x 0.8) x (1.0 x 1.0) = 0.8, length 2: 0.4
    # Source -COLLABORATED_WITH(weak, balanced)-> Target: 0.2 x 0.7 = 0.14, length 1: 0.14
    # Source <-CHILD_OF(medium, strong type, backward)- Uncle -COLLABORATED_WITH(strong)-> Target:
    #   (0.6 x 0.2) x (1.0 x 0.7) = 0.084, length 2: 0.042
    assert [p["strength"] for p in found["paths"]] == [0.4, 0.14, 0.042]
    best = found["paths"][0]
    assert best["strength_breakdown"] == {"raw_strength": 0.8, "length_penalty": 0.5, "final_strength": 0.4}
    assert [r["edge_strength"] for r in best["relationships"]] == [0.8, 1.0]
    assert [n["name"] for n in best["nodes"]] == ["Source", "Middle", "Target"]
    assert best["narrative"] == "Source was influenced by Middle, who is a child of Target"
    third = found["paths"][2]
    assert [(r["type"], r["direction"], r["edge_strength"]) for r in third["relationships"]] == [
        ("CHILD_OF", "backward", 0.12),
        ("COLLABORATED_WITH", "forward", 0.7),
    ]
    assert third["narrative"] == "Source is a parent of Uncle, which collaborated with Target"
    assert found["summary"] == {
        "total_paths_found": 3,
        "paths_returned": 3,
        "strongest_path_strength": 0.4,
        "average_path_strength": round((0.4 + 0.14 + 0.042) / 3, 6),
        "relationship_types_used": ["CHILD_OF", "COLLABORATED_WITH", "INFLUENCED_BY"],
        "search_truncated": False,
    }
    # The default minimum (0.3) keeps the longer strong path and drops the direct weak one.
    default = await paths(kn, project, "Source", "Target")
    assert [p["strength"] for p in default["paths"]] == [0.4]
    assert default["summary"]["total_paths_found"] == 1
    capped = await paths(kn, project, "Source", "Target", min_path_strength=0.0, max_paths_per_pair=2)
    assert [p["path_id"] for p in capped["paths"]] == [1, 2] and capped["summary"]["total_paths_found"] == 3
    short = await paths(kn, project, "Source", "Target", min_path_strength=0.0, max_path_length=1)
    assert [p["strength"] for p in short["paths"]] == [0.14]


# --- templates and documents -------------------------------------------------------------------


async def test_historical_person_template_renders_as_the_spec_shows(kn: KG, project: str) -> None:
    made = await charlie_parker(kn, project)
    doc = await document(kn, project, "Charlie Parker")
    assert doc["content"] == CHARLIE_PARKER
    assert doc["template_used"] == "historical-person-template"  # chosen by its node_types
    assert (doc["node_id"], doc["node_name"], doc["from_cache"]) == (made["Charlie Parker"], "Charlie Parker", False)
    # By id, in any case, and by a close name; each time from the cache.
    for ident in (made["Charlie Parker"], "charlie PARKER", "parker charlie"):
        again = await document(kn, project, ident)
        assert (again["content"], again["from_cache"], again["generated_at"]) == (
            CHARLIE_PARKER,
            True,
            doc["generated_at"],
        )
    await kn.fails("generate_documents", {"project_id": project, "node_identifiers": ["Thelonious Monk"]}, code=4004)


async def test_cache_is_invalidated_by_exactly_what_the_document_read(kn: KG, project: str) -> None:
    made = await charlie_parker(kn, project)
    extra = await ids(
        kn,
        project,
        [
            {"name": "Dizzy Gillespie", "summary": "Jazz trumpeter", "node_type": "Person"},
            {"name": "Unrelated Person", "summary": "Nobody Parker knew", "node_type": "Person"},
        ],
    )

    async def fresh() -> dict[str, Any]:
        doc = await document(kn, project, "Charlie Parker", include_dependencies=True)
        assert not doc["from_cache"]
        assert (await document(kn, project, "Charlie Parker"))["from_cache"]
        return doc

    first = await fresh()
    assert first["dependencies"] == sorted(
        [made["Kansas City"], made["New York"], made["Miles Davis"], made["Lester Young"]]
    )
    # An unrelated change keeps the cache.
    await nodes(kn, project, "update", [{"id": extra["Unrelated Person"], "summary": "still nobody"}])
    assert (await document(kn, project, "Charlie Parker"))["from_cache"]
    # A new collaborator.
    await rels(
        kn,
        project,
        "create",
        [
            {
                "source_id": "Charlie Parker",
                "target_id": "Dizzy Gillespie",
                "relationship_type": "COLLABORATED_WITH",
                "properties": {"projects": ["Bebop", "Groovin' High"], "when": "1945"},
            }
        ],
    )
    doc = await fresh()
    assert "* Collaborated with Dizzy Gillespie 1945 on Bebop,Groovin&#39; High\n" in doc["content"]
    # A node a variable read (Lester Young's summary is the influence's work type).
    await nodes(kn, project, "update", [{"id": made["Lester Young"], "summary": "Tenor saxophonist"}])
    assert "Lester Young's Tenor saxophonist" in (await fresh())["content"]
    # A relationship a variable read.
    await rels(kn, project, "update", [{"id": made["RESIDED_AT Kansas City"], "properties": {"start_date": "1929"}}])
    assert "* Kansas City (from 1929)" in (await fresh())["content"]
    # The node itself.
    await nodes(kn, project, "update", [{"id": made["Charlie Parker"], "properties": {"birth_year": 1921}}])
    assert "# Charlie Parker (1921-1955)" in (await fresh())["content"]
    # The template.
    await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "update",
            "templates": [{"id": "historical-person-template", "structure": "{{name}}: {{summary}}"}],
        },
    )
    assert (await fresh())["content"] == "Charlie Parker: American jazz saxophonist and composer"
    await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "update",
            "templates": [{"id": "historical-person-template", "structure": STRUCTURE}],
        },
    )
    await fresh()
    # A dependency deleted.
    await nodes(kn, project, "delete", [{"id": made["Kansas City"]}])
    doc = await fresh()
    assert "Kansas City" not in doc["content"] and "* New York (from 1939)" in doc["content"]
    # force_regenerate skips a valid cache.
    assert not (await document(kn, project, "Charlie Parker", force_regenerate=True))["from_cache"]


async def test_relationship_update_invalidates(kn: KG, project: str) -> None:
    await charlie_parker(kn, project)
    assert not (await document(kn, project, "Charlie Parker"))["from_cache"]
    assert (await document(kn, project, "Charlie Parker"))["from_cache"]
    created = await rels(
        kn,
        project,
        "create",
        [{"source_id": "Charlie Parker", "target_id": "New York", "relationship_type": "VISITED"}],
    )
    doc = await document(kn, project, "Charlie Parker")
    assert not doc["from_cache"]  # a relationship touching the node stamps it
    rel_id = created[0]["relationship_id"]
    assert (await document(kn, project, "Charlie Parker"))["from_cache"]
    await rels(kn, project, "update", [{"id": rel_id, "properties": {"times": 3}}])
    assert not (await document(kn, project, "Charlie Parker"))["from_cache"]


async def test_template_override_and_default_template(kn: KG, project: str) -> None:
    made = await charlie_parker(kn, project)
    await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "create",
            "templates": [
                {"id": "short", "name": "Short", "description": "one line", "structure": "{{name}} ({{birth_year}})"}
            ],
        },
    )
    doc = await document(kn, project, "Charlie Parker", template_override="short")
    assert (doc["content"], doc["template_used"]) == ("Charlie Parker (1920)", "short")
    # The node's own template stays cached apart from the override's.
    assert (await document(kn, project, "Charlie Parker", template_override="Short"))["from_cache"]
    assert (await document(kn, project, "Charlie Parker"))["template_used"] == "historical-person-template"
    # A node with no template of its own or for its type gets the built-in one.
    doc = await document(kn, project, made["New York"])
    assert doc["template_used"] == "default"
    assert doc["content"] == "# New York\n\nCity in New York State\n\n## Referenced by\n* Charlie Parker RESIDED_AT\n"
    # template_id on a node links it (USES_TEMPLATE), and wins over node_types.
    await nodes(kn, project, "update", [{"id": made["Miles Davis"], "template_id": "short"}])
    assert (await document(kn, project, "Miles Davis"))["content"] == "Miles Davis ()"
    await kn.fails(
        "generate_documents",
        {"project_id": project, "node_identifiers": ["Miles Davis"], "template_override": "nope"},
        code=4004,
    )


async def test_templates_refused_on_save(kn: KG, project: str) -> None:
    await ids(kn, project, [{"name": "Someone", "summary": "x"}])
    bad = {
        "does not parse": ({"structure": "{{#open}} never closed"}, "never closed"),
        "writes": ({"variables": {"v": "MATCH (n) SET n.hacked = true RETURN n"}}, "read-only"),
        "creates": ({"variables": {"v": "MATCH (n) CREATE (m:Evil) RETURN m"}}, "read-only"),
        "write procedure": (
            {"variables": {"v": "CALL db.idx.fulltext.createNodeIndex('Evil', 'name') RETURN 1"}},
            "beyond its node",
        ),
        "escapes n": ({"variables": {"v": "MATCH (m:Entity) RETURN m.name AS name"}}, "beyond its node"),
        "does not compile": ({"variables": {"v": "MATCH (n RETURN"}}, "does not compile"),
        "bad variable name": ({"variables": {"a b": "MATCH (n) RETURN n.name"}}, "Invalid variable name"),
    }
    items = [
        {"name": f"T {name}", "description": name, "structure": "{{name}}", **fields}
        for name, (fields, _) in bad.items()
    ]
    out = await kn.ok("manage_templates", {"project_id": project, "operation": "create", "templates": items})
    for result, (name, (_, reason)) in zip(out["results"], bad.items(), strict=True):
        assert result["status"] == "error", name
        assert reason in result["message"], (name, result["message"])
    listed = await kn.ok("manage_templates", {"project_id": project, "operation": "list"})
    assert listed["templates"] == []
    # Updating a valid template into an invalid one is refused too, and leaves it as it was.
    await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "create",
            "templates": [{"id": "ok", "name": "OK", "description": "", "structure": "{{name}}"}],
        },
    )
    out = await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "update",
            "templates": [{"id": "ok", "variables": {"v": "MATCH (n) DETACH DELETE n RETURN 1"}}],
        },
    )
    assert out["results"][0]["status"] == "error"
    [kept] = (await kn.ok("manage_templates", {"project_id": project, "operation": "list"}))["templates"]
    assert (kept["id"], kept["variables"], kept["structure"]) == ("ok", {}, "{{name}}")
    out = await kn.ok(
        "manage_templates", {"project_id": project, "operation": "delete", "templates": [{"id": "ok"}, {"id": "ok"}]}
    )
    assert [r["status"] for r in out["results"]] == ["success", "error"]


async def test_node_data_is_not_evaluated_as_mustache(kn: KG, project: str) -> None:
    await ids(
        kn,
        project,
        [{"name": "Mallory {{secret}}", "summary": "{{#x}}<b>{{/x}}", "properties": {"secret": "LEAKED", "x": True}}],
    )
    await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "create",
            "templates": [
                {"id": "t", "name": "t", "description": "", "structure": "{{name}}|{{summary}}|{{{summary}}}"}
            ],
        },
    )
    doc = await document(kn, project, "Mallory {{secret}}", template_override="t")
    assert doc["content"] == "Mallory {{secret}}|{{#x}}&lt;b&gt;{{&#x2F;x}}|{{#x}}<b>{{/x}}"


async def test_partials_are_other_templates(kn: KG, project: str) -> None:
    await ids(kn, project, [{"name": "Partial User", "summary": "uses a partial"}])
    await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "create",
            "templates": [
                {"id": "footer", "name": "footer", "description": "", "structure": "-- {{summary}}\n"},
                {"id": "page", "name": "page", "description": "", "structure": "# {{name}}\n  {{> footer}}\n"},
            ],
        },
    )
    doc = await document(kn, project, "Partial User", template_override="page")
    assert doc["content"] == "# Partial User\n  -- uses a partial\n"
    await kn.ok(
        "manage_templates",
        {
            "project_id": project,
            "operation": "update",
            "templates": [{"id": "footer", "structure": "== {{summary}}\n"}],
        },
    )
    doc = await document(kn, project, "Partial User", template_override="page")
    assert not doc["from_cache"] and doc["content"] == "# Partial User\n  == uses a partial\n"


# --- neighbourhoods ----------------------------------------------------------------------------


async def test_explore_neighborhoods(kn: KG, project: str) -> None:
    made = await charlie_parker(kn, project)
    await nodes(kn, project, "update", [{"id": made["Charlie Parker"], "template_id": "historical-person-template"}])
    out = await kn.ok(
        "explore_neighborhoods",
        {
            "project_id": project,
            "search_terms": ["saxophonist composer", "Missouri", "qwxzv"],
            "search_strategy": "text",
            "max_results_per_term": 1,
        },
    )
    hood = out["neighborhoods"]["saxophonist composer"]
    [primary] = hood["primary_nodes"]
    assert (primary["id"], primary["name"], primary["type"]) == (made["Charlie Parker"], "Charlie Parker", "Person")
    assert primary["similarity_score"] > 0
    collab = next(r for r in hood["relationships"] if r["type"] == "COLLABORATED_WITH")
    assert collab == {
        "type": "COLLABORATED_WITH",
        "source": made["Charlie Parker"],
        "target": made["Miles Davis"],
        "target_name": "Miles Davis",
        "properties": {"projects": ["Recordings"], "when": "1945-1948", "relevance_strength": "strong"},
    }
    nearby = {n["name"]: n for n in hood["nearby_nodes"]}
    assert set(nearby) == {"Kansas City", "New York", "Miles Davis", "Lester Young"}
    assert nearby["Miles Davis"]["distance"] == 1
    assert nearby["Miles Davis"]["path"] == "Charlie Parker -[COLLABORATED_WITH]-> Miles Davis"
    assert hood["common_relationship_types"][0] == "RESIDED_AT"
    assert hood["templates_in_use"] == ["historical-person-template"]
    missouri = out["neighborhoods"]["Missouri"]
    assert [p["name"] for p in missouri["primary_nodes"]] == ["Kansas City"]
    assert missouri["nearby_nodes"][0]["name"] == "Charlie Parker"
    assert {n["name"]: n["distance"] for n in missouri["nearby_nodes"]}["Miles Davis"] == 2
    recs = out["recommendations"]
    assert "qwxzv" in recs["missing_intermediate_nodes"]
    assert recs["suggested_relationship_types"][0] == "RESIDED_AT"
    # By hand (every type here is undescribed: 0.5 each way): from Charlie Parker, Lester Young
    # and Miles Davis are one strong hop away (1.0 x 0.5), New York one medium hop (0.6 x 0.5);
    # from Kansas City each is two hops through Charlie Parker (0.3 x that). The primary nodes
    # themselves are not suggested.
    assert recs["suggested_parents"] == [
        {"node_id": made["Lester Young"], "node_name": "Lester Young", "confidence": 0.325},
        {"node_id": made["Miles Davis"], "node_name": "Miles Davis", "confidence": 0.325},
        {"node_id": made["New York"], "node_name": "New York", "confidence": 0.195},
    ]


async def test_default_paths_keep_two_strong_links_of_an_undescribed_type(kn: KG, project: str) -> None:
    """Two strong links of a type no one described weigh 1.0 x 0.5 each: the path's strength is
    0.25 x 1/2 = 0.125 (spec 000). The default keeps a path whose hops score 0.3 on average, so
    it is found; an explicit minimum still applies to the strength itself."""
    made = await ids(
        kn,
        project,
        [
            {"name": "Carol", "summary": "c"},
            {
                "name": "Bob",
                "summary": "b",
                "relationships": [{"target_id": "Carol", "relationship_type": "KNOWS", "relevance_strength": "strong"}],
            },
            {
                "name": "Alice",
                "summary": "a",
                "relationships": [{"target_id": "Bob", "relationship_type": "KNOWS", "relevance_strength": "strong"}],
            },
            {
                "name": "Dan",
                "summary": "d",
                "relationships": [{"target_id": "Alice", "relationship_type": "KNOWS", "relevance_strength": "weak"}],
            },
        ],
    )
    found = await paths(kn, project, "Alice", "Carol")
    assert [p["strength"] for p in found["paths"]] == [0.125]
    assert found["paths"][0]["strength_breakdown"] == {
        "raw_strength": 0.25,
        "length_penalty": 0.5,
        "final_strength": 0.125,
    }
    assert found["summary"]["total_paths_found"] == 1
    # A weak link (0.2 x 0.5 = 0.1) is below the bar on its own and on average in a path.
    assert (await paths(kn, project, "Dan", "Alice"))["paths"] == []
    assert (await paths(kn, project, "Dan", "Carol"))["paths"] == []
    assert (await paths(kn, project, made["Alice"], "Carol", min_path_strength=0.3))["paths"] == []


async def test_paths_say_when_a_hub_was_not_read_whole(kn: KG, project: str) -> None:
    """A hub with more relationships than the path search reads (FANOUT): the best path is still
    found, and the summary says the search was cut there."""
    from polyg.core.traversal.service import FANOUT

    leaves = [{"name": f"Leaf {i}", "summary": "a leaf"} for i in range(FANOUT + 4)]
    hub_links = [{"target_id": leaf["name"], "relationship_type": "COLLABORATED_WITH"} for leaf in leaves]
    items = [
        *leaves,
        {"name": "Goal", "summary": "the goal"},
        {
            "name": "Hub",
            "summary": "the hub",
            "relationships": [
                *hub_links,
                {"target_id": "Goal", "relationship_type": "COLLABORATED_WITH", "relevance_strength": "strong"},
            ],
        },
        {
            "name": "Start",
            "summary": "the start",
            "relationships": [
                {"target_id": "Hub", "relationship_type": "COLLABORATED_WITH", "relevance_strength": "strong"}
            ],
        },
    ]
    results = await nodes(kn, project, "create", items)
    assert {r["status"] for r in results} == {"success"}, results
    small = await paths(kn, project, "Leaf 0", "Leaf 1", min_path_strength=0.0, max_path_length=2)
    assert not small["summary"]["search_truncated"]  # the hub is met, never expanded
    found = await paths(kn, project, "Start", "Goal", min_path_strength=0.0)
    assert [n["name"] for n in found["paths"][0]["nodes"]] == ["Start", "Hub", "Goal"]
    assert found["summary"]["search_truncated"]
