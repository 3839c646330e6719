"""Nodes written in batches, one outcome per item (spec 000 `manage_nodes`, and the entity writes
of every other toolset).

Every item is checked before it is written and written by one query, so an item fails whole:
a bad property, an unknown relationship target or a vanished parent leaves nothing behind, and
the other items go on. Parents and edge targets are found by id, then by exact name; a name
created by an earlier item of the same batch means that node. Creating or deleting an edge
bumps `updated_at` on the nodes it touches (a cached document built from them is stale).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edges import OWN_KEYS, EdgeService, Resolved, check_batch, new_edge_id, resolve
from polyg.core.graph.embeddable import ENTITY, REGISTRY, Embeddable, EmbeddableRegistry
from polyg.core.graph.entity_writer import EntityWriter, node_from, type_label
from polyg.core.model import (
    Node,
    Outcome,
    check_name,
    check_text,
    encode_edge_properties,
    encode_properties,
)
from polyg.errors import InvalidParams, NotFound, PayloadTooLarge, PolygError
from polyg.names import new_id, now_iso, timestamps
from polyg.store.names import user_rel_type
from polyg.store.queries import node_reads as node_reads_q
from polyg.store.queries import nodes as q

MAX_NODE_EDGES = 100  # edges one new node may bring along


@dataclass(frozen=True)
class NodeEdge:
    """An edge made with a new node: to `target` (id or exact name), or from it if not `outgoing`."""

    target: str
    type: str
    outgoing: bool = True
    description: str = ""
    properties: Mapping[str, object] | None = None


@dataclass(frozen=True)
class NodeDraft:
    name: str
    type: str
    summary: str = ""
    properties: Mapping[str, object] | None = None
    observations: Sequence[str] = ()
    parent: str | None = None  # id or exact name
    edges: Sequence[NodeEdge] = ()


@dataclass(frozen=True)
class NodeChange:
    """Fields to change on the node `ref` (id or exact name); None leaves a field as it is."""

    ref: str
    name: str | None = None
    type: str | None = None
    summary: str | None = None
    properties: Mapping[str, object] | None = None  # merged; a None value removes the property


def _refs(draft: NodeDraft) -> list[str]:
    return [ref for ref in (draft.parent, *(edge.target for edge in draft.edges)) if isinstance(ref, str)]


class NodeService:
    def __init__(
        self,
        ctx: GraphContext,
        edges: EdgeService,
        *,
        kind: Embeddable = ENTITY,
        registry: EmbeddableRegistry = REGISTRY,
        writer: EntityWriter | None = None,
    ) -> None:
        self.ctx = ctx
        self.writer = writer or EntityWriter(ctx)
        self.edges = edges
        if kind.label != ENTITY.label:  # its writes are the entity writer's
            raise ValueError(f"NodeService writes entities, not {kind.label}")
        self.kind = kind
        self.registry = registry

    # --- create ---------------------------------------------------------------------------------

    async def create(self, project: str, drafts: Sequence[NodeDraft]) -> list[Outcome]:
        """Create nodes in batch order, items of one shape (label set, with a parent or not)
        together, one query per shape whatever relationships each brings, except that an item
        referring by name to a node of the pending items waits for it."""
        check_batch(drafts, "nodes")
        refs = [r for d in drafts for r in (d.parent, *(e.target for e in d.edges)) if r is not None]
        found = await resolve(self.ctx, project, refs, self.registry)
        made: dict[str, Resolved] = {}  # names created by this batch: they win over older namesakes
        outcomes: dict[int, Outcome] = {}
        pending: list[tuple[int, q.NodeShape, dict[str, Any]]] = []
        pending_names: set[str] = set()
        for index, draft in enumerate(drafts):
            if any(ref in pending_names for ref in _refs(draft)):
                await self._write(project, pending, drafts, outcomes, made)
                pending, pending_names = [], set()
            try:
                shape, row = self._prepare(index, draft, {**found, **made})
            except PolygError as exc:
                outcomes[index] = Outcome.failed(index, exc)
                continue
            pending.append((index, shape, row))
            pending_names.update((row["name"], draft.name))  # as stored, and as given
        await self._write(project, pending, drafts, outcomes, made)
        return [outcomes[index] for index in range(len(drafts))]

    async def _write(
        self,
        project: str,
        pending: list[tuple[int, q.NodeShape, dict[str, Any]]],
        drafts: Sequence[NodeDraft],
        outcomes: dict[int, Outcome],
        made: dict[str, Resolved],
    ) -> None:
        groups: dict[q.NodeShape, list[tuple[int, dict[str, Any]]]] = {}
        for index, shape, row in pending:
            groups.setdefault(shape, []).append((index, row))
        for shape, items in groups.items():
            try:
                await self.edges.writer.register(project, [edge.type for _, row in items for edge, *_ in row["edges"]])
                params, prelude, carry, after = q.create_nodes_clauses([row for _, row in items], parent=shape.parent)
                nodes = await self.writer.create(
                    project, params, parent=shape.parent, prelude=prelude, carry=carry, after=after
                )
                written = {n.id: n for n in nodes}
            except PolygError as exc:
                # The checks leave nothing the database refuses: this is the store failing, and the
                # group's one query wrote nothing.
                outcomes.update((index, Outcome.failed(index, exc)) for index, _ in items)
                continue
            for index, row in items:
                node = written.get(row["id"])
                if node is None:
                    gone = NotFound(f"nodes[{index}]: the parent or a relationship target was deleted meanwhile.")
                    outcomes[index] = Outcome.failed(index, gone)
                    continue
                edge_ids = tuple(edge_id for _, _, edge_id, _, _ in row["edges"])
                outcomes[index] = Outcome(index, "created", node.id, node, edge_ids=edge_ids)
        for index, _, _ in pending:  # in batch order: the first of a name is the one it means
            node = outcomes[index].node
            if node is not None:
                resolved = Resolved(node.id, self.kind.label, node.labels, node.type)
                # By the name as given and as stored (`check_name` strips and normalises it).
                for name in (drafts[index].name, node.name):
                    if name is not None:
                        made.setdefault(name, resolved)

    def _prepare(
        self, index: int, draft: NodeDraft, known: Mapping[str, Resolved]
    ) -> tuple[q.NodeShape, dict[str, Any]]:
        where = f"nodes[{index}]"
        row = self._row(draft, where)
        if draft.parent is not None:
            parent = self._endpoint(known, draft.parent, f"{where}.parent")
            if parent.label != self.kind.label:
                raise InvalidParams(f"{where}.parent must be a {self.kind.label}.")
            row["parent_id"] = parent.id
        if len(draft.edges) > MAX_NODE_EDGES:
            raise PayloadTooLarge(
                f"{where}.relationships holds {len(draft.edges)} items; the limit is {MAX_NODE_EDGES}."
            )
        edges = []
        for i, edge in enumerate(draft.edges):
            at = f"{where}.relationships[{i}]"
            rel_type = user_rel_type(edge.type, f"{at}.type")
            props = encode_edge_properties(edge.properties, f"{at}.properties")
            other = self._endpoint(known, edge.target, f"{at}.target")
            description = check_text(edge.description, f"{at}.description", max_len=limits.MAX_TEXT)
            shape = q.EdgeShape(rel_type, other.label, edge.outgoing)
            values = {k: v for k, v in props.items() if v is not None}
            edges.append((shape, other.id, new_edge_id(rel_type), description, values))
        row["edges"] = edges
        return q.NodeShape(type_label(row["type"]), draft.parent is not None), row

    def _row(self, draft: NodeDraft, where: str) -> dict[str, Any]:
        observations = list(draft.observations)
        if len(observations) > limits.MAX_BATCH:
            raise PayloadTooLarge(
                f"{where}.observations holds {len(observations)} items; the limit is {limits.MAX_BATCH}."
            )
        texts = [
            check_text(o, f"{where}.observations[{i}]", max_len=limits.MAX_TEXT, allow_empty=False)
            for i, o in enumerate(observations)
        ]
        props = encode_properties(draft.properties, f"{where}.properties")
        return {
            "id": new_id("ent"),
            "name": check_name(draft.name, f"{where}.name"),
            "type": check_text(draft.type, f"{where}.type", max_len=limits.MAX_TYPE, allow_empty=False),
            "summary": check_text(draft.summary, f"{where}.summary", max_len=limits.MAX_TEXT),
            "parent_id": None,
            "props": {k: v for k, v in props.items() if v is not None},
            "obs": [
                {"id": new_id("obs"), "text": text, "at": at}
                for text, at in zip(dict.fromkeys(texts), timestamps(len(set(texts))), strict=True)
            ],
        } | dict.fromkeys(("now", "created_at", "updated_at"), now_iso())

    @staticmethod
    def _endpoint(known: Mapping[str, Resolved], ref: object, where: str) -> Resolved:
        if not isinstance(ref, str) or not ref:
            raise InvalidParams(f"{where} must be a node id or name.")
        if ref not in known:
            raise NotFound(f"{where}: node {ref!r} not found (by id or name).")
        return known[ref]

    # --- update and delete ----------------------------------------------------------------------

    async def update(self, project: str, changes: Sequence[NodeChange]) -> list[Outcome]:
        check_batch(changes, "nodes")
        found = await resolve(self.ctx, project, [c.ref for c in changes], self.registry)
        outcomes = []
        for index, change in enumerate(changes):
            try:
                target = self._own(found, change.ref, f"nodes[{index}]")
                async with self.ctx.entity_locks(project, [target.id]):
                    outcomes.append(await self._update_one(project, index, change, target))
            except PolygError as exc:
                outcomes.append(Outcome.failed(index, exc))
        return outcomes

    async def _update_one(self, project: str, index: int, change: NodeChange, target: Resolved) -> Outcome:
        where = f"nodes[{index}]"
        sets: dict[str, str] = {}
        if change.name is not None:
            sets["name"] = check_name(change.name, f"{where}.name")
        if change.type is not None:
            sets["type"] = check_text(change.type, f"{where}.type", max_len=limits.MAX_TYPE, allow_empty=False)
        if change.summary is not None:
            sets["summary"] = check_text(change.summary, f"{where}.summary", max_len=limits.MAX_TEXT)
        props = encode_properties(change.properties, f"{where}.properties")
        relabel = None
        if "type" in sets and target.type != sets["type"]:
            relabel = (type_label(target.type or ""), type_label(sets["type"]))
        text_changed = any(field in self.kind.head for field in sets)
        node = await self.writer.update(
            project, target.id, sets=sets, props=props, relabel=relabel, text_changed=text_changed
        )
        if node is None:
            raise NotFound(f"{where}: node {change.ref!r} was deleted meanwhile.")
        return Outcome(index, "updated", target.id, node)

    async def delete(self, project: str, refs: Sequence[str]) -> list[Outcome]:
        """Delete nodes with their observations and edges; their neighbours' `updated_at` is
        bumped and their children lose their parent."""
        check_batch(refs, "nodes")
        found = await resolve(self.ctx, project, refs, self.registry)
        outcomes = []
        for index, ref in enumerate(refs):
            try:
                target = self._own(found, ref, f"nodes[{index}]")
                if not await self.writer.delete(project, [target.id], touch_neighbours=True):
                    raise NotFound(f"nodes[{index}]: node {ref!r} was deleted meanwhile.")
                outcomes.append(Outcome(index, "deleted", target.id))
            except PolygError as exc:
                outcomes.append(Outcome.failed(index, exc))
        return outcomes

    def _own(self, found: Mapping[str, Resolved], ref: object, where: str) -> Resolved:
        target = self._endpoint(found, ref, where)
        if target.label != self.kind.label:
            raise NotFound(f"{where}: {ref!r} is not a {self.kind.label}.")
        return target

    # --- reads ----------------------------------------------------------------------------------

    async def get(self, project: str, ids: Sequence[str]) -> list[Node]:
        """The nodes with these ids, in that order (unknown ids are left out)."""
        rows = await node_reads_q.get_nodes(self.ctx, project, self.kind.label, list(ids), OWN_KEYS)
        by_id = {node.id: node for node in (node_from(row, self.kind.label) for row in rows)}
        return [by_id[i] for i in ids if i in by_id]
