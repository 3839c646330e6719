"""Cypher for entities addressed by id and their observations (the `kg` toolset's reads and
writes; the deletion tail is shared with the by-name writes of `polyg.store.queries.named`).

Writes that may be refused are preceded by a read (`exists`): the first write to a project
creates its graph (schema, indexes), and a refused call must leave nothing behind.
"""

from __future__ import annotations

from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import Label
from polyg.store.queries import Runner
from polyg.store.queries.document_cache import drop_documents

ENTITY_FIELDS = "e {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at}"
# FalkorDB before 4.18 projects a null (no OPTIONAL MATCH hit) to {id: NULL, text: NULL}, which
# collect() keeps; the CASE turns it back into a null that collect() drops.
OBSERVATIONS = "collect(CASE WHEN o IS NULL THEN NULL ELSE o {.id, .text} END)"
# A node's revision, written by every text change and by every creation: a token no other
# revision of any node has, so that a vector computed for a node that was deleted and created
# again with the same id (an import restores ids) can never pass for the new node's
# (`polyg.core.vectorizer`). A counter would start again at the same number.
NEW_REV = "randomUUID()"
BUMP_REV = f"e.rev = {NEW_REV}"
# Follows a MATCH binding `e`: deletes the entities, their observations and relationships and
# the documents cached for them or built from them (`drop_documents`), and clears the parent
# of their children (found through the index on parent_id). Returns how many were deleted.
DELETE_ENTITY_TAIL = (
    "WITH e " + drop_documents("e") + "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
    "WITH e, collect(o) AS obs FOREACH (x IN obs | DELETE x) "
    "WITH e OPTIONAL MATCH (c:Entity {parent_id: e.id}) "
    "WITH e, collect(c) AS kids FOREACH (k IN kids | SET k.parent_id = NULL) "
    "WITH e, e.id AS gone DETACH DELETE e RETURN count(gone)"
)
ENTITY_BY_ID = "MATCH (e:Entity {id: $id}) RETURN e.id"


def label_dispatch(node: str, label_of_row: str, labels: list[Label | None]) -> str:
    """Clauses that give `node` its second label, for a batch whose rows carry different ones,
    in one query: Cypher cannot take a label as a parameter, so each label of the batch gets a
    FOREACH entered only by its rows."""
    return " ".join(
        f"FOREACH (_ IN CASE WHEN {label_of_row} = '{label}' THEN [1] ELSE [] END | SET {node}:{label})"
        for label in sorted({Label(label) for label in labels if label is not None})
    )


async def exists(runner: Runner, project: str, cypher: str, params: dict[str, Any]) -> bool:
    return bool(await runner.read(project, cypher + " LIMIT 1", params))


async def entity_exists(runner: Runner, project: str, entity_id: str) -> bool:
    return await exists(runner, project, ENTITY_BY_ID, {"id": entity_id})


async def create_entity(
    runner: Runner, project: str, label: Label | None, params: dict[str, Any], *, with_parent: bool
) -> list[Row]:
    """One entity with its observations (`params`: id, name, type, summary, parent, now, obs[]);
    no row when the parent vanished. Returns [entity fields]."""
    labels = "Entity" + (f":{label}" if label else "")
    parent_match = "MATCH (p:Entity {id: $parent}) " if with_parent else ""
    return await runner.write(
        project,
        parent_match + f"CREATE (e:{labels} {{id: $id, name: $name, type: $type, summary: $summary, "
        f"parent_id: $parent, created_at: $now, updated_at: $now, rev: {NEW_REV}}}) "
        "FOREACH (o IN $obs | CREATE (e)-[:HAS_OBSERVATION]->(:Observation "
        "{id: o.id, text: o.text, created_at: o.at})) "
        f"RETURN {ENTITY_FIELDS}",
        params,
    )


async def get_entity(runner: Runner, project: str, entity_id: str, skip: int, end: int) -> list[Row]:
    """[entity fields, observations[skip..end] (oldest first), how many it has]."""
    return await runner.read(
        project,
        "MATCH (e:Entity {id: $id}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
        f"WITH e, o ORDER BY o.created_at, o.id WITH e, {OBSERVATIONS} AS obs "
        f"RETURN {ENTITY_FIELDS}, obs[$skip..$end], size(obs)",
        {"id": entity_id, "skip": skip, "end": end},
    )


async def find_entities(
    runner: Runner, project: str, type_: str | None, part: str | None, offset: int, limit: int
) -> list[Row]:
    """[id, name, type] of a page of entities in name order, filtered by type and lower-case name part."""
    # Only the filters given are written: `$type IS NULL OR e.type = $type` would keep the
    # type index out of use. Sorting before projecting reads two properties per entity, not
    # three (figures in bench/README.md, "Measured choices").
    conditions = []
    if type_ is not None:
        conditions.append("e.type = $type")
    if part:
        conditions.append("toLower(e.name) CONTAINS $part")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return await runner.read(
        project,
        f"MATCH (e:Entity){where} WITH e ORDER BY e.name, e.id SKIP $offset LIMIT $limit RETURN e.id, e.name, e.type",
        {"type": type_, "part": part, "offset": offset, "limit": limit},
    )


async def set_summary(runner: Runner, project: str, entity_id: str, summary: str, now: str) -> list[Row]:
    # The head vector no longer fits the text: removed here, made again by the vectorizer.
    return await runner.write(
        project,
        "MATCH (e:Entity {id: $id}) SET e.summary = $summary, e.updated_at = $now, "
        f"{BUMP_REV} REMOVE e.head_embedding RETURN e.id",
        {"id": entity_id, "summary": summary, "now": now},
    )


async def delete_entities(runner: Runner, project: str, ids: list[str]) -> int:
    """Delete the entities with these ids (see DELETE_ENTITY_TAIL); how many were deleted."""
    rows = await runner.write(
        project, "UNWIND $ids AS id MATCH (e:Entity {id: id}) " + DELETE_ENTITY_TAIL, {"ids": ids}
    )
    return int(rows[0][0]) if rows else 0


async def add_observation(
    runner: Runner, project: str, entity_id: str, observation_id: str, text: str, now: str
) -> list[Row]:
    """[the observation's id, whether it was added]: a text the entity holds already is not
    added again (checked inside the write)."""
    return await runner.write(
        project,
        "MATCH (e:Entity {id: $id}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(x:Observation) "
        "WHERE x.text = $text WITH e, collect(x.id)[0] AS have "
        "FOREACH (_ IN CASE WHEN have IS NULL THEN [1] ELSE [] END | "
        "CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: $oid, text: $text, created_at: $now}) "
        f"SET e.updated_at = $now, {BUMP_REV}) "
        "RETURN coalesce(have, $oid), have IS NULL",
        {"id": entity_id, "oid": observation_id, "text": text, "now": now},
    )


OBSERVATION_OF = "MATCH (e:Entity {id: $id})-[:HAS_OBSERVATION]->(o:Observation {id: $oid}) "


async def observation_exists(runner: Runner, project: str, entity_id: str, observation_id: str) -> bool:
    return await exists(runner, project, OBSERVATION_OF + "RETURN o.id", {"id": entity_id, "oid": observation_id})


async def delete_observation(runner: Runner, project: str, entity_id: str, observation_id: str) -> list[Row]:
    return await runner.write(
        project, OBSERVATION_OF + f"DELETE o SET {BUMP_REV} RETURN e.id", {"id": entity_id, "oid": observation_id}
    )
