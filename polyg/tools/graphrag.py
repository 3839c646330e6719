"""The `graphrag` toolset (spec 004): graph-enhanced search, neighbours, weighted and causal
relationships, relationship extraction, statistics and local subgraphs.

Ids are polyg's string ids (`ent_...`, `rel_...`), where the spec shows SQLite integers.
Relationship types show spec 004's names for its seven types (`uses`, `depends_on`, ...; see
`polyg.core.graph.weighted_links` for how they are stored) and any other type as stored. Scores are
defined in `polyg.core.search.graph_search` (search) and `polyg.core.graphrag` (salience, tier).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core import limits, progress
from polyg.core.graph.weighted_links import is_causal, shown_type, stored_type
from polyg.core.graphrag.extract import EntityExtraction, Extracted
from polyg.core.search.graph_search import ContextNeighbour, RankedEntity
from polyg.core.traversal.service import EdgeRef
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.registry import Params, Toolset, degraded_field

graphrag = Toolset(
    "graphrag",
    instructions="graphrag: graph-enhanced search, neighbours, weighted and causal relationships, "
    "relationship extraction from observations, statistics and local subgraphs; ids are polyg's string ids.",
)

RELATION = (
    "Relationship type: relates_to, causes, part_of, implements, extends, uses, depends_on, "
    "or any other name of letters, digits and '_'."
)
LISTED_ENTITIES = 100

# --- result shapes -------------------------------------------------------------------------


class SearchNeighbor(BaseModel):
    entity_id: str
    name: str | None
    entity_type: str | None
    relation: str
    weight: float | None
    depth: int
    direction: Literal["outbound", "inbound"]


class SearchResult(BaseModel):
    entity_id: str
    entity_name: str | None
    entity_type: str | None
    content: str
    vector_score: float
    vector_similarity: float | None
    graph_score: float
    combined_score: float
    neighbors: list[SearchNeighbor]
    neighbor_count: int


class SearchParams(BaseModel):
    depth: int
    vector_weight: float
    graph_weight: float
    limit: int
    include_neighbors: bool


class GraphSearchOut(BaseModel):
    success: bool
    query: str
    result_count: int
    results: list[SearchResult]
    search_params: SearchParams
    context_size: int
    truncated: bool
    degraded: str | None = degraded_field()
    omitted: int | None = None
    note: str | None = None


class Neighbor(BaseModel):
    neighbor_id: str | None
    neighbor_name: str | None
    entity_type: str | None
    relation_type: str
    weight: float | None
    is_causal: bool
    direction: Literal["outbound", "inbound"]
    depth: int
    via_id: str | None


class NeighborParams(BaseModel):
    relation_type: str | None
    direction: str
    depth: int
    min_weight: float
    limit: int


class NeighborsOut(BaseModel):
    success: bool
    entity_id: str
    neighbor_count: int
    neighbors: list[Neighbor]
    search_params: NeighborParams
    truncated: bool
    omitted: int | None = None
    note: str | None = None


class RelationshipOut(BaseModel):
    success: bool
    relationship_id: str
    source_id: str
    target_id: str
    relation_type: str
    weight: float
    is_causal: bool
    context: dict[str, Any] | None
    created: bool


class TypeCountOut(BaseModel):
    relation_type: str
    count: int


class DuplicateOut(BaseModel):
    name: str
    count: int
    entity_ids: list[str]


class StatisticsOut(BaseModel):
    entities: int
    relationships: int
    relationship_types: list[TypeCountOut]
    avg_relationships_per_entity: float
    causal_relationships: int
    vector_index_available: bool
    vector_index_status: str
    vectors_pending: int
    vectors_parked: int
    entities_without_vectors: int
    orphan_entities: int
    duplicate_names: list[DuplicateOut]
    communities: int
    largest_community: int


class HealthOut(BaseModel):
    entities: int
    relationships: int
    avg_relationships_per_entity: float
    causal_relationships: int
    vector_index_status: str


class GraphStatisticsOut(BaseModel):
    success: bool
    statistics: StatisticsOut
    health: HealthOut


class ExtractedOut(BaseModel):
    relation_type: str
    relationship_id: str
    source_id: str
    source_name: str
    target_id: str
    target_name: str
    created: bool
    resolved_as: str
    observation_id: str
    evidence: str


class UnresolvedOut(BaseModel):
    text: str
    relation_type: str
    role: str
    observation_id: str


class EntityExtractionOut(BaseModel):
    entity_id: str
    entity_name: str
    relationships_found: int
    relationships_created: int
    relationships: list[ExtractedOut]
    unresolved: list[UnresolvedOut]
    negated: int
    extracted_by: str


class ExtractOneOut(EntityExtractionOut):
    success: bool


class ExtractAllStats(BaseModel):
    total_processed: int
    total_relationships: int
    relationships_created: int
    entities_with_relationships: int
    unresolved: int
    remaining: int


class ExtractAllOut(BaseModel):
    success: bool
    statistics: ExtractAllStats
    has_more: bool = Field(description="Entities are still due: call again to go on.")
    summary: str
    entities: list[EntityExtractionOut]
    entities_listed: int
    note: str | None = None


class LocalNode(BaseModel):
    id: str
    name: str | None
    entity_type: str | None
    tier: str
    salience_score: float


class LocalEdge(BaseModel):
    id: str | None
    from_entity_id: str | None
    to_entity_id: str | None
    relation_type: str
    weight: float | None
    is_causal: bool


class LocalGraphOut(BaseModel):
    nodes: list[LocalNode]
    edges: list[LocalEdge]
    node_count: int
    edge_count: int
    missing: list[str]
    truncated: bool
    omitted: int | None = None
    note: str | None = None


class LocalGraphResult(BaseModel):
    success: bool
    graph: LocalGraphOut


# --- parameters ----------------------------------------------------------------------------


class GraphEnhancedSearch(Params):
    query: str = Field(description="What to search for.")
    depth: int = Field(default=2, description="Hops to expand from the search hits; clamped to 1-3.")
    limit: int = Field(default=10, ge=1, le=1000, description="Maximum number of results (1-1000).")
    include_neighbors: bool = Field(default=True, description="List each result's neighbours in the context.")
    vector_weight: float = Field(default=0.6, description="Weight of search relevance, 0-1.")
    graph_weight: float = Field(default=0.4, description="Weight of graph score, 0-1 (the two must not both be 0).")


class EntityNeighbors(Params):
    entity_id: str = Field(description="The entity to start from (polyg id, or its name).")
    relation_type: str | None = Field(default=None, description="Only relationships of this type. " + RELATION)
    direction: Literal["outbound", "inbound", "both"] = Field(
        default="both", description="outbound: entity -> others; inbound: others -> entity; both."
    )
    depth: int = Field(default=1, description="Hops to traverse (1-3).")
    limit: int = Field(default=50, ge=1, le=1000, description="Maximum number of neighbours (1-1000).")
    min_weight: float = Field(default=0.0, description="Minimum relationship weight, 0-1 (none set counts as 1.0).")


class AddRelationship(Params):
    source_id: str = Field(description="Source entity (polyg id, or its name).")
    target_id: str = Field(description="Target entity (polyg id, or its name).")
    relation_type: str = Field(description=RELATION)
    weight: float = Field(default=1.0, description="Relationship strength, 0-1.")
    is_causal: bool = Field(default=False, description="A causal relationship (always true for causes).")
    context: dict[str, Any] | None = Field(default=None, description="Optional metadata object, returned as given.")


class NoParams(Params):
    pass


class EntityRef(Params):
    entity_id: str = Field(description="The entity whose observations to read (polyg id, or its name).")


# Entities one extract_all_relationships call reads: 20,000 at once took 37.6 s (about 2 ms
# each), holding the call and its store connections; the rest is for the next call (has_more).
DEFAULT_EXTRACT_LIMIT = 500
MAX_EXTRACT_LIMIT = 2_000


class ExtractAll(Params):
    limit: int | None = Field(
        default=DEFAULT_EXTRACT_LIMIT,
        ge=1,
        le=MAX_EXTRACT_LIMIT,
        description=(
            f"Maximum entities to process (default {DEFAULT_EXTRACT_LIMIT}, null too); the rest wait for the "
            "next call: has_more says whether any are still due."
        ),
    )


class LocalGraphParams(Params):
    entity_ids: list[str] = Field(description="Entities to include (polyg ids, or names), at most 200.")


# --- shaping -------------------------------------------------------------------------------


def _direction(edge: EdgeRef) -> Literal["outbound", "inbound"]:
    return "outbound" if edge.forward else "inbound"


def _search_neighbor(n: ContextNeighbour) -> SearchNeighbor:
    return SearchNeighbor(
        entity_id=n.node.id or "",
        name=n.node.name,
        entity_type=n.node.type,
        relation=shown_type(n.relation),
        weight=n.weight,
        depth=n.depth,
        direction="outbound" if n.outbound else "inbound",
    )


def _search_result(r: RankedEntity) -> SearchResult:
    return SearchResult(
        entity_id=r.node.id or "",
        entity_name=r.node.name,
        entity_type=r.node.type,
        content=r.content,
        vector_score=round(r.vector_score, 6),
        vector_similarity=None if r.vector_similarity is None else round(r.vector_similarity, 6),
        graph_score=r.graph_score,
        combined_score=r.combined_score,
        neighbors=[_search_neighbor(n) for n in r.neighbours],
        neighbor_count=r.neighbour_count,
    )


def _extracted(x: Extracted) -> ExtractedOut:
    return ExtractedOut(
        relation_type=x.relation,
        relationship_id=x.relationship_id,
        source_id=x.source.id,
        source_name=x.source.name,
        target_id=x.target.id,
        target_name=x.target.name,
        created=x.created,
        resolved_as=x.target.how if x.source.how == "owner" else x.source.how,
        observation_id=x.observation_id,
        evidence=x.evidence,
    )


def _entity_extraction(e: EntityExtraction) -> dict[str, Any]:
    return EntityExtractionOut(
        entity_id=e.entity_id,
        entity_name=e.name,
        relationships_found=len(e.relationships),
        relationships_created=e.created,
        relationships=[_extracted(x) for x in e.relationships],
        unresolved=[
            UnresolvedOut(text=u.text, relation_type=u.relation, role=u.role, observation_id=u.observation_id)
            for u in e.unresolved
        ],
        negated=e.negated,
        extracted_by=e.source,
    ).model_dump()


# --- tools ---------------------------------------------------------------------------------


@graphrag.tool(GraphEnhancedSearch, GraphSearchOut, read_only=True, title="Graph-enhanced search")
async def graph_enhanced_search(s: Services, p: GraphEnhancedSearch) -> GraphSearchOut:
    """Hybrid search (vector + full text) for seeds, expanded `depth` hops through the graph and
    re-ranked by combined_score = vector_weight x vector_score + graph_weight x graph_score, both
    in 0-1: vector_score is the search relevance relative to the best hit (the cosine similarity
    is in vector_similarity), graph_score is 0.7 x personalised PageRank from the hits over the
    expanded context + 0.3 x global PageRank, each relative to its highest. Results include
    entities reached only through the graph. The context is sized to the page (per result asked
    for, 30 nodes and 25 relationships a layer each way, at most 1,000 and 2,000), read nearest
    the best hits first: around hubs its far end is cut. Ids are polyg's string ids (e.g.
    'ent_3f2a...'), not integers."""
    found = await s.graphrag.search.search(
        s.project(p.project_id),
        p.query,
        depth=p.depth,
        limit=p.limit,
        include_neighbours=p.include_neighbors,
        vector_weight=p.vector_weight,
        graph_weight=p.graph_weight,
    )
    answer = GraphSearchOut(
        success=True,
        query=p.query,
        result_count=len(found.results),
        results=[_search_result(r) for r in found.results],
        search_params=SearchParams(
            depth=found.depth,
            vector_weight=found.vector_weight,
            graph_weight=found.graph_weight,
            limit=p.limit,
            include_neighbors=p.include_neighbors,
        ),
        context_size=found.context_nodes,
        truncated=found.truncated,
    ).model_dump()
    omitted = shaping.keep_fitting(answer, "results", at_least_one=True)
    if omitted:
        shown = len(answer["results"])
        answer.update(result_count=shown, omitted=omitted)
        how = "ask for fewer (limit) or without include_neighbors."
        answer["note"] = shaping.left_out(shown, len(found.results), how)
    return shaping.typed(GraphSearchOut, answer)


@graphrag.tool(EntityNeighbors, NeighborsOut, read_only=True, title="Get entity neighbours")
async def get_entity_neighbors(s: Services, p: EntityNeighbors) -> NeighborsOut:
    """Entities connected to an entity within `depth` hops (1-3), nearest first, filtered by
    relationship type, direction and minimum weight; each with the relationship that reached it,
    its direction (outbound: from the nearer node to this one), depth and whether it is causal.
    Ids are polyg's string ids (e.g. 'ent_3f2a...'), not integers; an entity's name works too."""
    types = None if p.relation_type is None else [stored_type(p.relation_type)]
    project = s.project(p.project_id)
    entity_id = await s.graphrag.entity_id(project, p.entity_id)
    found = await s.graphrag.traversal.neighbours(
        project,
        entity_id,
        direction=p.direction,
        types=types,
        min_weight=p.min_weight,
        depth=p.depth,
        limit=p.limit,
    )
    neighbors = [
        Neighbor(
            neighbor_id=n.node.id,
            neighbor_name=n.node.name,
            entity_type=n.node.type,
            relation_type=shown_type(n.via.type),
            weight=n.via.weight,
            is_causal=is_causal(n.via.type, n.via.properties),
            direction=_direction(n.via),
            depth=n.distance,
            via_id=n.path[-2].id,
        )
        for n in found.neighbours
    ]
    answer = NeighborsOut(
        success=True,
        entity_id=entity_id,
        neighbor_count=len(neighbors),
        neighbors=neighbors,
        search_params=NeighborParams(
            relation_type=p.relation_type, direction=p.direction, depth=p.depth, min_weight=p.min_weight, limit=p.limit
        ),
        truncated=found.truncated,
    ).model_dump()
    omitted = shaping.keep_fitting(answer, "neighbors")
    if omitted:
        shown = len(answer["neighbors"])
        answer.update(truncated=True, neighbor_count=shown, omitted=omitted)
        how = "ask for fewer (limit, depth) or narrow by relation_type."
        answer["note"] = shaping.left_out(shown, len(neighbors), how)
    return shaping.typed(NeighborsOut, answer)


@graphrag.tool(AddRelationship, RelationshipOut, idempotent=True, title="Add entity relationship")
async def add_entity_relationship(s: Services, p: AddRelationship) -> RelationshipOut:
    """Create a weighted relationship from source_id to target_id, or update the weight,
    causality and context of the one of that type already between them. causes is always
    causal (the same CAUSES link the memory toolset's causal view reads, confidence = weight);
    depends_on is stored as DEPENDS_UPON. Ids are polyg's string ids (e.g. 'ent_3f2a...'), not
    integers; an entity's name works too."""
    project = s.project(p.project_id)
    source_id, target_id = await s.graphrag.entity_ids(project, [p.source_id, p.target_id])
    link = await s.graphrag.links.add(
        project,
        source_id,
        target_id,
        p.relation_type,
        weight=p.weight,
        is_causal=p.is_causal,
        context=p.context,
    )
    return shaping.typed(
        RelationshipOut,
        RelationshipOut(
            success=True,
            relationship_id=link.id,
            source_id=link.source_id,
            target_id=link.target_id,
            relation_type=link.relation,
            weight=link.weight,
            is_causal=link.is_causal,
            context=link.context,
            created=link.created,
        ).model_dump(),
    )


@graphrag.tool(NoParams, GraphStatisticsOut, read_only=True, title="Get graph statistics")
async def get_graph_statistics(s: Services, p: NoParams) -> GraphStatisticsOut:
    """Size and health of the project's graph: entities, relationships (per type, per entity,
    causal), polyg's vector index (in place of spec 004's Qdrant fields: status, vectors still
    being made, entities without a current vector), orphan entities, names several entities
    share, and communities (connected groups of two or more entities)."""
    st = await s.graphrag.statistics(s.project(p.project_id))
    stats = StatisticsOut(
        entities=st.entities,
        relationships=st.relationships,
        relationship_types=[TypeCountOut(relation_type=t.relation_type, count=t.count) for t in st.relationship_types],
        avg_relationships_per_entity=st.avg_relationships_per_entity,
        causal_relationships=st.causal_relationships,
        vector_index_available=st.vector_index == "operational",
        vector_index_status=st.vector_index,
        vectors_pending=st.vectors_pending,
        vectors_parked=st.vectors_parked,
        entities_without_vectors=st.entities_without_vectors,
        orphan_entities=st.orphan_entities,
        duplicate_names=[
            DuplicateOut(name=d.name, count=d.count, entity_ids=list(d.entity_ids)) for d in st.duplicate_names
        ],
        communities=st.communities,
        largest_community=st.largest_community,
    )
    health = HealthOut(
        entities=st.entities,
        relationships=st.relationships,
        avg_relationships_per_entity=st.avg_relationships_per_entity,
        causal_relationships=st.causal_relationships,
        vector_index_status=st.vector_index,
    )
    return shaping.typed(
        GraphStatisticsOut, GraphStatisticsOut(success=True, statistics=stats, health=health).model_dump()
    )


@graphrag.tool(EntityRef, ExtractOneOut, idempotent=True, title="Extract entity relationships")
async def extract_entity_relationships(s: Services, p: EntityRef) -> ExtractOneOut:
    """Find relationships stated in an entity's observations ("X uses Y", "Y is used by X", the
    seven types, active and passive; denied statements add nothing) and create them with weight
    0.5 between existing entities only (names resolved exactly, in any case, then fuzzily);
    names that match no entity are listed as unresolved. Running again adds nothing new.
    Ids are polyg's string ids (e.g. 'ent_3f2a...'), not integers; an entity's name works too."""
    project = s.project(p.project_id)
    found = await s.graphrag.extractor.entity(project, await s.graphrag.entity_id(project, p.entity_id))
    return shaping.typed(ExtractOneOut, {"success": True, **_entity_extraction(found)})


@graphrag.tool(ExtractAll, ExtractAllOut, idempotent=True, title="Extract all relationships")
async def extract_all_relationships(s: Services, p: ExtractAll) -> ExtractAllOut:
    """Extract relationships (as extract_entity_relationships) from every entity whose
    observations changed since its last extraction, at most `limit` a call (500 unless given,
    2,000 at most); `remaining` says how many are still due and `has_more` whether to call
    again. Lists the entities where something was found (at most 100). A client that
    sends a progressToken is told the entities read so far after every batch of 100."""
    limit = DEFAULT_EXTRACT_LIMIT if p.limit is None else p.limit
    run = await s.graphrag.extractor.due(s.project(p.project_id), limit, progress.current())
    found = [e for e in run.entities if e.relationships or e.unresolved]
    total = sum(len(e.relationships) for e in run.entities)
    with_rels = sum(1 for e in run.entities if e.relationships)
    stats = ExtractAllStats(
        total_processed=len(run.entities),
        total_relationships=total,
        relationships_created=sum(e.created for e in run.entities),
        entities_with_relationships=with_rels,
        unresolved=sum(len(e.unresolved) for e in run.entities),
        remaining=run.remaining,
    )
    answer = ExtractAllOut(
        success=True,
        statistics=stats,
        has_more=run.remaining > 0,
        summary=f"Processed {len(run.entities)} entities, found {total} relationships in {with_rels} entities",
        entities=[EntityExtractionOut.model_validate(_entity_extraction(e)) for e in found[:LISTED_ENTITIES]],
        entities_listed=min(len(found), LISTED_ENTITIES),
    ).model_dump()
    if shaping.keep_fitting(answer, "entities"):
        listed = answer["entities_listed"]
        answer["entities_listed"] = len(answer["entities"])
        how = "the statistics count them all; extract_entity_relationships shows one entity."
        answer["note"] = shaping.left_out(len(answer["entities"]), listed, how)
    return shaping.typed(ExtractAllOut, answer)


@graphrag.tool(LocalGraphParams, LocalGraphResult, read_only=True, title="Build local graph")
async def build_local_graph(s: Services, p: LocalGraphParams) -> LocalGraphResult:
    """The given entities (at most 200) and the relationships among them, for visualisation.
    salience_score is the mean of the entity's PageRank and degree percentiles in the project
    (0-1); tier is core from 0.9, supporting from 0.5, peripheral below. Ids not found are listed in missing.
    Ids are polyg's string ids (e.g. 'ent_3f2a...'), not integers; an entity's name works too."""
    project = s.project(p.project_id)
    local = await s.graphrag.local_graph(project, await s.graphrag.entity_ids(project, p.entity_ids))
    graph = LocalGraphOut(
        nodes=[
            LocalNode(
                id=n.node.id or "", name=n.node.name, entity_type=n.node.type, tier=n.tier, salience_score=n.salience
            )
            for n in local.nodes
        ],
        edges=[
            LocalEdge(
                id=e.id,
                from_entity_id=e.source.id,
                to_entity_id=e.target.id,
                relation_type=shown_type(e.type),
                weight=e.weight,
                is_causal=is_causal(e.type, e.properties),
            )
            for e in local.edges
        ],
        node_count=len(local.nodes),
        edge_count=len(local.edges),
        missing=list(local.missing),
        truncated=local.truncated,
    )
    answer = LocalGraphResult(success=True, graph=graph).model_dump()
    _local_graph_within_budget(answer["graph"])
    return shaping.typed(LocalGraphResult, answer)


def _local_graph_within_budget(graph: dict[str, Any]) -> None:
    """Edges first, then nodes, cut to the budget: the first nodes are the ones asked for."""
    edges, nodes = len(graph["edges"]), len(graph["nodes"])
    room = limits.RESPONSE_BUDGET - shaping.MARGIN - limits.size({**graph, "edges": []})
    omitted = shaping.keep_fitting(graph, "edges", room=max(room, 0))
    omitted += shaping.keep_fitting(graph, "nodes")
    if omitted:
        graph.update(truncated=True, node_count=len(graph["nodes"]), edge_count=len(graph["edges"]), omitted=omitted)
        graph["note"] = shaping.left_out(
            len(graph["nodes"]) + len(graph["edges"]), nodes + edges, "ask for fewer entity_ids."
        )
