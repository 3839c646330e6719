"""What a project holds, and deleting part of it (the projects service's Cypher).

Counts use the forms FalkorDB answers from its label and relationship-type sizes without
touching a node (`MATCH (n:L) RETURN count(n)`, `MATCH ()-[r:T]->() RETURN count(r)`, and the
unlabelled totals): any other form scans. Labels and types reach the text only as `Label` /
`RelType`; a name in the graph that is not a valid one (written by something other than polyg)
is counted through a parameter instead, by a scan.
"""

from __future__ import annotations

from typing import Any

from polyg.store.names import POLYG_META, Label, RelType, is_name
from polyg.store.queries import Runner


async def _one(runner: Runner, project: str, cypher: str, params: dict[str, Any] | None = None) -> int:
    rows = await runner.read(project, cypher, params)
    return int(rows[0][0]) if rows else 0


async def labels(runner: Runner, project: str) -> list[str]:
    """Every label in the graph's schema (it keeps one after its last node is deleted)."""
    return [row[0] for row in await runner.read(project, "CALL db.labels() YIELD label RETURN label")]


async def rel_types(runner: Runner, project: str) -> list[str]:
    cypher = "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType"
    return [row[0] for row in await runner.read(project, cypher)]


async def totals(runner: Runner, project: str) -> tuple[int, int]:
    """(nodes, edges)."""
    return await _one(runner, project, "MATCH (n) RETURN count(n)"), await _one(
        runner, project, "MATCH ()-[r]->() RETURN count(r)"
    )


async def label_count(runner: Runner, project: str, name: str) -> int:
    if is_name(name):
        return await _one(runner, project, f"MATCH (n:{Label(name)}) RETURN count(n)")
    return await _one(runner, project, "MATCH (n) WHERE $name IN labels(n) RETURN count(n)", {"name": name})


async def rel_type_count(runner: Runner, project: str, name: str) -> int:
    if is_name(name):
        return await _one(runner, project, f"MATCH ()-[r:{RelType(name)}]->() RETURN count(r)")
    return await _one(runner, project, "MATCH ()-[r]->() WHERE type(r) = $name RETURN count(r)", {"name": name})


async def schema_meta(runner: Runner, project: str) -> tuple[int | None, str | None, int | None]:
    """(schema version, embedding model, dimension); Nones before the first write."""
    rows = await runner.read(
        project,
        f"MATCH (m:{POLYG_META} {{key: 'schema'}}) RETURN m.schema_version, m.embedding_model, m.dimension LIMIT 1",
    )
    return (rows[0][0], rows[0][1], rows[0][2]) if rows else (None, None, None)
