"""Graph-enhanced search (spec 004 `graph_enhanced_search`): hybrid search finds the seeds, the
graph around them is read `depth` hops out, and every entity of that context is ranked by

    combined_score = vector_weight * vector_score + graph_weight * graph_score

with both scores in [0, 1]:

- `vector_score` is the entity's hybrid-search relevance (vector KNN and full text fused by
  reciprocal rank, `polyg.core.search`), divided by the best one of the query: 1.0 for the best
  match, 0.0 for an entity the search did not return (reached only through the graph). The
  cosine similarity itself is reported apart (`vector_similarity`).
- `graph_score` = `PPR_SHARE` x personalised PageRank + (1 - `PPR_SHARE`) x global PageRank.
  The personalised PageRank (`polyg.core.search.centrality`) runs over the context (seeds and
  everything within `depth` hops, read by `TraversalService.surroundings`; relationships walked
  both ways, each weighted by its `weight`, 1.0 where none is set), with
  the random walk restarting at the seeds in proportion to their relevance; a node with no
  relationship in the context sends its share back to the seeds. It is divided by the highest
  in the context. Global PageRank is FalkorDB's `algo.pageRank` over all entities
  (`polyg.core.search.centrality`), divided by the highest in the project. So an entity scores high
  when it sits where relevant seeds and their links lead, and a little higher when it is
  central in the whole graph; a seed with no relationship keeps only what restarts give it.

The context is read nearest the best seeds first and bounded by the page: at most
`NODES_PER_RESULT` nodes and `ROWS_PER_RESULT` relationships a layer (each way) per result
asked for (300 and 250 for the default 10), up to `MAX_CONTEXT_NODES` and `LAYER_CAP`. Around
hubs the context is cut there (`truncated`): nodes that would be reached only past the cap,
through the less relevant seeds or the later nodes of a layer, are not scored.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.search.centrality import CentralityService, restarting_walk
from polyg.core.search.service import SearchService
from polyg.core.traversal.service import NodeRef, Surroundings, TraversalService, node_from
from polyg.errors import InvalidParams
from polyg.store.names import ENTITY
from polyg.store.queries import observations as observations_q
from polyg.store.queries import traversal as tq

MIN_DEPTH, MAX_DEPTH = 1, 3
PPR_SHARE = 0.7
MAX_SEEDS = 20
# The context is sized to the page: per result asked for, relationships one layer may read
# (each way) and nodes the context may hold, up to the caps. A hub (the Blue Note graph's
# years and releases join hundreds of tracks each) costs no more than that; what is cut is the
# far end of the context (`TraversalService.surroundings` reads nearest the best seeds first),
# where personalised PageRank from the seeds is smallest.
ROWS_PER_RESULT = 25
NODES_PER_RESULT = 30
LAYER_CAP = 2_000
MAX_CONTEXT_NODES = 1_000
LISTED_NEIGHBOURS = 10
CONTENT_OBSERVATIONS = 3
MAX_CONTENT = 500


@dataclass(frozen=True)
class ContextNeighbour:
    node: NodeRef
    relation: str  # type of the relationship that reached it
    weight: float | None
    outbound: bool  # the relationship points at this neighbour (from the nearer node)
    depth: int


@dataclass(frozen=True)
class RankedEntity:
    node: NodeRef
    content: str
    vector_score: float
    vector_similarity: float | None
    graph_score: float
    combined_score: float
    is_seed: bool
    neighbours: tuple[ContextNeighbour, ...]
    neighbour_count: int


@dataclass(frozen=True)
class GraphSearchResult:
    results: tuple[RankedEntity, ...]
    depth: int
    vector_weight: float
    graph_weight: float
    context_nodes: int
    truncated: bool  # the context hit MAX_CONTEXT_NODES or a layer hit LAYER_CAP


def check_weights(vector_weight: float, graph_weight: float) -> None:
    for name, value in (("vector_weight", vector_weight), ("graph_weight", graph_weight)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise InvalidParams(f"{name} must be between 0 and 1, not {value!r}.")
    if vector_weight + graph_weight <= 0:
        raise InvalidParams("vector_weight and graph_weight must not both be 0.")


def content_of(description: str | None, observations: Sequence[str]) -> str:
    """What a result shows of an entity: its description, else its first observations."""
    text = description or "; ".join(o for o in observations if o)
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 3] + "..."


class GraphSearch:
    def __init__(
        self, ctx: GraphContext, search: SearchService, traversal: TraversalService, centrality: CentralityService
    ) -> None:
        self.ctx = ctx
        self.search_service = search
        self.traversal = traversal
        self.centrality = centrality

    async def search(
        self,
        project: str,
        query: str,
        *,
        depth: int = 2,
        limit: int = 10,
        include_neighbours: bool = True,
        vector_weight: float = 0.6,
        graph_weight: float = 0.4,
    ) -> GraphSearchResult:
        check_weights(vector_weight, graph_weight)
        limits.limit(limit)
        depth = min(max(depth, MIN_DEPTH), MAX_DEPTH)
        pool = min(max(3 * limit, 30), limits.MAX_LIMIT)
        hits = await self.search_service.search(project, query, "default", pool)
        top = max((h.fused for h in hits), default=0.0)
        relevance = {h.node_id: h.fused / top for h in hits} if top > 0 else {}
        similarity = {h.node_id: h.vector for h in hits}
        seeds = [h.node_id for h in hits[: min(limit, MAX_SEEDS)]]
        context = await self.traversal.surroundings(
            project,
            seeds,
            depth,
            also_named=list(relevance),
            max_nodes=min(NODES_PER_RESULT * limit, MAX_CONTEXT_NODES),
            layer_cap=min(ROWS_PER_RESULT * limit, LAYER_CAP),
        )
        relevant = {n: relevance.get(node_id, 0.0) for n, node_id in context.ids.items()}
        ranked = await self._rank(project, context, relevant, vector_weight, graph_weight, limit)
        # Each result's neighbours among the context's entities, nearest first.
        listed = {
            internal: [n for n in context.within(internal, depth) if context.nodes[n[0]]] if include_neighbours else []
            for internal, _, _ in ranked
        }
        shown = [
            (link.near, link.far, link.internal_id)
            for near in listed.values()
            for _, link, _ in near[:LISTED_NEIGHBOURS]
        ]
        wanted = {i for i, _, _ in ranked} | {n for near in listed.values() for n, _, _ in near[:LISTED_NEIGHBOURS]}
        node_rows, text_rows, link_rows = await asyncio.gather(
            tq.nodes_by_internal_id(self.ctx, project, sorted(wanted)),
            observations_q.entity_texts_at(self.ctx, project, [i for i, _, _ in ranked], CONTENT_OBSERVATIONS),
            tq.links_by_internal_id(self.ctx, project, sorted(set(shown))),
        )
        # Another session may delete an entity between the ranking and this read: it is then
        # missing, or FalkorDB gave its internal id to a node made since. Either way it is left
        # out (and a named seed must still carry the polyg id the search found).
        nodes = {
            n.internal_id: n
            for n in map(node_from, node_rows)
            if ENTITY in n.labels and context.ids.get(n.internal_id, n.id) == n.id
        }
        texts = {int(row[0]): content_of(row[1], row[2] or []) for row in text_rows}
        links = {int(row[0]): (int(row[1]), str(row[2])) for row in link_rows}
        seed_set = set(seeds)
        results = []
        for internal, graph_score, combined in ranked:
            node = nodes.get(internal)
            if node is None:
                continue
            near = [
                ContextNeighbour(nodes[n], links[link.internal_id][1], link.weight, links[link.internal_id][0] != n, d)
                for n, link, d in listed[internal][:LISTED_NEIGHBOURS]
                if n in nodes and link.internal_id in links
            ]
            results.append(
                RankedEntity(
                    node=node,
                    content=texts.get(internal, ""),
                    vector_score=relevant.get(internal, 0.0),
                    vector_similarity=similarity.get(node.id or ""),
                    graph_score=graph_score,
                    combined_score=combined,
                    is_seed=node.id in seed_set,
                    neighbours=tuple(near),
                    neighbour_count=len(listed[internal]),
                )
            )
        return GraphSearchResult(
            tuple(results), depth, float(vector_weight), float(graph_weight), len(context.nodes), context.truncated
        )

    async def _rank(
        self,
        project: str,
        context: Surroundings,
        relevance: Mapping[int, float],
        vector_weight: float,
        graph_weight: float,
        limit: int,
    ) -> list[tuple[int, float, float]]:
        """(entity internal id, graph score, combined score) of the `limit` best entities of
        the context, best first (ties: the more relevant, then the one met first)."""
        order = list(context.nodes)
        entities = [k for k, n in enumerate(order) if context.nodes[n]]
        if not entities:
            return []
        central = await self.centrality.get(project, degree=False)
        index = {n: k for k, n in enumerate(order)}
        links = [link for link in context.links.values() if link.near != link.far]
        ends = np.array([(index[link.near], index[link.far]) for link in links], dtype=np.int64).reshape(-1, 2)
        strength = np.array([link.strength for link in links], dtype=np.float64)
        # Relationships are walked both ways.
        ppr = restarting_walk(
            np.concatenate([ends[:, 0], ends[:, 1]]),
            np.concatenate([ends[:, 1], ends[:, 0]]),
            np.concatenate([strength, strength]),
            np.array([relevance.get(n, 0.0) for n in order], dtype=np.float64),
        )
        local = ppr[entities]
        top_ppr = float(local.max())
        local = local / top_ppr if top_ppr > 0 else np.zeros_like(local)
        top_global = central.top_rank
        global_ = np.array([central.by_internal.get(order[k], 0.0) for k in entities], dtype=np.float64)
        global_ = global_ / top_global if top_global > 0 else np.zeros_like(global_)
        graph = PPR_SHARE * local + (1 - PPR_SHARE) * global_
        vector = np.array([relevance.get(order[k], 0.0) for k in entities], dtype=np.float64)
        combined = vector_weight * vector + graph_weight * graph
        # Only entities at least as good as the limit-th can be among the best: order those.
        if len(combined) > limit:
            bar = np.partition(combined, len(combined) - limit)[len(combined) - limit]
            candidates = np.flatnonzero(combined >= bar - 1e-12)
        else:
            candidates = np.arange(len(combined))
        best = sorted(candidates.tolist(), key=lambda k: (-combined[k], -vector[k], k))[:limit]
        return [(order[entities[k]], _round(float(graph[k])), _round(float(combined[k]))) for k in best]


def _round(value: float) -> float:
    return 0.0 if math.isclose(value, 0.0, abs_tol=1e-12) else round(value, 6)
