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
from typing import Any, Literal

from polyg.store.falkor import Row
from polyg.store.names import ENTITY, Label, RelType
from polyg.store.queries import Runner

EDGE_RETURN = (
    "r {.id, .description, .created_at, .updated_at} AS edge, type(r) AS type, a.id AS source, b.id AS target, "
    "[k IN keys(r) WHERE NOT k IN $own | [k, r[k]]] AS props"
)
TOUCH_ENDS = "a.updated_at = $now, b.updated_at = $now"


async def relationship_types(runner: Runner, project: str) -> list[str]:
    rows = await runner.read(project, "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType")
    return [row[0] for row in rows]


# The relationships kg, memory-compat (and its import, and memory's link_entities) and knowledge
# create between two nodes are created by `create_relationships`: one statement, so that what a
# relationship is made of (id, description, times, the free text it was named by) is written
# one way whatever tool made it. What a create does when a like relationship joins the two
# nodes already (`if_absent`), checked inside the write query (FalkorDB runs one write at a
# time per graph), so racing writers make it once:
# - "always": no check (knowledge: relationships may repeat);
# - "type": skip when one of the type without free text joins them (kg);
# - "text": skip when one named by the same text joins them (memory-compat, link_entities);
# - "id": skip when one with the row's id joins them (an import that keeps ids).
# Facts, causal links and graphrag's weighted links have writes of their own (they close,
# cite or update what they find).
RelIfAbsent = Literal["always", "type", "text", "id"]
_LIKE: dict[str, str] = {
    "type": "type(x) = row.type AND x.label IS NULL",
    "text": "coalesce(x.label, type(x)) = row.text",
    "id": "x.id = row.id",
}


def new_relationship(start: str, end: str, row: str, rel_type: RelType, var: str = "r") -> str:
    """The clause creating a relationship `var` of `rel_type` from `start` to `end` with the
    fields of `row` (id, and optionally description, created_at, updated_at, label, props): the
    one way every toolset's relationship is made, in `create_relationships` and in the
    relationships a new knowledge node brings (`polyg.store.queries.nodes`)."""
    return (
        f"CREATE ({start})-[{var}:{RelType(rel_type)} {{id: {row}.id, description: coalesce({row}.description, ''), "
        f"created_at: coalesce({row}.created_at, $now), updated_at: {row}.updated_at, label: {row}.label}}]->({end}) "
        f"SET {var} += coalesce({row}.props, {{}})"
    )


def create_relationships_cypher(
    types: Sequence[RelType],
    *,
    source: Label = ENTITY,
    target: Label = ENTITY,
    if_absent: RelIfAbsent = "always",
    touch_ends: bool = False,
    returns: str = "row.id",
) -> str:
    """The one statement creating relationships from `$rows` (see `create_relationships`).
    Rows of one type bind the relationship `r` for `returns`; rows of several types are written
    by one FOREACH per type (Cypher cannot take a type as a parameter), and `returns` may then
    name only `row`, `a` and `b`."""
    cypher = f"UNWIND $rows AS row MATCH (a:{source} {{id: row.a}}), (b:{target} {{id: row.b}}) "
    if if_absent != "always":
        cypher += f"OPTIONAL MATCH (a)-[x]->(b) WHERE {_LIKE[if_absent]} WITH row, a, b, count(x) AS dup WHERE dup = 0 "
    kinds = sorted({RelType(t) for t in types})
    if len(kinds) == 1:
        cypher += new_relationship("a", "b", "row", kinds[0]) + " "
    else:
        cypher += " ".join(
            f"FOREACH (_ IN CASE WHEN row.type = '{t}' THEN [1] ELSE [] END | {new_relationship('a', 'b', 'row', t)})"
            for t in kinds
        )
        cypher += " "
    if touch_ends:  # a document built from an endpoint is stale
        cypher += "SET a.updated_at = coalesce(row.created_at, $now), b.updated_at = coalesce(row.created_at, $now) "
    return cypher + f"RETURN {returns}"


async def create_relationships(
    runner: Runner,
    project: str,
    rows: list[dict[str, Any]],
    *,
    now: str,
    source: Label = ENTITY,
    target: Label = ENTITY,
    if_absent: RelIfAbsent = "always",
    touch_ends: bool = False,
    returns: str = "row.id",
    params: Mapping[str, Any] | None = None,
) -> list[Row]:
    """Create a relationship per row: id, a, b (the endpoints' ids), type, and optionally
    description, created_at, updated_at, label (the free text it was named by, when its type is
    not that text), text (what `if_absent` "text" compares), props (no None). A row whose
    endpoint is missing, or which `if_absent` finds made already, writes nothing and returns no
    row. Returns `returns` per relationship created."""
    if not rows:
        return []
    cypher = create_relationships_cypher(
        [row["type"] for row in rows],
        source=source,
        target=target,
        if_absent=if_absent,
        touch_ends=touch_ends,
        returns=returns,
    )
    return await runner.write(project, cypher, {**(params or {}), "rows": rows, "now": now})


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
    description, props, now), in one query, touching both ends. A row whose endpoint is missing
    writes nothing and returns no row; the others are written."""
    return await create_relationships(
        runner,
        project,
        [
            {
                **row,
                "a": row["source"],
                "b": row["target"],
                "type": rel_type,
                "created_at": row["now"],
                "updated_at": row["now"],
            }
            for row in rows
        ],
        now=rows[0]["now"] if rows else "",
        source=source_label,
        target=target_label,
        touch_ends=True,
        returns=EDGE_RETURN,
        params={"own": list(own_keys)},
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
