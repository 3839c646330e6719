"""Cypher for export: entities and relations read in pages by id (`polyg.core.transfer`)."""

from __future__ import annotations

from polyg.store.falkor import Row
from polyg.store.queries import Runner


async def entities_after(runner: Runner, project: str, after: str, page: int) -> list[Row]:
    """[entity fields, observations [{id, text, created_at}] oldest first] of the first `page`
    entities with an id after `after`, in id order."""
    return await runner.read(
        project,
        "MATCH (e:Entity) WHERE e.id > $after WITH e ORDER BY e.id LIMIT $page "
        "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) WITH e, o ORDER BY o.created_at, o.id "
        "RETURN e {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at} AS entity, "
        # FalkorDB 4.16 projects a missing (null) node to a map of nulls, which collect() keeps.
        "collect(CASE WHEN o IS NULL THEN NULL ELSE o {.id, .text, .created_at} END) AS observations "
        "ORDER BY entity.id",
        {"after": after, "page": page},
    )


async def relations_after(runner: Runner, project: str, after: str, page: int) -> list[Row]:
    """[id, source id, source name, target id, target name, type, properties] of the first
    `page` relations between entities with an id after `after`, in id order."""
    return await runner.read(
        project,
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.id > $after "
        "RETURN r.id, a.id, a.name, b.id, b.name, type(r), properties(r) ORDER BY r.id LIMIT $page",
        {"after": after, "page": page},
    )
