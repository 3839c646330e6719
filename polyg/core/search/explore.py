"""Neighbourhoods around search terms, and what they suggest (spec 000 `explore_neighborhoods`).

Per term: the entities hybrid search finds (`vector`, `text` or `combined`), the relationships
touching them, the entities within `depth` hops (breadth first, with distance and the path that
first reached them), the relationship types seen there by frequency, and the templates those
entities use.

Recommendations, from the graph only (no model):
- suggested parents: entities reached from the primary entities of the terms, scored by how well
  they connect to all of them: for each primary entity, the spec-000 strength of the path that
  reached the candidate (relevance strength x directional weight per hop, multiplied); the
  confidence is the mean over the primary entities (0 for one that does not reach it). A node
  that many of the found entities hang from, through strong relationships, is where a new node
  about these terms most likely belongs.
- suggested relationship types: the types seen around the primary entities, most frequent first,
  then registered types whose source types include a primary entity's type.
- missing intermediate nodes: each term that found no entity (a node to create), and each pair of
  primary entities of different terms that no path of at most `depth` hops joins ("between A and
  B": something should connect them).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from polyg.core.graph.reltypes import RelationshipType, RelTypeService, weights
from polyg.core.search.service import PresetName, SearchService
from polyg.core.traversal.service import EdgeRef, Hop, Neighbourhood, NodeRef, StrengthScorer, TraversalService
from polyg.errors import InvalidParams
from polyg.store.queries import edge_reads as edge_reads_q
from polyg.store.queries import node_reads as q
from polyg.store.queries import templates as templates_q
from polyg.store.queries import traversal as traversal_q

# Each strategy is a search preset (`polyg.core.search.service.PRESETS`).
STRATEGY_PRESETS: dict[str, PresetName] = {"vector": "vector_only", "text": "text_only", "combined": "default"}
MAX_TERMS = 20
MAX_DEPTH = 3
NEARBY_LIMIT = 50
RELATIONSHIP_LIMIT = 50
SUGGESTIONS = 5
MIN_CONFIDENCE = 0.05


@dataclass(frozen=True)
class PrimaryNode:
    id: str
    name: str
    type: str
    summary: str
    score: float


@dataclass(frozen=True)
class Nearby:
    id: str
    name: str
    distance: int
    path: str


@dataclass(frozen=True)
class Around:
    type: str
    source: str
    target: str
    target_name: str
    properties: dict[str, Any]


@dataclass
class TermNeighbourhood:
    primary: list[PrimaryNode] = field(default_factory=list)
    relationships: list[Around] = field(default_factory=list)
    nearby: list[Nearby] = field(default_factory=list)
    common_types: list[str] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Suggestion:
    id: str
    name: str
    confidence: float


@dataclass(frozen=True)
class Exploration:
    terms: dict[str, TermNeighbourhood]
    suggested_parents: list[Suggestion]
    suggested_types: list[str]
    missing: list[str]


def describe_path(neighbour_path: Sequence[NodeRef], edges: Sequence[EdgeRef]) -> str:
    """ "Miles Davis -[INFLUENCED_BY]-> Charlie Parker <-[CHILD_OF]- ..." along the path."""
    text = neighbour_path[0].name or neighbour_path[0].id or "?"
    for node, edge in zip(neighbour_path[1:], edges, strict=True):
        arrow = f"-[{edge.type}]->" if edge.forward else f"<-[{edge.type}]-"
        text += f" {arrow} {node.name or node.id or '?'}"
    return text


class Explorer:
    def __init__(self, search: SearchService, traversal: TraversalService, reltypes: RelTypeService) -> None:
        self.search = search
        self.traversal = traversal
        self.reltypes = reltypes
        self.ctx = traversal.ctx

    async def explore(
        self,
        project: str,
        terms: Sequence[str],
        *,
        strategy: str = "combined",
        max_results: int = 3,
        depth: int = 2,
        include_types: bool = True,
        include_templates: bool = True,
    ) -> Exploration:
        if not terms or len(terms) > MAX_TERMS:
            raise InvalidParams(f"search_terms must hold 1 to {MAX_TERMS} terms.")
        if not 1 <= depth <= MAX_DEPTH:
            raise InvalidParams(f"neighborhood_depth must be between 1 and {MAX_DEPTH}.")
        if not 1 <= max_results <= 20:
            raise InvalidParams("max_results_per_term must be between 1 and 20.")
        registered = await self.reltypes.all(project)
        scorer = StrengthScorer({t.name: weights(t.directionality) for t in registered})
        result: dict[str, TermNeighbourhood] = {}
        reach: dict[str, dict[str, float]] = {}  # primary id -> reached id -> path strength
        names: dict[str, str] = {}
        for term in dict.fromkeys(terms):
            hood = TermNeighbourhood()
            result[term] = hood
            hits = await self._search(project, term, strategy, max_results)
            details = {row[0]: row for row in await q.summaries(self.ctx, project, [h for h, _ in hits])}
            hood.primary = [
                PrimaryNode(i, details[i][1] or "", details[i][2] or "", details[i][3] or "", round(score, 6))
                for i, score in hits
                if i in details
            ]
            ids = [p.id for p in hood.primary]
            if not ids:
                continue
            rows = await edge_reads_q.knowledge_touching(self.ctx, project, ids, RELATIONSHIP_LIMIT)
            hood.relationships = [Around(t, s, d, dn or "", dict(props or {})) for t, s, d, dn, props in rows]
            hoods = await asyncio.gather(
                *(self.traversal.neighbours(project, i, depth=depth, limit=NEARBY_LIMIT) for i in ids)
            )
            seen: dict[str, Nearby] = {}
            types: Counter[str] = Counter(a.type for a in hood.relationships)
            for primary, around in zip(hood.primary, hoods, strict=True):
                names[primary.id] = primary.name
                reach[primary.id] = self._reach(around, scorer, names)
                for n in around.neighbours:
                    types.update(e.type for e in n.edges[-1:])
                    if (
                        n.node.id
                        and n.node.id not in ids
                        and (n.node.id not in seen or seen[n.node.id].distance > n.distance)
                    ):
                        seen[n.node.id] = Nearby(
                            n.node.id, n.node.name or "", n.distance, describe_path(n.path, n.edges)
                        )
            hood.nearby = sorted(seen.values(), key=lambda n: (n.distance, n.name, n.id))
            if include_types:
                hood.common_types = [t for t, _ in types.most_common(10)]
            if include_templates:
                hood.templates = [
                    name
                    for (name,) in await templates_q.templates_in_use(
                        self.ctx, project, ids + [n.id for n in hood.nearby]
                    )
                ]
        parents = self._parents(reach, names)
        suggested_types = self._types(result, registered)
        missing = await self._missing(project, result, depth)
        return Exploration(result, parents, suggested_types, missing)

    async def _search(self, project: str, term: str, strategy: str, limit: int) -> list[tuple[str, float]]:
        """Entity ids with the strategy's own score, best first: `vector` the cosine similarity,
        `text` 1 / rank (text matching ranks without a score), `combined` the cosine similarity
        where the vector found the entity, else the fused score."""
        if strategy not in STRATEGY_PRESETS:
            raise InvalidParams(f"search_strategy must be one of {', '.join(STRATEGY_PRESETS)}.")
        hits = await self.search.search(project, term, STRATEGY_PRESETS[strategy], limit)
        if strategy == "text":
            return [(hit.node_id, round(1.0 / (rank + 1), 6)) for rank, hit in enumerate(hits)]
        return [(hit.node_id, round(hit.fused if hit.vector is None else hit.vector, 6)) for hit in hits]

    @staticmethod
    def _reach(around: Neighbourhood, scorer: StrengthScorer, names: dict[str, str]) -> dict[str, float]:
        strengths: dict[str, float] = {}
        for n in around.neighbours:
            if not n.node.id:
                continue
            hops = [
                scorer.hop(Hop(e.type, e.forward, e.properties.get("relevance_strength"), e.properties.get("weight")))
                for e in n.edges
            ]
            strengths[n.node.id] = math.prod(hops)
            names[n.node.id] = n.node.name or ""
        return strengths

    @staticmethod
    def _parents(reach: dict[str, dict[str, float]], names: dict[str, str]) -> list[Suggestion]:
        if not reach:
            return []
        primaries = set(reach)
        totals: dict[str, float] = {}
        for strengths in reach.values():
            for node_id, strength in strengths.items():
                if node_id not in primaries:
                    totals[node_id] = totals.get(node_id, 0.0) + strength
        scored = [
            Suggestion(node_id, names.get(node_id, ""), round(total / len(reach), 4))
            for node_id, total in totals.items()
        ]
        scored = [s for s in scored if s.confidence >= MIN_CONFIDENCE]
        return sorted(scored, key=lambda s: (-s.confidence, s.name, s.id))[:SUGGESTIONS]

    @staticmethod
    def _types(result: dict[str, TermNeighbourhood], registered: Sequence[RelationshipType]) -> list[str]:
        seen: Counter[str] = Counter()
        node_types: set[str] = set()
        for hood in result.values():
            seen.update(a.type for a in hood.relationships)
            node_types.update(p.type for p in hood.primary)
        ranked = [t for t, _ in seen.most_common()]
        for rel in registered:
            if rel.name not in ranked and any(s.lower() in {t.lower() for t in node_types} for s in rel.source_types):
                ranked.append(rel.name)
        return ranked[:SUGGESTIONS]

    async def _missing(self, project: str, result: dict[str, TermNeighbourhood], depth: int) -> list[str]:
        missing = [term for term, hood in result.items() if not hood.primary]
        tops = [(term, hood.primary[0]) for term, hood in result.items() if hood.primary]
        for i, (_term_a, a) in enumerate(tops):
            for _term_b, b in tops[i + 1 :]:
                if a.id == b.id:
                    continue
                if not await traversal_q.connected(self.ctx, project, a.id, b.id, depth):
                    missing.append(f"between {a.name} and {b.name}")
        return missing
