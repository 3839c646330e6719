"""Entities and their observations (spec 002 sections 1 and 3).

An entity's embedding is made from its name, type, description and observations, and is
remade whenever one of those changes; every observation carries its own embedding too.
Writes store the text and queue the entity; `polyg.core.vectorizer` stores the vectors.
"""

from __future__ import annotations

from typing import Any

from polyg.core import limits
from polyg.core.graph import GraphContext
from polyg.core.vectorizer import BUMP_REV
from polyg.errors import NotFound
from polyg.names import TYPE_NAME, new_id, now_iso, timestamps
from polyg.store.names import Label, is_reserved_label

ENTITY_FIELDS = "e {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at}"
# FalkorDB before 4.18 projects a null (no OPTIONAL MATCH hit) to {id: NULL, text: NULL}, which
# collect() keeps; the CASE turns it back into a null that collect() drops.
OBSERVATIONS = "collect(CASE WHEN o IS NULL THEN NULL ELSE o {.id, .text} END)"
# Follows a MATCH binding `e`: deletes the entities, their observations and relationships,
# and clears the parent of their children (found through the index on parent_id). Returns how
# many entities were deleted.
DELETE_ENTITY_TAIL = (
    "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
    "WITH e, collect(o) AS obs FOREACH (x IN obs | DELETE x) "
    "WITH e OPTIONAL MATCH (c:Entity {parent_id: e.id}) "
    "WITH e, collect(c) AS kids FOREACH (k IN kids | SET k.parent_id = NULL) "
    "WITH e, e.id AS gone DETACH DELETE e RETURN count(gone)"
)


async def exists(ctx: GraphContext, project: str, cypher: str, params: dict[str, Any]) -> bool:
    """Whether a read finds a row. Checked before a write that may fail, because the first write
    to a project creates its graph (schema, indexes): a refused call must leave nothing behind."""
    return bool(await ctx.read(project, cypher + " LIMIT 1", params))


def type_label(type_: str) -> Label | None:
    """A second label from the entity type (`location` -> `:Location`), if the type is a valid name."""
    if not TYPE_NAME.fullmatch(type_):
        return None
    label = type_[0].upper() + type_[1:]
    return None if is_reserved_label(label) else Label(label)


def label_dispatch(node: str, label_of_row: str, labels: list[Label | None]) -> str:
    """Clauses that give `node` its second label, for a batch whose rows carry different ones,
    in one query: Cypher cannot take a label as a parameter, so each label of the batch gets a
    FOREACH entered only by its rows."""
    return " ".join(
        f"FOREACH (_ IN CASE WHEN {label_of_row} = '{label}' THEN [1] ELSE [] END | SET {node}:{label})"
        for label in sorted({Label(label) for label in labels if label is not None})
    )


