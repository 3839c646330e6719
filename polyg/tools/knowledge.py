"""The `knowledge` toolset (spec 000): relationship types, templates, documents, neighbourhoods
and weighted paths over the same entities every toolset sees (a spec-000 node is an entity;
`summary` its description, `node_type` its type and second label)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from polyg.core.app import Services
from polyg.core.documents import Document
from polyg.core.edges import EdgeChange, EdgeDraft
from polyg.core.model import Outcome
from polyg.core.narrative import Step, tell
from polyg.core.nodes import NodeChange, NodeDraft, NodeEdge
from polyg.core.reltypes import MIGRATIONS, RelationshipType, canonical
from polyg.core.templates import Template, TemplateChange, TemplateDraft
from polyg.core.traversal import EdgeRef, ScoredPath
from polyg.errors import InvalidParams, NotFound, PolygError
from polyg.store.names import ENTITY
from polyg.tools.registry import Params, Toolset

knowledge = Toolset("knowledge")

Operation = Literal["create", "update", "delete"]
# Properties polyg keeps on relationships for itself: not shown as the relationship's properties.
EDGE_OWN = frozenset({"id", "created_at", "updated_at", "description", "label"})


def _round(value: float) -> float:
    return round(value, 6)


class ItemResult(BaseModel):
    operation: str
    status: Literal["success", "error"]
    message: str | None = None


async def _each(items: list[Any], work: Callable[[Any], Awaitable[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One result per item: an item's failure is reported in its result and stops nothing."""
    results = []
    for item in items:
        try:
            results.append({**await work(item), "status": "success"})
        except PolygError as exc:
            results.append({"status": "error", "message": exc.message, **_ref(item)})
    return results


def _ref(item: Any) -> dict[str, Any]:
    if isinstance(item, RelationshipTypeIn):
        return {"name": item.name}
    if isinstance(item, TemplateIn):
        return {"template_id": item.id or ""}
    return {}


# --- nodes and relationships ---------------------------------------------------------------------

Strength = Literal["weak", "medium", "strong"]
DIRECTION: Any = Field(
    default="forward",
    description="forward: from the node (or source) to the target; reverse: from the target to it.",
)
STRENGTH: Any = Field(default=None, description="How meaningful this relationship is (default medium).")


class NodeRelationshipIn(BaseModel):
    target_id: str = Field(description="Id or name of the other node (a node made earlier in the batch counts).")
    relationship_type: str
    direction: Literal["forward", "reverse"] = DIRECTION
    relevance_strength: Strength | None = STRENGTH
    properties: dict[str, Any] | None = None


class NodeIn(BaseModel):
    id: str | None = Field(default=None, description="Required for update/delete.")
    name: str | None = Field(default=None, description="Required for create.")
    summary: str | None = Field(default=None, description="Required for create.")
    node_type: str | None = Field(default=None, description="Node type, e.g. Person: also a label of the node.")
    template_id: str | None = Field(default=None, description="Template (id or name) for the node's documents.")
    properties: dict[str, Any] | None = None
    relationships: list[NodeRelationshipIn] = []


class ManageNodes(Params):
    operation: Operation
    nodes: list[NodeIn]


class NodeResult(ItemResult):
    node_id: str
    created_relationships: int | None = None
    relationship_ids: list[str] | None = Field(default=None, description="Ids of the relationships created, in order.")


class NodesResult(BaseModel):
    results: list[NodeResult]


def _edge_properties(props: dict[str, Any] | None, strength: str | None) -> dict[str, Any]:
    """User properties with the relevance strength (medium unless given) among them."""
    return {**(props or {}), "relevance_strength": strength or "medium"}


def _edge_direction(rel_type: str, direction: str) -> tuple[str, bool]:
    """The type to store and whether the edge runs from the item's source (or new node) to its
    target: a migration name (PARENT_OF) is stored as its canonical type, ends swapped."""
    stored, swapped = canonical(rel_type)
    return stored, (direction == "forward") != swapped


