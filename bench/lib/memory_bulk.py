"""Bulk writes of the temporal and causal views: many events, facts and causal links at once.

`add_event`, `add_fact` and `add_causal_link` write one item per call, each after its own
lookups (names, neighbours in time, existing facts), which caps a large load at a few dozen
items a second. This writes the same data model in batched writes through the project import
(`polyg.core.transfer.graph_import`): events with their times, `INVOLVES` links and their place in the
`T_BEFORE` chain (the project's dated events and the new ones, in (time, id) order), facts as
relationships with validity windows, `CAUSES` links with confidence and evidence. Vectors are
the vectorizer's, as after the tools.

What the tools decide per call is decided here for the whole batch, or refused:
- entity names are resolved as the tools resolve them (exact, then case-insensitively); an
  unknown name is an error (create the entities first: `create_entities`, `polyg import`);
- a fact that holds already (the same subject, predicate and object over a window that covers
  the new one) is not written again, as `add_fact` reports a duplicate;
- a fact of a single-valued predicate whose window overlaps one with another object (in the
  batch or stored) would close that one's window: such a batch is refused, naming the fact
  (write it with `add_fact`, which records the invalidation);
- a causal link's cause and effect are events of the batch (by their key) or entities (by
  name), never resolved by fuzzy or vector matching.
Everything is checked before the first write.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from polyg.core import limits
from polyg.core.graph.edges import new_edge_id
from polyg.core.memory.causal import check_confidence
from polyg.core.memory.named import stored_type
from polyg.core.memory.temporal import SINGLE_VALUED, TemporalGraph, predicate_key, stored_instant
from polyg.core.text.time import Interval, epoch_us, to_utc
from polyg.core.transfer.graph_import import Edge, Graph, GraphImport, Node
from polyg.errors import InvalidParams
from polyg.names import new_id, now_iso
from polyg.store.names import CAUSES, ENTITY, EVENT, INVOLVES, T_BEFORE, Label, RelType
from polyg.store.queries import temporal as q

Progress = Callable[[int], None]
EVENT_ORIGIN = "event"  # as add_event marks the events it writes


@dataclass(frozen=True)
class BulkEvent:
    key: str  # the caller's handle for it (causal links name it); its id is made here
    description: str
    occurred_at: datetime
    entities: tuple[str, ...] = ()
    ended_at: datetime | None = None


@dataclass(frozen=True)
class BulkFact:
    subject: str
    predicate: str
    object: str
    valid_from: datetime
    valid_to: datetime | None = None
    description: str = ""


@dataclass(frozen=True)
class BulkLink:
    cause: str  # an event's key in the batch, else an entity's name
    effect: str
    confidence: float = 1.0
    evidence: str = ""


@dataclass
class BulkReport:
    event_ids: dict[str, str] = field(default_factory=dict)  # key -> id
    facts_added: int = 0
    facts_duplicate: int = 0
    causal_links_added: int = 0
    written: int = 0  # nodes and relationships created


@dataclass(frozen=True)
class _Fact:
    item: BulkFact
    rel_type: RelType
    sid: str
    oid: str
    window: Interval


class MemoryBulk:
    def __init__(self, temporal: TemporalGraph) -> None:
        self.temporal = temporal
        self.ctx = temporal.ctx
        self.importer = GraphImport(self.ctx, temporal)

    async def load(
        self,
        project: str,
        events: Sequence[BulkEvent] = (),
        facts: Sequence[BulkFact] = (),
        links: Sequence[BulkLink] = (),
        *,
        progress: Progress | None = None,
    ) -> BulkReport:
        keys = {e.key for e in events}
        if len(keys) != len(events):
            raise InvalidParams("two events of the batch have the same key.")
        for e in events:
            limits.text(e.description, "description", max_len=limits.MAX_TEXT)
            Interval(e.occurred_at, e.ended_at)  # refuses an end before the start
        for link in links:
            limits.text(link.evidence, "evidence", max_len=limits.MAX_TEXT, allow_empty=True)
            check_confidence(link.confidence)
        names = [n for e in events for n in e.entities]
        names += [n for f in facts for n in (f.subject, f.object)]
        names += [end for link in links for end in (link.cause, link.effect) if end not in keys]
        ids = await self._entity_ids(project, names)
        checked = [self._fact(f, ids) for f in facts]
        written, duplicate = await self._new_facts(project, checked)
        link_ends = [tuple(end if end in keys else ids[end] for end in (link.cause, link.effect)) for link in links]
        for link, (cause_end, effect_end) in zip(links, link_ends, strict=True):
            if cause_end == effect_end:
                raise InvalidParams(f"cause and effect are the same node ({link.cause!r}); a link needs two.")
        # Everything is checked: now the graph the tools would have written.
        now = now_iso()
        report = BulkReport(event_ids={e.key: new_id("evt") for e in events})
        graph = Graph()
        for e in events:
            graph.nodes.append(_event_node(report.event_ids[e.key], e, now))
            for entity_id in sorted({ids[n] for n in e.entities}):
                graph.edges.append(Edge(INVOLVES, (EVENT, report.event_ids[e.key]), (ENTITY, entity_id), {}))
        chain, stale = await self._chain(project, events, report.event_ids)
        graph.edges += [Edge(T_BEFORE, (EVENT, a), (EVENT, b), {}) for a, b in chain]
        graph.edges += [_fact_edge(f, now) for f in written]
        for link in links:
            cause, effect = (
                (EVENT, report.event_ids[end]) if end in keys else (ENTITY, ids[end])
                for end in (link.cause, link.effect)
            )
            props = {"id": new_id("cau"), "confidence": float(link.confidence), "evidence": link.evidence}
            graph.edges.append(Edge(CAUSES, cause, effect, {**props, "created_at": now}))
        restored = await self.importer.restore(project, graph, progress=progress)
        # Only once the import took the batch (it can still refuse it): the stored links that
        # now have a new event between them.
        if stale:
            await q.unlink_chain(self.ctx, project, [{"a": a, "b": b} for a, b in stale])
        report.facts_added, report.facts_duplicate = len(written), duplicate
        report.causal_links_added = len(links)
        report.written = restored.nodes_created + restored.edges_created
        return report

    async def _entity_ids(self, project: str, names: list[str]) -> dict[str, str]:
        """Each name as given -> its entity's id (looked up as `limits.name` writes it)."""
        clean = {n: limits.name(n, "entity") for n in names}
        wanted = list(dict.fromkeys(clean.values()))
        ids: dict[str, str] = {}
        for start in range(0, len(wanted), limits.MAX_BATCH):
            ids.update(await self.temporal.resolver.entity_ids(project, wanted[start : start + limits.MAX_BATCH]))
        missing = [n for n in wanted if n not in ids]
        if missing:
            raise InvalidParams(
                f"{len(missing)} entity names are not in project {project!r} (first {missing[0]!r}): "
                "create the entities first."
            )
        return {n: ids[c] for n, c in clean.items()}

    @staticmethod
    def _fact(f: BulkFact, ids: dict[str, str]) -> _Fact:
        limits.text(f.predicate, "predicate", max_len=limits.MAX_TYPE)
        limits.text(f.description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        return _Fact(
            f, RelType(stored_type(f.predicate)), ids[f.subject], ids[f.object], Interval(f.valid_from, f.valid_to)
        )

    async def _new_facts(self, project: str, facts: list[_Fact]) -> tuple[list[_Fact], int]:
        """The facts to write (those already held left out) and how many were left out;
        InvalidParams for one that would close another's window."""
        by_key: dict[tuple[str, RelType], list[_Fact]] = defaultdict(list)
        for f in facts:
            by_key[(f.sid, f.rel_type)].append(f)
        stored = await self._stored_facts(project, list(by_key))
        written: list[_Fact] = []
        duplicate = 0
        for key, group in by_key.items():
            held = list(stored.get(key, []))  # (predicate, object id, window)
            for f in group:
                if any(p == f.item.predicate and o == f.oid and w.covers(f.window) for p, o, w in held):
                    duplicate += 1
                    continue
                if predicate_key(f.item.predicate) in SINGLE_VALUED:
                    clash = [p for p, o, w in held if o != f.oid and w.overlaps(f.window)]
                    if clash:
                        raise InvalidParams(
                            f"the fact {f.item.subject!r} {f.item.predicate} {f.item.object!r} would close the "
                            "window of another value of that single-valued predicate: write it with add_fact."
                        )
                held.append((f.item.predicate, f.oid, f.window))
                written.append(f)
        return written, duplicate

    async def _stored_facts(
        self, project: str, keys: list[tuple[str, RelType]]
    ) -> dict[tuple[str, RelType], list[tuple[str, str, Interval]]]:
        out: dict[tuple[str, RelType], list[tuple[str, str, Interval]]] = defaultdict(list)
        by_type: dict[RelType, list[str]] = defaultdict(list)
        for sid, rel_type in keys:
            by_type[rel_type].append(sid)
        for rel_type, subjects in by_type.items():
            for start in range(0, len(subjects), limits.MAX_BATCH):
                rows = await q.facts_of_subjects(
                    self.ctx, project, rel_type, subjects[start : start + limits.MAX_BATCH]
                )
                for sid, predicate, oid, valid_from, valid_to in rows:
                    window = Interval(stored_instant(valid_from), stored_instant(valid_to) if valid_to else None)
                    out[(sid, rel_type)].append((predicate, oid, window))
        return out

    async def _chain(
        self, project: str, events: Sequence[BulkEvent], event_ids: dict[str, str]
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """The T_BEFORE links to make (pairs of ids next to each other in (time, id) order with
        a new event in them) and the stored ones to remove (two stored events that now have a
        new one between them)."""
        if not events:
            return [], []
        stored = [(int(us), str(i)) for i, us in await q.dated_events(self.ctx, project)]
        new = {event_ids[e.key] for e in events}
        order = sorted(stored + [(epoch_us(to_utc(e.occurred_at)), event_ids[e.key]) for e in events])
        pairs = [(a[1], b[1]) for a, b in itertools.pairwise(order)]
        made = [(a, b) for a, b in pairs if a in new or b in new]
        kept = set(pairs)
        stored.sort()
        stale = [(a[1], b[1]) for a, b in itertools.pairwise(stored) if (a[1], b[1]) not in kept]
        return made, stale


def _event_node(event_id: str, e: BulkEvent, now: str) -> Node:
    window = Interval(e.occurred_at, e.ended_at)
    start, end = window.as_strings()
    props: dict[str, object] = {
        "id": event_id,
        "description": e.description,
        "created_at": now,
        "origin": EVENT_ORIGIN,
        "occurred_at": start,
        "occurred_us": epoch_us(to_utc(e.occurred_at)),
    }
    if end is not None and window.duration is not None:
        props["ended_at"] = end
        props["duration_s"] = window.duration.total_seconds()
    return Node((Label(EVENT),), Label(EVENT), event_id, props, {})


def _fact_edge(f: _Fact, now: str) -> Edge:
    start, end = f.window.as_strings()
    props: dict[str, object] = {
        "id": new_edge_id(f.rel_type),
        "valid_from": start,
        "valid_from_us": epoch_us(to_utc(f.item.valid_from)),
        "created_at": now,
        "description": f.item.description,
    }
    if end is not None:
        props["valid_to"] = end
    if f.item.predicate != f.rel_type:
        props["label"] = f.item.predicate
    return Edge(f.rel_type, (ENTITY, f.sid), (ENTITY, f.oid), props)
