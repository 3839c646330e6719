"""GraphRAG (spec 004): weighted relationships between entities, the extraction log, entity
resolution by name, and the graph's health figures.

A relationship of spec 004 is a real relationship type between two `:Entity` nodes with
`id, weight, is_causal, context, created_at` (and, when extracted, `origin`, `observation_id`,
`evidence`). One relationship per (source, type, target): a second write of the same triple
finds the first (created by `polyg.store.queries.edges`, "pair").

The extraction log is kept on each entity: `extraction_rev` is the entity's `rev` (renewed by
every change to its text) when its observations were last read for relationships, so an entity
whose `rev` differs has changed since and is due again.
"""

from __future__ import annotations

from collections.abc import Sequence

from polyg.store.falkor import Row
from polyg.store.names import SHARED_REL_TYPES, STRUCTURAL_REL_TYPES
from polyg.store.queries import Runner

# Between two entities, a type users share with polyg is the user's (names.SHARED_REL_TYPES).
STRUCTURAL = sorted(STRUCTURAL_REL_TYPES - SHARED_REL_TYPES)
# Every relationship between two entities that is knowledge, not polyg's bookkeeping.
KNOWLEDGE = "(a:Entity)-[r]->(b:Entity) WHERE NOT type(r) IN $own"
# An entity is due for extraction when its text changed since the last one (an entity written
# without a revision, straight into the store, counts as revision '').
DUE = "e.extraction_rev IS NULL OR e.extraction_rev <> coalesce(e.rev, '')"


async def entities_exist(run: Runner, project: str, ids: Sequence[str]) -> set[str]:
    rows = await run.read(project, "MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id", {"ids": list(ids)})
    return {row[0] for row in rows}


# --- extraction --------------------------------------------------------------------------


async def entities_due(run: Runner, project: str, limit: int | None) -> list[Row]:
    """[id] of entities whose text changed since their last extraction (or never had one)."""
    cap = "" if limit is None else " LIMIT $limit"
    return await run.read(
        project,
        f"MATCH (e:Entity) WHERE {DUE} RETURN e.id ORDER BY e.id{cap}",
        {"limit": limit},
    )


async def count_due(run: Runner, project: str) -> int:
    rows = await run.read(project, f"MATCH (e:Entity) WHERE {DUE} RETURN count(e)")
    return int(rows[0][0]) if rows else 0


async def observations_of(run: Runner, project: str, ids: Sequence[str]) -> list[Row]:
    """[entity id, name, rev, [[observation id, text]]] per entity, observations oldest first."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
        "WITH e, o ORDER BY o.created_at, o.id "
        "RETURN e.id, e.name, e.rev, collect(CASE WHEN o IS NULL THEN NULL ELSE [o.id, o.text] END)",
        {"ids": list(ids)},
    )


async def mark_extracted(run: Runner, project: str, items: Sequence[tuple[str, str | None]], now: str) -> None:
    """Records, per (entity id, rev read), that the entity was extracted at that revision. An
    entity whose text changed meanwhile keeps its newer rev, and so stays due."""
    await run.write(
        project,
        "UNWIND $items AS i MATCH (e:Entity {id: i[0]}) "
        "SET e.extraction_rev = coalesce(i[1], e.rev, ''), e.extracted_at = $now",
        {"items": [list(item) for item in items], "now": now},
    )


async def name_candidates(run: Runner, project: str, query: str, limit: int) -> list[Row]:
    """[id, name] of the best full-text matches of `query` (any of its words, `a|b`)."""
    return await run.read(
        project,
        "CALL db.idx.fulltext.queryNodes('Entity', $q) YIELD node, score "
        "RETURN node.id, node.name ORDER BY score DESC, node.id LIMIT $limit",
        {"q": query, "limit": limit},
    )


# --- statistics --------------------------------------------------------------------------


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


async def entity_texts_at(run: Runner, project: str, internal_ids: Sequence[int], observations: int) -> list[Row]:
    """[internal id, description, [first `observations` observation texts]] per node."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (e) WHERE id(e) = i OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
        "WITH e, o ORDER BY o.created_at, o.id "
        "RETURN id(e), e.summary, collect(o.text)[..$n]",
        {"ids": list(internal_ids), "n": observations},
    )


async def entity_index_status(run: Runner, project: str) -> list[Row]:
    """[status, has a vector field] of the `Entity` indexes (none for a project never written)."""
    return await run.read(
        project,
        "CALL db.indexes() YIELD label, types, status WHERE label = 'Entity' "
        "RETURN status, any(k IN keys(types) WHERE 'VECTOR' IN types[k])",
    )
