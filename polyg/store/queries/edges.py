"""Cypher that writes edges: the one statement creating every toolset's domain relationships
(`create_relationships`, used through `polyg.core.graph.edge_writer`); edges found, updated and
deleted by id (knowledge's between any nodes, kg's between entities) through the per-type range
index on `id` (`polyg.store.queries.reltypes` makes it); memory-compat's relations deleted by
their text. Knowledge's writes bump both endpoints' `updated_at`.

FalkorDB indexes relationships per type, and a pattern naming several types (`[r:A|B]`) or
none uses no index: it scans edges, which at 100k edges is two orders of magnitude slower than
a lookup in one type's index. So an edge id carries its type (`polyg.core.graph.edges`), and a UNION
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


# Every domain relationship a toolset creates is created by `create_relationships` (issue 24),
# through `polyg.core.graph.edge_writer`: kg (create_relationship), memory-compat (create_relations,
# its import, memory's link_entities), knowledge (manage_edges, and the relationships a new node
# brings, `polyg.store.queries.nodes`), graphrag's weighted and extracted links, concepts'
# SIMILAR_TO and REPRESENTS, the graph import, and memory's facts and causal links (whose query
# modules, `temporal.create_fact` and `causal.create_link`, add what their write also does: the
# facts a new one closes, the memory it settles). One statement,
# so that what a relationship is made of is written one way whatever tool made it; the specs'
# differences are its options.
#
# What a create does when a like relationship joins the two nodes already (`if_absent`), checked
# inside the write query (FalkorDB runs one write at a time per graph), so racing writers (tasks
# of one server, two servers on one data directory) make it once:
# - "always": no check (knowledge: relationships may repeat; facts, whose windows the caller
#   has read under the subject's lock);
# - "type": skip when one of the type without free text joins them (kg);
# - "text": skip when one named by the same text joins them (memory-compat, link_entities);
# - "id": skip when one of its type with the row's id joins them, or, for a row without an id,
#   an id-less one of its type (an import that keeps ids);
# - "pair": one per (source, type, target) whatever its text: the one there is found, and
#   `on_match` updates it (graphrag, REPRESENTS); one type per call;
# - "replace": like relationships of the type between the two, either way, are deleted and the
#   new one made (a concept's similarity: one link per pair whichever way it points).
RelIfAbsent = Literal["always", "type", "text", "id", "pair", "replace"]
_LIKE: dict[str, str] = {
    "type": "type(x) = row.type AND x.label IS NULL",
    "text": "coalesce(x.label, type(x)) = row.text",
    "id": "type(x) = row.type AND (x.id = row.id OR (x.id IS NULL AND row.id IS NULL))",
}
# What a relationship is made of (`shape`):
# - "described": id, description ('' when none), created_at ($now when none), updated_at,
#   label (the free text it was named by, when its type is not that text), then props: every
#   relationship a user names (kg, memory-compat, knowledge) and facts;
# - "plain": id, created_at, then props: polyg's own links and graphrag's weighted links;
# - "verbatim": exactly props (an import restores what was exported).
Shape = Literal["described", "plain", "verbatim"]


def _fields(shape: Shape, var: str, row: str) -> str:
    """The SET items giving a new relationship `var` the fields of `row` in `shape`."""
    if shape == "verbatim":
        return f"{var} = {row}.props"
    items = [f"{var}.id = {row}.id"]
    if shape == "described":
        items += [f"{var}.description = coalesce({row}.description, '')"]
    items += [f"{var}.created_at = coalesce({row}.created_at, $now)"]
    if shape == "described":
        items += [f"{var}.updated_at = {row}.updated_at", f"{var}.label = {row}.label"]
    return ", ".join([*items, f"{var} += coalesce({row}.props, {{}})"])


def new_relationship(
    start: str,
    end: str,
    row: str,
    rel_type: RelType,
    var: str = "r",
    *,
    shape: Shape = "described",
    merge: bool = False,
    on_match: bool = False,
) -> str:
    """The clause creating a relationship `var` of `rel_type` from `start` to `end` with the
    fields of `row` (id, and optionally description, created_at, updated_at, label, props; see
    `Shape`): the one way every toolset's relationship is made, in `create_relationships` and in
    the relationships a new knowledge node brings (`polyg.store.queries.nodes`). `merge`: the
    one of that type between the two is found instead when there is one, and with `on_match`
    given `row.update`'s properties."""
    fields = _fields(shape, var, row)
    if merge:
        found = f" ON MATCH SET {var} += coalesce({row}.update, {{}})" if on_match else ""
        return f"MERGE ({start})-[{var}:{RelType(rel_type)}]->({end}) ON CREATE SET {fields}{found}"
    return f"CREATE ({start})-[{var}:{RelType(rel_type)}]->({end}) SET {fields}"


