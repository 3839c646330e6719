"""Writing events into the timeline: the events, their INVOLVES links and their places in the
`T_BEFORE` chain (dated events in (time, id) order), in one write.

An event's place is read before the write (its neighbours in time). Within this process the
chain's writes are serialised by a lock, held only for the write itself: a read made before
(`EventChain.read`, alongside a caller's other lookups) is used when no chain write of this
process finished or began since it started; else the neighbours are read again under the lock.
So a remember reads its places with its other lookups, and concurrent writers stay in order.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.text.time import Interval, epoch_us
from polyg.names import now_iso
from polyg.store.names import EVENT
from polyg.store.queries import temporal as q
from polyg.store.queries.temporal import InstantNeighbours, pick_neighbours


@dataclass(frozen=True)
class NewEvent:
    """An event to write: `involves` the ids of its entities; `memories` the ids of the memories
    it was extracted from; `context` a memory's, who or where it is from; `unfinished` a
    memory's whose facts or causal links are still to be written (`polyg.store.queries.memories`)."""

    id: str
    description: str
    at: datetime | None
    end: datetime | None = None
    involves: tuple[str, ...] = ()
    origin: str = "event"
    memories: tuple[str, ...] = ()
    context: str | None = None
    unfinished: bool = False

    @property
    def at_us(self) -> int | None:
        return epoch_us(self.at) if self.at is not None else None


# How long a chain read taken before the write lock may stand in for one taken under it.
FRESH_S = 0.25


@dataclass(frozen=True)
class ChainRead:
    """The chain around some instants (epoch microseconds), and this process's count of chain
    writes when the read began: the read holds while that count has not moved and for at most
    FRESH_S (another process's writes move no count: a read is used only as soon after it as
    one under the lock would be, never after a slow step such as a model's extraction)."""

    writes: int
    around: dict[int, InstantNeighbours]
    taken: float = field(default_factory=time.monotonic)

    def holds(self, writes: int) -> bool:
        return self.writes == writes and time.monotonic() - self.taken <= FRESH_S


def chain_links(
    events: Sequence[tuple[int, str]], around: dict[int, InstantNeighbours]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The T_BEFORE links to make and those to remove to put new dated events ((epoch us, id)
    each) into the chain, given what was read around their instants. New events that fall
    between the same two stored ones are chained to each other in (time, id) order."""
    gaps: dict[tuple[str | None, str | None], list[str]] = {}
    for at_us, event_id in sorted(events):
        gaps.setdefault(pick_neighbours(around[at_us], event_id), []).append(event_id)
    links: list[tuple[str, str]] = []
    unlinks: list[tuple[str, str]] = []
    for (before, after), ids in gaps.items():
        if before is not None and after is not None:
            unlinks.append((before, after))
        if before is not None:
            links.append((before, ids[0]))
        links += itertools.pairwise(ids)
        if after is not None:
            links.append((ids[-1], after))
    return links, unlinks


class EventChain:
    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx
        self._locks: dict[str, asyncio.Lock] = {}
        self._writes: dict[str, int] = {}  # chain writes begun, per project

    async def read(self, project: str, instants: Iterable[int]) -> ChainRead:
        """The chain around each instant (epoch microseconds), all read at once."""
        writes = self._writes.get(project, 0)
        points = list(dict.fromkeys(instants))
        found = await asyncio.gather(*(q.neighbours_at(self.ctx, project, at_us) for at_us in points))
        return ChainRead(writes, dict(zip(points, found, strict=True)))

    async def write(self, project: str, events: Sequence[NewEvent], read: ChainRead | None = None) -> None:
        """The events, their INVOLVES links and their places in the chain, in one write: all
        or nothing. `read`: the chain read earlier around (some of) their instants; what it
        lacks, or all of it once this process wrote to the chain since, is read again first."""
        for event in events:
            limits.text(event.description, "description", max_len=limits.MAX_TEXT)
            Interval(event.at, event.end)  # refuses an end before the start
        dated = [(us, e.id) for e in events if (us := e.at_us) is not None]
        rows = [_row(e) for e in events]
        if not dated:  # no place in the chain to keep
            await q.create_events(self.ctx, project, rows)
            self.ctx.vectors.mark(project, [e.id for e in events], EVENT)
            return
        lock = self._locks.setdefault(project, asyncio.Lock())
        async with lock:
            around = dict(read.around) if read is not None and read.holds(self._writes.get(project, 0)) else {}
            missing = [us for us, _ in dated if us not in around]
            if missing:
                around.update((await self.read(project, missing)).around)
            links, unlinks = chain_links(dated, around)
            # Counted when it begins and when it ends: a read that began before its end,
            # whatever it saw, is stale.
            self._writes[project] = self._writes.get(project, 0) + 1
            try:
                await q.create_events(self.ctx, project, rows, links=links, unlinks=unlinks)
            finally:
                self._writes[project] += 1
        self.ctx.vectors.mark(project, [e.id for e in events], EVENT)


def _row(event: NewEvent) -> dict[str, object]:
    window = Interval(event.at, event.end)
    start_s, end_s = window.as_strings()
    return {
        "id": event.id,
        "description": event.description,
        "occurred_at": start_s,
        "occurred_us": event.at_us,
        "ended_at": end_s,
        "duration_s": window.duration.total_seconds() if window.duration is not None else None,
        "origin": event.origin,
        "now": now_iso(),
        "involves": sorted(set(event.involves)),
        "memories": list(event.memories) or None,
        "context": event.context,
        "unfinished": True if event.unfinished else None,  # no property at all on most events
    }
