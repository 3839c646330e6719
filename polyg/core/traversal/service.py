"""Traversal: k-hop neighbourhoods, the k best paths between two nodes, subgraphs.

Relationship types polyg uses for its own structure (`HAS_OBSERVATION`, `DEPENDS_ON`, ...) are
never traversed. Nodes of any kind are reached; start nodes are named by polyg id and label.

Paths (spec 000 `find_relationship_paths`): the `k` best simple paths of at most `max_len`
hops, each hop travelled either way, scored by a pluggable `PathScorer`. The relationships
around both ends are read a layer per query (at most FANOUT per node, the best for the path as
the database ranks them with the scorer's `rank`), then searched in memory, best first
(`_best_first`). With `best_first=False`, FalkorDB enumerates every path instead (one
variable-length pattern with both ends bound, capped at `PATH_CAP` rows) and each is scored
here: exact, but slow at hubs; the tests compare the two. `algo.SPpaths` minimises a sum of
one edge property, which cannot express a weight that depends on the direction a hop is
travelled nor a 1/length factor: it would find the shortest paths, not the strongest.
bench/latency/traversal_bench.py compares the alternatives.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.reltypes import RelTypeService, weights
from polyg.errors import InvalidParams, NotFound
from polyg.store.falkor import Row
from polyg.store.names import ENTITY, Label, RelType, user_rel_type
from polyg.store.queries import traversal as q
from polyg.store.queries.traversal import Direction, HopRank

DIRECTIONS: tuple[str, ...] = ("outbound", "inbound", "both")
MAX_DEPTH = 3
MAX_PATH_LEN = 6
MAX_PATHS = 100
# Rows one breadth-first layer or one path search may read: bounds the work a hub costs.
LAYER_CAP = 20_000
PATH_CAP = 50_000
# Past the first layer, a neighbourhood layer's first read asks for this many times the rows it
# needs (see heaviest_rows).
READ_AHEAD = 4
# The best-first path search reads the relationships around both ends, layer by layer, at most
# FANOUT per node (the best for the path, ranked in the database), at most FRONTIER nodes per
# side and layer (those the strongest partial paths reach), then searches in memory, keeping at
# most PARTIAL_CAP partial paths.
FANOUT = 32
FRONTIER = 40
PARTIAL_CAP = 50_000
# Partial paths extended after the k best are certain, to count the other paths (total_found).
COUNT_BUDGET = 100
MAX_SUBGRAPH_NODES = 1_000
MAX_SUBGRAPH_EDGES = 5_000
# Spec 000's relevance strength of one relationship; a relationship without one counts as medium.
RELEVANCE = {"weak": 0.2, "medium": 0.6, "strong": 1.0}


@dataclass(frozen=True)
class NodeRef:
    internal_id: int
    id: str | None
    name: str | None
    type: str | None
    labels: tuple[str, ...]


@dataclass(frozen=True)
class EdgeRef:
    internal_id: int
    id: str | None
    type: str
    source: NodeRef
    target: NodeRef
    properties: Mapping[str, Any]
    # Whether the traversal went from source to target (outbound), or against it.
    forward: bool = True

    @property
    def weight(self) -> float | None:
        value = self.properties.get("weight")
        return float(value) if isinstance(value, (int, float)) else None


@dataclass(frozen=True)
class Neighbour:
    node: NodeRef
    distance: int
    path: tuple[NodeRef, ...]  # from the start node to this one, both included
    edges: tuple[EdgeRef, ...]  # along `path`

    @property
    def via(self) -> EdgeRef:
        return self.edges[-1]


@dataclass(frozen=True)
class Neighbourhood:
    start: NodeRef
    neighbours: tuple[Neighbour, ...]
    # A layer read more rows than LAYER_CAP: nodes beyond them were not looked at.
    truncated: bool


@dataclass(frozen=True)
class Hop:
    type: str
    forward: bool
    relevance_strength: Any
    weight: Any


@dataclass(frozen=True)
class PathScore:
    raw: float
    length_penalty: float
    final: float


class PathScorer(Protocol):
    def hop(self, hop: Hop) -> float:
        """A hop's score in [0, 1]."""
        ...

    def combine(self, hops: Sequence[float]) -> PathScore: ...

    def final(self, raw: float, length: int) -> float:
        """`combine(hops).final` for hops whose product is `raw` (the search's inner loop)."""
        ...

    @property
    def rank(self) -> HopRank:
        """`hop` as the database ranks a hub's relationships to read only its best."""
        ...


