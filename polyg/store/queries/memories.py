"""Memories (remember's `:Event`s of origin `memory`) whose extraction is not all written yet.

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

from polyg.store.queries import Runner

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
