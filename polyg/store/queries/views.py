"""Counting, clearing and exporting the memory views of a project graph.

The views are kinds of nodes and relationships in one graph (see README, "The memory views"):
- entity: `:Entity` nodes other than concepts, their observations and relationships;
- temporal: dated `:Event`s (with INVOLVES and T_BEFORE) and facts (relationships with valid_from);
- causal: CAUSES relationships and the undated events created as causes or effects;
- semantic: concepts (`:Entity {type: 'concept'}`) with SIMILAR_TO and REPRESENTS.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import CACHED_AT, CACHED_DOCUMENT, ENTITY, RELATIONSHIP_TYPE, Label
from polyg.store.queries import Runner
from polyg.store.queries.entities import NAME_KEY

CONCEPT = "concept"
# A node's own label, by which an export finds it again: an entity's type label (`:Person`)
# may come first in labels(n), which lists labels in the order the graph first saw them.
KIND = "CASE WHEN {n}:Entity THEN 'Entity' WHEN {n}:Event THEN 'Event' ELSE labels({n})[0] END"
BATCH = 5_000
VECTOR_KEYS = ("embedding", "head_embedding")  # vector properties (stored as vecf32)

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


async def labels(run: Runner, project: str) -> list[str]:
    rows = await run.read(project, "CALL db.labels() YIELD label RETURN label ORDER BY label", {})
    return [row[0] for row in rows]


async def node_count(run: Runner, project: str) -> int:
    rows = await run.read(project, "MATCH (n) RETURN count(n)", {})
    return int(rows[0][0]) if rows else 0


async def edge_count(run: Runner, project: str) -> int:
    rows = await run.read(project, "MATCH ()-[r]->() RETURN count(r)", {})
    return int(rows[0][0]) if rows else 0


async def nodes_page(run: Runner, project: str, skip: int, limit: int, *, vectors: bool = True) -> list[Row]:
    """(labels, properties) of nodes in internal-id order; without `vectors`, the properties
    are [key, value] pairs but the vectors and their revision (not read at all: a page of
    5,000 embedded nodes took 1.3 s with them, most of it their 384 floats each)."""
    values = "properties(n)" if vectors else "[k IN keys(n) WHERE NOT k IN $drop | [k, n[k]]]"
    return await run.read(
        project,
        f"MATCH (n) WITH n ORDER BY id(n) SKIP $skip LIMIT $limit RETURN labels(n), {values}",
        {"skip": skip, "limit": limit, "drop": [*VECTOR_KEYS, "vec_rev"]},
    )


async def edges_page(run: Runner, project: str, skip: int, limit: int) -> list[Row]:
    """(type, properties, start label, start id, end label, end id) in internal-id order."""
    return await run.read(
        project,
        "MATCH (a)-[r]->(b) WITH a, r, b ORDER BY id(r) SKIP $skip LIMIT $limit "
        f"RETURN type(r), properties(r), {KIND.format(n='a')}, a.id, {KIND.format(n='b')}, b.id",
        {"skip": skip, "limit": limit},
    )


# --- reading an export back (polyg.core.transfer.graph_import) -----------------------------------------

# Sets a vector property from a row key when the row has it.
_VECTOR = "FOREACH (v IN CASE WHEN row.{key} IS NULL THEN [] ELSE [row.{key}] END | SET n.{key} = vecf32(v))"


async def existing_ids(run: Runner, project: str, label: Label, ids: list[str]) -> list[str]:
    rows = await run.read(project, f"UNWIND $ids AS i MATCH (n:{label} {{id: i}}) RETURN n.id", {"ids": ids})
    return [row[0] for row in rows]


async def merge_relationship_types(run: Runner, project: str, rows: list[dict[str, Any]]) -> int:
    """Relationship types by name, created with the given properties where the project has
    none of that name (a type it has keeps its own); how many were created."""
    return await _created(
        run,
        project,
        f"UNWIND $rows AS row OPTIONAL MATCH (old:{RELATIONSHIP_TYPE} {{name: row.name}}) "
        f"WITH row, old WHERE old IS NULL CREATE (t:{RELATIONSHIP_TYPE}) SET t = row RETURN count(t)",
        rows,
    )


async def create_nodes(
    run: Runner, project: str, labels: Sequence[Label], kind: Label, rows: list[dict[str, Any]]
) -> int:
    """Nodes (row: id, props, vectors by key) with these labels, but those whose id a `kind`
    node has already; how many were created."""
    vectors = " ".join(_VECTOR.format(key=key) for key in sorted(VECTOR_KEYS))
    if ENTITY in labels:  # an export older than name keys restores entities memory can match
        vectors += f" SET n.name_key = coalesce(n.name_key, {NAME_KEY.format(name='n.name')})"
    return await _created(
        run,
        project,
        f"UNWIND $rows AS row OPTIONAL MATCH (old:{kind} {{id: row.id}}) WITH row, old WHERE old IS NULL "
        f"CREATE (n:{':'.join(labels)}) SET n = row.props {vectors} RETURN count(n)",
        rows,
    )


async def _created(run: Runner, project: str, cypher: str, rows: list[dict[str, Any]]) -> int:
    """Run a write over `rows` that returns how many it created."""
    found = await run.write(project, cypher, {"rows": rows})
    return int(found[0][0]) if found else 0