@dataclass(frozen=True)
class StrengthScorer:
    """Spec 000: per hop relevance strength x the type's directional weight for the direction
    travelled; the product times 1 / length."""

    directional: Mapping[str, tuple[float, float]]

    def hop(self, hop: Hop) -> float:
        forward, backward = self.directional.get(hop.type, weights(None))
        return relevance(hop.relevance_strength) * (forward if hop.forward else backward)

    def combine(self, hops: Sequence[float]) -> PathScore:
        raw = math.prod(hops)
        penalty = 1.0 / len(hops)
        return PathScore(raw, penalty, raw * penalty)

    def final(self, raw: float, length: int) -> float:
        return raw / length

    @property
    def rank(self) -> HopRank:
        return HopRank(RELEVANCE, self.directional, weights(None), weight=False)


@dataclass(frozen=True)
class WeightScorer:
    """Spec 004: the product of the edges' weights (1.0 where none is set), either direction."""

    def hop(self, hop: Hop) -> float:
        value = hop.weight
        return min(max(float(value), 0.0), 1.0) if isinstance(value, (int, float)) else 1.0

    def combine(self, hops: Sequence[float]) -> PathScore:
        raw = math.prod(hops)
        return PathScore(raw, 1.0, raw)

    def final(self, raw: float, length: int) -> float:
        return raw

    @property
    def rank(self) -> HopRank:
        return HopRank(None, {}, (1.0, 1.0), weight=True)


def _kept(min_score: float, min_hop_score: float) -> Callable[[PathScore, int], bool]:
    """Whether a complete path (its score, its length) is kept (see `TraversalService.paths`);
    a hair of tolerance, so that hops exactly at `min_hop_score` pass whatever the rounding."""

    def keep(score: PathScore, length: int) -> bool:
        return score.final >= min_score and score.raw >= min_hop_score**length - 1e-12

    return keep


