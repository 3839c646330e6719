"""Entities by name with their properties and their relationships (the entity view of `memory`)."""

from __future__ import annotations

from polyg.store.falkor import Row, TextListParam
from polyg.store.queries import Runner
from polyg.store.queries.entities import OBSERVATIONS

ENTITY_FIELDS = "e {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at}"
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


async def entity(run: Runner, project: str, entity_id: str, own: TextListParam) -> list[Row]:
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


async def relation_between(run: Runner, project: str, a: str, b: str, rel_type: str, text: str) -> list[Row]:
    """Id of a relationship of that type and text from a to b (`rel_type` checked by the caller)."""
    return await run.read(
        project,
        f"MATCH (:Entity {{id: $a}})-[r:{rel_type}]->(:Entity {{id: $b}}) "
        "WHERE coalesce(r.label, type(r)) = $text RETURN r.id, r.created_at LIMIT 1",
        {"a": a, "b": b, "text": text},
    )