def shape_entity(row: dict[str, Any], observations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entity = {
        "id": row["id"],
        "name": row["name"],
        "type": row["type"],
        "description": row.get("summary") or "",
        "parentId": row.get("parent_id"),
        "created_at": row.get("created_at"),
        "updated_at": row.get("updated_at"),
    }
    if observations is not None:
        entity["observations"] = [{"id": o["id"], "text": o["text"]} for o in observations]
    return entity


class EntityService:
    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx

    async def create(
        self,
        project: str,
        *,
        name: str,
        type_: str,
        description: str = "",
        observations: list[str] | None = None,
        parent_id: str | None = None,
    ) -> dict[str, Any]:
        name = limits.name(name)
        limits.type_(type_)
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        # One rule with memory-compat: an entity holds a text once.
        obs_texts = limits.unique(limits.batch(observations or [], "observations"))
        if parent_id is not None:
            limits.text(parent_id, "parentId", max_len=limits.MAX_NAME)
            if not await exists(self.ctx, project, "MATCH (p:Entity {id: $id}) RETURN p.id", {"id": parent_id}):
                raise NotFound(f"Parent entity {parent_id} not found.")
        now = now_iso()
        entity_id = new_id("ent")
        obs = [
            {"id": new_id("obs"), "text": text, "at": at}
            for text, at in zip(obs_texts, timestamps(len(obs_texts)), strict=True)
        ]
        label = type_label(type_)
        labels = "Entity" + (f":{label}" if label else "")
        parent_match = "MATCH (p:Entity {id: $parent}) " if parent_id is not None else ""
        # Text now, vectors just after (polyg.core.vectorizer): the model is not on this path.
        rows = await self.ctx.write(
            project,
            parent_match + f"CREATE (e:{labels} {{id: $id, name: $name, type: $type, summary: $summary, "
            "parent_id: $parent, created_at: $now, updated_at: $now, rev: randomUUID()}) "
            "FOREACH (o IN $obs | CREATE (e)-[:HAS_OBSERVATION]->(:Observation "
            "{id: o.id, text: o.text, created_at: o.at})) "
            f"RETURN {ENTITY_FIELDS}",
            {
                "id": entity_id,
                "name": name,
                "type": type_,
                "summary": description,
                "parent": parent_id,
                "now": now,
                "obs": obs,
            },
        )
        if not rows:
            raise NotFound(f"Parent entity {parent_id} not found.")
        self.ctx.vectors.mark(project, [entity_id])
        return shape_entity(rows[0][0], [{"id": o["id"], "text": o["text"]} for o in obs])

    async def get(
        self, project: str, entity_id: str, *, skip: int = 0, shown: int = limits.OBSERVATIONS_SHOWN
    ) -> dict[str, Any]:
        """The entity with at most `shown` of its observations from the `skip`th on (oldest
        first); when some are left out, `observations_total` says how many it has and
        `next_observation_offset` where the next page starts (if one does)."""
        limits.identifier(entity_id, "entity_id")
        limits.offset(skip, "observation_offset")
        limits.limit(shown, "observation_limit")
        rows = await self.ctx.read(
            project,
            "MATCH (e:Entity {id: $id}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
            f"WITH e, o ORDER BY o.created_at, o.id WITH e, {OBSERVATIONS} AS obs "
            f"RETURN {ENTITY_FIELDS}, obs[$skip..$end], size(obs)",
            {"id": entity_id, "skip": skip, "end": skip + shown},
        )
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        entity, observations, total = rows[0]
        shaped = shape_entity(entity, observations)
        if len(observations) < total:
            shaped["observations_total"] = total
            if skip + len(observations) < total:
                shaped["next_observation_offset"] = skip + len(observations)
        return shaped

    async def find(
        self,
        project: str,
        *,
        type_: str | None = None,
        name_contains: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        limits.limit(limit)
        limits.offset(offset)
        # Only the filters given are written: `$type IS NULL OR e.type = $type` would keep the
        # type index out of use. Sorting before projecting reads two properties per entity, not
        # three. At 100k entities: 8.9 ms instead of 23.6 by type, 29 ms instead of 36 unfiltered.
        conditions = []
        if type_ is not None:
            conditions.append("e.type = $type")
        if name_contains:
            conditions.append("toLower(e.name) CONTAINS $part")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = await self.ctx.read(
            project,
            f"MATCH (e:Entity){where} WITH e ORDER BY e.name, e.id SKIP $offset LIMIT $limit "
            "RETURN e.id, e.name, e.type",
            {
                "type": type_,
                "part": name_contains.lower() if name_contains else None,
                "offset": offset,
                "limit": limit,
            },
        )
        return [{"id": i, "name": n, "type": t} for i, n, t in rows]

    async def update_description(self, project: str, entity_id: str, description: str) -> None:
        limits.identifier(entity_id, "entity_id")
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        if not await exists(self.ctx, project, "MATCH (e:Entity {id: $id}) RETURN e.id", {"id": entity_id}):
            raise NotFound(f"Entity {entity_id} not found.")
        # The head vector no longer fits the text: removed here, made again by the vectorizer.
        rows = await self.ctx.write(
            project,
            "MATCH (e:Entity {id: $id}) SET e.summary = $summary, e.updated_at = $now, "
            f"{BUMP_REV} REMOVE e.head_embedding RETURN e.id",
            {"id": entity_id, "summary": description, "now": now_iso()},
        )
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        self.ctx.vectors.mark(project, [entity_id])

    async def delete(self, project: str, entity_id: str) -> None:
        """Delete the entity, its observations and relationships; its children lose their parent."""
        limits.identifier(entity_id, "entity_id")
        if not await exists(self.ctx, project, "MATCH (e:Entity {id: $id}) RETURN e.id", {"id": entity_id}):
            raise NotFound(f"Entity {entity_id} not found.")
        rows = await self.ctx.write(project, "MATCH (e:Entity {id: $id}) " + DELETE_ENTITY_TAIL, {"id": entity_id})
        if rows[0][0] == 0:
            raise NotFound(f"Entity {entity_id} not found.")

    async def add_observation(self, project: str, entity_id: str, text: str) -> dict[str, Any]:
        """Add an observation; a text the entity holds already is not added again, and the
        existing observation is returned (the check runs inside the write)."""
        limits.identifier(entity_id, "entity_id")
        limits.text(text, "observation", max_len=limits.MAX_TEXT)
        if not await exists(self.ctx, project, "MATCH (e:Entity {id: $id}) RETURN e.id", {"id": entity_id}):
            raise NotFound(f"Entity {entity_id} not found.")
        rows = await self.ctx.write(
            project,
            "MATCH (e:Entity {id: $id}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(x:Observation) "
            "WHERE x.text = $text WITH e, collect(x.id)[0] AS have "
            "FOREACH (_ IN CASE WHEN have IS NULL THEN [1] ELSE [] END | "
            "CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: $oid, text: $text, created_at: $now}) "
            f"SET e.updated_at = $now, {BUMP_REV}) "
            "RETURN coalesce(have, $oid), have IS NULL",
            {"id": entity_id, "oid": new_id("obs"), "text": text, "now": now_iso()},
        )
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        observation_id, added = rows[0]
        if added:
            self.ctx.vectors.mark(project, [entity_id])
        return {"id": observation_id, "text": text}

    async def delete_observation(self, project: str, entity_id: str, observation_id: str) -> None:
        limits.identifier(entity_id, "entity_id")
        limits.identifier(observation_id, "observation_id")
        match = "MATCH (e:Entity {id: $id})-[:HAS_OBSERVATION]->(o:Observation {id: $oid}) "
        params = {"id": entity_id, "oid": observation_id}
        found = await exists(self.ctx, project, match + "RETURN o.id", params)
        rows = await self.ctx.write(project, match + f"DELETE o SET {BUMP_REV} RETURN e.id", params) if found else []
        if not rows:
            raise NotFound(f"Observation {observation_id} not found or does not belong to entity {entity_id}.")
        self.ctx.vectors.mark(project, [entity_id])
