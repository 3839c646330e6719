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
from dataclasses import dataclass, field

import numpy as np

from polyg.core import limits
from polyg.core.centrality import CentralityService
from polyg.core.graph import GraphContext
from polyg.core.search import SearchService
from polyg.core.traversal import NodeRef, node_from
from polyg.errors import InvalidParams
from polyg.store.names import ENTITY
from polyg.store.queries import graphrag as gq
from polyg.store.queries import traversal as tq

MIN_DEPTH, MAX_DEPTH = 1, 3
PPR_SHARE = 0.7
DAMPING = 0.85
PPR_ITERATIONS = 100
PPR_TOLERANCE = 1e-6
MAX_SEEDS = 20
# Rows one context layer may read, and nodes a context may hold: bound what a hub costs.
LAYER_CAP = 5_000
MAX_CONTEXT_NODES = 2_000
LISTED_NEIGHBOURS = 10
CONTENT_OBSERVATIONS = 3
MAX_CONTENT = 500


@dataclass(frozen=True)
class Link:
    """A relationship of the context, by internal ids."""

    internal_id: int
    source: int
    target: int
    type: str
    weight: float | None

    @property
    def strength(self) -> float:
        """The weight the walk follows: the relationship's weight in [0, 1], 1.0 where none is set."""
        return 1.0 if self.weight is None else min(max(self.weight, 0.0), 1.0)


@dataclass(frozen=True)
class ContextNeighbour:
    node: NodeRef
    link: Link  # the relationship that reached it
    depth: int

    @property
    def outbound(self) -> bool:
        """Whether the relationship points at this neighbour (from the nearer node)."""
        return self.link.target == self.node.internal_id


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
    """The seeds and what lies within `depth` hops: node internal id -> polyg id (None for a
    node without one), which of them are entities, and the relationships among them."""

    ids: dict[int, str | None]
    entities: set[int]
    links: dict[int, Link] = field(default_factory=dict)
    truncated: bool = False

    def adjacency(self) -> dict[int, list[tuple[int, Link]]]:
        """Each node's neighbours, heavier relationship first (then type, then node)."""
        around: dict[int, list[tuple[int, Link]]] = defaultdict(list)
        for link in self.links.values():
            if link.source != link.target and link.source in self.ids and link.target in self.ids:
                around[link.source].append((link.target, link))
                around[link.target].append((link.source, link))
        for near in around.values():
            near.sort(key=lambda item: (-item[1].strength, item[1].type, item[0]))
        return around


