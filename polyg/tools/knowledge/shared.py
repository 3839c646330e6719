"""The `knowledge` toolset (spec 000) and what its tools share: per-item results, and how a
relationship's direction and strength are read from a request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core.graph.reltypes import canonical
from polyg.core.model import Outcome
from polyg.errors import PolygError
from polyg.tools.registry import Toolset

knowledge = Toolset(
    "knowledge",
    instructions=(
        "knowledge: nodes (entities: summary is the description, node_type the type) and their "
        "relationships, created, updated and deleted in batches (manage_nodes, manage_relationships); "
        "relationship types with their directionality (manage_relationship_types); mustache templates "
        "rendered into documents per node (manage_templates, generate_documents); neighbourhoods "
        "(explore_neighborhoods) and weighted paths between nodes (find_relationship_paths)."
    ),
)

Operation = Literal["create", "update", "delete"]
# Properties polyg keeps on relationships for itself: not shown as the relationship's properties.
EDGE_OWN = frozenset({"id", "created_at", "updated_at", "description", "label"})


def rounded(value: float) -> float:
    return round(value, 6)


def visible(properties: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in properties.items() if k not in EDGE_OWN}


class ItemResult(BaseModel):
    operation: str
    status: Literal["success", "error"]
    message: str | None = None


async def each(
    items: list[Any],
    work: Callable[[Any], Awaitable[dict[str, Any]]],
    ref: Callable[[Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One result per item: an item's failure is reported in its result (with `ref(item)`, what
    names it) and stops nothing."""
    results = []
    for item in items:
        try:
            results.append({**await work(item), "status": "success"})
        except PolygError as exc:
            results.append({"status": "error", "message": exc.message, **ref(item)})
    return results


Strength = Literal["weak", "medium", "strong"]
DIRECTION: Any = Field(
    default="forward",
    description="forward: from the node (or source) to the target; reverse: from the target to it.",
)
STRENGTH: Any = Field(default=None, description="How meaningful this relationship is (default medium).")


def edge_properties(props: dict[str, Any] | None, strength: str | None) -> dict[str, Any]:
    """User properties with the relevance strength (medium unless given) among them."""
    return {**(props or {}), "relevance_strength": strength or "medium"}


def edge_direction(rel_type: str, direction: str) -> tuple[str, bool]:
    """The type to store and whether the edge runs from the item's source (or new node) to its
    target: a migration name (PARENT_OF) is stored as its canonical type, ends swapped."""
    stored, swapped = canonical(rel_type)
    return stored, (direction == "forward") != swapped


def failed(outcome: Outcome) -> str:
    return outcome.error or "failed"