def _node_edges(item: NodeIn) -> list[NodeEdge]:
    edges = []
    for rel in item.relationships:
        stored, outgoing = _edge_direction(rel.relationship_type, rel.direction)
        edges.append(
            NodeEdge(
                rel.target_id, stored, outgoing, properties=_edge_properties(rel.properties, rel.relevance_strength)
            )
        )
    return edges


def _failed(outcome: Outcome) -> str:
    return outcome.error or "failed"


async def _create_nodes(s: Services, project: str, items: list[NodeIn]) -> list[dict[str, Any]]:
    results: list[dict[str, Any] | None] = [None] * len(items)
    drafts: list[NodeDraft] = []
    places: list[int] = []
    templates: dict[int, str] = {}
    wanted = await s.templates.find(project, [i.template_id for i in items if i.template_id is not None])
    for index, item in enumerate(items):
        try:
            if item.name is None or item.summary is None:
                raise InvalidParams(f"nodes[{index}]: name and summary are required to create a node.")
            edges = _node_edges(item)
            if item.template_id is not None:
                if item.template_id not in wanted:
                    raise NotFound(f"nodes[{index}]: template {item.template_id!r} not found.")
                templates[index] = wanted[item.template_id].id
        except PolygError as exc:
            results[index] = {
                "node_id": item.id or "",
                "operation": "create",
                "status": "error",
                "message": exc.message,
            }
            continue
        drafts.append(NodeDraft(item.name, item.node_type or "entity", item.summary, item.properties, edges=edges))
        places.append(index)
    for index, outcome in zip(places, await s.nodes.create(project, drafts), strict=True):
        if outcome.status == "error" or outcome.id is None:
            results[index] = {"node_id": "", "operation": "create", "status": "error", "message": _failed(outcome)}
            continue
        result = {
            "node_id": outcome.id,
            "operation": "create",
            "status": "success",
            "created_relationships": len(outcome.edge_ids),
            "relationship_ids": list(outcome.edge_ids),
        }
        if index in templates:
            try:
                await s.templates.link(project, ENTITY, outcome.id, templates[index])
            except PolygError as exc:
                result.update(status="error", message=f"Created, but not linked to its template: {exc.message}")
        results[index] = result
    return [r for r in results if r is not None]


async def _update_nodes(s: Services, project: str, items: list[NodeIn]) -> list[dict[str, Any]]:
    results = []
    for index, item in enumerate(items):
        try:
            if item.id is None:
                raise InvalidParams(f"nodes[{index}]: id is required to update a node.")
            change = NodeChange(item.id, item.name, item.node_type, item.summary, item.properties)
            [outcome] = await s.nodes.update(project, [change])
            if outcome.status == "error" or outcome.id is None:
                raise InvalidParams(_failed(outcome), code=outcome.code)
            created = 0
            if item.relationships:
                drafts = []
                for rel in item.relationships:
                    stored, outgoing = _edge_direction(rel.relationship_type, rel.direction)
                    ends = (outcome.id, rel.target_id) if outgoing else (rel.target_id, outcome.id)
                    props = _edge_properties(rel.properties, rel.relevance_strength)
                    drafts.append(EdgeDraft(ends[0], ends[1], stored, properties=props))
                made = await s.edges.create(project, drafts)
                created = sum(1 for o in made if o.status == "created")
                errors = [o.error for o in made if o.status == "error"]
                if errors:
                    raise InvalidParams(
                        f"Updated, but {len(errors)} relationship(s) failed: {'; '.join(map(str, errors))}"
                    )
            if item.template_id is not None:
                await s.templates.link(project, ENTITY, outcome.id, item.template_id)
            results.append(
                {"node_id": outcome.id, "operation": "update", "status": "success", "created_relationships": created}
            )
        except PolygError as exc:
            results.append({"node_id": item.id or "", "operation": "update", "status": "error", "message": exc.message})
    return results


