"""The `memory` toolset (spec 003), part 2: `recall` (classify, query the graphs at once,
synthesise an answer with its evidence) and `remember` (store a memory, then what it says).

Both work offline by rules; registered into part 1's toolset.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from polyg.core.app import Services
from polyg.core.extract_memory import Extraction, extract
from polyg.core.memory_graphs import MemoryGraphs
from polyg.core.recall.executor import Executor
from polyg.core.recall.graphs import MEMORY_ORIGIN, ProjectGraphs
from polyg.core.recall.model import ClassifierOutput
from polyg.core.recall.output import SynthesizerOutput
from polyg.core.recall.service import DEFAULT_MAX_RESULTS, MAX_RESULTS, RecallService
from polyg.core.time import FixedClock, format_utc
from polyg.tools.memory import REFERENCE, memory
from polyg.tools.registry import Params

# --- result shapes -------------------------------------------------------------------------


class EvidenceOut(BaseModel):
    id: str
    text: str
    graph: str
    kind: str
    score: float
    at: str | None = None
    cause: str | None = None
    effect: str | None = None


class RecallResult(SynthesizerOutput):
    evidence: list[EvidenceOut] = Field(description="What the answer is based on, best first.")
    failed_graphs: dict[str, str] = Field(default_factory=dict, description="Graphs that failed, with the error.")
    timed_out_graphs: list[str] = Field(default_factory=list)
    truncated: bool = False
    classification: ClassifierOutput | None = None


class RememberResult(BaseModel):
    memory_id: str
    duplicate: bool = Field(description="The same memory was already stored: nothing was written.")
    entities_created: list[str] = []
    entities_merged: list[str] = Field(default=[], description="Existing entities the memory names.")
    events_logged: list[str] = []
    facts_added: list[str] = []
    facts_invalidated: list[str] = []
    causal_links_added: list[str] = []
    causal_links_updated: list[str] = []


# --- parameters ----------------------------------------------------------------------------


class Recall(Params):
    query: str = Field(min_length=1, max_length=2000)
    include_reasoning: bool = Field(default=False, description="Also return how the query was classified.")
    max_results: int = Field(default=DEFAULT_MAX_RESULTS, ge=1, le=MAX_RESULTS, description="Evidence at most.")
    reference_time: str | None = REFERENCE


class Remember(Params):
    content: str = Field(min_length=1, max_length=20000)
    context: str | None = Field(default=None, max_length=200, description="Who or where it is from, e.g. a speaker.")
    reference_time: str | None = Field(default=None, description="When it was said (ISO); times in it read against it.")


# --- tools ---------------------------------------------------------------------------------


@memory.tool(Recall, RecallResult, read_only=True, title="Recall")
async def recall(s: Services, p: Recall) -> dict[str, Any]:
    """Answer a question from memory: which graphs it needs (causal, temporal, entity, semantic) are
    queried at once; the answer comes with its reasoning, the evidence it cites (node ids and
    text, best first), the graphs that contributed, and those that failed or timed out."""
    graphs = ProjectGraphs(s.memory, s.project(p.project_id))
    at = s.memory.temporal.reference(p.reference_time)
    service = RecallService(
        Executor(graphs.readers(), timeout_ms=s.settings.parallel_timeout_ms),
        resolve=graphs.resolve,
        known_names=graphs.known_names,
        clock=FixedClock(at),
    )
    result = await service.recall(p.query, max_results=p.max_results, reference=at)
    evidence = [
        EvidenceOut(
            id=e.id,
            text=e.text,
            graph=e.graph,
            kind=e.kind,
            score=round(e.score, 4),
            at=e.at,
            cause=e.cause,
            effect=e.effect,
        ).model_dump()
        for e in result.evidence
    ]
    return {
        **result.output.model_dump(),
        "evidence": evidence,
        "failed_graphs": result.failed,
        "timed_out_graphs": result.timed_out,
        "truncated": result.truncated,
        "classification": result.classification.model_dump() if p.include_reasoning else None,
    }


@memory.tool(Remember, RememberResult, title="Remember")
async def remember(s: Services, p: Remember) -> dict[str, Any]:
    """Store a memory (searchable at once), then what it says: entities, events with their times,
    facts (a new value of a single-valued fact closes the old one) and causal links, each linked
    to the memory. The same memory twice writes nothing."""
    project = s.project(p.project_id)
    graphs = s.memory
    at = graphs.temporal.reference(p.reference_time)
    text = f"{p.context}: {p.content}" if p.context else p.content
    existing = await graphs.resolver.exact(project, text, "event")
    if existing is not None and any(
        e.origin == MEMORY_ORIGIN for e in await graphs.temporal.events(project, [existing])
    ):
        return RememberResult(memory_id=existing, duplicate=True).model_dump()
    known = tuple(await graphs.temporal.mentioned_entities(project, p.content))
    found = extract(p.content, at, known)
    return await _write(graphs, project, text, at, found)


async def _write(graphs: MemoryGraphs, project: str, text: str, at: datetime, found: Extraction) -> dict[str, Any]:
    when = format_utc(at)
    names = list(dict.fromkeys(e.name for e in found.entities))
    ids, created = await graphs.temporal.ensure_entities(
        project, names, {e.name: e.type for e in found.entities if e.type}
    )
    # The memory itself, involving every entity it names: recall's search and the entities'
    # events find it, whatever else was extracted.
    stored = await graphs.temporal.add_event(
        project, description=text, occurred_at=when, entities=names, origin=MEMORY_ORIGIN
    )
    out = RememberResult(memory_id=stored.event.id, duplicate=False).model_dump()
    out["entities_created"] = [ids[n] for n in created]
    out["entities_merged"] = [ids[n] for n in names if n not in created]
    for event in found.events:
        logged = await graphs.temporal.add_event(
            project,
            description=event.description,
            occurred_at=format_utc(event.occurred_at),
            entities=list(event.entities),
        )
        out["events_logged"].append(logged.event.id)
    for fact in found.facts:
        added = await graphs.temporal.add_fact(
            project,
            subject=fact.subject,
            predicate=fact.predicate,
            object_=fact.object,
            description=f"from memory {stored.event.id}",
            reference_time=when,
        )
        if not added.duplicate:
            out["facts_added"].append(added.fact.id)
        out["facts_invalidated"] += [f.id for f in added.invalidated]
    for cause in found.causes:
        link = await graphs.causal.add_link(
            project, cause=cause.cause, effect=cause.effect, confidence=cause.confidence, evidence=cause.evidence
        )
        out["causal_links_updated" if link.updated else "causal_links_added"].append(link.link.id)
    return out
