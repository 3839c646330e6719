"""Cypher for edges: created (one query per type and endpoint labels), read, updated and deleted,
found by id through the per-type range index on `id` (`polyg.store.queries.reltypes` makes it);
every write bumps both endpoints' `updated_at`.

FalkorDB indexes relationships per type, and a pattern naming several types (`[r:A|B]`) or
none uses no index: it scans edges, which at 100k edges is two orders of magnitude slower than
a lookup in one type's index. So an edge id carries its type (`polyg.core.edges`), and a UNION
of typed lookups (one per type in the graph) is only the fallback for ids without one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import Label, RelType
from polyg.store.queries import Runner

EDGE_RETURN = (
    "r {.id, .description, .created_at, .updated_at} AS edge, type(r) AS type, a.id AS source, b.id AS target, "
    "[k IN keys(r) WHERE NOT k IN $own | [k, r[k]]] AS props"
)
TOUCH_ENDS = "a.updated_at = $now, b.updated_at = $now"


async def relationship_types(runner: Runner, project: str) -> list[str]:
    rows = await runner.read(project, "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType")
    return [row[0] for row in rows]


async def create_edges(
    runner: Runner,
    project: str,
    rel_type: RelType,
    source_label: Label,
    target_label: Label,
    rows: list[dict[str, Any]],
    own_keys: Sequence[str],
) -> list[Row]:
    """Edges of one type between nodes of two labels, one per row (id, source, target,
    description, props, now), in one query. A row whose endpoint is missing writes nothing and
    returns no row; the others are written."""
    return await runner.write(
        project,
        f"UNWIND $rows AS row MATCH (a:{source_label} {{id: row.source}}), (b:{target_label} {{id: row.target}}) "
        f"CREATE (a)-[r:{rel_type} {{id: row.id, description: row.description, created_at: row.now, "
        f"updated_at: row.now}}]->(b) SET r += row.props, a.updated_at = row.now, b.updated_at = row.now "
        f"RETURN {EDGE_RETURN}",
        {"rows": rows, "own": list(own_keys)},
    )


async def get_edges(
    runner: Runner, project: str, rel_type: RelType, ids: list[str], own_keys: Sequence[str]
) -> list[Row]:
    return await runner.read(
        project,
        f"UNWIND $ids AS id MATCH (a)-[r:{rel_type} {{id: id}}]->(b) RETURN {EDGE_RETURN}",
        {"ids": ids, "own": list(own_keys)},
    )


async def find_type(runner: Runner, project: str, rel_types: Sequence[RelType], edge_id: str) -> list[Row]:
    """The type of the edge with this id, looked up type by type (ids that do not carry it)."""
    branches = [f"MATCH ()-[r:{t} {{id: $id}}]->() RETURN type(r) AS type" for t in rel_types]
    return await runner.read(project, " UNION ".join(branches), {"id": edge_id}) if branches else []


async def update_edge(
    runner: Runner,
    project: str,
    rel_type: RelType,
    edge_id: str,
    description: str | None,
    props: Mapping[str, Any],
    now: str,
    own_keys: Sequence[str],
) -> list[Row]:
    """Merge user properties (a None value removes one) and set the description if given."""
    sets = ["r += $props", "r.updated_at = $now", TOUCH_ENDS]
    if description is not None:
        sets.append("r.description = $description")
    return await runner.write(
        project,
        f"MATCH (a)-[r:{rel_type} {{id: $id}}]->(b) SET {', '.join(sets)} RETURN {EDGE_RETURN}",
        {"id": edge_id, "description": description, "props": dict(props), "now": now, "own": list(own_keys)},
    )


async def delete_edge(runner: Runner, project: str, rel_type: RelType, edge_id: str, now: str) -> list[Row]:
    return await runner.write(
        project,
        f"MATCH (a)-[r:{rel_type} {{id: $id}}]->(b) WITH a, b, r, r.id AS gone DELETE r SET {TOUCH_ENDS} "
        "RETURN gone, a.id, b.id",
        {"id": edge_id, "now": now},
    )
