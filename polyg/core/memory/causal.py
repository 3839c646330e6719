"""The causal view: `CAUSES` links with a confidence and evidence between events and/or entities,
chains walked upstream (causes) or downstream (effects), and explanations.

A cause or an effect is given as text and resolved by `polyg.core.search.resolve` (id, exact, case,
fuzzy, vector; then, for readers and the `add_causal_link` tool, a natural phrasing found by
search); text that matches nothing becomes a new undated event (`origin: causal`),
linked to the entities its text names, so that "missing AUTH_SECRET" is about AUTH_SECRET.

Chains are walked breadth first, one query per hop, never visiting a node twice: cycles end
the walk and are reported. A node's confidence is the product of the link confidences along
the shortest chain that reaches it (the strongest one when several are as short).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Literal

from polyg.core import limits
from polyg.core.ahead import started
from polyg.core.graph.context import GraphContext
from polyg.core.memory.event_chain import NewEvent
from polyg.core.memory.temporal import TemporalGraph
from polyg.core.search.resolve import NodeRef, Resolver
from polyg.errors import InvalidParams, NotFound
from polyg.names import new_id, now_iso
from polyg.store.falkor import Row
from polyg.store.queries import causal as q
from polyg.store.queries import memories as memories_q

Direction = Literal["upstream", "downstream", "both"]
LABEL = {"entity": "Entity", "event": "Event"}
MAX_DEPTH = 10
MAX_NODES = 1_000


@dataclass(frozen=True)
class CausalNode:
    id: str
    kind: str  # "event" | "entity"
    text: str
    occurred_at: str | None = None
    type: str | None = None


@dataclass(frozen=True)
class CausalLink:
    id: str
    cause_id: str
    effect_id: str
    confidence: float
    evidence: str
    created_at: str | None = None
    memories: tuple[str, ...] = ()  # the memories (remember) that stated it


@dataclass(frozen=True)
class LinkResult:
    link: CausalLink
    cause: CausalNode
    effect: CausalNode
    resolved: dict[str, str]  # "cause"/"effect" -> how it was found (exact, fuzzy, ..., created)
    scores: dict[str, float] = field(default_factory=dict)  # "cause"/"effect" -> the match's score
    updated: bool = False
    # The memory stated this link already (its remember failed after writing it): nothing written.
    restated: bool = False


@dataclass(frozen=True)
class ChainNode:
    node: CausalNode
    distance: int
    confidence: float
    direction: str  # "upstream" | "downstream" | "start"
    via: str | None = None  # the neighbour one step closer to the start


@dataclass
class Chain:
    start: CausalNode
    nodes: list[ChainNode] = field(default_factory=list)
    links: list[CausalLink] = field(default_factory=list)
    cycles: list[str] = field(default_factory=list)  # ids of links that lead back into the chain
    cut_by_depth: bool = False
    cut_by_limit: bool = False
    match: NodeRef | None = None  # how the start was found from the text asked about


@dataclass(frozen=True)
class Step:
    node: CausalNode
    confidence: float | None  # of the link from this node to the next step (None: the event)
    evidence: str | None


@dataclass(frozen=True)
class Explanation:
    steps: list[Step]  # root cause first, the event last
    confidence: float


def node_from(node_id: str, labels: list[str], text: str | None, at: str | None, type_: str | None) -> CausalNode:
    kind = "event" if "Event" in labels else "entity"
    return CausalNode(node_id, kind, text or "", at, type_ if kind == "entity" else None)


def check_confidence(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidParams(f"confidence must be a number between 0 and 1, not {value!r}.")
    return float(value)


def merged_evidence(known: str, new: str) -> str:
    """A link's evidence when it is stated again: what it had, and the new evidence on a line
    of its own unless it is there already (stating a link again must not erase why it was
    believed). Within the text limit, the oldest lines give way first."""
    if not new.strip() or new in known.splitlines():
        return known
    lines = [*known.splitlines(), new] if known else [new]
    while len(lines) > 1 and len("\n".join(lines)) > limits.MAX_TEXT:
        lines.pop(0)
    return "\n".join(lines)


class CausalGraph:
    def __init__(self, ctx: GraphContext, resolver: Resolver, temporal: TemporalGraph) -> None:
        self.ctx = ctx
        self.resolver = resolver
        self.temporal = temporal

    # --- writes -----------------------------------------------------------------------------

    async def add_link(
        self,
        project: str,
        *,
        cause: str,
        effect: str,
        confidence: float = 1.0,
        evidence: str = "",
        create_missing: bool = True,
        memory: str | None = None,
        settles: str | None = None,
        described: bool = False,
    ) -> LinkResult:
        """A link from cause to effect (each resolved, or made an event); `memory`: the id of
        the memory that stated it (remember), added to those of a link that exists already (a
        link that memory stated already is left as it is: `restated`); `settles`: a memory
        whose `unfinished` mark this call's write clears too (remember's last item);
        `described`: a text nothing else matches may be a natural phrasing of a stored event
        (`Resolver.described`), as a client names one. Remember's own phrases are not: the
        sentence they come from holds the words of its cause and of its effect alike."""
        limits.text(cause, "cause", max_len=limits.MAX_TEXT)
        limits.text(effect, "effect", max_len=limits.MAX_TEXT)
        limits.text(evidence, "evidence", max_len=limits.MAX_TEXT, allow_empty=True)
        conf = check_confidence(confidence)
        texts = {"cause": cause, "effect": effect}
        # The entities a text names, for the event it becomes if nothing matches it: looked up
        # while it is resolved (a name lookup, cheaper than the round trip it saves).
        named = (
            {role: started(self.temporal.mentioned_entities(project, text)) for role, text in texts.items()}
            if create_missing
            else {}
        )
        try:
            # A memory states its cause and effect in its own words, never by id: remember's
            # links skip the lookups by id (two queries an end).
            by_id = memory is None
            cause_ref, effect_ref = await asyncio.gather(
                self._find(project, cause, described, by_id), self._find(project, effect, described, by_id)
            )
        except BaseException:
            for lookup in named.values():
                lookup.cancel()
            raise
        refs = {"cause": cause_ref, "effect": effect_ref}
        missing = [role for role, ref in refs.items() if ref is None]
        for role, lookup in named.items():
            if role not in missing:
                lookup.cancel()
        if missing and not create_missing:
            raise NotFound(f"No event or entity matches the {' and the '.join(missing)}.")
        if cause.strip().lower() == effect.strip().lower() or (
            refs["cause"] is not None and refs["effect"] is not None and refs["cause"].id == refs["effect"].id
        ):
            for lookup in named.values():
                lookup.cancel()
            raise InvalidParams("cause and effect are the same node; a link needs two different ones.")
        # Everything is checked: now the writes (the missing nodes at once).
        made = await self._create_nodes(project, [(texts[role], named[role]) for role in missing], memory)
        refs.update(zip(missing, made, strict=True))
        cref, eref = refs["cause"], refs["effect"]
        assert cref is not None and eref is not None
        ends = (LABEL[cref.kind], cref.id), (LABEL[eref.kind], eref.id)
        now = now_iso()
        # A link to a node just made cannot exist yet: only between two found nodes is it looked up.
        found = await q.existing_link(self.ctx, project, *ends) if not missing else []
        values = {"confidence": conf, "evidence": evidence, "now": now, "memories": [memory] if memory else None}
        memories: tuple[str, ...] = (memory,) if memory else ()
        write: Awaitable[object]
        restated = bool(found) and memory is not None and memory in (found[0][3] or [])
        if restated:
            link_id = found[0][0]
            memories = tuple(found[0][3])
            write = memories_q.settle(self.ctx, project, settles) if settles is not None else _nothing()
        elif found:
            link_id = found[0][0]
            memories = tuple(dict.fromkeys([*(found[0][3] or []), *memories]))
            evidence = values["evidence"] = merged_evidence(found[0][2] or "", evidence)
            write = q.update_link(self.ctx, project, *ends, {"id": link_id, **values}, settles=settles)
        else:
            link_id = new_id("cau")
            write = q.create_link(self.ctx, project, *ends, {"id": link_id, **values}, settles=settles)
        # A node just made is what was written (an undated event with that text): not read back.
        made_nodes = {role: CausalNode(ref.id, "event", texts[role]) for role, ref in zip(missing, made, strict=True)}

        async def end_node(role: str, ref: NodeRef) -> CausalNode:
            return made_nodes[role] if role in made_nodes else await self._node(project, ref)

        # The ends found are read while the link is written: the write does not change them.
        _, cause_node, effect_node = await asyncio.gather(write, end_node("cause", cref), end_node("effect", eref))
        return LinkResult(
            CausalLink(link_id, cref.id, eref.id, conf, evidence, now, memories),
            cause_node,
            effect_node,
            {"cause": cref.how, "effect": eref.how},
            {"cause": cref.score, "effect": eref.score},
            updated=bool(found) and not restated,
            restated=restated,
        )

    async def _find(self, project: str, text: str, described: bool, by_id: bool = True) -> NodeRef | None:
        found = await self.resolver.node(project, text, by_id=by_id)
        if found is None and described:
            found = await self.resolver.described(project, text)
        return found

    async def _create_nodes(
        self, project: str, texts: list[tuple[str, Awaitable[dict[str, str]]]], memory: str | None = None
    ) -> list[NodeRef]:
        """Causes or effects nothing matched: undated events about the entities each names
        (the awaitable: their lookup, under way), made in one write."""
        if not texts:
            return []
        mentioned = await asyncio.gather(*(named for _, named in texts))
        memories = (memory,) if memory else ()
        new = [
            NewEvent(new_id("evt"), text, None, involves=tuple(names.values()), origin="causal", memories=memories)
            for (text, _), names in zip(texts, mentioned, strict=True)
        ]
        await self.temporal.chain.write(project, new)
        return [NodeRef(event.id, "event", "created") for event in new]

    async def _node(self, project: str, ref: NodeRef) -> CausalNode:
        rows = await q.node(self.ctx, project, LABEL[ref.kind], ref.id)
        if not rows:
            raise NotFound(f"Node {ref.id} not found.")
        return node_from(*rows[0])

    # --- reads ------------------------------------------------------------------------------

    async def resolve(self, project: str, text: str) -> tuple[CausalNode, NodeRef]:
        """The node `text` means and how it was found: by id, by its text, else as a natural
        phrasing of it (words and meaning, as search finds them)."""
        limits.text(text, "event", max_len=limits.MAX_TEXT)
        rows = await q.node_by_id(self.ctx, project, text)  # a client that found the event asks by id
        if rows:
            node = node_from(*rows[0])
            return node, NodeRef(node.id, "event" if node.kind == "event" else "entity", "id")
        ref = await self.resolver.node(project, text, by_id=False) or await self.resolver.described(project, text)
        if ref is None:
            raise NotFound(f"No event or entity matches {text[:80]!r}.")
        return await self._node(project, ref), ref

    async def chain(
        self,
        project: str,
        text: str,
        *,
        direction: Direction = "upstream",
        depth: int = 3,
        min_confidence: float = 0.0,
        max_nodes: int = 200,
    ) -> Chain:
        if direction not in ("upstream", "downstream", "both"):
            raise InvalidParams("direction must be 'upstream', 'downstream' or 'both'.")
        if not 1 <= depth <= MAX_DEPTH:
            raise InvalidParams(f"depth must be between 1 and {MAX_DEPTH}.")
        check_confidence(min_confidence)
        if not 1 <= max_nodes <= MAX_NODES:
            raise InvalidParams(f"limit must be between 1 and {MAX_NODES}.")
        start, match = await self.resolve(project, text)
        chain = Chain(start, [ChainNode(start, 0, 1.0, "start")], match=match)
        for way in ("upstream", "downstream") if direction == "both" else (direction,):
            await self._walk(project, chain, way == "upstream", depth, min_confidence, max_nodes)
        return chain

    async def _walk(
        self, project: str, chain: Chain, upstream: bool, depth: int, min_conf: float, max_nodes: int
    ) -> None:
        way = "upstream" if upstream else "downstream"
        start = chain.start
        best: dict[str, ChainNode] = {start.id: chain.nodes[0]}
        seen_links = {link.id for link in chain.links}
        frontier: dict[str, list[str]] = {LABEL[start.kind]: [start.id]}
        further: set[str] = set()  # nodes of the last hop with a link beyond it
        for distance in range(1, depth + 1):
            rows = await q.step(self.ctx, project, frontier, upstream, further=distance == depth)
            reached: dict[str, ChainNode] = {}
            for row in sorted(rows, key=_row_order):
                src, rid, conf, evidence, at, memories, cid, clabels, ctext, ctime, ctype, beyond = row
                if beyond:
                    further.add(cid)
                confidence = float(conf if conf is not None else 1.0)
                if confidence < min_conf or rid in seen_links:
                    continue
                seen_links.add(rid)
                cause_id, effect_id = (cid, src) if upstream else (src, cid)
                chain.links.append(
                    CausalLink(rid, cause_id, effect_id, confidence, evidence or "", at, tuple(memories or ()))
                )
                if cid in best:
                    if _is_ancestor(best, cid, src):
                        chain.cycles.append(rid)
                    continue
                product = best[src].confidence * confidence
                known = reached.get(cid)
                if known is None or product > known.confidence:
                    node = node_from(cid, clabels, ctext, ctime, ctype)
                    reached[cid] = ChainNode(node, distance, product, way, src)
            for node_id, chain_node in reached.items():
                if len(chain.nodes) >= max_nodes:
                    chain.cut_by_limit = True
                    break
                best[node_id] = chain_node
                chain.nodes.append(chain_node)
            frontier = {}
            for node_id in reached:
                if node_id in best:
                    frontier.setdefault(LABEL[best[node_id].node.kind], []).append(node_id)
            if not frontier or chain.cut_by_limit:
                break
        else:
            if any(node_id in further for ids in frontier.values() for node_id in ids):
                chain.cut_by_depth = True

    async def explain(
        self, project: str, text: str, *, depth: int = 5, limit: int = 10
    ) -> tuple[Chain, list[Explanation]]:
        """Chains from each root cause (a cause with no cause of its own, or where the depth ends)
        to the event, strongest first."""
        chain = await self.chain(project, text, direction="upstream", depth=depth)
        by_id = {n.node.id: n for n in chain.nodes}
        has_cause = {link.effect_id for link in chain.links if link.cause_id in by_id and link.id not in chain.cycles}
        links = {(link.cause_id, link.effect_id): link for link in chain.links}
        roots = [n for n in chain.nodes if n.distance > 0 and n.node.id not in has_cause]
        if not roots and chain.cut_by_depth:
            roots = [n for n in chain.nodes if n.distance == max(x.distance for x in chain.nodes)]
        explanations = []
        for root in roots:
            steps: list[Step] = []
            current: ChainNode | None = root
            while current is not None and current.via is not None:
                link = links[(current.node.id, current.via)]
                steps.append(Step(current.node, link.confidence, link.evidence))
                current = by_id.get(current.via)
            steps.append(Step(chain.start, None, None))
            explanations.append(Explanation(steps, root.confidence))
        explanations.sort(key=lambda e: (-e.confidence, len(e.steps), e.steps[0].node.id))
        return chain, explanations[:limit]


def _row_order(row: Row) -> tuple[str, str]:
    return (str(row[5]), str(row[1]))


def _is_ancestor(best: dict[str, ChainNode], candidate: str, node_id: str) -> bool:
    """Whether `candidate` lies on the chain from the start to `node_id` (a link back to it closes a cycle)."""
    current: str | None = node_id
    while current is not None:
        if current == candidate:
            return True
        current = best[current].via if current in best else None
    return False


async def _nothing() -> None:
    return None
