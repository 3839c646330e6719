"""Counting and clearing the memory views of a project graph.

The views are kinds of nodes and relationships in one graph (see README, "The memory views"):
- entity: `:Entity` nodes other than concepts, their observations and relationships;
- temporal: dated `:Event`s (with INVOLVES and T_BEFORE) and facts (relationships with valid_from);
- causal: CAUSES relationships and the undated events created as causes or effects;
- semantic: concepts (`:Entity {type: 'concept'}`) with SIMILAR_TO and REPRESENTS.
"""

from __future__ import annotations

from polyg.store.falkor import Row
from polyg.store.names import CACHED_AT, CACHED_DOCUMENT
from polyg.store.queries import Runner

CONCEPT = "concept"


BATCH = 5_000


# What each view's clear deletes: (match clause binding `x`, whether x is a node). Nodes go
# with their relationships (DETACH DELETE); an entity's observations and its cached documents
# (spec 000's, left behind with nothing to reach them before) go first.
CLEARS: dict[str, tuple[tuple[str, bool], ...]] = {
    "entity": (
        ("MATCH (e:Entity)-[:HAS_OBSERVATION]->(x:Observation) WHERE e.type <> 'concept'", True),
        (f"MATCH (e:Entity)-[:{CACHED_AT}]->(x:{CACHED_DOCUMENT}) WHERE e.type <> 'concept'", True),
        ("MATCH (x:Entity) WHERE x.type <> 'concept'", True),
    ),
    "semantic": (
        ("MATCH (e:Entity {type: 'concept'})-[:HAS_OBSERVATION]->(x:Observation)", True),
        (f"MATCH (e:Entity {{type: 'concept'}})-[:{CACHED_AT}]->(x:{CACHED_DOCUMENT})", True),
        ("MATCH (x:Entity {type: 'concept'})", True),
    ),
    "temporal": (
        ("MATCH (x:Event) WHERE x.occurred_at IS NOT NULL", True),
        ("MATCH (:Entity)-[x]->(:Entity) WHERE x.valid_from IS NOT NULL", False),
    ),
    "causal": (
        ("MATCH ()-[x:CAUSES]->()", False),
        ("MATCH (x:Event {origin: 'causal'}) WHERE x.occurred_at IS NULL", True),
    ),
    # The schema record and the relationship type registry (spec 000's data) stay.
    "all": (("MATCH (x) WHERE NOT x:PolygMeta AND NOT x:RelationshipType", True),),
}


async def counts(run: Runner, project: str, now: str) -> dict[str, int]:
    """The figures of every view, in one round trip per group."""
    rows = await run.read(
        project,
        "MATCH (e:Entity) RETURN 'entities' AS k, count(e) AS v "
        "UNION ALL MATCH (e:Entity {type: 'concept'}) RETURN 'concepts' AS k, count(e) AS v "
        "UNION ALL MATCH (o:Observation) RETURN 'observations' AS k, count(o) AS v "
        "UNION ALL MATCH (ev:Event) RETURN 'events' AS k, count(ev) AS v "
        "UNION ALL MATCH (ev:Event) WHERE ev.occurred_at IS NULL RETURN 'undated_events' AS k, count(ev) AS v "
        "UNION ALL MATCH ()-[r:T_BEFORE]->() RETURN 't_before' AS k, count(r) AS v "
        "UNION ALL MATCH ()-[r:INVOLVES]->() RETURN 'involves' AS k, count(r) AS v "
        "UNION ALL MATCH ()-[r:CAUSES]->() RETURN 'causal_links' AS k, count(r) AS v "
        "UNION ALL MATCH ()-[r:SIMILAR_TO]->() RETURN 'similar_to' AS k, count(r) AS v "
        "UNION ALL MATCH ()-[r:REPRESENTS]->() RETURN 'represents' AS k, count(r) AS v",
        {},
    )
    figures = {k: int(v) for k, v in rows}
    facts = await run.read(
        project,
        "MATCH (:Entity)-[r]->(:Entity) WHERE r.valid_from IS NOT NULL "
        "RETURN count(r), "
        "sum(CASE WHEN r.valid_from <= $now AND (r.valid_to IS NULL OR r.valid_to > $now) THEN 1 ELSE 0 END), "
        "sum(CASE WHEN r.invalidated_by IS NULL THEN 0 ELSE 1 END)",
        {"now": now},
    )
    total, current, invalidated = facts[0] if facts else (0, 0, 0)
    figures.update(facts=int(total), facts_current=int(current or 0), facts_invalidated=int(invalidated or 0))
    return figures


async def relationship_types(run: Runner, project: str) -> list[Row]:
    """(type, count) of relationships between entities that are not facts."""
    return await run.read(
        project,
        "MATCH (:Entity)-[r]->(:Entity) WHERE r.valid_from IS NULL RETURN type(r), count(r) ORDER BY type(r)",
        {},
    )


async def orphans(run: Runner, project: str) -> dict[str, int]:
    """Nodes no other view reaches: events about no entity and in no causal link, concepts
    linked to nothing, entities with no relationship, event or observation."""
    rows = await run.read(
        project,
        "MATCH (ev:Event) WHERE NOT (ev)-[:INVOLVES]->() AND NOT (ev)-[:CAUSES]-() "
        "RETURN 'events' AS k, count(ev) AS v "
        "UNION ALL MATCH (c:Entity {type: 'concept'}) WHERE NOT (c)--() RETURN 'concepts' AS k, count(c) AS v "
        "UNION ALL MATCH (e:Entity) WHERE e.type <> 'concept' AND NOT (e)--() RETURN 'entities' AS k, count(e) AS v",
        {},
    )
    return {"events": 0, "concepts": 0, "entities": 0} | {k: int(v) for k, v in rows}


async def orphan_ids(run: Runner, project: str, limit: int) -> list[Row]:
    """(kind, id, text) of orphan nodes, at most `limit` of each kind."""
    return await run.read(
        project,
        "MATCH (ev:Event) WHERE NOT (ev)-[:INVOLVES]->() AND NOT (ev)-[:CAUSES]-() "
        "RETURN 'event' AS k, ev.id AS id, ev.description AS t ORDER BY id LIMIT $limit "
        "UNION ALL MATCH (c:Entity {type: 'concept'}) WHERE NOT (c)--() "
        "RETURN 'concept' AS k, c.id AS id, c.name AS t ORDER BY id LIMIT $limit "
        "UNION ALL MATCH (e:Entity) WHERE e.type <> 'concept' AND NOT (e)--() "
        "RETURN 'entity' AS k, e.id AS id, e.name AS t ORDER BY id LIMIT $limit",
        {"limit": limit},
    )


async def clear_step(run: Runner, project: str, match: str, node: bool) -> int:
    """Delete up to `BATCH` of what `match` binds as x; how many were deleted."""
    delete = "DETACH DELETE x" if node else "DELETE x"
    rows = await run.write(project, f"{match} WITH x LIMIT {BATCH} {delete} RETURN count(*)", {})
    return int(rows[0][0]) if rows else 0
