"""Cypher that reads nodes: entities by id, by name order or type (a page), with their
observations, their user properties and the relationships of the entity view; nodes of a
label by id. Names are resolved to nodes by `polyg.store.queries.resolve`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyg.store.falkor import Row, TextListParam
from polyg.store.names import ENTITY, Label
from polyg.store.queries import Runner
from polyg.store.queries.nodes import NODE_RETURN

ENTITY_FIELDS = "e {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at}"


ENTITY_BY_ID = "MATCH (e:Entity {id: $id}) RETURN e.id"


async def exists(runner: Runner, project: str, cypher: str, params: dict[str, Any]) -> bool:
    return bool(await runner.read(project, cypher + " LIMIT 1", params))


async def entity_exists(runner: Runner, project: str, entity_id: str) -> bool:
    return await exists(runner, project, ENTITY_BY_ID, {"id": entity_id})


# FalkorDB before 4.18 projects a null (no OPTIONAL MATCH hit) to {id: NULL, text: NULL}, which
# collect() keeps; the CASE turns it back into a null that collect() drops.
OBSERVATIONS = "collect(CASE WHEN o IS NULL THEN NULL ELSE o {.id, .text} END)"


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


async def get_nodes(runner: Runner, project: str, kind: Label, ids: list[str], own_keys: Sequence[str]) -> list[Row]:
    return await runner.read(
        project,
        f"UNWIND $ids AS id MATCH (n:{kind} {{id: id}}) RETURN {NODE_RETURN}",
        {"ids": ids, "own": list(own_keys)},
    )


async def entities_with_observations(
    runner: Runner, project: str, ids: list[str], skip: int, end: int | None
) -> list[Row]:
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


async def entity_ids_page(runner: Runner, project: str, offset: int, limit: int) -> list[str]:
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


async def summaries(runner: Runner, project: str, ids: list[str]) -> list[Row]:
    """[id, name, type, summary] of the entities with these ids."""
    return await runner.read(
        project,
        "UNWIND $ids AS i MATCH (e:Entity {id: i}) RETURN e.id, e.name, e.type, e.summary",
        {"ids": ids},
    )


async def entity_names(runner: Runner, project: str) -> list[Row]:
    """[id, name] of every entity: the names a chunk can mention."""
    return await runner.read(project, f"MATCH (e:{ENTITY}) RETURN e.id, e.name")


# The entity's properties but polyg's own keys ($own), as [key, value] pairs: its vectors
# (two of 384 floats) must not travel only to be dropped.
USER_PROPERTIES = "[k IN keys(e) WHERE NOT k IN $own | [k, e[k]]]"
# The relationships' columns, as `relationships` returns them.
RELATION = (
    "[r.id, type(r), coalesce(r.label, type(r)), startNode(r) = e, o.id, o.name, o.type, "
    "r.description, r.valid_from, r.valid_to, r.invalidated_by, r.confidence, r.score]"
)
# Facts only while they hold at $at (other relationships always), unless $at is null.
HOLDS = "$at IS NULL OR r.valid_from IS NULL OR (r.valid_from <= $at AND (r.valid_to IS NULL OR r.valid_to > $at))"


async def entity_with_properties(run: Runner, project: str, entity_id: str, own: TextListParam) -> list[Row]:
    """(fields, properties other than `own` as [key, value] pairs) of the entity."""
    return await run.read(
        project,
        f"MATCH (e:Entity {{id: $id}}) RETURN {ENTITY_FIELDS}, {USER_PROPERTIES}",
        {"id": entity_id, "own": own},
    )


async def entity_view(
    run: Runner,
    project: str,
    *,
    by: str,
    key: str,
    own: TextListParam,
    observations: tuple[int, int],
    relationships: tuple[int, int] | None,
    at: str | None,
    events: int,
) -> list[Row]:
    """Everything `get_entity` shows, in one round trip: [fields, properties other than `own`
    as pairs, observations[skip:end] oldest first, how many it has, relationships[skip:end]
    (by type, age, id; null when not asked), its `events` latest events]. `by` is "id", or
    "name" for the oldest entity of exactly that name (the index also matches names that
    differ in surrounding whitespace: compared again)."""
    if by == "name":
        clauses = ["MATCH (e:Entity {name: $key}) WHERE e.name = $key WITH e ORDER BY e.created_at, e.id LIMIT 1"]
    elif by == "id":
        clauses = ["MATCH (e:Entity {id: $key})"]
    else:
        raise ValueError(f"entity_view by {by!r}")
    carry, rels = "e", "null"
    if relationships is not None:
        clauses += [
            f"OPTIONAL MATCH (e)-[r]-(o:Entity) WHERE {HOLDS}",
            "WITH e, r, o ORDER BY type(r), r.created_at, r.id",
            f"WITH e, collect(CASE WHEN r IS NULL THEN NULL ELSE {RELATION} END) AS rels",
        ]
        carry, rels = "e, rels", "rels[$rel_skip..$rel_end]"
    clauses += [
        "OPTIONAL MATCH (e)<-[:INVOLVES]-(ev:Event)",
        f"WITH {carry}, ev ORDER BY ev.occurred_at DESC, ev.id",
        f"WITH {carry}, collect(CASE WHEN ev IS NULL THEN NULL ELSE [ev.id, ev.description, ev.occurred_at] END)"
        "[0..$events] AS evs",
        "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation)",
        f"WITH {carry}, evs, o ORDER BY o.created_at, o.id",
        f"WITH {carry}, evs, {OBSERVATIONS} AS obs",
        f"RETURN {ENTITY_FIELDS}, {USER_PROPERTIES}, obs[$obs_skip..$obs_end], size(obs), {rels}, evs",
    ]
    return await run.read(
        project,
        " ".join(clauses),
        {
            "key": key,
            "own": own,
            "at": at,
            "obs_skip": observations[0],
            "obs_end": observations[1],
            "rel_skip": relationships[0] if relationships else 0,
            "rel_end": relationships[1] if relationships else 0,
            "events": events,
        },
    )