@knowledge.tool(ManageNodes, NodesResult, destructive=True, title="Manage nodes")
async def manage_nodes(s: Services, p: ManageNodes) -> dict[str, Any]:
    """Create, update or delete nodes in a batch, with relationships (direction forward or reverse,
    relevance_strength weak/medium/strong) to nodes by id or name, including nodes made earlier in
    the same batch. Each item succeeds or fails on its own and a failed item writes nothing."""
    project = s.project(p.project_id)
    if p.operation == "create":
        return {"results": await _create_nodes(s, project, p.nodes)}
    if p.operation == "update":
        return {"results": await _update_nodes(s, project, p.nodes)}
    results: list[dict[str, Any] | None] = [None] * len(p.nodes)
    refs = []
    for index, item in enumerate(p.nodes):
        if item.id is None:
            results[index] = {
                "node_id": "",
                "operation": "delete",
                "status": "error",
                "message": f"nodes[{index}]: id is required to delete a node.",
            }
        else:
            refs.append((index, item.id))
    for (index, ref), outcome in zip(refs, await s.nodes.delete(project, [r for _, r in refs]), strict=True):
        ok = outcome.status == "deleted"
        results[index] = {"node_id": outcome.id or ref, "operation": "delete", "status": "success" if ok else "error"}
        if not ok:
            results[index]["message"] = _failed(outcome)  # type: ignore[index]
    return {"results": results}


class RelationshipIn(BaseModel):
    id: str | None = Field(default=None, description="Required for update/delete.")
    source_id: str | None = Field(default=None, description="Id or name; required for create.")
    target_id: str | None = Field(default=None, description="Id or name; required for create.")
    relationship_type: str | None = Field(default=None, description="Required for create, e.g. INFLUENCED_BY.")
    direction: Literal["forward", "reverse"] = DIRECTION
    relevance_strength: Strength | None = STRENGTH
    properties: dict[str, Any] | None = None


class ManageRelationships(Params):
    operation: Operation
    relationships: list[RelationshipIn]


class RelationshipResult(ItemResult):
    relationship_id: str


class RelationshipsResult(BaseModel):
    results: list[RelationshipResult]


async def _create_relationships(s: Services, project: str, items: list[RelationshipIn]) -> list[dict[str, Any]]:
    results: list[dict[str, Any] | None] = [None] * len(items)
    drafts: list[EdgeDraft] = []
    places: list[int] = []
    for index, item in enumerate(items):
        try:
            if item.source_id is None or item.target_id is None or item.relationship_type is None:
                raise InvalidParams(f"relationships[{index}]: source_id, target_id and relationship_type are required.")
            stored, forward = _edge_direction(item.relationship_type, item.direction)
        except PolygError as exc:
            results[index] = {"relationship_id": "", "operation": "create", "status": "error", "message": exc.message}
            continue
        ends = (item.source_id, item.target_id) if forward else (item.target_id, item.source_id)
        props = _edge_properties(item.properties, item.relevance_strength)
        drafts.append(EdgeDraft(ends[0], ends[1], stored, properties=props))
        places.append(index)
    for index, outcome in zip(places, await s.edges.create(project, drafts), strict=True):
        ok = outcome.status == "created"
        results[index] = {
            "relationship_id": outcome.id or "",
            "operation": "create",
            "status": "success" if ok else "error",
        }
        if not ok:
            results[index]["message"] = _failed(outcome)  # type: ignore[index]
    return [r for r in results if r is not None]


async def _change_relationships(
    s: Services, project: str, operation: str, items: list[RelationshipIn]
) -> list[dict[str, Any]]:
    results = []
    for index, item in enumerate(items):
        try:
            if item.id is None:
                raise InvalidParams(f"relationships[{index}]: id is required to {operation} a relationship.")
            if operation == "delete":
                [outcome] = await s.edges.delete(project, [item.id])
            else:
                current = await s.edges.get(project, item.id)
                if item.relationship_type is not None and canonical(item.relationship_type)[0] != current.type:
                    raise InvalidParams(
                        f"relationships[{index}]: a relationship's type cannot change "
                        f"({current.type}); delete it and create one of type {item.relationship_type}."
                    )
                props: dict[str, Any] = dict(item.properties or {})
                if item.relevance_strength is not None:
                    props["relevance_strength"] = item.relevance_strength
                [outcome] = await s.edges.update(project, [EdgeChange(item.id, properties=props)])
            if outcome.status == "error":
                raise InvalidParams(_failed(outcome), code=outcome.code)
            results.append({"relationship_id": item.id, "operation": operation, "status": "success"})
        except PolygError as exc:
            results.append(
                {"relationship_id": item.id or "", "operation": operation, "status": "error", "message": exc.message}
            )
    return results


