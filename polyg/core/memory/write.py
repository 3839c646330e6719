"""remember (spec 003): store a memory, then what it says, each extracted item citing it.

The memory itself is an event of origin `memory` (searchable at once, involving every entity
it names), so nothing is lost when extraction finds nothing. Every event, fact and causal link
extracted from it records the memory's id in its `memories` list, so recall can cite the memory
behind every piece of evidence. The same memory (same text, same context) twice writes nothing.

The memory's event and the events extracted from it are one write (with their links and places
in time: all of it or nothing), after one round trip of reads (the duplicate check, the names,
their places in time); its facts and causal links follow it, one write each.

Nothing is left half-written for good: a memory with facts or causal links to follow is written
`unfinished`, and the write of its last one clears the mark (no round trip of its own). When a
write fails on the way, the memory stays with what was written before it; remembering it again
(same text, same context) finds it unfinished and writes what is missing: facts and links it
stated already are found as its own and not written again, nor reported. Entities made before
a failed write stay too: the retry finds them by name (and does not report them). An extracted
item the graph refuses (a cause that resolves to its own effect) is logged and left out: it
would be refused on every retry.
Told again while its first remember still writes (in this process), a memory waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from polyg.core import limits
from polyg.core.ahead import started
from polyg.core.memory.event_chain import ChainRead, NewEvent
from polyg.core.memory.extract_memory import Extraction, MemoryExtractor
from polyg.core.memory.graphs import MemoryGraphs
from polyg.core.memory.temporal import mentions
from polyg.core.text.time import epoch_us, format_utc
from polyg.errors import InvalidParams
from polyg.names import new_id
from polyg.nlp.pipeline import pipeline
from polyg.store.queries import memories as q

log = logging.getLogger(__name__)

# What `remember` stores the memory itself as: an event of this origin (search finds it).
MEMORY_ORIGIN = q.MEMORY_ORIGIN


@dataclass
class Remembered:
    memory_id: str
    duplicate: bool
    entities_created: list[str] = field(default_factory=list)
    entities_merged: list[str] = field(default_factory=list)
    events_logged: list[str] = field(default_factory=list)
    facts_added: list[str] = field(default_factory=list)
    facts_invalidated: list[str] = field(default_factory=list)
    causal_links_added: list[str] = field(default_factory=list)
    causal_links_updated: list[str] = field(default_factory=list)
    extracted_by: str = "rules"


def _as_name(context: str | None) -> str:
    """The context as an entity name, or "" when it cannot be one (no visible character, a
    control character): the memory is stored all the same."""
    if not context:
        return ""
    try:
        return limits.name(context, "context")
    except InvalidParams:
        return ""


# A memory's limits (see polyg.core.limits).
MAX_CONTEXT = limits.MAX_MEMORY_CONTEXT
MAX_CONTENT = limits.MAX_MEMORY_CONTENT


def check_memory(content: str, context: str | None) -> None:
    """Refuses (4013 or 4002, naming the parameter) a content or context over its limit. A
    content longer than MAX_CONTENT is taken when its context is short enough for both to fit
    (a memory exported by an earlier version comes back)."""
    if context is not None:
        limits.text(context, "context", max_len=MAX_CONTEXT, allow_empty=True)
    room = limits.MAX_TEXT - (len(context) + len(": ") if context else 0)
    limits.text(content, "content", max_len=room)


def memory_text(content: str, context: str | None) -> str:
    """What is stored: the content, after who or where it is from."""
    return f"{context}: {content}" if context else content


class MemoryWriter:
    def __init__(self, graphs: MemoryGraphs, extractor: MemoryExtractor | None = None) -> None:
        self.graphs = graphs
        self.extractor = extractor or MemoryExtractor()
        # Memories whose first remember is still writing in this process: set once it ends.
        self._writing: dict[str, asyncio.Event] = {}

    async def remember(self, project: str, content: str, context: str | None, at: datetime) -> Remembered:
        check_memory(content, context)
        temporal, resolver = self.graphs.temporal, self.graphs.resolver
        text = memory_text(content, context)
        temporal.ctx.prefetch([text])
        source = _as_name(context)
        duplicate = started(resolver.exact(project, text, "event"))
        candidates_ = started(temporal.entity_candidates(project, content))
        # Both sent before the parse (one turn of the loop): the store answers them while the
        # parse runs off the event loop.
        await asyncio.sleep(0)
        await pipeline().parse_async(content)
        existing, candidates = await asyncio.gather(duplicate, candidates_)
        # The graph's names the memory names whole; the extraction sees every candidate (it
        # may mean one by part of its name: "Alice" for the only "Alice Chen").
        mentioned = {name: entity_id for name, entity_id in candidates.items() if mentions(content, name)}
        if existing is not None and (state := await q.memory_state(temporal.ctx, project, existing)) is not None:
            while state == "unfinished" and (writing := self._writing.get(existing)) is not None:
                # Told again while a remember of it still writes what follows it (a client
                # that gave up waiting, or retried twice): not finished twice at once. Looked
                # at again after it.
                await writing.wait()
                state = await q.memory_state(temporal.ctx, project, existing) or "whole"
            if state == "unfinished":
                # No await between the look and `_finish`'s claim: one retry finishes it.
                known = Known(mentioned, {}, None, candidates)
                return await self._finish(project, existing, content, at, known, source)
            return Remembered(memory_id=existing, duplicate=True)
        # One extraction, with the graph's names (read while the parse ran); then the ids of
        # the names it found and the timeline around its times, in one round trip.
        found = await self.extractor.extract(content, at, tuple(candidates), source or None)
        extracted = found.value
        temporal.ctx.prefetch(
            [*(e.description for e in extracted.events), *(t for c in extracted.causes for t in (c.cause, c.effect))]
        )
        names = list(dict.fromkeys([*([source] if source else []), *(e.name for e in extracted.entities)]))
        unknown = [n for n in names if n not in candidates]
        named, chain = await asyncio.gather(
            resolver.entity_ids(project, unknown) if unknown else _no_names(),
            temporal.chain.read(project, [epoch_us(at), *(epoch_us(e.occurred_at) for e in extracted.events)]),
        )
        known = Known(mentioned, named, chain, candidates)
        out = await self._write(project, text, source, at, extracted, known)
        out.extracted_by = found.source
        return out

    async def _finish(
        self, project: str, memory: str, content: str, at: datetime, known: Known, source: str = ""
    ) -> Remembered:
        """An unfinished memory told again: its extraction again, and the facts and causal
        links of it that are not written yet (its events were written with it). `duplicate`
        only when none was missing (another remember finished it meanwhile): the lists say
        what this call added."""
        with self._claimed(memory):
            found = await self.extractor.extract(
                content, at, tuple(known.candidates or known.mentioned), source or None
            )
            out = Remembered(memory_id=memory, duplicate=False, extracted_by=found.source)
            if not (found.value.facts or found.value.causes):  # a model's extraction this time: nothing follows
                await q.settle(self.graphs.temporal.ctx, project, memory)
            await self._facts_and_links(
                project, memory, at, found.value, {**known.candidates, **known.named, **known.mentioned}, out
            )
        added = (out.entities_created, out.facts_added, out.facts_invalidated, out.causal_links_added)
        out.duplicate = not any((*added, out.causal_links_updated))
        return out

    @contextlib.contextmanager
    def _claimed(self, memory: str) -> Iterator[None]:
        """While a remember writes what follows `memory`: another one told the same memory
        waits for it (see `remember`)."""
        writing = self._writing[memory] = asyncio.Event()
        try:
            yield
        finally:
            del self._writing[memory]
            writing.set()

    async def unfinished(self, project: str) -> int:
        """How many memories of the project have facts or causal links not written (their
        remember failed half-way; remembering each again finishes it)."""
        return await q.count_unfinished(self.graphs.temporal.ctx, project)

    async def _write(
        self, project: str, text: str, source: str, at: datetime, found: Extraction, known: Known
    ) -> Remembered:
        temporal = self.graphs.temporal
        # Who or where the memory is from is a thing in the graph too (a speaker, a channel):
        # what it said is found through it.
        names = _names([*([source] if source else []), *(e.name for e in found.entities)])
        # The memory involves every entity it names: those it extracted, and those the graph
        # knew in it.
        involved = _names([*names, *known.mentioned])
        # An extracted event involves those its sentence names, among the memory's (found
        # here, not by another full-text query on the sentence); a name spelled in another
        # case than the memory's is the memory's.
        spelled = {n.lower(): n for n in reversed(involved)}
        in_events = [
            _names(
                [
                    *(spelled.get(n.lower(), n) for n in e.entities),
                    *(n for n in involved if mentions(e.description, n)),
                ]
            )
            for e in found.events
        ]
        every = _names([*involved, *(n for event_names in in_events for n in event_names)])
        ids = {**known.candidates, **known.named, **known.mentioned}
        # A name no lookup has seen yet (the extraction proper found it with the graph's
        # names) is looked up; the unknown ones are made, of the type extraction gave them.
        unseen = [n for n in every if n not in ids]
        if unseen:
            ids.update(await self.graphs.resolver.entity_ids(project, unseen))
        types = {limits.name(e.name): e.type for e in found.entities if e.type}
        ids, created = await temporal.entities.ensure(
            project, every, types, known={n: ids[n] for n in every if n in ids}
        )
        # The memory itself and the events extracted from it, each citing it: one write, with
        # their links and places in time.
        memory = new_id("evt")
        events = [
            NewEvent(
                memory,
                text,
                at,
                involves=tuple(ids[n] for n in involved),
                origin=MEMORY_ORIGIN,
                context=source or None,
                unfinished=bool(found.facts or found.causes),
            ),
            *(
                NewEvent(
                    new_id("evt"),
                    e.description,
                    e.occurred_at,
                    involves=tuple(ids[n] for n in event_names),
                    memories=(memory,),
                )
                for e, event_names in zip(found.events, in_events, strict=True)
            ),
        ]
        # The facts it states read what they may replace while it is written; each is written
        # once it is.
        with self._claimed(memory):
            write = started(temporal.chain.write(project, events, known.chain))
            out = Remembered(memory_id=memory, duplicate=False)
            out.entities_created = [ids[n] for n in created]
            out.entities_merged = [ids[n] for n in names if n not in created]
            out.events_logged = [e.id for e in events[1:]]
            await self._facts_and_links(project, memory, at, found, ids, out, after=write)
        return out

    async def _facts_and_links(
        self,
        project: str,
        memory: str,
        at: datetime,
        found: Extraction,
        ids: dict[str, str],
        out: Remembered,
        *,
        after: asyncio.Future[None] | None = None,
    ) -> None:
        """The memory's facts, then its causal links, each citing it, into `out`; the last
        one's write also clears the memory's `unfinished` mark. `after`: the memory's own
        write, under way (the facts read what they may replace meanwhile)."""
        temporal, when = self.graphs.temporal, format_utc(at)
        last = len(found.facts) + len(found.causes) - 1
        try:
            for i, fact in enumerate(found.facts):
                if fact.ends:
                    # "X left Y", "no longer ...": the fact that held then is closed, none added.
                    closed = await temporal.end_fact(
                        project,
                        subject=fact.subject,
                        predicate=fact.predicate,
                        object_=fact.object,
                        at=fact.valid_to or at,
                        memory=memory,
                        entity_ids=ids,
                        after=after,
                        settles=memory if i == last else None,
                    )
                    out.facts_invalidated += [f.id for f in closed if f.id not in out.facts_invalidated]
                    continue
                try:
                    added = await temporal.add_fact(
                        project,
                        subject=fact.subject,
                        predicate=fact.predicate,
                        object_=fact.object,
                        valid_from=format_utc(fact.valid_from) if fact.valid_from is not None else None,
                        valid_to=format_utc(fact.valid_to) if fact.valid_to is not None else None,
                        reference_time=when,
                        memory=memory,
                        entity_ids=ids,
                        after=after,
                        settles=memory if i == last else None,
                    )
                except InvalidParams as exc:
                    await self._refused(project, memory, f"fact {fact.subject} {fact.predicate}", exc, i == last)
                    continue
                made = {fact.subject: added.fact.subject_id, fact.object: added.fact.object_id}
                out.entities_created += [made[n] for n in added.entities_created if n in made]
                if not added.duplicate:
                    out.facts_added.append(added.fact.id)
                out.facts_invalidated += [f.id for f in added.invalidated]
        finally:
            if after is not None:
                # Never left running unseen: its failure is the remember's.
                await after
        for i, cause in enumerate(found.causes, start=len(found.facts)):
            try:
                link = await self.graphs.causal.add_link(
                    project,
                    cause=cause.cause,
                    effect=cause.effect,
                    confidence=cause.confidence,
                    evidence=cause.evidence,
                    memory=memory,
                    settles=memory if i == last else None,
                )
            except InvalidParams as exc:
                await self._refused(project, memory, "causal link", exc, i == last)
                continue
            if not link.restated:
                (out.causal_links_updated if link.updated else out.causal_links_added).append(link.link.id)

    async def _refused(self, project: str, memory: str, item: str, exc: InvalidParams, last: bool) -> None:
        """An extracted item the graph refuses (a cause that resolves to its own effect): it
        would be refused on every retry, so the memory goes on without it rather than failing,
        or staying unfinished, for good."""
        log.warning("remember: %s of memory %s not written: %s", item, memory, exc)
        if last:
            await q.settle(self.graphs.temporal.ctx, project, memory)


@dataclass(frozen=True)
class Known:
    """What remember read around its extraction: the entities its content mentions and those
    it names (name -> id each), and the timeline around its times."""

    mentioned: dict[str, str]
    named: dict[str, str]
    chain: ChainRead | None  # None: a memory told again, whose events are written
    # The graph's names sharing a word with the memory (those it may mean by part of a name).
    candidates: dict[str, str] = field(default_factory=dict)


def _names(names: Iterable[str]) -> list[str]:
    """Entity names as stored (`limits.name`), each once, in order."""
    return list(dict.fromkeys(limits.name(n, "entity name") for n in names))


async def _no_names() -> dict[str, str]:
    return {}
