"""The memory toolset's semantic graph: `add_concept` and `search_semantic`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.memory.shared import memory
from polyg.tools.registry import Params, degraded_field

# --- result shapes ---------------------------------------------------------------------


class ScoredName(BaseModel):
    name: str
    score: float


class ConceptOut(BaseModel):
    id: str
    name: str
    description: str


class AddConceptResult(BaseModel):
    concept: ConceptOut
    created: bool
    similar: list[ScoredName]
    represents: list[str]


class SemanticHitOut(BaseModel):
    id: str
    kind: Literal["entity", "concept", "event"]
    text: str
    score: float
    similarity: float | None
    type: str | None = None
    description: str | None = None
    occurred_at: str | None = None
    similar: list[ScoredName] = []


class SearchResult(BaseModel):
    results: list[SemanticHitOut]
    degraded: str | None = degraded_field()


# --- parameters ------------------------------------------------------------------------


class AddConcept(Params):
    name: str
    description: str = ""
    represents: list[str] = Field(default=[], description="Names of the entities it stands for.")


class SearchSemantic(Params):
    query: str
    limit: int = Field(default=10, ge=1, le=100)
    threshold: float = Field(default=0.3, ge=-1.0, le=1.0, description="Minimum cosine similarity.")
    include_events: bool = True


# --- tools -----------------------------------------------------------------------------


@memory.tool(AddConcept, AddConceptResult, idempotent=True, title="Add concept")
async def add_concept(s: Services, p: AddConcept) -> AddConceptResult:
    """Add a concept, linked to similar concepts and to the entities it represents.

    A concept is an entity of type concept; the links to similar concepts carry their
    similarity score."""
    concept = await s.memory.semantic.add_concept(
        s.project(p.project_id), name=p.name, description=p.description, represents=p.represents
    )
    return shaping.typed(
        AddConceptResult,
        {
            "concept": {"id": concept.id, "name": concept.name, "description": concept.description},
            "created": concept.created,
            "similar": [{"name": n, "score": sc} for n, sc in concept.similar],
            "represents": concept.represents,
        },
    )


@memory.tool(SearchSemantic, SearchResult, read_only=True, title="Semantic search")
async def search_semantic(s: Services, p: SearchSemantic) -> SearchResult:
    """Entities, concepts and events by meaning and words, at least `threshold` similar.

    A hybrid search; concepts come with their similar concepts."""
    hits = await s.memory.semantic.search(
        s.project(p.project_id), p.query, limit=p.limit, threshold=p.threshold, events=p.include_events
    )
    return shaping.typed(
        SearchResult,
        {
            "results": [
                {
                    "id": h.id,
                    "kind": h.kind,
                    "text": h.text,
                    "score": h.score,
                    "similarity": h.similarity,
                    "type": h.type,
                    "description": h.description,
                    "occurred_at": h.occurred_at,
                    "similar": [{"name": n, "score": sc} for n, sc in h.similar],
                }
                for h in hits
            ]
        },
    )