@knowledge.tool(ManageRelationships, RelationshipsResult, destructive=True, title="Manage relationships")
async def manage_relationships(s: Services, p: ManageRelationships) -> dict[str, Any]:
    """Create, update or delete relationships in a batch. direction reverse flips source and target;
    relevance_strength (weak/medium/strong, default medium) and properties are stored on the
    relationship. Migration names are honoured (PARENT_OF is CHILD_OF reversed)."""
    project = s.project(p.project_id)
    if p.operation == "create":
        return {"results": await _create_relationships(s, project, p.relationships)}
    return {"results": await _change_relationships(s, project, p.operation, p.relationships)}


# --- relationship types --------------------------------------------------------------------------


class RelationshipTypeIn(BaseModel):
    name: str = Field(description="Relationship type name, e.g. CHILD_OF (letters, digits, '_').")
    description: str | None = None
    directionality: Literal["strong", "weak", "balanced"] | None = Field(
        default=None,
        description="How much the relationship matters for source vs target: strong [1.0, 0.2], "
        "weak [0.8, 0.6], balanced [0.7, 0.7]; unset weighs [0.5, 0.5].",
    )
    source_types: list[str] | None = None
    target_types: list[str] | None = None


class ManageRelationshipTypes(Params):
    operation: Literal["create", "update", "delete", "list"]
    relationship_types: list[RelationshipTypeIn] = Field(default=[], description="Not needed for list.")


class RelationshipTypeOut(BaseModel):
    name: str
    description: str
    directionality: str | None
    source_types: list[str]
    target_types: list[str]
    forward_weight: float
    backward_weight: float


class RelationshipTypeResult(ItemResult):
    name: str


class RelationshipTypesResult(BaseModel):
    results: list[RelationshipTypeResult]
    relationship_types: list[RelationshipTypeOut]


def _reltype(t: RelationshipType) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "directionality": t.directionality,
        "source_types": list(t.source_types),
        "target_types": list(t.target_types),
        "forward_weight": t.forward_weight,
        "backward_weight": t.backward_weight,
    }


@knowledge.tool(ManageRelationshipTypes, RelationshipTypesResult, title="Manage relationship types")
async def manage_relationship_types(s: Services, p: ManageRelationshipTypes) -> dict[str, Any]:
    """Create, update, delete or list relationship types: what a type means (description), how much
    it matters each way (directionality: strong, weak, balanced) and the node types it joins.
    Path strengths use these weights."""
    project = s.project(p.project_id)
    if p.operation == "list":
        return {"results": [], "relationship_types": [_reltype(t) for t in await s.reltypes.all(project)]}

    async def work(item: RelationshipTypeIn) -> dict[str, Any]:
        if item.name in MIGRATIONS:
            raise InvalidParams(
                f"{item.name} is not a type of its own: relationships of that name are stored as "
                f"{MIGRATIONS[item.name]} with source and target swapped; manage {MIGRATIONS[item.name]} instead."
            )
        if p.operation == "create":
            made = await s.reltypes.create(
                project,
                item.name,
                description=item.description or "",
                directionality=item.directionality,
                source_types=item.source_types or (),
                target_types=item.target_types or (),
            )
        elif p.operation == "update":
            made = await s.reltypes.update(
                project,
                item.name,
                description=item.description,
                directionality=item.directionality,
                source_types=item.source_types,
                target_types=item.target_types,
            )
        else:
            await s.reltypes.delete(project, item.name)
            return {"name": item.name, "operation": p.operation}
        return {"name": made.name, "operation": p.operation}

    results = await _each(p.relationship_types, work)
    for r in results:
        r.setdefault("operation", p.operation)
    return {"results": results, "relationship_types": []}


# --- templates -----------------------------------------------------------------------------------


