"""`manage_relationships`: relationships created, updated and deleted in batches."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core.graph.edges import EdgeChange, EdgeDraft
from polyg.core.graph.reltypes import canonical
from polyg.errors import InvalidParams, PolygError
from polyg.runtime.app import Services
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


class RelationshipIn(BaseModel):
    id: str | None = Field(default=None, description="Required for update/delete.")
    source_id: str | None = Field(default=None, description="Id or name; required for create.")
    target_id: str | None = Field(default=None, description="Id or name; required for create.")
    relationship_type: str | None = Field(default=None, description="Required for create, e.g. INFLUENCED_BY.")
    direction: Literal["forward", "reverse"] = DIRECTION
    relevance_strength: Strength | None = STRENGTH
    properties: dict[str, Any] | None = None


class ManageRelationships(Params):
    operation: Operation
    relationships: list[RelationshipIn]


class RelationshipResult(ItemResult):
    relationship_id: str


class RelationshipsResult(BaseModel):
    results: list[RelationshipResult]


async def _create_relationships(s: Services, project: str, items: list[RelationshipIn]) -> list[dict[str, Any]]:
    results: list[dict[str, Any] | None] = [None] * len(items)
    drafts: list[EdgeDraft] = []
    places: list[int] = []
    for index, item in enumerate(items):
        try:
            if item.source_id is None or item.target_id is None or item.relationship_type is None:
                raise InvalidParams(f"relationships[{index}]: source_id, target_id and relationship_type are required.")
            stored, forward = edge_direction(item.relationship_type, item.direction)
        except PolygError as exc:
            results[index] = {"relationship_id": "", "operation": "create", "status": "error", "message": exc.message}
            continue
        ends = (item.source_id, item.target_id) if forward else (item.target_id, item.source_id)
        props = edge_properties(item.properties, item.relevance_strength)
        drafts.append(EdgeDraft(ends[0], ends[1], stored, properties=props))
        places.append(index)
    for index, outcome in zip(places, await s.edges.create(project, drafts), strict=True):
        ok = outcome.status == "created"
        results[index] = {
            "relationship_id": outcome.id or "",
            "operation": "create",
            "status": "success" if ok else "error",
        }
        if not ok:
            results[index]["message"] = failed(outcome)  # type: ignore[index]
    return [r for r in results if r is not None]


async def _change_relationships(
    s: Services, project: str, operation: str, items: list[RelationshipIn]
) -> list[dict[str, Any]]:
    results = []
    for index, item in enumerate(items):
        try:
            if item.id is None:
                raise InvalidParams(f"relationships[{index}]: id is required to {operation} a relationship.")
            if operation == "delete":
                [outcome] = await s.edges.delete(project, [item.id])
            else:
                current = await s.edges.get(project, item.id)
                if item.relationship_type is not None and canonical(item.relationship_type)[0] != current.type:
                    raise InvalidParams(
                        f"relationships[{index}]: a relationship's type cannot change "
                        f"({current.type}); delete it and create one of type {item.relationship_type}."
                    )
                props: dict[str, Any] = dict(item.properties or {})
                if item.relevance_strength is not None:
                    props["relevance_strength"] = item.relevance_strength
                [outcome] = await s.edges.update(project, [EdgeChange(item.id, properties=props)])
            if outcome.status == "error":
                raise InvalidParams(failed(outcome), code=outcome.code)
            results.append({"relationship_id": item.id, "operation": operation, "status": "success"})
        except PolygError as exc:
            results.append(
                {"relationship_id": item.id or "", "operation": operation, "status": "error", "message": exc.message}
            )
    return results


@knowledge.tool(ManageRelationships, RelationshipsResult, destructive=True, title="Manage relationships")
async def manage_relationships(s: Services, p: ManageRelationships) -> RelationshipsResult:
    """Create, update or delete relationships in a batch. direction reverse flips source and target;
    relevance_strength (weak/medium/strong, default medium) and properties are stored on the
    relationship. Migration names are honoured (PARENT_OF is CHILD_OF reversed)."""
    project = s.project(p.project_id)
    if p.operation == "create":
        return shaping.typed(RelationshipsResult, {"results": await _create_relationships(s, project, p.relationships)})
    return shaping.typed(
        RelationshipsResult, {"results": await _change_relationships(s, project, p.operation, p.relationships)}
    )
