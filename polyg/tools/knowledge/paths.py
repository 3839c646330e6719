"""`find_relationship_paths`: the strongest paths between node pairs, with narratives."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core import limits
from polyg.core.traversal.narrative import Step, tell
from polyg.core.traversal.service import FANOUT, FRONTIER, EdgeRef, ScoredPath
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.knowledge.shared import knowledge, rounded, visible
from polyg.tools.registry import Params

# Spec 000's default minimum (0.3), applied per hop when the client gives none: applied to
# the whole path, with its 1/length penalty, it hid a path of two strong links of a type no one
# described (1.0 x 0.5 per hop, x 1/2: 0.125), and every multi-hop path of such types.
DEFAULT_HOP_STRENGTH = 0.3
# Pairs one call searches: each is a bounded search of its own (about 85 ms; 200 pairs took
# 17 s in one call).
MAX_PAIRS = 20


class NodePair(BaseModel):
    source_node_id: str = Field(max_length=limits.MAX_NAME)
    target_node_id: str = Field(max_length=limits.MAX_NAME)


class FindRelationshipPaths(Params):
    node_pairs: list[NodePair] = Field(
        max_length=MAX_PAIRS, description=f"Pairs of node ids (or names), at most {MAX_PAIRS}."
    )
    max_path_length: int = Field(default=4, ge=1, le=6)
    max_paths_per_pair: int = Field(default=5, ge=1, le=100)
    min_path_strength: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Minimum path strength (the strength reported). Not given: each hop must score "
        f"{DEFAULT_HOP_STRENGTH} on average (the strength before the length penalty reaches "
        f"{DEFAULT_HOP_STRENGTH} to the power of the length), so that a path of strong links is "
        "not hidden for its length alone.",
    )


class PathNodeOut(BaseModel):
    id: str
    name: str


class PathRelationshipOut(BaseModel):
    type: str
    direction: Literal["forward", "backward"]
    edge_strength: float
    source: str
    target: str
    properties: dict[str, Any] | None = None


class StrengthBreakdown(BaseModel):
    raw_strength: float
    length_penalty: float
    final_strength: float


class PathOut(BaseModel):
    path_id: int
    length: int
    strength: float
    nodes: list[PathNodeOut]
    relationships: list[PathRelationshipOut]
    narrative: str
    strength_breakdown: StrengthBreakdown


class PathSummary(BaseModel):
    total_paths_found: int
    paths_returned: int
    strongest_path_strength: float
    average_path_strength: float
    relationship_types_used: list[str]
    search_truncated: bool = Field(
        description="The search read only part of the graph on the way (a node's strongest "
        f"{FANOUT} relationships, the {FRONTIER} best nodes a layer, or a cap on partial paths), so a "
        "stronger path through what it left unread may exist."
    )


class PairResult(BaseModel):
    source_node_id: str
    target_node_id: str
    paths: list[PathOut]
    summary: PathSummary


class PathsResult(BaseModel):
    path_results: list[PairResult]
    omitted: int | None = None
    note: str | None = None


def _hop(edge: EdgeRef, score: float) -> dict[str, Any]:
    props = visible(dict(edge.properties))
    return {
        "type": edge.type,
        "direction": "forward" if edge.forward else "backward",
        "edge_strength": rounded(score),
        "source": edge.source.id or "",
        "target": edge.target.id or "",
        **({"properties": props} if props else {}),
    }


def _person(labels: tuple[str, ...], type_: str | None) -> bool:
    return "Person" in labels or (type_ or "").lower() == "person"


def _path(index: int, path: ScoredPath) -> dict[str, Any]:
    steps = [
        Step(edge.type, edge.forward, node.name or node.id or "?", _person(node.labels, node.type))
        for edge, node in zip(path.edges, path.nodes[1:], strict=True)
    ]
    start = path.nodes[0]
    return {
        "path_id": index,
        "length": path.length,
        "strength": rounded(path.score.final),
        "nodes": [{"id": n.id or "", "name": n.name or ""} for n in path.nodes],
        "relationships": [_hop(e, sc) for e, sc in zip(path.edges, path.hop_scores, strict=True)],
        "narrative": tell(start.name or start.id or "?", steps),
        "strength_breakdown": {
            "raw_strength": rounded(path.score.raw),
            "length_penalty": rounded(path.score.length_penalty),
            "final_strength": rounded(path.score.final),
        },
    }


@knowledge.tool(FindRelationshipPaths, PathsResult, read_only=True, title="Find relationship paths")
async def find_relationship_paths(s: Services, p: FindRelationshipPaths) -> PathsResult:
    """The strongest paths between node pairs, each hop in either direction: strength is the product
    over hops of relevance strength (weak 0.2, medium 0.6, strong 1.0) x the type's directional
    weight for the direction travelled, times 1/length. With a narrative and strength breakdown.
    By default a path is kept when its hops score 0.3 on average; min_path_strength sets a minimum
    strength instead."""
    project = s.project(p.project_id)
    results = []
    for pair in p.node_pairs:
        source, target = await asyncio.gather(
            s.documents.resolve(project, pair.source_node_id), s.documents.resolve(project, pair.target_node_id)
        )
        found = await s.traversal.paths(
            project,
            source.id,
            target.id,
            max_len=p.max_path_length,
            k=p.max_paths_per_pair,
            min_score=p.min_path_strength or 0.0,
            min_hop_score=DEFAULT_HOP_STRENGTH if p.min_path_strength is None else 0.0,
        )
        paths = [_path(i + 1, path) for i, path in enumerate(found.paths)]
        strengths = [path["strength"] for path in paths]
        results.append(
            {
                "source_node_id": source.id,
                "target_node_id": target.id,
                "paths": paths,
                "summary": {
                    "total_paths_found": found.total_found,
                    "paths_returned": len(paths),
                    "strongest_path_strength": max(strengths, default=0.0),
                    "average_path_strength": rounded(sum(strengths) / len(strengths)) if strengths else 0.0,
                    "relationship_types_used": sorted({r["type"] for path in paths for r in path["relationships"]}),
                    "search_truncated": found.truncated,
                },
            }
        )
    answer: dict[str, Any] = {"path_results": results}
    _within_budget(answer)
    return shaping.typed(PathsResult, answer)


def _within_budget(answer: dict[str, Any]) -> None:
    """Each pair's paths, strongest first, cut to what fits in the budget together."""
    pairs = answer["path_results"]
    shown, total = shaping.share(answer, [(pair, "paths") for pair in pairs])
    for pair in pairs:
        pair["summary"]["paths_returned"] = len(pair["paths"])
    if shown < total:
        answer["omitted"] = total - shown
        how = "ask for fewer node_pairs or a smaller max_paths_per_pair."
        answer["note"] = shaping.left_out(shown, total, how)