def create_relationships_cypher(
    types: Sequence[RelType],
    *,
    source: Label = ENTITY,
    target: Label = ENTITY,
    if_absent: RelIfAbsent = "always",
    shape: Shape = "described",
    on_match: bool = False,
    touch_ends: bool = False,
    after: str = "",
    returns: str | None = "row.id",
) -> str:
    """The one statement creating relationships from `$rows` (see `create_relationships`).
    Rows of one type bind the relationship `r` for `after` and `returns`; rows of several types
    are written by one FOREACH per type (Cypher cannot take a type as a parameter), and
    `returns` may then name only `row`, `a` and `b`."""
    kinds = sorted({RelType(t) for t in types})
    cypher = f"UNWIND $rows AS row MATCH (a:{source} {{id: row.a}}), (b:{target} {{id: row.b}}) "
    if if_absent == "replace":
        cypher += (
            "OPTIONAL MATCH (a)-[x]-(b) WHERE type(x) = row.type "
            "WITH row, a, b, collect(x) AS old FOREACH (y IN old | DELETE y) "
        )
    elif if_absent in _LIKE:
        cypher += f"OPTIONAL MATCH (a)-[x]->(b) WHERE {_LIKE[if_absent]} WITH row, a, b, count(x) AS dup WHERE dup = 0 "
    if if_absent == "pair":
        if len(kinds) != 1:
            raise ValueError("one relationship per pair is written one type at a time")
        cypher += new_relationship("a", "b", "row", kinds[0], shape=shape, merge=True, on_match=on_match) + " "
    elif len(kinds) == 1:
        cypher += new_relationship("a", "b", "row", kinds[0], shape=shape) + " "
    else:
        cypher += " ".join(
            f"FOREACH (_ IN CASE WHEN row.type = '{t}' THEN [1] ELSE [] END | "
            f"{new_relationship('a', 'b', 'row', t, shape=shape)})"
            for t in kinds
        )
        cypher += " "
    if touch_ends:  # a document built from an endpoint is stale
        cypher += "SET a.updated_at = coalesce(row.created_at, $now), b.updated_at = coalesce(row.created_at, $now) "
    cypher += after
    return cypher + (f" RETURN {returns}" if returns is not None else "")


async def create_relationships(
    runner: Runner,
    project: str,
    rows: list[dict[str, Any]],
    *,
    now: str,
    source: Label = ENTITY,
    target: Label = ENTITY,
    if_absent: RelIfAbsent = "always",
    shape: Shape = "described",
    on_match: bool = False,
    touch_ends: bool = False,
    after: str = "",
    returns: str | None = "row.id",
    params: Mapping[str, Any] | None = None,
) -> list[Row]:
    """Create a relationship per row: id, a, b (the endpoints' ids), type, and optionally
    description, created_at, updated_at, label (the free text it was named by, when its type is
    not that text), text (what `if_absent` "text" compares), props (no None), update (what
    `on_match` sets on the one found). A row whose endpoint is missing, or which `if_absent`
    finds made already, writes nothing and returns no row (but "pair" returns the one found).
    `after`: clauses run after the relationships are made (before `returns`; with None, nothing
    is returned). Returns `returns` per relationship created."""
    if not rows:
        return []
    cypher = create_relationships_cypher(
        [row["type"] for row in rows],
        source=source,
        target=target,
        if_absent=if_absent,
        shape=shape,
        on_match=on_match,
        touch_ends=touch_ends,
        after=after,
        returns=returns,
    )
    return await runner.write(project, cypher, {**(params or {}), "rows": rows, "now": now})


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


# The relation's text as the user wrote it, whether or not it had to be sanitised.
REL_TEXT = "coalesce(r.label, type(r))"


_RELATIONS = (
    f"UNWIND $rows AS row MATCH (a:Entity {{id: row.a}})-[r]->(b:Entity {{id: row.b}}) WHERE {REL_TEXT} = row.text "
)


async def delete_relations(runner: Runner, project: str, rows: list[dict[str, Any]]) -> None:
    """Delete the relations from a to b with each row's text."""
    # Read first: a call that deletes nothing writes nothing (nor creates the project).
    if rows and await runner.read(project, _RELATIONS + "RETURN r LIMIT 1", {"rows": rows}):
        await runner.write(project, _RELATIONS + "DELETE r", {"rows": rows})


ENDPOINTS = "MATCH (a:Entity {id: $src}), (b:Entity {id: $dst}) "


def between_entities_by_id(rel_type: RelType) -> str:
    """Matches `r`, the relationship between entities of this type with id `$id`, through the
    type's id index. The endpoints are checked after the match: labels on them in the pattern
    make FalkorDB scan every entity and probe the index from each (10 s at 100k entities)."""
    return f"MATCH ()-[r:{rel_type} {{id: $id}}]->() WITH r WHERE startNode(r):Entity AND endNode(r):Entity "


def delete_between_entities_by_id(rel_type: RelType) -> str:
    return between_entities_by_id(rel_type) + "WITH r, r.id AS gone DELETE r RETURN count(gone)"


async def endpoints_exist(runner: Runner, project: str, source_id: str, target_id: str) -> bool:
    return bool(await runner.read(project, ENDPOINTS + "RETURN a.id LIMIT 1", {"src": source_id, "dst": target_id}))


async def existing(runner: Runner, project: str, rel_type: RelType, source_id: str, target_id: str) -> list[Row]:
    """[id, description] of the oldest edge of this type without free text (that would be
    memory-compat's "works at" stored as works_at) between these entities: the one that stopped
    a create (`polyg.core.graph.edge_writer`, "type")."""
    return await runner.read(
        project,
        ENDPOINTS + f"MATCH (a)-[x:{rel_type}]->(b) WHERE x.label IS NULL "
        "RETURN x.id, x.description ORDER BY x.created_at, x.id LIMIT 1",
        {"src": source_id, "dst": target_id},
    )


async def type_of(runner: Runner, project: str, types: list[RelType], relationship_id: str) -> RelType | None:
    """The type of the relationship with this id among `types` (one query: a UNION of index
    lookups, instead of a scan of every edge)."""
    if not types:
        return None
    lookup = " UNION ALL ".join(between_entities_by_id(t) + "RETURN type(r) AS t" for t in types)
    rows = await runner.read(project, lookup, {"id": relationship_id})
    return RelType(rows[0][0]) if rows else None


async def delete_between_entities(runner: Runner, project: str, rel_type: RelType, relationship_id: str) -> int:
    rows = await runner.write(project, delete_between_entities_by_id(rel_type), {"id": relationship_id})
    return int(rows[0][0]) if rows else 0
