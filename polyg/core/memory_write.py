"""remember (spec 003): store a memory, then what it says, each extracted item citing it.

The memory itself is an event of origin `memory` (searchable at once, involving every entity
it names), so nothing is lost when extraction finds nothing. Every event, fact and causal link
extracted from it records the memory's id in its `memories` list, so recall can cite the memory
behind every piece of evidence. The same memory (same text, same context) twice writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from polyg.core import limits
from polyg.core.extract_memory import Extraction, MemoryExtractor, extract
from polyg.core.memory_graphs import MemoryGraphs
from polyg.core.temporal import mentions
from polyg.core.time import format_utc
from polyg.embed.cache import CachingEmbedder
from polyg.errors import InvalidParams

# What `remember` stores the memory itself as: an event of this origin (search finds it).
MEMORY_ORIGIN = "memory"


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


@dataclass(frozen=True)
class Memory:
    """One memory to remember: what `remember` takes."""

    content: str
    context: str | None
    at: datetime


# How many memories `remember_many` makes the vectors of at once, ahead of their writes.
AHEAD = 64


def _as_name(context: str | None) -> str:
    """The context as an entity name, or "" when it cannot be one (no visible character, a
    control character): the memory is stored all the same."""
    if not context:
        return ""
    try:
        return limits.name(context, "context")
    except InvalidParams:
        return ""


def memory_text(content: str, context: str | None) -> str:
    """What is stored: the content, after who or where it is from."""
    return f"{context}: {content}" if context else content


class MemoryWriter:
    def __init__(self, graphs: MemoryGraphs, extractor: MemoryExtractor | None = None) -> None:
        self.graphs = graphs
        self.extractor = extractor or MemoryExtractor()

    async def remember(self, project: str, content: str, context: str | None, at: datetime) -> Remembered:
        text = memory_text(content, context)
        self.graphs.temporal.ctx.prefetch([text])
        # Both read at once: the names it mentions are wasted only on a duplicate (rare).
        existing, mentioned = await asyncio.gather(
            self.graphs.resolver.exact(project, text, "event"),
            self.graphs.temporal.mentioned_entities(project, content),
        )
        if existing is not None and any(
            e.origin == MEMORY_ORIGIN for e in await self.graphs.temporal.events(project, [existing])
        ):
            return Remembered(memory_id=existing, duplicate=True)
        known = tuple(mentioned)
        found = await self.extractor.extract(content, at, known)
        extracted = found.value
        self.graphs.temporal.ctx.prefetch(
            [*(e.description for e in extracted.events), *(t for c in extracted.causes for t in (c.cause, c.effect))]
        )
        out = await self._write(project, text, context, at, found.value, mentioned)
        out.extracted_by = found.source
        return out

    async def remember_many(self, project: str, memories: Sequence[Memory], *, ahead: int = AHEAD) -> list[Remembered]:
        """Each memory as `remember` stores it, in order (each one sees those before it: the
        same content twice is stored once, names resolve to what was written before). The
        vectors of the next `ahead` memories' texts are made while the store answers the
        writes of these, so a large batch (an import, a benchmark's store) waits for the
        model only at its start."""
        # Vectors made ahead are found again only through the embedder's cache.
        caching = isinstance(self.graphs.temporal.ctx.embedder, CachingEmbedder)
        batches = [memories[i : i + ahead] for i in range(0, len(memories), max(1, ahead))]
        out: list[Remembered] = []
        pending: asyncio.Future[None] | None = None
        try:
            for k, batch in enumerate(batches):
                if caching:
                    current = pending or asyncio.ensure_future(self._embed_ahead(batch))
                    with contextlib.suppress(Exception):  # a failing model fails the remember itself
                        await current
                    pending = asyncio.ensure_future(self._embed_ahead(batches[k + 1])) if k + 1 < len(batches) else None
                for m in batch:
                    out.append(await self.remember(project, m.content, m.context, m.at))
        finally:
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending
        return out

    async def _embed_ahead(self, batch: Sequence[Memory]) -> None:
        """The vectors of what the memories will store (their text, and what the rules find
        in it: events, causes and effects), into the embedder's cache; one model call each."""
        texts: list[str] = []
        for m in batch:
            texts.append(memory_text(m.content, m.context))
            found = extract(m.content, m.at)
            texts += [e.description for e in found.events]
            texts += [t for c in found.causes for t in (c.cause, c.effect)]
        await self.graphs.temporal.ctx.embedder.embed_batch([t for t in dict.fromkeys(texts) if t.strip()])

    async def _write(
        self, project: str, text: str, context: str | None, at: datetime, found: Extraction, mentioned: dict[str, str]
    ) -> Remembered:
        temporal, when = self.graphs.temporal, format_utc(at)
        # Who or where the memory is from is a thing in the graph too (a speaker, a channel):
        # what it said is found through it.
        source = _as_name(context)
        names = list(dict.fromkeys([*([source] if source else []), *(e.name for e in found.entities)]))
        involved = list(dict.fromkeys([*names, *mentioned]))
        # The memory itself, involving every entity it names (those it extracted, created when
        # new, and those the graph knew in it, looked up while its place in time is read):
        # recall's search and the entities' events find it, whatever else was extracted.
        stored = await temporal.add_event(
            project,
            description=text,
            occurred_at=when,
            entities=involved,
            find_entities=False,
            entity_ids=mentioned,
            entity_types={e.name: e.type for e in found.entities if e.type},
            origin=MEMORY_ORIGIN,
            context=source or None,
        )
        memory = stored.event.id
        ids = stored.entity_ids
        out = Remembered(memory_id=memory, duplicate=False)
        out.entities_created = [ids[n] for n in stored.entities_created]
        out.entities_merged = [ids[n] for n in names if n not in stored.entities_created]
        # Every entity this memory names, with its id: an extracted event involves those its
        # sentence names (found here, not by another full-text query on the sentence).
        named = {**mentioned, **ids}
        for event in found.events:
            in_sentence = [name for name in named if mentions(event.description, name)]
            logged = await temporal.add_event(
                project,
                description=event.description,
                occurred_at=format_utc(event.occurred_at),
                entities=list(dict.fromkeys([*event.entities, *in_sentence])),
                find_entities=False,
                entity_ids=named,
                memory=memory,
            )
            out.events_logged.append(logged.event.id)
        for fact in found.facts:
            added = await temporal.add_fact(
                project,
                subject=fact.subject,
                predicate=fact.predicate,
                object_=fact.object,
                reference_time=when,
                memory=memory,
                entity_ids=named,
            )
            if not added.duplicate:
                out.facts_added.append(added.fact.id)
            out.facts_invalidated += [f.id for f in added.invalidated]
        for cause in found.causes:
            link = await self.graphs.causal.add_link(
                project,
                cause=cause.cause,
                effect=cause.effect,
                confidence=cause.confidence,
                evidence=cause.evidence,
                memory=memory,
            )
            (out.causal_links_updated if link.updated else out.causal_links_added).append(link.link.id)
        return out
