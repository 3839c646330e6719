"""The memory toolset's `recall` (classify, query the graphs at once, synthesise an answer with
its evidence) and `remember` (store a memory, then what it says). Both work offline by rules.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from polyg.core import limits
from polyg.core.recall.model import ClassifierOutput
from polyg.core.recall.output import SynthesizerOutput
from polyg.core.text.time import FixedClock
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.memory.shared import REFERENCE, memory
from polyg.tools.registry import Params, degraded_field

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
    memories: list[str] = Field(
        default_factory=list, description="The stored memories this comes from (a memory: itself)."
    )


class RecallResult(SynthesizerOutput):
    evidence: list[EvidenceOut] = Field(description="What the answer is based on, best first.")
    failed_graphs: dict[str, str] = Field(default_factory=dict, description="Graphs that failed, with the error.")
    timed_out_graphs: list[str] = Field(default_factory=list)
    truncated: bool = False
    classification: ClassifierOutput | None = None
    degraded: str | None = degraded_field()
    omitted: int | None = None
    note: str | None = None


class RememberResult(BaseModel):
    memory_id: str
    duplicate: bool = Field(
        description=(
            "The same memory was already stored whole: nothing was written. A memory stored by a "
            "remember that failed half-way is finished instead (false; the lists say what was added)."
        )
    )
    entities_created: list[str] = []
    entities_merged: list[str] = Field(default=[], description="Existing entities the memory names.")
    events_logged: list[str] = []
    facts_added: list[str] = []
    facts_invalidated: list[str] = []
    causal_links_added: list[str] = []
    causal_links_updated: list[str] = []


# The reasoning's lists, cut after the evidence when a result would pass the response budget.
REASONING_LISTS = ("causal_chain", "entities_involved", "semantic_matches")


# --- parameters ----------------------------------------------------------------------------


class Recall(Params):
    query: str = Field(min_length=1, max_length=2000)
    include_reasoning: bool = Field(default=False, description="Also return how the query was classified.")
    max_results: int = Field(default=limits.DEFAULT_RECALL_RESULTS, ge=1, le=limits.MAX_RECALL_RESULTS)
    reference_time: str | None = REFERENCE


class Remember(Params):
    content: str = Field(min_length=1, max_length=limits.MAX_MEMORY_CONTENT)
    context: str | None = Field(
        default=None,
        max_length=limits.MAX_MEMORY_CONTEXT,
        description="Speaker or channel it is from (stored as '<context>: <content>').",
    )
    reference_time: str | None = Field(default=None, description="When it was said (ISO); times in it read against it.")


# --- tools ---------------------------------------------------------------------------------


@memory.tool(Recall, RecallResult, read_only=True, title="Recall")
async def recall(s: Services, p: Recall) -> dict[str, Any]:
    """Answer a question from memory, with its reasoning and the evidence it cites (ids and text).

    The graphs the question needs (causal, temporal, entity, semantic) are queried at once; the
    answer comes with its reasoning, the evidence it cites (node ids and text, best first), the
    graphs that contributed, and those that failed or timed out."""
    # Imported at the first recall, not at start: with the writer they pull in (the rules,
    # the extraction), ~45 ms of CPU that a server never told to recall would pay at start.
    from polyg.core.recall.executor import Executor
    from polyg.core.recall.graphs import ProjectGraphs
    from polyg.core.recall.service import RecallService

    graphs = ProjectGraphs(s.memory, s.project(p.project_id))
    at = s.memory.temporal.reference(p.reference_time)
    service = RecallService(
        Executor(graphs.readers(), timeout_ms=s.settings.parallel_timeout_ms),
        classifier=s.classifier,
        synthesiser=s.synthesiser,
        resolve=graphs.resolve,
        known_names=graphs.known_names,
        readahead=graphs,
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
            memories=list(e.memories),
        ).model_dump()
        for e in result.evidence
    ]
    answer = {
        **result.output.model_dump(),
        "evidence": evidence,
        "failed_graphs": result.failed,
        "timed_out_graphs": result.timed_out,
        "truncated": result.truncated,
        "classification": result.classification.model_dump() if p.include_reasoning else None,
    }
    # The answer is kept whole; the evidence it cites first, then the reasoning's lists.
    reasoning = answer["reasoning"]
    places = [(answer, "evidence")] + [(reasoning, key) for key in REASONING_LISTS]
    if reasoning.get("temporal_context"):
        places.insert(1, (reasoning["temporal_context"], "events"))
    shown, total = shaping.share(answer, places)
    if shown < total:
        answer.update(truncated=True, omitted=total - shown)
        how = "ask for fewer (max_results) or a narrower query."
        answer["note"] = shaping.left_out(shown, total, how)
    return answer


@memory.tool(Remember, RememberResult, title="Remember")
async def remember(s: Services, p: Remember) -> dict[str, Any]:
    """Store a memory (searchable at once) and the entities, events, facts and causes it
    states; told twice, it writes nothing.

    Events keep their times; a new value of a single-valued fact closes the old one. Told again
    after a remember that failed half-way, the same memory writes what that one did not.

    With a `context`, the memory is stored, searched and embedded as '<context>: <content>', and
    the context is an entity: a question naming it favours what it said, and the memories
    around it in time."""
    project = s.project(p.project_id)
    at = s.memory.temporal.reference(p.reference_time)
    done = await s.memory_writer.remember(project, p.content, p.context, at)
    return RememberResult.model_validate(done, from_attributes=True).model_dump()
