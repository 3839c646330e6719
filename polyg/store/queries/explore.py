"""Cypher for neighbourhood exploration (spec 000 `explore_neighborhoods`)."""

from __future__ import annotations

from polyg.store.falkor import Row
from polyg.store.names import OWN_REL_TYPES
from polyg.store.queries import SHARED, Runner, knowledge, knowledge_path

OWN_TYPES = sorted(OWN_REL_TYPES)
HIDDEN = ["embedding", "head_embedding", "rev", "vec_rev", "id", "created_at", "updated_at"]


async def entities(runner: Runner, project: str, ids: list[str]) -> list[Row]:
    """[id, name, type, summary] of the entities with these ids."""
    return await runner.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i}) RETURN e.id, e.name, e.type, e.summary",
        {"ids": ids},
    )


async def relationships(runner: Runner, project: str, ids: list[str], cap: int) -> list[Row]:
    """[type, source id, target id, target name, user properties] of the relationships touching
    these entities (polyg's own types left out), at most `cap`."""
    return await runner.read(
        project,
        f"UNWIND $ids AS i MATCH (e:Entity {{id: i}})-[r]-(o:Entity) WHERE {knowledge('r', 'e', 'o')} "
        "WITH DISTINCT r, startNode(r) AS a, endNode(r) AS b "
        "RETURN type(r), a.id, b.id, b.name, "
        "CASE WHEN size([k IN keys(r) WHERE NOT k IN $hidden]) = 0 THEN NULL "
        "ELSE properties(r) END "
        "ORDER BY type(r), a.id, b.id LIMIT $cap",
        {"ids": ids, "own": OWN_TYPES, "shared": SHARED, "hidden": HIDDEN, "cap": cap},
    )


async def templates_in_use(runner: Runner, project: str, ids: list[str]) -> list[Row]:
    """Ids of the templates these entities use (USES_TEMPLATE)."""
    return await runner.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i})-[:USES_TEMPLATE]->(t:Template) RETURN DISTINCT t.id ORDER BY t.id",
        {"ids": ids},
    )


async def connected(runner: Runner, project: str, a: str, b: str, depth: int) -> bool:
    """Whether a path of at most `depth` hops (either way, polyg's own types left out) joins them."""
    rows = await runner.read(
        project,
        "MATCH (x:Entity {id: $a}) MATCH (y:Entity {id: $b}) "
        f"MATCH p = (x)-[*1..{int(depth)}]-(y) WHERE {knowledge_path('p')} "
        "RETURN 1 LIMIT 1",
        {"a": a, "b": b, "own": OWN_TYPES, "shared": SHARED},
    )
    return bool(rows)
