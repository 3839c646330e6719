"""The extraction log (GraphRAG, spec 004), kept on each entity: `extraction_rev` is the entity's
`rev` (renewed by every change to its text) when its observations were last read for
relationships, so an entity whose `rev` differs has changed since and is due again."""

from __future__ import annotations

from collections.abc import Sequence

from polyg.store.falkor import Row
from polyg.store.queries import Runner

# An entity is due for extraction when its text changed since the last one (an entity written
# without a revision, straight into the store, counts as revision '').
DUE = "e.extraction_rev IS NULL OR e.extraction_rev <> coalesce(e.rev, '')"


async def entities_due(run: Runner, project: str, limit: int | None) -> list[Row]:
    """[id] of entities whose text changed since their last extraction (or never had one)."""
    cap = "" if limit is None else " LIMIT $limit"
    return await run.read(
        project,
        f"MATCH (e:Entity) WHERE {DUE} RETURN e.id ORDER BY e.id{cap}",
        {"limit": limit},
    )


async def count_due(run: Runner, project: str) -> int:
    rows = await run.read(project, f"MATCH (e:Entity) WHERE {DUE} RETURN count(e)")
    return int(rows[0][0]) if rows else 0


async def mark_extracted(run: Runner, project: str, items: Sequence[tuple[str, str | None]], now: str) -> None:
    """Records, per (entity id, rev read), that the entity was extracted at that revision. An
    entity whose text changed meanwhile keeps its newer rev, and so stays due."""
    await run.write(
        project,
        "UNWIND $items AS i MATCH (e:Entity {id: i[0]}) "
        "SET e.extraction_rev = coalesce(i[1], e.rev, ''), e.extracted_at = $now",
        {"items": [list(item) for item in items], "now": now},
    )
