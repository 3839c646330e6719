"""Graph-enhanced search (spec 004 `graph_enhanced_search`): hybrid search finds the seeds, the
graph around them is read `depth` hops out, and every entity of that context is ranked by

    combined_score = vector_weight * vector_score + graph_weight * graph_score

with both scores in [0, 1]:

- `vector_score` is the entity's hybrid-search relevance (vector KNN and full text fused by
  reciprocal rank, `polyg.core.search`), divided by the best one of the query: 1.0 for the best
  match, 0.0 for an entity the search did not return (reached only through the graph). The
  cosine similarity itself is reported apart (`vector_similarity`).
- `graph_score` = `PPR_SHARE` x personalised PageRank + (1 - `PPR_SHARE`) x global PageRank.
  The personalised PageRank runs over the context (seeds and everything within `depth` hops,
  relationships read both ways, each weighted by its `weight`, 1.0 where none is set), with
  the random walk restarting at the seeds in proportion to their relevance; a node with no
  relationship in the context sends its share back to the seeds. It is divided by the highest
  in the context. Global PageRank is FalkorDB's `algo.pageRank` over all entities
  (`polyg.core.centrality`), divided by the highest in the project. So an entity scores high
  when it sits where relevant seeds and their links lead, and a little higher when it is
  central in the whole graph; a seed with no relationship keeps only what restarts give it.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from polyg.core import limits
from polyg.core.centrality import CentralityService
from polyg.core.graph import GraphContext
from polyg.core.search import SearchService
from polyg.core.traversal import ENTITY, LAYER_CAP, EdgeRef, NodeRef, node_from
from polyg.errors import InvalidParams
from polyg.store.queries import graphrag as gq
from polyg.store.queries import traversal as tq
from polyg.store.queries.traversal import Direction

MIN_DEPTH, MAX_DEPTH = 1, 3
PPR_SHARE = 0.7
DAMPING = 0.85
PPR_ITERATIONS = 100
PPR_TOLERANCE = 1e-8
MAX_SEEDS = 20
MAX_CONTEXT_NODES = 5_000
LISTED_NEIGHBOURS = 10
CONTENT_OBSERVATIONS = 3
MAX_CONTENT = 500
ENTITY_LABEL = "Entity"


@dataclass(frozen=True)
class ContextNeighbour:
    node: NodeRef
    edge: EdgeRef  # the relationship that reached it
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


@dataclass
class Context:
    """The seeds and what lies within `depth` hops, as an undirected weighted graph."""

    nodes: dict[int, NodeRef]
    edges: dict[int, EdgeRef]
    truncated: bool = False

    def adjacency(self) -> dict[int, list[tuple[int, EdgeRef]]]:
        around: dict[int, list[tuple[int, EdgeRef]]] = defaultdict(list)
        for edge in self.edges.values():
            a, b = edge.source.internal_id, edge.target.internal_id
            if a in self.nodes and b in self.nodes and a != b:
                around[a].append((b, edge))
                around[b].append((a, edge))
        return around


def check_weights(vector_weight: float, graph_weight: float) -> None:
    for name, value in (("vector_weight", vector_weight), ("graph_weight", graph_weight)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise InvalidParams(f"{name} must be between 0 and 1, not {value!r}.")
    if vector_weight + graph_weight <= 0:
        raise InvalidParams("vector_weight and graph_weight must not both be 0.")


def edge_weight(edge: EdgeRef) -> float:
    value = edge.weight
    return 1.0 if value is None else min(max(value, 0.0), 1.0)


def personalised_pagerank(
    nodes: Sequence[int],
    links: Mapping[int, Sequence[tuple[int, float]]],
    restart: Mapping[int, float],
    *,
    damping: float = DAMPING,
    iterations: int = PPR_ITERATIONS,
    tolerance: float = PPR_TOLERANCE,
) -> dict[int, float]:
    """PageRank whose walk restarts at `restart` (node -> share, normalised here) and follows
    `links` (node -> [(neighbour, weight)]) in proportion to their weights. A node whose links
    weigh nothing hands its rank back to the restart nodes, so ranks sum to 1."""
    total = sum(v for v in restart.values() if v > 0)
    if total <= 0:
        return {n: 0.0 for n in nodes}
    teleport = {n: max(restart.get(n, 0.0), 0.0) / total for n in nodes}
    out_weight = {n: sum(w for _, w in links.get(n, ())) for n in nodes}
    rank = dict(teleport)
    for _ in range(iterations):
        dangling = sum(rank[n] for n in nodes if out_weight[n] <= 0)
        following: dict[int, float] = dict.fromkeys(nodes, 0.0)
        for n in nodes:
            if out_weight[n] > 0 and rank[n] > 0:
                share = rank[n] / out_weight[n]
                for m, w in links.get(n, ()):
                    if w > 0:
                        following[m] += share * w
        new = {n: (1 - damping + damping * dangling) * teleport[n] + damping * following[n] for n in nodes}
        change = sum(abs(new[n] - rank[n]) for n in nodes)
        rank = new
        if change < tolerance:
            break
    return rank


def neighbours_within(
    start: int, around: Mapping[int, Sequence[tuple[int, EdgeRef]]], nodes: Mapping[int, NodeRef], depth: int
) -> list[ContextNeighbour]:
    """Entities of the context within `depth` hops of `start`, nearest first (breadth first,
    heavier relationship first), each with the relationship that reached it."""
    seen = {start}
    found: list[ContextNeighbour] = []
    queue: deque[tuple[int, int]] = deque([(start, 0)])
    while queue:
        here, distance = queue.popleft()
        if distance >= depth:
            continue
        for there, edge in sorted(around.get(here, ()), key=lambda item: (-edge_weight(item[1]), item[1].type)):
            if there in seen:
                continue
            seen.add(there)
            if ENTITY_LABEL in nodes[there].labels:
                found.append(ContextNeighbour(nodes[there], edge, distance + 1))
            queue.append((there, distance + 1))
    return found


def content_of(description: str | None, observations: Sequence[str]) -> str:
    """What a result shows of an entity: its description, else its first observations."""
    text = description or "; ".join(o for o in observations if o)
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 3] + "..."


class GraphSearch:
    def __init__(self, ctx: GraphContext, search: SearchService, centrality: CentralityService) -> None:
        self.ctx = ctx
        self.search_service = search
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
        hits = await self.search_service.hits(project, query, pool)
        top = max((h.fused for h in hits), default=0.0)
        relevance = {h.node_id: h.fused / top for h in hits} if top > 0 else {}
        similarity = {h.node_id: h.vector for h in hits}
        seeds = [h.node_id for h in hits[: min(limit, MAX_SEEDS)]]
        context = await self._context(project, seeds, depth)
        ranked = await self._rank(project, context, relevance, vector_weight, graph_weight)
        best = ranked[:limit]
        around = context.adjacency() if include_neighbours else {}
        texts = {
            row[0]: content_of(row[1], row[2] or [])
            for row in await gq.entity_texts(
                self.ctx, project, [n.id for n, _, _ in best if n.id], CONTENT_OBSERVATIONS
            )
        }
        seed_set = set(seeds)
        results = []
        for node, graph_score, combined in best:
            node_id = node.id or ""
            near = neighbours_within(node.internal_id, around, context.nodes, depth) if include_neighbours else []
            results.append(
                RankedEntity(
                    node=node,
                    content=texts.get(node_id, ""),
                    vector_score=relevance.get(node_id, 0.0),
                    vector_similarity=similarity.get(node_id),
                    graph_score=graph_score,
                    combined_score=combined,
                    is_seed=node_id in seed_set,
                    neighbours=tuple(near[:LISTED_NEIGHBOURS]),
                    neighbour_count=len(near),
                )
            )
        return GraphSearchResult(
            tuple(results), depth, float(vector_weight), float(graph_weight), len(context.nodes), context.truncated
        )

    async def _context(self, project: str, seeds: Sequence[str], depth: int) -> Context:
        """The seeds and every node within `depth` hops (any direction, polyg's own
        relationship types aside), read one breadth-first layer per query."""
        if not seeds:
            return Context({}, {})
        rows = await tq.find_nodes(self.ctx, project, ENTITY, seeds)
        nodes = {n.internal_id: n for n in map(node_from, rows)}
        context = Context(nodes, {})
        frontier = list(nodes)
        both: Direction = "both"
        for _ in range(depth):
            if not frontier:
                break
            layer = await tq.expand(
                self.ctx, project, frontier, direction=both, types=None, min_weight=0.0, cap=LAYER_CAP
            )
            context.truncated = context.truncated or len(layer) >= LAYER_CAP
            frontier = []
            for row in layer:
                here = context.nodes[int(row[0])]
                other = node_from(row[7:])
                if other.internal_id not in context.nodes:
                    if len(context.nodes) >= MAX_CONTEXT_NODES:
                        context.truncated = True
                        continue
                    context.nodes[other.internal_id] = other
                    frontier.append(other.internal_id)
                edge_internal, source, _target, edge_id, type_, props = row[1:7]
                forward = int(source) == here.internal_id
                ends = (here, other) if forward else (other, here)
                context.edges.setdefault(
                    int(edge_internal),
                    EdgeRef(int(edge_internal), edge_id, type_, ends[0], ends[1], dict(props or {})),
                )
        return context

    async def _rank(
        self,
        project: str,
        context: Context,
        relevance: Mapping[str, float],
        vector_weight: float,
        graph_weight: float,
    ) -> list[tuple[NodeRef, float, float]]:
        """(entity, graph score, combined score) of every entity of the context, best first."""
        if not context.nodes:
            return []
        around = context.adjacency()
        order = sorted(context.nodes)
        links = {n: [(m, edge_weight(e)) for m, e in around.get(n, ())] for n in order}
        restart = {n: relevance.get(context.nodes[n].id or "", 0.0) for n in order}
        ppr = personalised_pagerank(order, links, restart)
        top_ppr = max(ppr.values(), default=0.0)
        central = await self.centrality.get(project)
        top_global = max(central.pagerank.values(), default=0.0)
        ranked = []
        for n in order:
            node = context.nodes[n]
            if ENTITY_LABEL not in node.labels or node.id is None:
                continue
            local = ppr[n] / top_ppr if top_ppr > 0 else 0.0
            global_ = central.rank(node.id) / top_global if top_global > 0 else 0.0
            graph_score = PPR_SHARE * local + (1 - PPR_SHARE) * global_
            combined = vector_weight * relevance.get(node.id, 0.0) + graph_weight * graph_score
            ranked.append((node, graph_score, combined))
        ranked.sort(key=lambda item: (-item[2], -relevance.get(item[0].id or "", 0.0), item[0].id or ""))
        return [(node, _round(g), _round(c)) for node, g, c in ranked]


def _round(value: float) -> float:
    return 0.0 if math.isclose(value, 0.0, abs_tol=1e-12) else round(value, 6)
