"""Cypher for the memory-jsonl export: relations read in pages by id (`polyg.core.transfer`)."""

from __future__ import annotations

from polyg.store.falkor import Row
from polyg.store.queries import Runner


async def relations_after(runner: Runner, project: str, after: str, page: int) -> list[Row]:
    """[id, source id, source name, target id, target name, type, properties] of the first
    `page` relations between entities with an id after `after`, in id order."""
    return await runner.read(
        project,
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.id > $after "
        "RETURN r.id, a.id, a.name, b.id, b.name, type(r), properties(r) ORDER BY r.id LIMIT $page",
        {"after": after, "page": page},
    )
