"""Memories (remember's `:Event`s of origin `memory`): whether one's extraction is all written
yet, the turns remembered around one, and the memories close to one in meaning.

A memory with facts or causal links to follow is written with `unfinished: true` (in the same
write as the memory itself); the write of its last fact or causal link also clears the mark
(`settling`), so finishing costs no round trip of its own. A mark that stays tells a failed
remember from a finished one: remembering the same memory again writes what is missing.

The mark is a property of the memory, not a node or relationship of its own: clearing it is
then one indexed lookup and one SET in a write that happens anyway. Any update of a node that
has its vector re-indexes the node, so a memory whose vector the vectorizer stored before its
last item (causal links, written after their ends are resolved) pays that in its last write.
"""

from __future__ import annotations

from typing import Literal

from polyg.store.falkor import Row
from polyg.store.names import EVENT
from polyg.store.queries import Runner
from polyg.store.queries.vectors import GROWTH, MOST_ASKED

MEMORY_ORIGIN = "memory"
MemoryState = Literal["whole", "unfinished"]


def settling(settles: str | None, *, even_unmatched: bool = False) -> str:
    """What a write appends (after its own clauses, before any RETURN) to also clear the mark
    of the memory `$settles`: nothing when it settles none. The mark is cleared only when the
    write's own match found its rows (an end deleted meanwhile leaves the item unwritten, so
    the memory stays unfinished), or, with `even_unmatched`, in any case (a citation that
    matches nothing because the memory cites the item already has nothing left to write)."""
    if settles is None:
        return ""
    written = "" if even_unmatched else " WHERE written > 0"
    return f" WITH count(*) AS written{written} MATCH (settled:Event {{id: $settles}}) SET settled.unfinished = NULL"


async def memory_state(run: Runner, project: str, event_id: str) -> MemoryState | None:
    """Whether the event with this id is a memory written whole or unfinished; None when it
    is no memory (or no event)."""
    rows = await run.read(
        project,
        "MATCH (m:Event {id: $id}) WHERE m.origin = $origin RETURN coalesce(m.unfinished, false)",
        {"id": event_id, "origin": MEMORY_ORIGIN},
    )
    if not rows:
        return None
    return "unfinished" if rows[0][0] else "whole"


async def settle(run: Runner, project: str, memory_id: str) -> None:
    """Clear a memory's mark by a write of its own (its last item needed no write)."""
    await run.write(project, "MATCH (m:Event {id: $settles}) SET m.unfinished = NULL", {"settles": memory_id})


async def count_unfinished(run: Runner, project: str) -> int:
    """How many memories have facts or causal links not written yet (one scan of the events:
    for a status report, not a hot path)."""
    rows = await run.read(
        project,
        "MATCH (m:Event) WHERE m.unfinished = true AND m.origin = $origin RETURN count(m)",
        {"origin": MEMORY_ORIGIN},
    )
    return int(rows[0][0]) if rows else 0


async def memories_around(run: Runner, project: str, ids: list[str], window_us: int, reach: int) -> list[Row]:
    """(id, its context, the `reach` memories remembered just before it, the `reach` just after
    it, each side nearest first as [id, context] pairs) for each memory id: among the memories
    (origin `memory`) whose time is within `window_us` of its own, in (time, creation) order:
    the turns around it in the same conversation, and who said them."""
    return await run.read(
        project,
        "UNWIND $ids AS i MATCH (m:Event {id: i}) WHERE m.occurred_us IS NOT NULL "
        # The bounds as plain values: a range on another node's property is not read through
        # the occurred_us index (every event would be scanned once per memory).
        "WITH m, m.occurred_us - $w AS lo, m.occurred_us + $w AS hi "
        "MATCH (o:Event) WHERE o.occurred_us >= lo AND o.occurred_us <= hi "
        "AND o.origin = 'memory' AND o.id <> m.id "
        "WITH m, o ORDER BY o.occurred_us DESC, o.created_at DESC, o.id DESC "
        "WITH m, collect(o) AS around "
        "WITH m, [x IN around WHERE x.occurred_us < m.occurred_us OR (x.occurred_us = m.occurred_us AND "
        "x.created_at < m.created_at) | [x.id, x.context]] AS before, [x IN around WHERE "
        "x.occurred_us > m.occurred_us OR (x.occurred_us = m.occurred_us AND x.created_at > m.created_at) "
        "| [x.id, x.context]] AS after "
        "RETURN m.id, m.context, before[0..$reach], reverse(after)[0..$reach]",
        {"ids": ids, "w": window_us, "reach": reach},
    )


async def similar_memories(
    run: Runner, project: str, ids: list[str], k: int, *, same_context: bool = False
) -> list[Row]:
    """(id, a memory close to it in meaning, their cosine similarity) for each memory id: the
    `k` nearest memories by its stored vector (through the events' vector index), best first,
    itself and other events left out; with `same_context`, only memories of its own context
    (said by the same speaker). A memory without a vector yet has none."""
    # The index is cosine: `score` is the distance 1 - cos. Events extracted from a memory
    # repeat its words, and stale index entries take places (`vectors.nearest`), so more than k
    # are asked for to keep k memories, and more again for a memory that kept fewer.
    ask = (6 if same_context else 3) * k + 1
    pending = ids
    out: list[Row] = []
    total: int | None = None
    while pending:
        rows = await run.read(
            project,
            "UNWIND $ids AS i MATCH (m:Event {id: i}) WHERE m.embedding IS NOT NULL "
            "CALL db.idx.vector.queryNodes('Event', 'embedding', $k, m.embedding) YIELD node, score "
            "WITH m, node, score WHERE node.origin = 'memory' AND node.id <> m.id "
            "AND (NOT $same OR node.context = m.context) "
            "RETURN m.id, node.id, 1.0 - score ORDER BY m.id, score",
            {"ids": pending, "k": ask, "same": same_context},
        )
        kept: dict[str, int] = {}
        for row in rows:
            if kept.get(row[0], 0) < k:
                kept[row[0]] = kept.get(row[0], 0) + 1
                out.append(row)
        # A memory that kept fewer than k may have lost places to stale entries: ask again.
        short = [i for i in pending if kept.get(i, 0) < k]
        if not short or ask >= MOST_ASKED * k:
            break
        if total is None:
            found = await run.read(project, f"MATCH (n:{EVENT}) RETURN count(n)")
            total = int(found[0][0]) if found else 0
        if ask >= total:
            break
        out = [row for row in out if row[0] not in short]
        pending, ask = short, ask * GROWTH
    out.sort(key=lambda row: (row[0], -float(row[2])))
    return out