def relevance(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return RELEVANCE.get(str(value).lower() if value is not None else "medium", RELEVANCE["medium"])


@dataclass(frozen=True)
class ScoredPath:
    nodes: tuple[NodeRef, ...]
    edges: tuple[EdgeRef, ...]
    hop_scores: tuple[float, ...]
    score: PathScore

    @property
    def length(self) -> int:
        return len(self.edges)


@dataclass(frozen=True)
class PathSearch:
    source: NodeRef
    target: NodeRef
    paths: tuple[ScoredPath, ...]  # best first
    total_found: int  # paths of at least the minimum score met, before the cut to k (see _best_first)
    # The search read PATH_CAP paths: others were not looked at.
    truncated: bool


@dataclass(frozen=True)
class Subgraph:
    nodes: tuple[NodeRef, ...]
    edges: tuple[EdgeRef, ...]
    missing: tuple[str, ...]  # requested ids no node has
    truncated: bool  # more than the edge cap joined the nodes


@dataclass(frozen=True)
class Link:
    """A relationship of `Surroundings`: the nodes it joins (internal ids; `near` was expanded
    and `far` reached through it, whichever way the relationship points) and its weight."""

    internal_id: int
    near: int
    far: int
    weight: float | None

    @property
    def strength(self) -> float:
        """The relationship's weight in [0, 1], 1.0 where none is set."""
        return 1.0 if self.weight is None else min(max(self.weight, 0.0), 1.0)


@dataclass
class Surroundings:
    """Start nodes and what lies within some hops of them, relationships read either way: the
    nodes met (internal id -> whether it is an entity, in the order met), the polyg ids of the
    nodes named at the start, and every relationship read between two nodes kept."""

    nodes: dict[int, bool]
    ids: dict[int, str]
    links: dict[int, Link] = field(default_factory=dict)
    # A layer read its row cap, or the node cap was reached: nodes beyond were not looked at.
    truncated: bool = False
    _adjacent: dict[int, list[tuple[int, Link]]] | None = field(default=None, repr=False)
    _ordered: set[int] = field(default_factory=set, repr=False)

    def neighbours_of(self, node: int) -> list[tuple[int, Link]]:
        """A node's neighbours with the relationship to each, heavier relationship first (then
        the node met first). Lists are ordered when first asked for: a caller looks at few."""
        if self._adjacent is None:
            self._adjacent = defaultdict(list)
            for link in self.links.values():
                if link.near != link.far:
                    self._adjacent[link.near].append((link.far, link))
                    self._adjacent[link.far].append((link.near, link))
        near = self._adjacent.get(node, [])
        if node not in self._ordered:
            near.sort(key=lambda item: (-item[1].strength, item[0]))
            self._ordered.add(node)
        return near

    def within(self, start: int, depth: int) -> list[tuple[int, Link, int]]:
        """(node, the relationship that reached it, hops) within `depth` hops of `start`, nearest
        first (breadth first, heavier relationship first)."""
        seen = {start}
        found: list[tuple[int, Link, int]] = []
        queue: deque[tuple[int, int]] = deque([(start, 0)])
        while queue:
            here, distance = queue.popleft()
            if distance >= depth:
                continue
            for there, link in self.neighbours_of(here):
                if there not in seen:
                    seen.add(there)
                    found.append((there, link, distance + 1))
                    queue.append((there, distance + 1))
        return found


def node_from(row: Sequence[Any]) -> NodeRef:
    internal, node_id, name, type_, labels = row
    return NodeRef(int(internal), node_id, name, type_, tuple(labels or ()))


def _edge_from(row: Sequence[Any], nodes: Mapping[int, NodeRef], forward: bool = True) -> EdgeRef:
    internal, source, target, edge_id, type_, props = row
    return EdgeRef(int(internal), edge_id, type_, nodes[int(source)], nodes[int(target)], dict(props or {}), forward)


# A scored path before its nodes and edges are read: score, node internal ids, hops, hop scores.
Candidate = tuple[PathScore, list[int], list[list[Any]], list[float]]


class TraversalService:
    def __init__(self, ctx: GraphContext, reltypes: RelTypeService | None = None, *, best_first: bool = True) -> None:
        self.ctx = ctx
        self.reltypes = reltypes or RelTypeService(ctx)
        # Paths by branch and bound (default) or by FalkorDB's enumeration of every path.
        self.best_first = best_first

    async def node(self, project: str, node_id: str, label: Label = ENTITY) -> NodeRef:
        row = await q.find_node(self.ctx, project, label, node_id)
        if row is None:
            raise NotFound(f"{label} {node_id} not found.")
        return node_from(row)

    async def neighbours(
        self,
        project: str,
        node_id: str,
        *,
        label: Label = ENTITY,
        direction: str = "both",
        types: Sequence[str] | None = None,
        min_weight: float = 0.0,
        depth: int = 1,
        limit: int = 50,
    ) -> Neighbourhood:
        """Nodes within `depth` hops, nearest first (heavier edge first within a distance), each
        with its distance and the path and edges that first reached it (breadth first)."""
        way = _direction(direction)
        rels = _types(types)
        if not 1 <= depth <= MAX_DEPTH:
            raise InvalidParams(f"depth must be between 1 and {MAX_DEPTH}.")
        if not 0.0 <= min_weight <= 1.0:
            raise InvalidParams("min_weight must be between 0 and 1.")
        limits.limit(limit)

        # The start node and its first layer are read at once, both by the start's polyg id; a
        # first layer that is also the last comes whole, so the hops shown need no second read.
        whole = depth == 1

        def first_layer(cap: int) -> Awaitable[list[Row]]:
            return q.expand_from(
                self.ctx,
                project,
                label,
                node_id,
                direction=way,
                types=rels,
                min_weight=min_weight,
                cap=cap,
                light=True,
                whole=whole,
            )

        start_row, rows = await asyncio.gather(
            q.find_node(self.ctx, project, label, node_id), heaviest_rows(first_layer, (), limit)
        )
        if start_row is None:
            raise NotFound(f"{label} {node_id} not found.")
        start = node_from(start_row)
        reached: dict[int, Neighbour | None] = {start.internal_id: None}
        found: list[Neighbour] = []
        by_id = {start.internal_id: start}
        truncated = False
        for distance in range(1, depth + 1):
            truncated = truncated or len(rows) >= LAYER_CAP
            chosen = _chosen(rows, reached, limit - len(found))
            if not chosen:
                break
            # The next layer is read beside this one's hops: it starts from the nodes chosen,
            # which the hops' rows only confirm, so the two reads share one round trip.
            following = distance < depth and len(found) + len(chosen) < limit
            hops, rows = await asyncio.gather(
                _whole_hops(rows, chosen) if whole else q.hops_by_internal_id(self.ctx, project, chosen),
                self._heaviest(
                    project,
                    [node for _, _, node in chosen],
                    {*reached, *(node for _, _, node in chosen)},
                    limit - len(found) - len(chosen),
                    way,
                    rels,
                    min_weight,
                )
                if following
                else _no_rows(),
            )
            next_by_id: dict[int, NodeRef] = {}
            for row in hops:
                here = by_id[int(row[0])]
                node = node_from(row[7:])  # a new node: `_chosen` passed over those reached
                ends = {here.internal_id: here, node.internal_id: node}
                edge = _edge_from(row[1:7], ends, forward=int(row[2]) == here.internal_id)
                before = reached[here.internal_id]
                path = (*(before.path if before else (start,)), node)
                edges = (*(before.edges if before else ()), edge)
                neighbour = Neighbour(node, distance, path, edges)
                reached[node.internal_id] = neighbour
                found.append(neighbour)
                next_by_id[node.internal_id] = node
                if len(found) >= limit:
                    return Neighbourhood(start, tuple(found), truncated)
            # A hop whose relationship went between the two reads reached nothing: the next
            # layer does not start from its node.
            rows = [row for row in rows if int(row[0]) in next_by_id]
            by_id = next_by_id
        return Neighbourhood(start, tuple(found), truncated)

    async def _heaviest(
        self,
        project: str,
        frontier: Sequence[int],
        reached: Collection[int],
        need: int,
        way: Direction,
        rels: list[RelType] | None,
        min_weight: float,
    ) -> list[Row]:
        """Enough of a layer's rows from `frontier` (internal ids), heaviest first, to reach
        `need` new nodes (`heaviest_rows`): a hub's hundreds of relationships are not all read
        (nor parsed) for the few shown."""

        def layer(cap: int) -> Awaitable[list[Row]]:
            return q.expand(
                self.ctx,
                project,
                frontier,
                direction=way,
                types=rels,
                min_weight=min_weight,
                cap=cap,
                heaviest=True,
                light=True,
            )

        return await heaviest_rows(layer, reached, need)

    async def surroundings(
        self,
        project: str,
        start_ids: Sequence[str],
        depth: int,
        *,
        also_named: Sequence[str] = (),
        label: Label = ENTITY,
        max_nodes: int = MAX_SUBGRAPH_NODES,
        layer_cap: int = LAYER_CAP,
    ) -> Surroundings:
        """The start nodes (by polyg id) and every node within `depth` hops of them, any
        direction, polyg's own relationship types aside, read one breadth-first layer per query
        (the start nodes come with the first, and so do the internal ids of the `also_named`
        nodes, for a caller that must recognise them). At most `max_nodes` nodes and
        `layer_cap` relationships a layer (each way past the first); relationships among the
        nodes kept are all kept. The caps cut the far end: start nodes are expanded in the order
        given, and each layer's nodes in the order met, so what is read first is what lies
        nearest the first start nodes."""
        found = Surroundings({}, {})
        if not start_ids:
            return found
        starts = list(dict.fromkeys(start_ids))
        named = list(dict.fromkeys([*starts, *also_named]))
        rows = await q.context_from(self.ctx, project, label, named, starts, layer_cap)
        start_set = set(starts)
        first: list[Sequence[Any]] = []
        for internal, node_id, *link in rows:
            found.ids[int(internal)] = node_id
            if node_id in start_set:
                found.nodes.setdefault(int(internal), True)
                if link[0] is not None:
                    first.append((internal, *link))
        frontier = self._take_layer(found, first, max_nodes)
        found.truncated = len(first) >= layer_cap
        for _ in range(depth - 1):
            if not frontier:
                break
            layer = await q.context_layer(self.ctx, project, frontier, layer_cap)
            found.truncated = found.truncated or len(layer) >= layer_cap
            # Both ways' rows merged in the frontier's order (each way's are already in it).
            position = {node: k for k, node in enumerate(frontier)}
            layer.sort(key=lambda row: position[row[0]])
            frontier = self._take_layer(found, layer, max_nodes)
        return found

    @staticmethod
    def _take_layer(found: Surroundings, layer: Sequence[Sequence[Any]], max_nodes: int) -> list[int]:
        """Adds a layer's rows ([from, relationship, other end, weight, other is an entity]) to
        `found`; returns the nodes new in it."""
        fresh: list[int] = []
        for here, rel, other, weight, is_entity in layer:
            if other not in found.nodes:
                if len(found.nodes) >= max_nodes:
                    found.truncated = True
                    continue
                found.nodes[other] = bool(is_entity)
                fresh.append(other)
            if rel not in found.links:
                w = float(weight) if isinstance(weight, int | float) and not isinstance(weight, bool) else None
                found.links[rel] = Link(rel, here, other, w)
        return fresh

    async def strength_scorer(self, project: str) -> StrengthScorer:
        return StrengthScorer(await self.reltypes.weights(project))

    async def paths(
        self,
        project: str,
        source_id: str,
        target_id: str,
        *,
        label: Label = ENTITY,
        max_len: int = 4,
        k: int = 5,
        min_score: float = 0.0,
        min_hop_score: float = 0.0,
        types: Sequence[str] | None = None,
        scorer: PathScorer | None = None,
    ) -> PathSearch:
        """The `k` best-scored simple paths of 1..`max_len` hops between two nodes (spec 000's
        strength unless another scorer is given), best first; ties go to the shorter path.
        A path is kept when its score is at least `min_score` and its hops score at least
        `min_hop_score` on average (geometric mean: the product of its hop scores reaches
        `min_hop_score` to the power of its length)."""
        if not 1 <= max_len <= MAX_PATH_LEN:
            raise InvalidParams(f"max_path_length must be between 1 and {MAX_PATH_LEN}.")
        if not 1 <= k <= MAX_PATHS:
            raise InvalidParams(f"max_paths must be between 1 and {MAX_PATHS}.")
        rels = _types(types)
        # The two ends and the types' weights are read at once.
        (source, target), stored = await asyncio.gather(
            self._pair(project, source_id, target_id, label),
            self.strength_scorer(project) if scorer is None else _given(scorer),
        )
        if source.internal_id == target.internal_id:
            return PathSearch(source, target, (), 0, False)
        scorer = stored
        keep = _kept(min_score, min_hop_score)
        # No kept path scores less than a path of max_len hops each at min_hop_score: the
        # search prunes below that.
        min_score = max(min_score, scorer.final(min_hop_score**max_len, max_len))
        if self.best_first:
            scored, total, truncated = await self._best_first(
                project, source, target, max_len, k, min_score, rels, scorer, keep
            )
        else:
            scored, total, truncated = await self._enumerate(
                project, source, target, max_len, min_score, rels, scorer, keep
            )
        scored.sort(key=lambda item: (-item[0].final, len(item[2]), item[1]))
        best = scored[:k]
        described = await self._describe(project, best) if best else []
        return PathSearch(source, target, tuple(described), total, truncated)

    async def _enumerate(
        self,
        project: str,
        source: NodeRef,
        target: NodeRef,
        max_len: int,
        min_score: float,
        rels: list[RelType] | None,
        scorer: PathScorer,
        keep: Callable[[PathScore, int], bool],
    ) -> tuple[list[Candidate], int, bool]:
        """Every path FalkorDB enumerates (up to PATH_CAP), scored here."""
        rows = await q.paths_between(
            self.ctx, project, source.internal_id, target.internal_id, max_len=max_len, types=rels, cap=PATH_CAP
        )
        scored: list[Candidate] = []
        seen: set[tuple[int, ...]] = set()
        for path_nodes, path_hops in rows:
            nodes = [int(i) for i in path_nodes]
            hops = list(path_hops)
            key = tuple(int(h[0]) for h in hops)
            if len(set(nodes)) != len(nodes) or key in seen:
                continue  # a walk through one node twice is not a path
            seen.add(key)
            hop_scores = [
                scorer.hop(Hop(type_, source_of == nodes[i], strength, weight))
                for i, (_, source_of, type_, strength, weight) in enumerate(hops)
            ]
            score = scorer.combine(hop_scores)
            if keep(score, len(hop_scores)):
                scored.append((score, nodes, hops, hop_scores))
        return scored, len(scored), len(rows) >= PATH_CAP

    async def _best_first(
        self,
        project: str,
        source: NodeRef,
        target: NodeRef,
        max_len: int,
        k: int,
        min_score: float,
        rels: list[RelType] | None,
        scorer: PathScorer,
        keep: Callable[[PathScore, int], bool],
    ) -> tuple[list[Candidate], int, bool]:
        """The relationships around both ends are read first (`_around`), then searched in
        memory: best-first branch and bound. A partial path's bound is the score of its best
        possible completion (every further hop scoring 1.0, as few more hops as the relationships
        read allow); the
        partial path with the highest bound is extended first, each node's hops strongest
        first; once no bound reaches the k-th best complete path found, the k best are certain,
        and the search goes on for at most COUNT_BUDGET partial paths to count the other paths
        of at least the minimum (`total_found`: on a large graph, a lower bound). Exact over
        what was read, for scorers whose score does not rise with a hop of at most 1.0 (both
        here); `truncated` when a node had more than FANOUT relationships or a layer more than
        FRONTIER nodes, or past PARTIAL_CAP partial paths."""
        goal = target.internal_id
        edges, truncated = await self._around(project, source.internal_id, goal, max_len, rels, scorer)
        steps = _steps(edges, scorer)
        to_target = _distances(steps, goal, max_len)
        # Partial paths: (-bound, tie-break, product of hop scores, nodes, edge ids, hop scores).
        heap: list[tuple[float, int, float, list[int], list[int], list[float]]] = [
            (-1.0, 0, 1.0, [source.internal_id], [], [])
        ]
        found: list[Candidate] = []
        best: list[float] = []  # min-heap of the k best final scores so far
        counter = 1
        counting = COUNT_BUDGET
        final = scorer.final
        while heap:
            bar = max(min_score, best[0]) if len(best) >= k else min_score
            bound, _, product, nodes, path_edges, scores = heapq.heappop(heap)
            if -bound < min_score:
                break
            if -bound < bar:
                # The k best are certain: what follows only counts paths (total_found).
                counting -= 1
                if counting < 0:
                    break
            length = len(nodes)  # hops once extended
            for hop_score, edge, end in steps.get(nodes[-1], ()):
                raw = product * hop_score
                if final(raw, length) < min_score:
                    break  # the hops after it score no more: no path through them reaches the minimum
                if end in nodes:
                    continue
                if end == goal:
                    hop_scores = [*scores, hop_score]
                    score = scorer.combine(hop_scores)
                    if not keep(score, length):
                        continue
                    found.append((score, [*nodes, end], [edges[e] for e in (*path_edges, edge)], hop_scores))
                    heapq.heappush(best, score.final)
                    if len(best) > k:
                        heapq.heappop(best)
                    bar = max(min_score, best[0]) if len(best) >= k else min_score
                elif length + (more := to_target.get(end, max_len)) <= max_len:
                    # It needs at least `more` further hops, none scoring above 1.0.
                    bound_score = final(raw, length + more)
                    if bound_score >= min_score:
                        item = (-bound_score, counter, raw, [*nodes, end], [*path_edges, edge], [*scores, hop_score])
                        heapq.heappush(heap, item)
                        counter += 1
            if len(heap) > PARTIAL_CAP:
                heap = heapq.nsmallest(PARTIAL_CAP, heap)
                heapq.heapify(heap)
                truncated = True
        return found, len(found), truncated

    async def _around(
        self, project: str, source: int, target: int, max_len: int, rels: list[RelType] | None, scorer: PathScorer
    ) -> tuple[dict[int, list[Any]], bool]:
        """Every relationship a path of at most `max_len` hops can use, but at hubs: a path's
        first ceil(max_len / 2) hops leave nodes within that many hops of the source, its
        other hops arrive at nodes within floor(max_len / 2) of the target. One query per
        layer for both sides, at most FANOUT relationships per node (the best for a path
        leaving it on the source side, arriving at it on the target side) and FRONTIER nodes
        per side and layer (those the strongest partial paths reach). Returns edge internal id
        -> [edge, start, type, relevance_strength, weight, end], and whether a cut left some
        relationships out."""
        edges: dict[int, list[Any]] = {}
        depth = {True: (max_len + 1) // 2, False: max_len // 2}
        reached = {True: {source: 1.0}, False: {target: 1.0}}
        frontier = {True: [source], False: [target]}
        truncated = False
        hop = _hop_scores(scorer)
        for layer in range(depth[True]):
            wanted = [(node, side) for side in (True, False) if layer < depth[side] for node in frontier[side]]
            rows = await q.best_hops(self.ctx, project, wanted, types=rels, rank=scorer.rank, fanout=FANOUT)
            following: dict[bool, dict[int, float]] = {True: {}, False: {}}
            for node, outward, hops, degree in rows:
                truncated = truncated or degree > len(hops)
                here = reached[outward][node]
                for edge, start, type_, strength, weight, other in hops:
                    edges.setdefault(edge, [edge, start, type_, strength, weight, other if start == node else node])
                    forward = (start == node) == outward
                    score = here * hop(type_, forward, strength, weight)
                    if other not in reached[outward] and score > following[outward].get(other, -1.0):
                        following[outward][other] = score
            for side, scored in following.items():
                ranked = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[: FRONTIER + 1]
                truncated = truncated or len(ranked) > FRONTIER
                frontier[side] = [node for node, _ in ranked[:FRONTIER]]
                reached[side].update(ranked[:FRONTIER])
        return edges, truncated

    async def subgraph(
        self,
        project: str,
        node_ids: Sequence[str],
        *,
        label: Label = ENTITY,
        max_edges: int = MAX_SUBGRAPH_EDGES,
    ) -> Subgraph:
        """The given nodes and the relationships among them (polyg's own types left out)."""
        wanted = list(dict.fromkeys(node_ids))
        if len(wanted) > MAX_SUBGRAPH_NODES:
            raise InvalidParams(f"A subgraph holds at most {MAX_SUBGRAPH_NODES} nodes; {len(wanted)} were given.")
        if not 1 <= max_edges <= MAX_SUBGRAPH_EDGES:
            raise InvalidParams(f"max_edges must be between 1 and {MAX_SUBGRAPH_EDGES}.")
        nodes = {n.internal_id: n for n in map(node_from, await q.find_nodes(self.ctx, project, label, wanted))}
        rows = await q.edges_among(self.ctx, project, list(nodes), max_edges + 1)
        edges = [_edge_from(row, nodes) for row in rows[:max_edges]]
        order = {node_id: i for i, node_id in enumerate(wanted)}
        present = {n.id for n in nodes.values()}
        return Subgraph(
            nodes=tuple(sorted(nodes.values(), key=lambda n: order.get(n.id or "", 0))),
            edges=tuple(sorted(edges, key=lambda e: (e.source.internal_id, e.target.internal_id, e.internal_id))),
            missing=tuple(i for i in wanted if i not in present),
            truncated=len(rows) > max_edges,
        )

    async def _pair(self, project: str, source_id: str, target_id: str, label: Label) -> tuple[NodeRef, NodeRef]:
        found = {n.id: n for n in map(node_from, await q.find_nodes(self.ctx, project, label, [source_id, target_id]))}
        for node_id in (source_id, target_id):
            if node_id not in found:
                raise NotFound(f"{label} {node_id} not found.")
        return found[source_id], found[target_id]

    async def _describe(self, project: str, best: list[Candidate]) -> list[ScoredPath]:
        """Node and edge details of the chosen paths, read once for all of them."""
        node_ids = sorted({i for _, nodes, _, _ in best for i in nodes})
        edge_keys = sorted({(int(h[1]), int(h[0])) for _, _, hops, _ in best for h in hops})
        node_rows, edge_rows = await asyncio.gather(
            q.nodes_by_internal_id(self.ctx, project, node_ids),
            q.edges_by_internal_id(self.ctx, project, edge_keys),
        )
        nodes = {n.internal_id: n for n in map(node_from, node_rows)}
        edges = {int(row[0]): row for row in edge_rows}
        described = []
        for score, path_nodes, hops, hop_scores in best:
            path_edges = tuple(
                _edge_from(edges[int(h[0])], nodes, forward=int(h[1]) == path_nodes[i]) for i, h in enumerate(hops)
            )
            described.append(ScoredPath(tuple(nodes[i] for i in path_nodes), path_edges, tuple(hop_scores), score))
        return described


def _steps(edges: Mapping[int, list[Any]], scorer: PathScorer) -> dict[int, list[tuple[float, int, int]]]:
    """Node -> (hop score leaving it, edge, node reached) for each relationship read, the
    strongest first."""
    steps: dict[int, list[tuple[float, int, int]]] = {}
    hop = _hop_scores(scorer)
    for edge, start, type_, strength, weight, end in edges.values():
        if start == end:
            continue  # a loop is never part of a path
        steps.setdefault(start, []).append((hop(type_, True, strength, weight), edge, end))
        steps.setdefault(end, []).append((hop(type_, False, strength, weight), edge, start))
    for options in steps.values():
        options.sort(key=lambda step: (-step[0], step[1]))
    return steps


_PLAIN = (str, int, float, type(None))


def _hop_scores(scorer: PathScorer) -> Callable[[str, bool, Any, Any], float]:
    """`scorer.hop` remembered per (type, direction, strength, weight): a search scores
    thousands of hops of a few kinds."""
    known: dict[tuple[str, bool, Any, Any], float] = {}

    def hop(type_: str, forward: bool, strength: Any, weight: Any) -> float:
        if not isinstance(strength, _PLAIN) or not isinstance(weight, _PLAIN):
            return scorer.hop(Hop(type_, forward, strength, weight))  # a list or map: not a key
        key = (type_, forward, strength, weight)
        score = known.get(key)
        if score is None:
            score = known[key] = scorer.hop(Hop(type_, forward, strength, weight))
        return score

    return hop


async def _given(scorer: PathScorer) -> PathScorer:
    return scorer


def _distances(steps: Mapping[int, list[tuple[float, int, int]]], start: int, limit: int) -> dict[int, int]:
    """Hops from `start` to each node within `limit`, over the relationships read."""
    distance = {start: 0}
    frontier = [start]
    for hops in range(1, limit + 1):
        following = []
        for node in frontier:
            for _, _, other in steps.get(node, ()):
                if other not in distance:
                    distance[other] = hops
                    following.append(other)
        frontier = following
    return distance


async def heaviest_rows(read: Callable[[int], Awaitable[list[Row]]], reached: Collection[int], need: int) -> list[Row]:
    """Enough of a layer's rows (`read(cap)`: light `q.expand` rows, heaviest first, at most `cap`
    each way) to reach `need` nodes neither in `reached` nor the row's own start, if the layer
    has them. Rows to nodes already reached are passed over, so more are asked for until
    enough new nodes come or the layer is read to its end (or to LAYER_CAP). Past the first
    layer, many of the heaviest rows lead back (several reached nodes share a neighbour), so
    the first read asks for READ_AHEAD times what the layer could need: a second read would
    cost a whole sort of the layer again, more rows only their parsing."""
    take = min((need + len(reached)) * (READ_AHEAD if reached else 1), LAYER_CAP)
    while True:
        rows = await read(take)
        if len(rows) < take or take >= LAYER_CAP:
            return rows  # the whole layer (or as much as a layer may read)
        # Each way's first `take` rows hold the layer's first `take` in the shared order.
        first = sorted(rows, key=_layer_order)[:take]
        if len({int(row[4]) for row in first if row[4] != row[0]} - set(reached)) >= need:
            return first
        take = min(READ_AHEAD * take, LAYER_CAP)


def _chosen(rows: Sequence[Row], reached: Collection[int], need: int) -> list[tuple[int, int, int]]:
    """A layer's first `need` hops to new nodes, as (node left, relationship, node reached) by
    internal id: each node once, by its heaviest relationship, in the layer's order."""
    chosen: dict[int, tuple[int, int, int]] = {}
    for row in sorted(rows, key=_layer_order):
        node = int(row[4])
        if node in reached or node in chosen:
            continue
        chosen[node] = (int(row[0]), int(row[1]), node)
        if len(chosen) >= need:
            break
    return list(chosen.values())


async def _no_rows() -> list[Row]:
    return []


async def _whole_hops(rows: Sequence[Row], chosen: Sequence[tuple[int, int, int]]) -> list[Row]:
    """The chosen hops' rows as `q.hops_by_internal_id` reads them, taken from a `whole` layer
    that holds them already."""
    by_hop: dict[tuple[int, int, int], Row] = {}
    for row in rows:
        by_hop.setdefault((int(row[0]), int(row[1]), int(row[4])), row)
    return [q.hop_of_whole(by_hop[hop]) for hop in chosen if hop in by_hop]


def _layer_order(row: Row) -> tuple[Any, ...]:
    """A light layer row (`q.LIGHT_ROW`) in HEAVIEST_FIRST's order: heavier relationships first,
    then a stable order (type, polyg ids of the node reached and of the relationship)."""
    weight = row[3]
    heavy = -float(weight) if isinstance(weight, (int, float)) else -1.0
    return (heavy, row[2], str(row[5] or ""), str(row[6] or ""))


def _direction(value: str) -> Direction:
    if value not in DIRECTIONS:
        raise InvalidParams(f"direction must be one of {', '.join(DIRECTIONS)}.")
    return value  # type: ignore[return-value]


def _types(values: Sequence[str] | None) -> list[RelType] | None:
    if not values:
        return None
    # A RelType is already checked: a caller may name one of polyg's own knowledge types (CAUSES).
    return [v if isinstance(v, RelType) else user_rel_type(v) for v in dict.fromkeys(values)]
