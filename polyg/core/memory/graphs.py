"""The four graphs of spec 003 as services over one project graph: entity, temporal, causal and
semantic views, their shared name resolver, and their management (statistics, clear, export).

Each read is one awaitable that can be cancelled between its queries, so a caller (recall)
can run several views at once, each under its own time limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from polyg.core.graph.context import GraphContext
from polyg.core.graph.entities import EntityService
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.memory.causal import CausalGraph
from polyg.core.memory.concepts import SemanticGraph
from polyg.core.memory.entity_graph import EntityGraph
from polyg.core.memory.named import NamedGraph
from polyg.core.memory.temporal import TemporalGraph
from polyg.core.memory.views import Views
from polyg.core.search.resolve import Resolver
from polyg.core.search.service import SearchService
from polyg.core.text.time import SYSTEM_CLOCK, Clock


@dataclass
class MemoryGraphs:
    resolver: Resolver
    entities: EntityGraph
    temporal: TemporalGraph
    causal: CausalGraph
    semantic: SemanticGraph
    views: Views

    @classmethod
    def build(
        cls,
        ctx: GraphContext,
        entities: EntityService,
        named: NamedGraph,
        search: SearchService,
        reltypes: RelTypeService,
        clock: Clock = SYSTEM_CLOCK,
    ) -> MemoryGraphs:
        resolver = Resolver(ctx, search)
        entity_graph = EntityGraph(ctx, resolver, entities, named, reltypes, clock)
        temporal = TemporalGraph(entity_graph)
        return cls(
            resolver,
            entity_graph,
            temporal,
            CausalGraph(ctx, resolver, temporal),
            SemanticGraph(ctx, resolver, entities, search, named.edges),
            Views(ctx, clock),
        )
