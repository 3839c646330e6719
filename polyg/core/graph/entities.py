"""Entities and their observations (spec 002 sections 1 and 3).

An entity's embedding is made from its name, type, description and observations, and is
remade whenever one of those changes; every observation carries its own embedding too.
Writes store the text and queue the entity; `polyg.core.graph.vectorizer` stores the vectors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.entity_writer import EntityWriter, type_label
from polyg.core.model import Node
from polyg.errors import NotFound
from polyg.names import new_id, now_iso, timestamps
from polyg.store.names import ENTITY
from polyg.store.queries import node_reads as q
from polyg.store.queries import observations as observations_q
from polyg.store.queries.nodes import DELETE_ENTITY_TAIL, label_dispatch

__all__ = [
    "DELETE_ENTITY_TAIL",
    "EntityDetail",
    "EntityService",
    "Observation",
    "entity_node",
    "label_dispatch",
    "type_label",
]


@dataclass(frozen=True)
class Observation:
    id: str
    text: str


@dataclass(frozen=True)
class EntityDetail:
    """An entity with a page of its observations (oldest first): the page starts at
    `observation_offset` of the `observations_total` the entity holds."""

    node: Node
    observations: tuple[Observation, ...] = ()
    observations_total: int = 0
    observation_offset: int = 0

    @property
    def id(self) -> str:
        return self.node.id

    @property
    def next_observation_offset(self) -> int | None:
        """Where the next page starts, when one does."""
        end = self.observation_offset + len(self.observations)
        return end if end < self.observations_total else None


def entity_node(row: dict[str, Any]) -> Node:
    """The node of an entity row (`polyg.store.queries.node_reads.ENTITY_FIELDS`)."""
    return Node(
        row["id"],
        ENTITY,
        name=row["name"],
        type=row["type"],
        summary=row.get("summary") or "",
        parent_id=row.get("parent_id"),
        created_at=row.get("created_at"),
        updated_at=row.get("updated_at"),
    )


class EntityService:
    def __init__(self, ctx: GraphContext, writer: EntityWriter | None = None) -> None:
        self.ctx = ctx
        self.writer = writer or EntityWriter(ctx)

    async def create(
        self,
        project: str,
        *,
        name: str,
        type_: str,
        description: str = "",
        observations: list[str] | None = None,
        parent_id: str | None = None,
    ) -> EntityDetail:
        name = limits.name(name)
        limits.type_(type_)
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        # One rule with memory-compat: an entity holds a text once.
        obs_texts = limits.unique(limits.batch(observations or [], "observations"))
        if parent_id is not None:
            limits.text(parent_id, "parentId", max_len=limits.MAX_NAME)
            if not await q.entity_exists(self.ctx, project, parent_id):
                raise NotFound(f"Parent entity {parent_id} not found.")
        entity_id = new_id("ent")
        obs = [
            {"id": new_id("obs"), "text": text, "at": at}
            for text, at in zip(obs_texts, timestamps(len(obs_texts)), strict=True)
        ]
        # Text now, vectors just after (polyg.core.graph.vectorizer): the model is not on this path.
        row = {"id": entity_id, "name": name, "type": type_, "summary": description, "parent_id": parent_id, "obs": obs}
        made = await self.writer.create(project, [row], parent=parent_id is not None)
        if not made:
            raise NotFound(f"Parent entity {parent_id} not found.")
        # As `get` reads it back (`entity_node`: kg shows no labels).
        node = replace(made[0], labels=())
        return EntityDetail(node, tuple(Observation(o["id"], o["text"]) for o in obs), len(obs))

    async def get(
        self, project: str, entity_id: str, *, skip: int = 0, shown: int = limits.OBSERVATIONS_SHOWN
    ) -> EntityDetail:
        """The entity with at most `shown` of its observations from the `skip`th on (oldest first)."""
        limits.identifier(entity_id, "entity_id")
        limits.offset(skip, "observation_offset")
        limits.limit(shown, "observation_limit")
        rows = await q.get_entity(self.ctx, project, entity_id, skip, skip + shown)
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        entity, observations, total = rows[0]
        page = tuple(Observation(o["id"], o["text"]) for o in observations)
        return EntityDetail(entity_node(entity), page, int(total), skip)

    async def find(
        self,
        project: str,
        *,
        type_: str | None = None,
        name_contains: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Node]:
        limits.limit(limit)
        limits.offset(offset)
        part = name_contains.lower() if name_contains else None
        rows = await q.find_entities(self.ctx, project, type_, part, offset, limit)
        return [Node(i, ENTITY, name=n, type=t) for i, n, t in rows]

    async def update_description(self, project: str, entity_id: str, description: str) -> None:
        limits.identifier(entity_id, "entity_id")
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        if not await q.entity_exists(self.ctx, project, entity_id):
            raise NotFound(f"Entity {entity_id} not found.")
        if await self.writer.update(project, entity_id, sets={"summary": description}, text_changed=True) is None:
            raise NotFound(f"Entity {entity_id} not found.")

    async def delete(self, project: str, entity_id: str) -> None:
        """Delete the entity, its observations and relationships; its children lose their parent."""
        limits.identifier(entity_id, "entity_id")
        if not await q.entity_exists(self.ctx, project, entity_id):
            raise NotFound(f"Entity {entity_id} not found.")
        if await self.writer.delete(project, [entity_id]) == 0:
            raise NotFound(f"Entity {entity_id} not found.")

    async def add_observation(self, project: str, entity_id: str, text: str) -> Observation:
        """Add an observation; a text the entity holds already is not added again, and the
        existing observation is returned (the check runs inside the write)."""
        limits.identifier(entity_id, "entity_id")
        limits.text(text, "observation", max_len=limits.MAX_TEXT)
        if not await q.entity_exists(self.ctx, project, entity_id):
            raise NotFound(f"Entity {entity_id} not found.")
        rows = await observations_q.add_observation(self.ctx, project, entity_id, new_id("obs"), text, now_iso())
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        observation_id, added = rows[0]
        if added:
            self.ctx.vectors.mark(project, [entity_id])
        return Observation(observation_id, text)

    async def delete_observation(self, project: str, entity_id: str, observation_id: str) -> None:
        limits.identifier(entity_id, "entity_id")
        limits.identifier(observation_id, "observation_id")
        found = await observations_q.observation_exists(self.ctx, project, entity_id, observation_id)
        if not found or not await observations_q.delete_observation(self.ctx, project, entity_id, observation_id):
            raise NotFound(f"Observation {observation_id} not found or does not belong to entity {entity_id}.")
        self.ctx.vectors.mark(project, [entity_id])
