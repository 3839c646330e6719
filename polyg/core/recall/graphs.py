"""recall's readers over the four graphs of one project (spec 003 part 1's services): each takes
the classifier's plan and a limit and returns evidence, so the executor can run them at once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from polyg.core.ahead import started
from polyg.core.memory.aliases import KnownNames
from polyg.core.memory.causal import Chain
from polyg.core.memory.entity_graph import EntityView
from polyg.core.memory.graphs import MemoryGraphs
from polyg.core.memory.temporal import Fact
from polyg.core.memory.write import MEMORY_ORIGIN
from polyg.core.model import Hit
from polyg.core.recall.answering import cause_part, memory_chain
from polyg.core.recall.evidence import Evidence, GraphName
from polyg.core.recall.executor import GraphQuery
from polyg.core.recall.memories import MemoryHit, MemorySearch, relevance
from polyg.core.recall.model import ClassifierOutput
from polyg.core.text.time import Interval, parse_instant
from polyg.errors import NotFound

CHAIN_DEPTH = 4
# Memories read about a chain's root, to walk a cause told in a memory the links do not reach.
ROOT_MEMORIES = 3
# Start nodes a causal question is walked from at most (the query, then the names it resolves).
MAX_CHAIN_STARTS = 3
# The resolver's steps that found the mention's own name (not a name like it).
BY_NAME = ("id", "exact", "case-insensitive")
# Semantic hits below this are not evidence (the search's own default threshold).
SEMANTIC_THRESHOLD = 0.3


def fact_evidence(fact: Fact, graph: GraphName, score: float) -> Evidence:
    return Evidence(
        fact.id,
        _fact_text(fact),
        graph,
        "fact",
        score,
        at=fact.valid_from,
        subject=fact.subject,
        predicate=fact.predicate,
        object=fact.object,
        valid_to=fact.valid_to,
        memories=tuple(fact.memories),
    )


def memory_evidence(hit: MemoryHit, graph: GraphName) -> Evidence:
    return Evidence(hit.id, hit.text, graph, "memory", hit.score, at=hit.at, memories=(hit.id,))


def _window(plan: ClassifierOutput) -> Interval:
    """The span the plan asks about; a relative time that names no date asks about all time."""
    tf = plan.timeframe
    if tf is None or tf.type == "relative":
        return Interval()
    start = parse_instant(tf.value)
    return Interval(start, parse_instant(tf.end) if tf.end else None)


@dataclass
class ProjectGraphs:
    """The readers recall's executor queries, and the name lookups its classifier uses.

    Every reader also returns the stored memories that best answer the
    query (one search per recall, shared by the readers), so the evidence always holds what
    was said, not only what was extracted from it."""

    graphs: MemoryGraphs
    project: str
    _searches: dict[tuple[str, tuple[str, ...], int], asyncio.Future[list[MemoryHit]]] = field(
        default_factory=dict, init=False, repr=False
    )
    # Reads started ahead of the readers (`prepare`): the search's hits for a query, and the
    # causal chain from a text, each read once however many readers ask.
    _found: dict[tuple[str, int], asyncio.Future[list[Hit]]] = field(default_factory=dict, init=False, repr=False)
    _chains: dict[tuple[str, str], asyncio.Future[Chain | None]] = field(default_factory=dict, init=False, repr=False)

    def readers(self) -> dict[GraphName, GraphQuery]:
        return {"semantic": self.semantic, "temporal": self.temporal, "causal": self.causal, "entity": self.entity}

    async def resolve(self, mention: str) -> str | None:
        """The entity a question's mention means: the one of that name; else the one remember
        would have merged the name into ("Lena" for "Lena Fischer", the only known Lena:
        `polyg.core.memory.aliases`, the writer's rule); else what the resolver finds by
        likeness (fuzzy text, meaning)."""
        ref, known = await asyncio.gather(
            self.graphs.resolver.node(self.project, mention, kinds=("entity",)),
            self.graphs.temporal.entity_candidates(self.project, mention),
        )
        if ref is not None and ref.how in BY_NAME:
            return ref.id
        meant = KnownNames.of(known).meant(mention)
        if meant != mention and meant in known:
            return known[meant]
        return ref.id if ref is not None else None

    async def known_names(self, query: str) -> Sequence[str]:
        return list(await self.graphs.temporal.mentioned_entities(self.project, query))

    # --- reads started ahead (RecallService's readahead) -------------------------------------

    def anticipate(self, semantic_query: str) -> None:
        """Start embedding the query: the search and the causal resolver embed it."""
        self.graphs.temporal.ctx.prefetch_query(semantic_query)

    def prepare(self, plan: ClassifierOutput, limit: int) -> None:
        """Start what the readers will read that does not depend on the resolved names: the
        search for memories, and the causal chain from the query itself."""
        query = _query(plan)
        if query.strip() and any(graph in plan.intents for graph in SEARCHING_READERS):
            self._hits(query, limit)
        if "causal" in plan.intents and (plan.semantic_query or "").strip():
            self._walked(plan.semantic_query or "", plan)

    def release(self) -> None:
        """Stop what was started and not used (a reader timed out, or never asked)."""
        under_way: list[asyncio.Future[Any]] = [*self._found.values(), *self._chains.values(), *self._searches.values()]
        for future in under_way:
            future.cancel()

    def _hits(self, query: str, limit: int) -> asyncio.Future[list[Hit]]:
        key = (query, limit)
        if key not in self._found:
            self._found[key] = started(MemorySearch(self.graphs, self.project).find(query, limit))
        return self._found[key]

    def _walked(self, text: str, plan: ClassifierOutput) -> asyncio.Future[Chain | None]:
        key = (text, plan.causal_direction or "upstream")
        if key not in self._chains:
            self._chains[key] = started(self._chain(text, plan))
        return self._chains[key]

    # --- the readers ------------------------------------------------------------------------

    async def memories(self, plan: ClassifierOutput, limit: int) -> list[MemoryHit]:
        """The memories for the plan's query, searched once however many readers ask."""
        query = _query(plan)
        focus = tuple(m.mention for m in plan.entities if m.resolved)
        key = (query, focus, limit)
        if key not in self._searches:
            window = _window(plan)
            asked = window if window.start is not None or window.end is not None else None
            # Shielded: one reader's time limit must not cancel what another reader awaits.
            found = asyncio.shield(self._hits(query, limit)) if query.strip() else None
            search = MemorySearch(self.graphs, self.project).search(
                query, limit=limit, focus=focus, window=asked, found=found
            )
            self._searches[key] = asyncio.ensure_future(search)
        # Shielded: a reader that times out must not cancel the search another reader awaits.
        return await asyncio.shield(self._searches[key])

    async def semantic(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        text = _query(plan)
        if not text.strip():
            return []
        hits, memories = await asyncio.gather(
            self.graphs.semantic.search(self.project, text, limit=limit, threshold=SEMANTIC_THRESHOLD, events=False),
            self.memories(plan, limit),
        )
        found = [
            Evidence(
                h.id,
                h.text,
                "semantic",
                "concept" if h.kind == "concept" else "entity",
                h.score,
                neighbours=tuple(name for name, _ in h.similar),
            )
            for h in hits
        ]
        return _best([*found, *(memory_evidence(m, "semantic") for m in memories)], limit)

    async def temporal(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        # The entity the mention resolved to ("Lena" to Lena Fischer), not one named as it.
        entity = next((m.resolved for m in plan.entities if m.resolved), None)
        timeline = await self.graphs.temporal.timeline(self.project, _window(plan), entity_id=entity, limit=limit)
        out: list[Evidence] = []
        query, names = _query(plan), [m.mention for m in plan.entities]
        for item in timeline.items:
            # A memory's own event is dated when it was said, not when what it tells happened.
            if item.event is not None and item.event.origin != MEMORY_ORIGIN:
                event = item.event
                score = _on_topic(query, event.description, names)
                out.append(
                    Evidence(
                        event.id,
                        event.description,
                        "temporal",
                        "event",
                        score,
                        at=item.at,
                        memories=tuple(event.memories),
                    )
                )
            elif item.fact is not None:
                out.append(fact_evidence(item.fact, "temporal", _on_topic(query, _fact_text(item.fact), names)))
        memories = await self.memories(plan, limit)
        return _best([*out, *(memory_evidence(m, "temporal") for m in memories)], limit)

    async def causal(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        starts = [plan.semantic_query or "", *(m.resolved or "" for m in plan.entities)]
        texts = [t for t in dict.fromkeys(starts) if t.strip()][:MAX_CHAIN_STARTS]
        # The memories too: a cause told in a memory the links do not reach (a chain told over
        # several memories whose events were not merged) still answers the why.
        told = asyncio.ensure_future(self.memories(plan, limit)) if _query(plan).strip() else None
        walked = await asyncio.gather(*(asyncio.shield(self._walked(text, plan)) for text in texts))
        out: dict[str, Evidence] = {}
        _add_links(out, [chain for chain in walked if chain is not None and chain.links])
        # A cause stored as another node than the one the walk ended at (told in another
        # memory): walk once more from the root's words, so the why reaches its first cause.
        upstream = (plan.causal_direction or "upstream") == "upstream"
        root = _root(out) if upstream else None
        if root is not None and root not in texts:
            more = await asyncio.shield(self._walked(root, plan))
            if more is not None and more.links:
                _add_links(out, [more], deeper=max(e.depth for e in out.values()))
        links = sorted(out.values(), key=lambda e: (-e.score, e.depth))[:limit]
        memories = await told if told is not None else []
        said = [memory_evidence(m, "causal") for m in memories]
        # The root of the chain the links or the memories tell: the memories that say what
        # caused it come last (half their score), for the synthesiser to walk the chain on.
        if upstream:
            path = memory_chain(_query(plan), said)
            root = _root(out) or (cause_part(path[-1].text).strip(" .") if path else None)
        if upstream and root:
            behind = await MemorySearch(self.graphs, self.project).search(root, limit=ROOT_MEMORIES)
            seen = {m.id for m in memories}
            said += [replace(memory_evidence(m, "causal"), score=m.score * 0.5) for m in behind if m.id not in seen]
        return [*links, *said]

    async def _chain(self, text: str, plan: ClassifierOutput) -> Chain | None:
        try:
            return await self.graphs.causal.chain(
                self.project, text, direction=plan.causal_direction or "upstream", depth=CHAIN_DEPTH
            )
        except NotFound:
            return None

    async def _entity_facts(self, entity_id: str, limit: int) -> tuple[EntityView, list[Fact], list[Fact]]:
        """The entity, the facts that hold about it now, and those that hold with it as their
        object (who leads it, who works on it), read at once."""
        view, (facts, _), inverse = await asyncio.gather(
            self.graphs.entities.get(self.project, entity_id=entity_id, relationships=False),
            self.graphs.temporal.facts(self.project, entity_id, limit=limit),
            self.graphs.temporal.facts_about(self.project, entity_id, limit=limit),
        )
        return view, facts, inverse

    async def entity(self, plan: ClassifierOutput, limit: int) -> list[Evidence]:
        out: list[Evidence] = []
        resolved = [m.resolved for m in plan.entities if m.resolved is not None]
        found = await asyncio.gather(*(self._entity_facts(i, limit) for i in resolved), return_exceptions=True)
        for read in found:
            if isinstance(read, NotFound):  # gone since the mention was resolved
                continue
            if isinstance(read, BaseException):
                raise read
            view, facts, inverse = read
            out.append(
                Evidence(
                    view.entity.id,
                    view.entity.name or "",
                    "entity",
                    "entity",
                    1.0,
                    neighbours=tuple(f.object for f in facts),
                )
            )
            query, names = _query(plan), [m.mention for m in plan.entities]
            out += [fact_evidence(f, "entity", 0.9 * _on_topic(query, _fact_text(f), names)) for f in facts]
            out += [fact_evidence(f, "entity", 0.8 * _on_topic(query, _fact_text(f), names)) for f in inverse]
        if not out:
            return []
        memories = await self.memories(plan, limit)
        return _best([*out, *(memory_evidence(m, "entity") for m in memories)], limit)


def _add_links(out: dict[str, Evidence], chains: list[Chain], deeper: int = 0) -> None:
    """The chains' links as evidence (each once); `deeper`: hops already walked to their start."""
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
                link.confidence * (far.confidence if far.distance > 1 else 1.0) * (0.9 if deeper else 1.0),
                at=cause.node.occurred_at or effect.node.occurred_at,
                cause=cause.node.text,
                effect=effect.node.text,
                depth=far.distance + deeper,
                memories=link.memories,
            )


def _root(links: dict[str, Evidence]) -> str | None:
    """The text of the strongest link's first cause: a cause that is no link's effect here."""
    effects = {(e.effect or "").lower() for e in links.values()}
    roots = [e for e in links.values() if (e.cause or "").lower() not in effects]
    best = max(roots, key=lambda e: (e.score, -e.depth), default=None)
    return best.cause if best is not None and best.cause else None


# The readers that search the memories for the plan's query (`ProjectGraphs.memories`).
SEARCHING_READERS: tuple[GraphName, ...] = ("semantic", "temporal", "entity", "causal")


def _query(plan: ClassifierOutput) -> str:
    return plan.semantic_query or " ".join(m.mention for m in plan.entities)


def _fact_text(fact: Fact) -> str:
    return f"{fact.subject} {fact.predicate.replace('_', ' ')} {fact.object}"


# The least an on-graph item (a timeline event, a fact) scores when it shares no word with the
# query: it is still evidence of the asked-about entity or time, but below any memory that
# answers the question.
OFF_TOPIC = 0.1


def _on_topic(query: str, text: str, names: Sequence[str]) -> float:
    return max(OFF_TOPIC, relevance(query, text, names))


def _best(items: list[Evidence], limit: int) -> list[Evidence]:
    return sorted(items, key=lambda e: -e.score)[:limit]