class TemplateIn(BaseModel):
    id: str | None = Field(default=None, description="Required for update/delete; optional on create.")
    name: str | None = None
    description: str | None = None
    structure: str | None = Field(default=None, description="Mustache template, e.g. '# {{name}}\\n{{summary}}'.")
    variables: dict[str, str] | None = Field(
        default=None,
        description="Variable name -> Cypher query run with the node bound as n, read-only, e.g. "
        "'MATCH (n)-[r]->(p) RETURN type(r) AS type, p.name AS name'.",
    )
    node_types: list[str] | None = Field(default=None, description="Node types this template applies to.")


class ManageTemplates(Params):
    operation: Literal["create", "update", "delete", "list"]
    templates: list[TemplateIn] = Field(default=[], description="Not needed for list.")


class TemplateOut(BaseModel):
    id: str
    name: str
    description: str
    structure: str
    variables: dict[str, str]
    node_types: list[str]
    created_date: str | None
    last_modified_date: str | None


class TemplateResult(ItemResult):
    template_id: str


class TemplatesResult(BaseModel):
    results: list[TemplateResult]
    templates: list[TemplateOut]


def _template(t: Template) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "structure": t.structure,
        "variables": dict(t.variables),
        "node_types": list(t.node_types),
        "created_date": t.created_at,
        "last_modified_date": t.updated_at,
    }


@knowledge.tool(ManageTemplates, TemplatesResult, title="Manage templates")
async def manage_templates(s: Services, p: ManageTemplates) -> dict[str, Any]:
    """Create, update, delete or list document templates: a Mustache `structure` and `variables`
    (name -> Cypher run read-only with the node bound as n). A structure that does not parse, or a
    query that does not compile, writes or reads beyond n, is refused with the reason."""
    project = s.project(p.project_id)
    if p.operation == "list":
        return {"results": [], "templates": [_template(t) for t in await s.templates.list(project)]}

    async def work(item: TemplateIn) -> dict[str, Any]:
        if p.operation == "create":
            if item.name is None or item.structure is None:
                raise InvalidParams("A template needs a name and a structure.")
            made = await s.templates.create(
                project,
                TemplateDraft(
                    name=item.name,
                    structure=item.structure,
                    description=item.description or "",
                    variables=item.variables,
                    node_types=item.node_types or (),
                    id=item.id,
                ),
            )
            return {"template_id": made.id, "operation": p.operation}
        if item.id is None:
            raise InvalidParams(f"A template id is needed to {p.operation} a template.")
        if p.operation == "update":
            change = TemplateChange(
                item.id, item.name, item.description, item.structure, item.variables, item.node_types
            )
            await s.templates.update(project, change)
        else:
            await s.templates.delete(project, item.id)
        return {"template_id": item.id, "operation": p.operation}

    results = await _each(p.templates, work)
    for r in results:
        r.setdefault("operation", p.operation)
    return {"results": results, "templates": []}


# --- documents -----------------------------------------------------------------------------------


class GenerateDocuments(Params):
    node_identifiers: list[str] = Field(description="Node ids or names (exact, any case, or close).")
    force_regenerate: bool = Field(default=False, description="Skip the cache and generate again.")
    include_dependencies: bool = Field(default=False, description="List the ids of the nodes each document depends on.")
    template_override: str | None = Field(default=None, description="Template id or name to use instead of the node's.")


class DocumentOut(BaseModel):
    node_id: str
    node_name: str
    content: str
    generated_at: int
    from_cache: bool
    dependencies: list[str]
    template_used: str


class DocumentsResult(BaseModel):
    documents: list[DocumentOut]


def _document(d: Document, include_dependencies: bool) -> dict[str, Any]:
    return {
        "node_id": d.node_id,
        "node_name": d.node_name,
        "content": d.content,
        "generated_at": d.generated_at,
        "from_cache": d.from_cache,
        "dependencies": sorted(d.dependencies) if include_dependencies else [],
        "template_used": d.template_used,
    }


