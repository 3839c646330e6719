"""Cypher for entities and their observations: the one statement that creates entities, for
every toolset (`create_entities`, used through `polyg.core.graph.entity_writer`); deleting entities
(kg by id, memory-compat by name); and the `kg` toolset's reads and writes by id.

Writes that may be refused are preceded by a read (`exists`): the first write to a project
creates its graph (schema, indexes), and a refused call must leave nothing behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

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
# (`polyg.core.graph.vectorizer`). A counter would start again at the same number.
NEW_REV = "randomUUID()"


def bump_rev(node: str = "e") -> str:
    """The one revision bump: a SET item giving `node` a new revision (see NEW_REV)."""
    return f"{node}.rev = {NEW_REV}"


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


# Every entity a toolset creates is created by `create_entities` (issue 24): one statement, so
# that what an entity is made of (its key fields, its normalised name, its revision, its
# second label, its observations) is written one way whatever tool made it.
#
# What a create does when the entity may exist already (`if_absent`), checked inside the write
# query: FalkorDB runs one write query at a time on a graph, so two writers racing on one name
# (two tasks, two processes on one data directory) create it once.
# - "always": no check (kg and knowledge: names may repeat; the id is new);
# - "id": skip a row whose id exists (an import that keeps ids);
# - "name": skip a row whose exact name exists (memory-compat: names are unique; memory's
#   concepts, whose names are their own);
# - "name_key": skip a row whose normalised name exists (memory: a name matches an entity of
#   that name in any case).
# A unique constraint cannot stand in for the check: FalkorDB 4.16 has them, but kg allows
# names to repeat, so no store-wide constraint holds on `name` or `name_key`.
IfAbsent = Literal["always", "id", "name", "name_key"]
# The normalised name memory matches names on: stored with every entity (indexed), rewritten by
# a rename (`polyg.store.queries.nodes.update_node`). Computed by the store on both sides of a
# comparison, so that its lower-casing is the one rule.
NAME_KEY = "toLower({name})"
_CHECKED: dict[str, tuple[str, str]] = {
    "id": ("id", "r.id"),
    "name": ("name", "r.name"),
    "name_key": ("name_key", NAME_KEY.format(name="r.name")),
}
# A created entity's own fields as one map, its labels, and its user properties as [key, value]
# pairs (the keys polyg owns, `$own`, are not sent back: embeddings among them).
CREATED = (
    "n {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at} AS node, labels(n) AS labels, "
    "[k IN keys(n) WHERE NOT k IN $own | [k, n[k]]] AS props"
)


def create_entities_cypher(
    labels: list[Label | None],
    *,
    if_absent: IfAbsent = "always",
    parent: bool = False,
    prelude: str = "",
    carry: Sequence[str] = (),
    after: str = "",
) -> str:
    """The one statement creating entities from `$rows` (see `create_entities`). `prelude`:
    clauses run per row before the check (they may bind more variables, listed in `carry`);
    `after`: clauses run per entity created (`n`), e.g. the relationships it brings."""
    kept = ", ".join(["r", *(["p"] if parent else []), *carry])
    cypher = "UNWIND $rows AS r " + ("MATCH (p:Entity {id: r.parent_id}) " if parent else "") + prelude
    if if_absent != "always":
        # The stored key is compared after it is projected out of the node: FalkorDB's index
        # also matches names that differ in surrounding whitespace (`polyg.store.queries.named`).
        prop, key = _CHECKED[if_absent]
        cypher += (
            f"OPTIONAL MATCH (x:Entity {{{prop}: {key}}}) "
            f"WITH {kept}, collect(x.{prop}) AS found WHERE NOT {key} IN found "
        )
    cypher += (
        "CREATE (n:Entity {id: r.id, name: r.name, "
        f"name_key: {NAME_KEY.format(name='r.name')}, type: r.type, summary: coalesce(r.summary, ''), "
        "parent_id: r.parent_id, created_at: coalesce(r.created_at, $now), "
        f"updated_at: coalesce(r.updated_at, $now), rev: {NEW_REV}}}) "
        "SET n += coalesce(r.props, {}) "
        + label_dispatch("n", "r.label", labels)
        + " FOREACH (o IN coalesce(r.obs, []) | CREATE (n)-[:HAS_OBSERVATION]->(:Observation "
        "{id: o.id, text: o.text, created_at: coalesce(o.at, $now)})) " + after
    )
    return cypher + f" RETURN {CREATED}"


async def create_entities(
    runner: Runner,
    project: str,
    rows: list[dict[str, Any]],
    *,
    now: str,
    own: Sequence[str],
    if_absent: IfAbsent = "always",
    parent: bool = False,
    prelude: str = "",
    carry: Sequence[str] = (),
    after: str = "",
    params: Mapping[str, Any] | None = None,
) -> list[Row]:
    """Create an entity per row: id, name, type, and optionally summary, parent_id (matched
    first with `parent`: a row whose parent is gone writes nothing), label (its second label),
    props (user properties, no None), obs [{id, text, at}], created_at, updated_at; `$now`
    stands in for missing times. A row `if_absent` finds existing writes nothing. Returns
    [node fields, labels, user property pairs] per entity created, in one query."""
    if not rows:
        return []
    labels = [Label(row["label"]) if row.get("label") is not None else None for row in rows]
    cypher = create_entities_cypher(
        labels, if_absent=if_absent, parent=parent, prelude=prelude, carry=carry, after=after
    )
    return await runner.write(project, cypher, {**(params or {}), "rows": rows, "now": now, "own": list(own)})


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
    # three (figures in bench/notes/2026-11-27-measured-choices.md).
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
        f"SET e.updated_at = $now, {bump_rev()}) "
        "RETURN coalesce(have, $oid), have IS NULL",
        {"id": entity_id, "oid": observation_id, "text": text, "now": now},
    )


OBSERVATION_OF = "MATCH (e:Entity {id: $id})-[:HAS_OBSERVATION]->(o:Observation {id: $oid}) "


async def observation_exists(runner: Runner, project: str, entity_id: str, observation_id: str) -> bool:
    return await exists(runner, project, OBSERVATION_OF + "RETURN o.id", {"id": entity_id, "oid": observation_id})


async def delete_observation(runner: Runner, project: str, entity_id: str, observation_id: str) -> list[Row]:
    return await runner.write(
        project, OBSERVATION_OF + f"DELETE o SET {bump_rev()} RETURN e.id", {"id": entity_id, "oid": observation_id}
    )
