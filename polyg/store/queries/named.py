"""Cypher for entities and relations addressed by name (the official MCP memory server's model:
memory-compat and import); entities are created and deleted by `polyg.store.queries.entities`,
relations created by `polyg.store.queries.edges`.
Each batch is one query, so it is written whole or not at all, and the duplicate checks run
inside the write query, which FalkorDB executes alone on the graph.

Names are looked up exactly: FalkorDB's index on `name` also matches names that differ in
surrounding whitespace, so each index hit is compared again after it is projected out of the
node (a filter on `e.name` itself would be folded into the index scan).
"""

from __future__ import annotations

from typing import Any

from polyg.store.falkor import Row
from polyg.store.queries import Runner
from polyg.store.queries.entities import bump_rev

# The relation's text as the user wrote it, whether or not it had to be sanitised.
REL_TEXT = "coalesce(r.label, type(r))"
# Follows `MATCH (e:Entity {name: n})`: keeps the hits whose name is exactly `n`.
EXACT_NAME = "WITH n, e, e.name AS found WHERE found = n "


async def entities(runner: Runner, project: str, ids: list[str], skip: int, end: int | None) -> list[Row]:
    """[id, name, type, observation texts[skip..end] (oldest first; to the last with end None),
    how many it has] per entity found."""
    return await runner.read(
        project,
        "UNWIND $ids AS id MATCH (e:Entity {id: id}) "
        "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
        "WITH e, o ORDER BY o.created_at, o.id "
        "WITH e, collect(o.text) AS obs RETURN e.id, e.name, e.type, "
        "CASE WHEN $end IS NULL THEN obs[$skip..] ELSE obs[$skip..$end] END, size(obs)",
        {"ids": ids, "skip": skip, "end": end},
    )


async def relations_touching(runner: Runner, project: str, ids: list[str], limit: int) -> list[Row]:
    """[from name, to name, relation text] of relations between entities with an endpoint
    among `ids` (observations are not relations), oldest first, at most `limit`."""
    return await runner.read(
        project,
        "UNWIND $ids AS id MATCH (e:Entity {id: id})-[r]-(:Entity) "
        f"WITH DISTINCT r RETURN startNode(r).name, endNode(r).name, {REL_TEXT} "
        "ORDER BY r.created_at, r.id LIMIT $limit",
        {"ids": ids, "limit": limit},
    )


async def page(runner: Runner, project: str, offset: int, limit: int) -> list[str]:
    """Entity ids in name order."""
    rows = await runner.read(
        project,
        "MATCH (e:Entity) RETURN e.id ORDER BY e.name, e.id SKIP $offset LIMIT $limit",
        {"offset": offset, "limit": limit},
    )
    return [row[0] for row in rows]


async def existing_ids(runner: Runner, project: str, ids: list[str]) -> set[str]:
    rows = await runner.read(project, "UNWIND $ids AS id MATCH (e:Entity {id: id}) RETURN e.id", {"ids": ids})
    return {row[0] for row in rows}


async def add_observations(runner: Runner, project: str, rows: list[dict[str, Any]], now: str) -> list[Row]:
    """Add observations from rows (id, obs[{id, text, created_at}]) an entity does not hold yet;
    returns [entity id, texts added] per entity that got one."""
    return await runner.write(
        project,
        "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) UNWIND r.obs AS o "
        "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(x:Observation) WHERE x.text = o.text "
        "WITH e, o, count(x) AS have WHERE have = 0 "
        "CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: o.id, text: o.text, created_at: o.created_at}) "
        f"WITH e, collect(o.text) AS added SET e.updated_at = $now, {bump_rev()} RETURN e.id, added",
        {"rows": rows, "now": now},
    )


async def delete_observations(runner: Runner, project: str, rows: list[dict[str, Any]]) -> list[str]:
    """Delete the observations of each row's entity (id) whose text is among its texts; returns
    the ids of the entities touched."""
    touched = await runner.write(
        project,
        "UNWIND $rows AS r MATCH (e:Entity {id: r.id})-[:HAS_OBSERVATION]->(o:Observation) "
        "WHERE o.text IN r.texts DELETE o "
        f"WITH DISTINCT e SET {bump_rev()} RETURN e.id",
        {"rows": rows},
    )
    return [row[0] for row in touched]


_RELATIONS = (
    f"UNWIND $rows AS row MATCH (a:Entity {{id: row.a}})-[r]->(b:Entity {{id: row.b}}) WHERE {REL_TEXT} = row.text "
)


async def delete_relations(runner: Runner, project: str, rows: list[dict[str, Any]]) -> None:
    """Delete the relations from a to b with each row's text."""
    # Read first: a call that deletes nothing writes nothing (nor creates the project).
    if rows and await runner.read(project, _RELATIONS + "RETURN r LIMIT 1", {"rows": rows}):
        await runner.write(project, _RELATIONS + "DELETE r", {"rows": rows})
