"""`manage_relationship_types`: what a relationship type means and how much it weighs each way."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core.graph.reltypes import MIGRATIONS, RelationshipType
from polyg.errors import InvalidParams
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.knowledge.shared import ItemResult, each, knowledge
from polyg.tools.registry import Params


class RelationshipTypeIn(BaseModel):
    name: str = Field(description="Relationship type name, e.g. CHILD_OF (letters, digits, '_').")
    description: str | None = None
    directionality: Literal["strong", "weak", "balanced"] | None = Field(
        default=None,
        description="How much the relationship matters for source vs target: strong [1.0, 0.2], "
        "weak [0.8, 0.6], balanced [0.7, 0.7]; unset weighs [0.5, 0.5].",
    )
    source_types: list[str] | None = None
    target_types: list[str] | None = None


class ManageRelationshipTypes(Params):
    operation: Literal["create", "update", "delete", "list"]
    relationship_types: list[RelationshipTypeIn] = Field(default=[], description="Not needed for list.")


class RelationshipTypeOut(BaseModel):
    name: str
    description: str
    directionality: str | None
    source_types: list[str]
    target_types: list[str]
    forward_weight: float
    backward_weight: float


class RelationshipTypeResult(ItemResult):
    name: str


class RelationshipTypesResult(BaseModel):
    results: list[RelationshipTypeResult]
    relationship_types: list[RelationshipTypeOut]


def _reltype(t: RelationshipType) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "directionality": t.directionality,
        "source_types": list(t.source_types),
        "target_types": list(t.target_types),
        "forward_weight": t.forward_weight,
        "backward_weight": t.backward_weight,
    }


@knowledge.tool(ManageRelationshipTypes, RelationshipTypesResult, title="Manage relationship types")
async def manage_relationship_types(s: Services, p: ManageRelationshipTypes) -> RelationshipTypesResult:
    """Create, update, delete or list relationship types: what a type means (description), how much
    it matters each way (directionality: strong, weak, balanced) and the node types it joins.
    Path strengths use these weights."""
    project = s.project(p.project_id)
    if p.operation == "list":
        return shaping.typed(
            RelationshipTypesResult,
            {"results": [], "relationship_types": [_reltype(t) for t in await s.reltypes.all(project)]},
        )

    async def work(item: RelationshipTypeIn) -> dict[str, Any]:
        if item.name in MIGRATIONS:
            raise InvalidParams(
                f"{item.name} is not a type of its own: relationships of that name are stored as "
                f"{MIGRATIONS[item.name]} with source and target swapped; manage {MIGRATIONS[item.name]} instead."
            )
        if p.operation == "create":
            made = await s.reltypes.create(
                project,
                item.name,
                description=item.description or "",
                directionality=item.directionality,
                source_types=item.source_types or (),
                target_types=item.target_types or (),
            )
        elif p.operation == "update":
            made = await s.reltypes.update(
                project,
                item.name,
                description=item.description,
                directionality=item.directionality,
                source_types=item.source_types,
                target_types=item.target_types,
            )
        else:
            await s.reltypes.delete(project, item.name)
            return {"name": item.name, "operation": p.operation}
        return {"name": made.name, "operation": p.operation}

    results = await each(p.relationship_types, work, lambda item: {"name": item.name})
    for r in results:
        r.setdefault("operation", p.operation)
    return shaping.typed(RelationshipTypesResult, {"results": results, "relationship_types": []})
