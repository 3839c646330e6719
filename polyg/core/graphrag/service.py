"""GraphRAG services (spec 004) over the core's search, traversal and centrality: one object the
`graphrag` toolset calls, and local subgraphs with salience.

Salience of an entity is the mean of two percentiles in its project (`polyg.core.search.centrality`):
of its PageRank (FalkorDB's `algo.pageRank` over all entities: high where relationships point)
and of its degree (relationships either way: high for a hub that points out, which PageRank
alone misses). A percentile is the share of entities below, those equal counted half
(mid-rank), in (0, 1). Its tier follows: `core` from 0.9, `supporting` from 0.5, `peripheral`
below.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from polyg.core.graph.context import GraphContext
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.graph.stats import GraphStatistics, statistics
from polyg.core.graph.weighted_links import WeightedLinks
from polyg.core.graphrag.extract import Extractor
from polyg.core.search.centrality import Centrality, CentralityService
from polyg.core.search.graph_search import GraphSearch
from polyg.core.search.resolve import Resolver
from polyg.core.search.service import SearchService
from polyg.core.traversal.service import EdgeRef, NodeRef, TraversalService
from polyg.errors import InvalidParams
from polyg.llm import LLM

Tier = Literal["core", "supporting", "peripheral"]
CORE_FROM = 0.9
SUPPORTING_FROM = 0.5
MAX_LOCAL_NODES = 200
MAX_LOCAL_EDGES = 2_000


@dataclass(frozen=True)
class SalientNode:
    node: NodeRef
    salience: float
    tier: Tier


@dataclass(frozen=True)
class LocalGraph:
    nodes: tuple[SalientNode, ...]
    edges: tuple[EdgeRef, ...]
    missing: tuple[str, ...]
    truncated: bool


def tier_of(salience: float) -> Tier:
    if salience >= CORE_FROM:
        return "core"
    return "supporting" if salience >= SUPPORTING_FROM else "peripheral"


def percentile(ordered: Sequence[float], value: float) -> float:
    """Mid-rank percentile of `value` among `ordered` (sorted): below, plus half of equal."""
    if not ordered:
        return 0.0
    below = bisect.bisect_left(ordered, value)
    equal = bisect.bisect_right(ordered, value) - below
    return (below + 0.5 * equal) / len(ordered)


class Salience:
    """Salience of the entities of one centrality snapshot (see the module)."""

    def __init__(self, centrality: Centrality) -> None:
        self.centrality = centrality
        self.ranks = sorted(centrality.pagerank.values())
        self.degrees = sorted(float(d) for d in centrality.degree.values())

    def of(self, node_id: str) -> float:
        rank = percentile(self.ranks, self.centrality.rank(node_id))
        degree = percentile(self.degrees, float(self.centrality.degree.get(node_id, 0)))
        return round((rank + degree) / 2, 6)


class GraphRag:
    def __init__(
        self, ctx: GraphContext, search: SearchService, llm: LLM | None = None, reltypes: RelTypeService | None = None
    ) -> None:
        self.ctx = ctx
        # The process's one registry (`Services.reltypes`), which a store restart resets: one of
        # its own would still believe the types it registered before are there.
        self.reltypes = reltypes or RelTypeService(ctx)
        self.traversal = TraversalService(ctx, self.reltypes)
        self.centrality = CentralityService(ctx)
        self.links = WeightedLinks(ctx, self.reltypes)
        self.search = GraphSearch(ctx, search, self.traversal, self.centrality)
        self.extractor = Extractor(ctx, self.reltypes, llm)
        self.llm = llm
        self.resolver = Resolver(ctx)
        self._salience: tuple[Centrality, Salience] | None = None

    async def entity_ids(self, project: str, refs: list[str]) -> list[str]:
        """Each reference as an entity id: an entity's id, or the name of one (the memory
        view's resolver: exact, then in any case). One that is neither is left as given, so
        that the tool reports it as not found."""
        found = await self.resolver.entity_refs(project, refs)
        return [found.get(ref, ref) for ref in refs]

    async def entity_id(self, project: str, ref: str) -> str:
        return (await self.entity_ids(project, [ref]))[0]

    async def close(self) -> None:
        if self.llm is not None:
            await self.llm.aclose()

    async def statistics(self, project: str) -> GraphStatistics:
        return await statistics(self.ctx, project)

    async def salience(self, project: str) -> Salience:
        centrality = await self.centrality.get(project)
        if self._salience is None or self._salience[0] is not centrality:
            self._salience = (centrality, Salience(centrality))
        return self._salience[1]

    async def local_graph(self, project: str, entity_ids: Sequence[str]) -> LocalGraph:
        """The given entities, with salience and tier, and the relationships among them."""
        wanted = list(dict.fromkeys(entity_ids))
        if not wanted:
            raise InvalidParams("entity_ids must name at least one entity.")
        if len(wanted) > MAX_LOCAL_NODES:
            raise InvalidParams(f"A local graph holds at most {MAX_LOCAL_NODES} entities; {len(wanted)} were given.")
        sub = await self.traversal.subgraph(project, wanted, max_edges=MAX_LOCAL_EDGES)
        salience = await self.salience(project)
        nodes = tuple(SalientNode(n, s, tier_of(s)) for n in sub.nodes for s in [salience.of(n.id or "")])
        return LocalGraph(nodes, sub.edges, sub.missing, sub.truncated)
