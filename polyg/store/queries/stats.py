"""The health figures of a project's knowledge graph (GraphRAG, spec 004): entities, relationship
types, orphans, entities without a current vector, shared names, connected components.
Relationships of polyg's own types are bookkeeping, not knowledge, and are not counted."""

from __future__ import annotations

from polyg.store.falkor import Row
from polyg.store.names import SHARED_REL_TYPES, STRUCTURAL_REL_TYPES
from polyg.store.queries import Runner

# Between two entities, a type users share with polyg is the user's (names.SHARED_REL_TYPES).
STRUCTURAL = sorted(STRUCTURAL_REL_TYPES - SHARED_REL_TYPES)
# Every relationship between two entities that is knowledge, not polyg's bookkeeping.
KNOWLEDGE = "(a:Entity)-[r]->(b:Entity) WHERE NOT type(r) IN $own"


async def count_entities(run: Runner, project: str) -> int:
    rows = await run.read(project, "MATCH (e:Entity) RETURN count(e)")
    return int(rows[0][0]) if rows else 0


async def relationship_types(run: Runner, project: str) -> list[Row]:
    """[type, count, causal count] of the relationships between entities, most frequent first."""
    return await run.read(
        project,
        f"MATCH {KNOWLEDGE} WITH type(r) AS t, r "
        "RETURN t, count(r), sum(CASE WHEN r.is_causal = true OR t = 'CAUSES' THEN 1 ELSE 0 END) "
        "ORDER BY count(r) DESC, t",
        {"own": STRUCTURAL},
    )


async def count_orphans(run: Runner, project: str) -> int:
    """Entities with no relationship to another entity (polyg's own types aside)."""
    rows = await run.read(
        project,
        "MATCH (e:Entity) OPTIONAL MATCH (e)-[r]-(o:Entity) WHERE NOT type(r) IN $own "
        "WITH e, count(o) AS links WHERE links = 0 RETURN count(e)",
        {"own": STRUCTURAL},
    )
    return int(rows[0][0]) if rows else 0


async def count_without_vectors(run: Runner, project: str) -> int:
    """Entities whose stored vector is missing or older than their text."""
    rows = await run.read(
        project, "MATCH (e:Entity) WHERE e.vec_rev IS NULL OR e.rev IS NULL OR e.vec_rev <> e.rev RETURN count(e)"
    )
    return int(rows[0][0]) if rows else 0


async def duplicate_names(run: Runner, project: str, limit: int) -> list[Row]:
    """[name, count, [ids]] of exact names several entities share, most shared first."""
    return await run.read(
        project,
        "MATCH (e:Entity) WITH e.name AS name, collect(e.id) AS ids WHERE size(ids) > 1 "
        "RETURN name, size(ids), ids ORDER BY size(ids) DESC, name LIMIT $limit",
        {"limit": limit},
    )


async def component_sizes(run: Runner, project: str) -> list[Row]:
    """[component id, entities] of the weakly connected components of the entity graph
    (FalkorDB's `algo.WCC` over entities and every relationship between them)."""
    return await run.read(
        project,
        "CALL algo.WCC({nodeLabels: ['Entity']}) YIELD componentId RETURN componentId, count(*)",
    )
