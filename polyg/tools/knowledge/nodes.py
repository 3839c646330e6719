"""`manage_nodes`: nodes created, updated and deleted in batches, with their relationships."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core.graph.edges import EdgeDraft
from polyg.core.graph.nodes import NodeChange, NodeDraft, NodeEdge
from polyg.errors import InvalidParams, NotFound, PolygError
from polyg.runtime.app import Services
from polyg.store.names import ENTITY
from polyg.tools import shaping
from polyg.tools.knowledge.shared import (
    DIRECTION,
    STRENGTH,
    ItemResult,
    Operation,
    Strength,
    edge_direction,
    edge_properties,
    failed,
    knowledge,
)
from polyg.tools.registry import Params


class NodeRelationshipIn(BaseModel):
    target_id: str = Field(description="Id or name of the other node (a node made earlier in the batch counts).")
    relationship_type: str
    direction: Literal["forward", "reverse"] = DIRECTION
    relevance_strength: Strength | None = STRENGTH
    properties: dict[str, Any] | None = None


class NodeIn(BaseModel):
    id: str | None = Field(default=None, description="Required for update/delete.")
    name: str | None = Field(default=None, description="Required for create.")
    summary: str | None = Field(default=None, description="Required for create.")
    node_type: str | None = Field(default=None, description="Node type, e.g. Person: also a label of the node.")
    template_id: str | None = Field(default=None, description="Template (id or name) for the node's documents.")
    properties: dict[str, Any] | None = None
    relationships: list[NodeRelationshipIn] = []


class ManageNodes(Params):
    operation: Operation
    nodes: list[NodeIn]


class NodeResult(ItemResult):
    node_id: str
    created_relationships: int | None = None
    relationship_ids: list[str] | None = Field(default=None, description="Ids of the relationships created, in order.")


class NodesResult(BaseModel):
    results: list[NodeResult]


def _node_edges(item: NodeIn) -> list[NodeEdge]:
    edges = []
    for rel in item.relationships:
        stored, outgoing = edge_direction(rel.relationship_type, rel.direction)
        edges.append(
            NodeEdge(
                rel.target_id, stored, outgoing, properties=edge_properties(rel.properties, rel.relevance_strength)
            )
        )
    return edges


async def _create_nodes(s: Services, project: str, items: list[NodeIn]) -> list[dict[str, Any]]:
    results: list[dict[str, Any] | None] = [None] * len(items)
    drafts: list[NodeDraft] = []
    places: list[int] = []
    templates: dict[int, str] = {}
    wanted = await s.templates.find(project, [i.template_id for i in items if i.template_id is not None])
    for index, item in enumerate(items):
        try:
            if item.name is None or item.summary is None:
                raise InvalidParams(f"nodes[{index}]: name and summary are required to create a node.")
            edges = _node_edges(item)
            if item.template_id is not None:
                if item.template_id not in wanted:
                    raise NotFound(f"nodes[{index}]: template {item.template_id!r} not found.")
                templates[index] = wanted[item.template_id].id
        except PolygError as exc:
            results[index] = {
                "node_id": item.id or "",
                "operation": "create",
                "status": "error",
                "message": exc.message,
            }
            continue
        drafts.append(NodeDraft(item.name, item.node_type or "entity", item.summary, item.properties, edges=edges))
        places.append(index)
    for index, outcome in zip(places, await s.nodes.create(project, drafts), strict=True):
        if outcome.status == "error" or outcome.id is None:
            results[index] = {"node_id": "", "operation": "create", "status": "error", "message": failed(outcome)}
            continue
        result = {
            "node_id": outcome.id,
            "operation": "create",
            "status": "success",
            "created_relationships": len(outcome.edge_ids),
            "relationship_ids": list(outcome.edge_ids),
        }
        if index in templates:
            try:
                await s.templates.link(project, ENTITY, outcome.id, templates[index])
            except PolygError as exc:
                result.update(status="error", message=f"Created, but not linked to its template: {exc.message}")
        results[index] = result
    return [r for r in results if r is not None]


async def _update_nodes(s: Services, project: str, items: list[NodeIn]) -> list[dict[str, Any]]:
    results = []
    for index, item in enumerate(items):
        try:
            if item.id is None:
                raise InvalidParams(f"nodes[{index}]: id is required to update a node.")
            change = NodeChange(item.id, item.name, item.node_type, item.summary, item.properties)
            [outcome] = await s.nodes.update(project, [change])
            if outcome.status == "error" or outcome.id is None:
                raise InvalidParams(failed(outcome), code=outcome.code)
            created = 0
            if item.relationships:
                drafts = []
                for rel in item.relationships:
                    stored, outgoing = edge_direction(rel.relationship_type, rel.direction)
                    ends = (outcome.id, rel.target_id) if outgoing else (rel.target_id, outcome.id)
                    props = edge_properties(rel.properties, rel.relevance_strength)
                    drafts.append(EdgeDraft(ends[0], ends[1], stored, properties=props))
                made = await s.edges.create(project, drafts)
                created = sum(1 for o in made if o.status == "created")
                errors = [o.error for o in made if o.status == "error"]
                if errors:
                    raise InvalidParams(
                        f"Updated, but {len(errors)} relationship(s) failed: {'; '.join(map(str, errors))}"
                    )
            if item.template_id is not None:
                await s.templates.link(project, ENTITY, outcome.id, item.template_id)
            results.append(
                {"node_id": outcome.id, "operation": "update", "status": "success", "created_relationships": created}
            )
        except PolygError as exc:
            results.append({"node_id": item.id or "", "operation": "update", "status": "error", "message": exc.message})
    return results


@knowledge.tool(ManageNodes, NodesResult, destructive=True, title="Manage nodes")
async def manage_nodes(s: Services, p: ManageNodes) -> NodesResult:
    """Create, update or delete nodes in a batch, with relationships (direction forward or reverse,
    relevance_strength weak/medium/strong) to nodes by id or name, including nodes made earlier in
    the same batch. Each item succeeds or fails on its own and a failed item writes nothing."""
    project = s.project(p.project_id)
    if p.operation == "create":
        return shaping.typed(NodesResult, {"results": await _create_nodes(s, project, p.nodes)})
    if p.operation == "update":
        return shaping.typed(NodesResult, {"results": await _update_nodes(s, project, p.nodes)})
    results: list[dict[str, Any] | None] = [None] * len(p.nodes)
    refs = []
    for index, item in enumerate(p.nodes):
        if item.id is None:
            results[index] = {
                "node_id": "",
                "operation": "delete",
                "status": "error",
                "message": f"nodes[{index}]: id is required to delete a node.",
            }
        else:
            refs.append((index, item.id))
    for (index, ref), outcome in zip(refs, await s.nodes.delete(project, [r for _, r in refs]), strict=True):
        ok = outcome.status == "deleted"
        results[index] = {"node_id": outcome.id or ref, "operation": "delete", "status": "success" if ok else "error"}
        if not ok:
            results[index]["message"] = failed(outcome)  # type: ignore[index]
    return shaping.typed(NodesResult, {"results": results})
