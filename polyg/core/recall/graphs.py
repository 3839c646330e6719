"""recall's readers over the four graphs of one project (spec 003 part 1's services): each takes
the classifier's plan and a limit and returns evidence, so the executor can run them at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from polyg.core.causal import Chain
from polyg.core.memory_graphs import MemoryGraphs
from polyg.core.recall.evidence import Evidence, GraphName
from polyg.core.recall.executor import GraphQuery
from polyg.core.recall.model import ClassifierOutput
from polyg.core.temporal import Fact
from polyg.core.time import Interval, parse_instant
from polyg.errors import NotFound

# What `remember` stores the memory itself as: an event of this origin (search finds it).
MEMORY_ORIGIN = "memory"
CHAIN_DEPTH = 4
# Start nodes a causal question is walked from at most (the query, then the names it resolves).
MAX_CHAIN_STARTS = 3
# Semantic hits below this are not evidence (the search's own default threshold).
SEMANTIC_THRESHOLD = 0.3


def fact_evidence(fact: Fact, graph: GraphName, score: float) -> Evidence:
    return Evidence(
        fact.id,
        f"{fact.subject} {fact.predicate.replace('_', ' ')} {fact.object}",
        graph,
        "fact",
        score,
        at=fact.valid_from,
        subject=fact.subject,
        predicate=fact.predicate,
        object=fact.object,
        valid_to=fact.valid_to,
    )


def _window(plan: ClassifierOutput) -> Interval:
    """The span the plan asks about; a relative time that names no date asks about all time."""
    tf = plan.timeframe
    if tf is None or tf.type == "relative":
        return Interval()
    start = parse_instant(tf.value)
    return Interval(start, parse_instant(tf.end) if tf.end else None)


@dataclass
class ProjectGraphs:
    """The readers recall's executor queries, and the name lookups its classifier uses."""

    graphs: MemoryGraphs
    project: str

    def readers(self) -> dict[GraphName, GraphQuery]:
        return {"semantic": self.semantic, "temporal": self.temporal, "causal": self.causal, "entity": self.entity}

    async def resolve(self, mention: str) -> str | None:
        ref = await self.graphs.resolver.node(self.project, mention, kinds=("entity",))
        return ref.id if ref is not None else None

    async def known_names(self, query: str) -> Sequence[str]:
        return list(await self.graphs.temporal.mentioned_entities(self.project, query))

    async def semantic(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        text = plan.semantic_query or " ".join(m.mention for m in plan.entities)
        if not text.strip():
            return []
        hits = await self.graphs.semantic.search(self.project, text, limit=limit, threshold=SEMANTIC_THRESHOLD)
        return [
            Evidence(
                h.id,
                h.text,
                "semantic",
                "memory" if h.kind == "event" else "concept" if h.kind == "concept" else "entity",
                h.score,
                at=h.occurred_at,
                neighbours=tuple(name for name, _ in h.similar),
            )
            for h in hits
        ]

    async def temporal(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        entity = next((m.mention for m in plan.entities if m.resolved), None)
        try:
            timeline = await self.graphs.temporal.timeline(self.project, _window(plan), entity=entity, limit=limit)
        except NotFound:  # the mention resolved by meaning, not by name: the whole window
            timeline = await self.graphs.temporal.timeline(self.project, _window(plan), limit=limit)
        out: list[Evidence] = []
        for item in timeline.items:
            # A memory's own event is dated when it was said, not when what it tells happened.
            if item.event is not None and item.event.origin != MEMORY_ORIGIN:
                out.append(Evidence(item.event.id, item.event.description, "temporal", "event", 1.0, at=item.at))
            elif item.fact is not None:
                out.append(fact_evidence(item.fact, "temporal", 1.0))
        return out

    async def causal(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        starts = [plan.semantic_query or "", *(m.resolved or "" for m in plan.entities)]
        chains: list[Chain] = []
        for text in [t for t in dict.fromkeys(starts) if t.strip()][:MAX_CHAIN_STARTS]:
            try:
                chain = await self.graphs.causal.chain(
                    self.project, text, direction=plan.causal_direction or "upstream", depth=CHAIN_DEPTH
                )
            except NotFound:
                continue
            if chain.links:
                chains.append(chain)
        out: dict[str, Evidence] = {}
        for chain in chains:
            nodes = {n.node.id: n for n in chain.nodes}
            for link in chain.links:
                cause, effect = nodes.get(link.cause_id), nodes.get(link.effect_id)
                if cause is None or effect is None or link.id in out:
                    continue
                far = max((cause, effect), key=lambda n: n.distance)
                out[link.id] = Evidence(
                    link.id,
                    link.evidence or f"{cause.node.text} caused {effect.node.text}",
                    "causal",
                    "cause",
                    link.confidence * (far.confidence if far.distance > 1 else 1.0),
                    at=cause.node.occurred_at or effect.node.occurred_at,
                    cause=cause.node.text,
                    effect=effect.node.text,
                    depth=far.distance,
                )
        return sorted(out.values(), key=lambda e: (-e.score, e.depth))[:limit]

    async def entity(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        out: list[Evidence] = []
        for mention in plan.entities:
            if mention.resolved is None:
                continue
            try:
                view = await self.graphs.entities.get(self.project, entity_id=mention.resolved, relationships=False)
            except NotFound:
                continue
            facts, _ = await self.graphs.temporal.facts(self.project, view.entity.id, limit=limit)
            out.append(
                Evidence(
                    view.entity.id,
                    view.entity.name,
                    "entity",
                    "entity",
                    1.0,
                    neighbours=tuple(f.object for f in facts),
                )
            )
            out += [fact_evidence(f, "entity", 0.9) for f in facts]
        return out[:limit]