@knowledge.tool(GenerateDocuments, DocumentsResult, title="Generate documents")
async def generate_documents(s: Services, p: GenerateDocuments) -> dict[str, Any]:
    """Render each node's template (its own, a template for its type, or template_override) with
    the results of the template's Cypher variables. Documents are cached until the node, anything
    the variables read, or the template changes."""
    documents = await s.documents.generate(
        s.project(p.project_id),
        p.node_identifiers,
        force_regenerate=p.force_regenerate,
        template_override=p.template_override,
    )
    return {"documents": [_document(d, p.include_dependencies) for d in documents]}


# --- neighbourhoods ------------------------------------------------------------------------------


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


def _visible(properties: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in properties.items() if k not in EDGE_OWN}


@knowledge.tool(ExploreNeighborhoods, NeighborhoodsResult, read_only=True, title="Explore neighborhoods")
async def explore_neighborhoods(s: Services, p: ExploreNeighborhoods) -> dict[str, Any]:
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
                    **({"properties": _visible(a.properties)} if _visible(a.properties) else {}),
                }
                for a in hood.relationships
            ],
            "nearby_nodes": [{"id": n.id, "name": n.name, "distance": n.distance, "path": n.path} for n in hood.nearby],
            "common_relationship_types": hood.common_types,
            "templates_in_use": hood.templates,
        }
        for term, hood in found.terms.items()
    }
    return {
        "neighborhoods": neighborhoods,
        "recommendations": {
            "suggested_parents": [
                {"node_id": x.id, "node_name": x.name, "confidence": x.confidence} for x in found.suggested_parents
            ],
            "suggested_relationship_types": found.suggested_types,
            "missing_intermediate_nodes": found.missing,
        },
    }


# --- paths ---------------------------------------------------------------------------------------


class NodePair(BaseModel):
    source_node_id: str
    target_node_id: str


class FindRelationshipPaths(Params):
    node_pairs: list[NodePair] = Field(description="Pairs of node ids (or names).")
    max_path_length: int = Field(default=4, ge=1, le=6)
    max_paths_per_pair: int = Field(default=5, ge=1, le=100)
    min_path_strength: float = Field(default=0.3, ge=0.0, le=1.0)


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


class PairResult(BaseModel):
    source_node_id: str
    target_node_id: str
    paths: list[PathOut]
    summary: PathSummary


class PathsResult(BaseModel):
    path_results: list[PairResult]


def _hop(edge: EdgeRef, score: float) -> dict[str, Any]:
    props = _visible(dict(edge.properties))
    return {
        "type": edge.type,
        "direction": "forward" if edge.forward else "backward",
        "edge_strength": _round(score),
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
        "strength": _round(path.score.final),
        "nodes": [{"id": n.id or "", "name": n.name or ""} for n in path.nodes],
        "relationships": [_hop(e, sc) for e, sc in zip(path.edges, path.hop_scores, strict=True)],
        "narrative": tell(start.name or start.id or "?", steps),
        "strength_breakdown": {
            "raw_strength": _round(path.score.raw),
            "length_penalty": _round(path.score.length_penalty),
            "final_strength": _round(path.score.final),
        },
    }


@knowledge.tool(FindRelationshipPaths, PathsResult, read_only=True, title="Find relationship paths")
async def find_relationship_paths(s: Services, p: FindRelationshipPaths) -> dict[str, Any]:
    """The strongest paths between node pairs, each hop in either direction: strength is the product
    over hops of relevance strength (weak 0.2, medium 0.6, strong 1.0) x the type's directional
    weight for the direction travelled, times 1/length. With a narrative and strength breakdown."""
    project = s.project(p.project_id)
    results = []
    for pair in p.node_pairs:
        source = await s.documents.resolve(project, pair.source_node_id)
        target = await s.documents.resolve(project, pair.target_node_id)
        found = await s.traversal.paths(
            project,
            source.id,
            target.id,
            max_len=p.max_path_length,
            k=p.max_paths_per_pair,
            min_score=p.min_path_strength,
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
                    "average_path_strength": _round(sum(strengths) / len(strengths)) if strengths else 0.0,
                    "relationship_types_used": sorted({r["type"] for path in paths for r in path["relationships"]}),
                },
            }
        )
    return {"path_results": results}