def check_weights(vector_weight: float, graph_weight: float) -> None:
    for name, value in (("vector_weight", vector_weight), ("graph_weight", graph_weight)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise InvalidParams(f"{name} must be between 0 and 1, not {value!r}.")
    if vector_weight + graph_weight <= 0:
        raise InvalidParams("vector_weight and graph_weight must not both be 0.")


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
    index = {n: i for i, n in enumerate(nodes)}
    size = len(index)
    teleport = np.array([max(restart.get(n, 0.0), 0.0) for n in nodes], dtype=np.float64)
    if size == 0 or teleport.sum() <= 0:
        return dict.fromkeys(nodes, 0.0)
    teleport /= teleport.sum()
    pairs = [(index[n], index[m], w) for n in nodes for m, w in links.get(n, ()) if w > 0 and m in index]
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    weight = np.array([p[2] for p in pairs], dtype=np.float64)
    out = np.bincount(src, weights=weight, minlength=size)
    dangling = out <= 0
    share = np.divide(weight, out[src], out=np.zeros_like(weight), where=out[src] > 0)
    rank = teleport.copy()
    for _ in range(iterations):
        following = np.bincount(dst, weights=rank[src] * share, minlength=size)
        new = (1 - damping + damping * rank[dangling].sum()) * teleport + damping * following
        change = float(np.abs(new - rank).sum())
        rank = new
        if change < tolerance:
            break
    return {n: float(rank[i]) for n, i in index.items()}


def neighbours_within(
    start: int, around: Mapping[int, Sequence[tuple[int, Link]]], depth: int
) -> list[tuple[int, Link, int]]:
    """(node, the relationship that reached it, depth) within `depth` hops of `start` in the
    context, nearest first (breadth first, in `around`'s order: heavier relationship first)."""
    seen = {start}
    found: list[tuple[int, Link, int]] = []
    queue: deque[tuple[int, int]] = deque([(start, 0)])
    while queue:
        here, distance = queue.popleft()
        if distance >= depth:
            continue
        for there, link in around.get(here, ()):
            if there not in seen:
                seen.add(there)
                found.append((there, link, distance + 1))
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
        hits = await self.search_service.search(project, query, "default", pool)
        top = max((h.fused for h in hits), default=0.0)
        relevance = {h.node_id: h.fused / top for h in hits} if top > 0 else {}
        similarity = {h.node_id: h.vector for h in hits}
        seeds = [h.node_id for h in hits[: min(limit, MAX_SEEDS)]]
        context = await self._context(project, seeds, depth)
        around = context.adjacency()
        ranked = (await self._rank(project, context, around, relevance, vector_weight, graph_weight))[:limit]
        listed = {
            internal: neighbours_within(internal, around, depth) if include_neighbours else []
            for internal, _, _ in ranked
        }
        wanted = {i for i, _, _ in ranked} | {
            n for near in listed.values() for n, _, _ in near[: 4 * LISTED_NEIGHBOURS]
        }
        nodes = {
            n.internal_id: n for n in map(node_from, await tq.nodes_by_internal_id(self.ctx, project, sorted(wanted)))
        }
        result_ids = [context.ids[i] or "" for i, _, _ in ranked]
        texts = {
            row[0]: content_of(row[1], row[2] or [])
            for row in await gq.entity_texts(self.ctx, project, result_ids, CONTENT_OBSERVATIONS)
        }
        seed_set = set(seeds)
        results = []
        for internal, graph_score, combined in ranked:
            node_id = context.ids[internal] or ""
            near = [
                ContextNeighbour(nodes[n], link, d)
                for n, link, d in listed[internal]
                if n in context.entities and n in nodes
            ]
            results.append(
                RankedEntity(
                    node=nodes[internal],
                    content=texts.get(node_id, ""),
                    vector_score=relevance.get(node_id, 0.0),
                    vector_similarity=similarity.get(node_id),
                    graph_score=graph_score,
                    combined_score=combined,
                    is_seed=node_id in seed_set,
                    neighbours=tuple(near[:LISTED_NEIGHBOURS]),
                    neighbour_count=sum(1 for n, _, _ in listed[internal] if n in context.entities),
                )
            )
        return GraphSearchResult(
            tuple(results), depth, float(vector_weight), float(graph_weight), len(context.ids), context.truncated
        )

    async def _context(self, project: str, seeds: Sequence[str], depth: int) -> Context:
        """The seeds and every node within `depth` hops (any direction, polyg's own
        relationship types aside), read one breadth-first layer per query."""
        if not seeds:
            return Context({}, set())
        found = [node_from(row) for row in await tq.find_nodes(self.ctx, project, ENTITY, seeds)]
        context = Context({n.internal_id: n.id for n in found}, {n.internal_id for n in found})
        frontier = list(context.ids)
        for _ in range(depth):
            if not frontier:
                break
            layer = await gq.context_layer(self.ctx, project, frontier, LAYER_CAP)
            context.truncated = context.truncated or len(layer) >= LAYER_CAP
            frontier = []
            for here, rel, source, type_, weight, other, other_id, is_entity in layer:
                other = int(other)
                if other not in context.ids:
                    if len(context.ids) >= MAX_CONTEXT_NODES:
                        context.truncated = True
                        continue
                    context.ids[other] = other_id
                    if is_entity:
                        context.entities.add(other)
                    frontier.append(other)
                # The relationship joins the node expanded and the one reached, either way.
                target = other if int(source) == int(here) else int(here)
                w = float(weight) if isinstance(weight, int | float) and not isinstance(weight, bool) else None
                context.links.setdefault(int(rel), Link(int(rel), int(source), target, type_, w))
        return context

    async def _rank(
        self,
        project: str,
        context: Context,
        around: Mapping[int, Sequence[tuple[int, Link]]],
        relevance: Mapping[str, float],
        vector_weight: float,
        graph_weight: float,
    ) -> list[tuple[int, float, float]]:
        """(entity internal id, graph score, combined score) of every entity of the context,
        best first."""
        if not context.ids:
            return []
        order = sorted(context.ids)
        links = {n: [(m, link.strength) for m, link in around.get(n, ())] for n in order}
        restart = {n: relevance.get(context.ids[n] or "", 0.0) for n in order}
        ppr = personalised_pagerank(order, links, restart)
        top_ppr = max(ppr.values(), default=0.0)
        central = await self.centrality.get(project)
        top_global = central.top_rank
        ranked = []
        for n in order:
            node_id = context.ids[n]
            if n not in context.entities or node_id is None:
                continue
            local = ppr[n] / top_ppr if top_ppr > 0 else 0.0
            global_ = central.rank(node_id) / top_global if top_global > 0 else 0.0
            graph_score = PPR_SHARE * local + (1 - PPR_SHARE) * global_
            combined = vector_weight * relevance.get(node_id, 0.0) + graph_weight * graph_score
            ranked.append((n, graph_score, combined))
        ranked.sort(
            key=lambda item: (-item[2], -relevance.get(context.ids[item[0]] or "", 0.0), context.ids[item[0]] or "")
        )
        return [(n, _round(g), _round(c)) for n, g, c in ranked]


def _round(value: float) -> float:
    return 0.0 if math.isclose(value, 0.0, abs_tol=1e-12) else round(value, 6)
