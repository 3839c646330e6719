"""The one writer of domain relationships (issue 24): one query module holds the statement that
creates relationships of a type known at run time, and racing creates of one relation make one."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from polyg.runtime.app import Services

PACKAGE = Path(__file__).resolve().parents[3] / "polyg"
QUERIES = PACKAGE / "store" / "queries"
EDGES = "polyg/store/queries/edges.py"
# A Cypher clause that creates (or merges) a relationship, and its type as the source spells it:
# literally (`[r:CAUSES`), through a constant (`[:{HAS_CHUNK}`), or from a value known only at
# run time (`[r:{rel_type}`, `[{var}:{RelType(rel_type)}`).
CREATES_RELATIONSHIP = re.compile(
    r"(?:CREATE|MERGE)\s*\(\s*\{?\w*\}?\s*\)\s*-\s*\[\s*\{?\w*\}?\s*:\s*([^\]\s{]*\{[^}]*\}|\w+)"
)
# The export's Cypher format writes statements as text for the user to run elsewhere; polyg
# never runs them.
EXPORT_TEXT = "polyg/core/memory/views.py"
# polyg's structure, which stays in the module of the thing it structures: an entity's
# observations, an event's entities and place in time, an article's chunks and authors, a
# chunk's mentions, a node's template and cached document with what it was built from.
STRUCTURAL = frozenset(
    {
        "HAS_OBSERVATION",
        "INVOLVES",
        "T_BEFORE",
        "{HAS_CHUNK}",
        "{NEXT_CHUNK}",
        "{MENTIONS}",
        "{WROTE}",
        "{CACHED_AT}",
        "{DEPENDS_ON}",
        "{USES_TEMPLATE}",
    }
)


def relationship_creations() -> dict[str, list[str]]:
    """Module -> the types of the relationships its Cypher creates, as spelled."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        types = CREATES_RELATIONSHIP.findall(path.read_text(encoding="utf-8"))
        if types:
            found[str(path.relative_to(PACKAGE.parent))] = types
    return found


def test_one_module_creates_domain_relationships() -> None:
    found = relationship_creations()
    assert found.pop(EXPORT_TEXT) == ["{name(t)}"]
    # Only the one statement creates a relationship whose type is not polyg's structure: a type
    # known at run time (kg, memory-compat, knowledge, facts, graphrag, the import) or one of
    # polyg's own that is knowledge (CAUSES, SIMILAR_TO, REPRESENTS).
    domain = {module: [t for t in types if t not in STRUCTURAL] for module, types in found.items()}
    assert {module: types for module, types in domain.items() if types} == {
        EDGES: ["{RelType(rel_type)}", "{RelType(rel_type)}"]
    }
    # Its two forms: CREATE, and MERGE for one per (source, type, target).
    text = (PACKAGE.parent / EDGES).read_text(encoding="utf-8")
    assert len(re.findall(r"CREATE \(\{start\}\)-\[", text)) == 1
    assert len(re.findall(r"MERGE \(\{start\}\)-\[", text)) == 1
    # Every structural creation is Cypher of the store.
    assert all(module.startswith("polyg/store/queries/") for module in found)


def test_the_pattern_finds_every_way_a_type_is_spelled() -> None:
    for clause, spelled in (
        ("CREATE (a)-[r:CAUSES {id: $id}]->(b)", "CAUSES"),
        ('f"CREATE (s)-[r:{rel_type} "', "{rel_type}"),
        ('f"MERGE (a)-[r:{rel}]->(b)"', "{rel}"),
        ('f"CREATE ({start})-[{var}:{RelType(rel_type)}]->({end})"', "{RelType(rel_type)}"),
        ("FOREACH (t IN ts | CREATE (c)-[:{DEPENDS_ON} {{seen: 1}}]->(t))", "{DEPENDS_ON}"),
        ("MERGE (c)-[r:REPRESENTS]->(e)", "REPRESENTS"),
    ):
        assert CREATES_RELATIONSHIP.findall(clause) == [spelled], clause
    assert not CREATES_RELATIONSHIP.search("MATCH (a)-[r:CAUSES]->(b)")
    assert not CREATES_RELATIONSHIP.search("CREATE (n:Entity {id: r.id})")


async def relation_count(services: Services, project: str) -> int:
    rows = await services.store.ro_query(project, "MATCH (:Entity)-[r]->(:Entity) RETURN count(r)")
    return int(rows[0][0])


@pytest.mark.anyio
async def test_racing_creates_of_one_memory_compat_relation_make_one(services: Services, project: str) -> None:
    await services.named.create_entities(project, [{"name": n, "entityType": "t"} for n in ("Ada", "Engine")])
    relation = {"from": "Ada", "to": "Engine", "relationType": "works on"}
    results = await asyncio.gather(*(services.named.create_relations(project, [relation]) for _ in range(4)))
    assert sorted(len(made) for made in results) == [0, 0, 0, 1]
    assert await relation_count(services, project) == 1


@pytest.mark.anyio
async def test_racing_creates_of_one_kg_relationship_make_one(services: Services, project: str) -> None:
    a = await services.entities.create(project, name="a", type_="t")
    b = await services.entities.create(project, name="b", type_="t")
    made = await asyncio.gather(
        *(services.relationships.create(project, source_id=a.id, target_id=b.id, type_="USES") for _ in range(4))
    )
    # Every call answers with the one edge.
    assert len({edge.id for edge in made}) == 1
    assert await relation_count(services, project) == 1


@pytest.mark.anyio
async def test_racing_weighted_links_of_one_triple_make_one(services: Services, project: str) -> None:
    a = await services.entities.create(project, name="a", type_="t")
    b = await services.entities.create(project, name="b", type_="t")
    links = services.graphrag.links
    made = await asyncio.gather(*(links.add(project, a.id, b.id, "uses", weight=0.5) for _ in range(4)))
    assert len({link.id for link in made}) == 1
    assert sum(link.created for link in made) == 1
    assert await relation_count(services, project) == 1
