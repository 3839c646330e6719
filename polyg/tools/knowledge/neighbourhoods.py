"""`explore_neighborhoods`: what the graph holds around search terms, and what it suggests."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.knowledge.shared import knowledge, visible
from polyg.tools.registry import Params, degraded_field


class ExploreNeighborhoods(Params):
    search_terms: list[str] = Field(description="Keywords or phrases to search for.")
    search_strategy: Literal["vector", "text", "combined"] = "combined"
    max_results_per_term: int = Field(default=3, ge=1, le=20)
    neighborhood_depth: int = Field(default=2, ge=1, le=3)
    include_relationship_types: bool = True
    include_templates: bool = True


class PrimaryNodeOut(BaseModel):
    id: str
    name: str
    type: str
    summary: str
    similarity_score: float


class AroundOut(BaseModel):
    type: str
    source: str
    target: str
    target_name: str
    properties: dict[str, Any] | None = None


class NearbyOut(BaseModel):
    id: str
    name: str
    distance: int
    path: str


class NeighborhoodOut(BaseModel):
    primary_nodes: list[PrimaryNodeOut]
    relationships: list[AroundOut]
    nearby_nodes: list[NearbyOut]
    common_relationship_types: list[str]
    templates_in_use: list[str]


class ParentOut(BaseModel):
    node_id: str
    node_name: str
    confidence: float


class RecommendationsOut(BaseModel):
    suggested_parents: list[ParentOut]
    suggested_relationship_types: list[str]
    missing_intermediate_nodes: list[str]


class NeighborhoodsResult(BaseModel):
    neighborhoods: dict[str, NeighborhoodOut]
    recommendations: RecommendationsOut
    degraded: str | None = degraded_field()
    omitted: int | None = None
    note: str | None = None


@knowledge.tool(ExploreNeighborhoods, NeighborhoodsResult, read_only=True, title="Explore neighborhoods")
async def explore_neighborhoods(s: Services, p: ExploreNeighborhoods) -> NeighborhoodsResult:
    """Before adding information: per search term, the nodes found (with similarity scores), the
    relationships around them, nodes nearby (distance and path), common relationship types and
    templates in use; plus recommendations computed from the graph (suggested parents, relationship
    types, missing intermediate nodes)."""
    found = await s.explorer.explore(
        s.project(p.project_id),
        p.search_terms,
        strategy=p.search_strategy,
        max_results=p.max_results_per_term,
        depth=p.neighborhood_depth,
        include_types=p.include_relationship_types,
        include_templates=p.include_templates,
    )
    neighborhoods = {
        term: {
            "primary_nodes": [
                {"id": n.id, "name": n.name, "type": n.type, "summary": n.summary, "similarity_score": n.score}
                for n in hood.primary
            ],
            "relationships": [
                {
                    "type": a.type,
                    "source": a.source,
                    "target": a.target,
                    "target_name": a.target_name,
                    **({"properties": visible(a.properties)} if visible(a.properties) else {}),
                }
                for a in hood.relationships
            ],
            "nearby_nodes": [{"id": n.id, "name": n.name, "distance": n.distance, "path": n.path} for n in hood.nearby],
            "common_relationship_types": hood.common_types,
            "templates_in_use": hood.templates,
        }
        for term, hood in found.terms.items()
    }
    answer: dict[str, Any] = {
        "neighborhoods": neighborhoods,
        "recommendations": {
            "suggested_parents": [
                {"node_id": x.id, "node_name": x.name, "confidence": x.confidence} for x in found.suggested_parents
            ],
            "suggested_relationship_types": found.suggested_types,
            "missing_intermediate_nodes": found.missing,
        },
    }
    _within_budget(answer)
    return shaping.typed(NeighborhoodsResult, answer)


# The lists that grow with depth, given room in this order (the found nodes are always kept).
ROOM_ORDER = ("relationships", "nearby_nodes")


def _within_budget(answer: dict[str, Any]) -> None:
    """Each term's relationships, then nearby nodes, cut to what fits in the budget together."""
    hoods = answer["neighborhoods"].values()
    shown, total = shaping.share(answer, [(hood, key) for key in ROOM_ORDER for hood in hoods])
    if shown < total:
        answer["omitted"] = total - shown
        how = "ask with fewer search_terms or a smaller neighborhood_depth."
        answer["note"] = shaping.left_out(shown, total, how)
