"""Cypher that writes nodes: the one statement that creates `:Entity` nodes for every toolset
(`create_entities`, used through `polyg.core.graph.entity_writer`; knowledge's typed nodes and the
edges they bring through `create_nodes_clauses`), updating a node, deleting nodes (kg by id,
memory-compat by name, knowledge by label), and the revision every text change bumps.

Each item is written by one query, and FalkorDB applies a query whole or not at all (a query that fails
part-way is rolled back), so an item of a batch is never half-written. Endpoints and parents are
matched before anything is created: a node that vanished in between makes the query return no
row and write nothing. Writes that may be refused are preceded by a read
(`polyg.store.queries.node_reads.exists`): the first write to a project creates its graph
(schema, indexes), and a refused call must leave nothing behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from polyg.store.falkor import Row
from polyg.store.names import HAS_OBSERVATION, OBSERVATION, STRUCTURAL_REL_TYPES, Label, RelType
from polyg.store.queries import SHARED, Runner, knowledge
from polyg.store.queries.document_cache import drop_documents
from polyg.store.queries.edges import new_relationship

# A node's revision, written by every text change and by every creation: a token no other
# revision of any node has, so that a vector computed for a node that was deleted and created
# again with the same id (an import restores ids) can never pass for the new node's
# (`polyg.core.graph.vectorizer`). A counter would start again at the same number.
NEW_REV = "randomUUID()"


def bump_rev(node: str = "e") -> str:
    """The one revision bump: a SET item giving `node` a new revision (see NEW_REV)."""
    return f"{node}.rev = {NEW_REV}"


# A node's own fields as one map, and its user properties as [key, value] pairs: the keys
# polyg owns (embeddings among them: 384 floats each) are not sent back.
NODE_RETURN = (
    "n {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at} AS node, labels(n) AS labels, "
    "[k IN keys(n) WHERE NOT k IN $own | [k, n[k]]] AS props"
)


SETTABLE = frozenset({"name", "type", "summary", "parent_id"})


def label_dispatch(node: str, label_of_row: str, labels: list[Label | None]) -> str:
    """Clauses that give `node` its second label, for a batch whose rows carry different ones,
    in one query: Cypher cannot take a label as a parameter, so each label of the batch gets a
    FOREACH entered only by its rows."""
    return " ".join(
        f"FOREACH (_ IN CASE WHEN {label_of_row} = '{label}' THEN [1] ELSE [] END | SET {node}:{label})"
        for label in sorted({Label(label) for label in labels if label is not None})
    )


def labels(kind: Label, extra: Label | None) -> str:
    return f"{kind}:{extra}" if extra else str(kind)


# Every entity a toolset creates is created by `create_entities` (issue 24): one statement, so
# that what an entity is made of (its key fields, its normalised name, its revision, its
# second label, its observations) is written one way whatever tool made it.
#
# What a create does when the entity may exist already (`if_absent`), checked inside the write
# query: FalkorDB runs one write query at a time on a graph, so two writers racing on one name
# (two tasks, two processes on one data directory) create it once.
# - "always": no check (kg and knowledge: names may repeat; the id is new);
# - "id": skip a row whose id exists (an import that keeps ids);
# - "name": skip a row whose exact name exists (memory-compat: names are unique; memory's
#   concepts, whose names are their own);
# - "name_key": skip a row whose normalised name exists (memory: a name matches an entity of
#   that name in any case).
# A unique constraint cannot stand in for the check: FalkorDB 4.16 has them, but kg allows
# names to repeat, so no store-wide constraint holds on `name` or `name_key`.
IfAbsent = Literal["always", "id", "name", "name_key"]
# The normalised name memory matches names on: stored with every entity (indexed), rewritten by
# a rename (`polyg.store.queries.nodes.update_node`). Computed by the store on both sides of a
# comparison, so that its lower-casing is the one rule.
NAME_KEY = "toLower({name})"
_CHECKED: dict[str, tuple[str, str]] = {
    "id": ("id", "r.id"),
    "name": ("name", "r.name"),
    "name_key": ("name_key", NAME_KEY.format(name="r.name")),
}


def create_entities_cypher(
    labels: list[Label | None],
    *,
    if_absent: IfAbsent = "always",
    parent: bool = False,
    prelude: str = "",
    carry: Sequence[str] = (),
    after: str = "",
) -> str:
    """The one statement creating entities from `$rows` (see `create_entities`). `prelude`:
    clauses run per row before the check (they may bind more variables, listed in `carry`);
    `after`: clauses run per entity created (`n`), e.g. the relationships it brings."""
    kept = ", ".join(["r", *(["p"] if parent else []), *carry])
    cypher = "UNWIND $rows AS r " + ("MATCH (p:Entity {id: r.parent_id}) " if parent else "") + prelude
    if if_absent != "always":
        # The stored key is compared after it is projected out of the node: FalkorDB's index
        # also matches names that differ in surrounding whitespace (`polyg.store.queries.resolve.EXACT_NAME`).
        prop, key = _CHECKED[if_absent]
        cypher += (
            f"OPTIONAL MATCH (x:Entity {{{prop}: {key}}}) "
            f"WITH {kept}, collect(x.{prop}) AS found WHERE NOT {key} IN found "
        )
    cypher += (
        "CREATE (n:Entity {id: r.id, name: r.name, "
        f"name_key: {NAME_KEY.format(name='r.name')}, type: r.type, summary: coalesce(r.summary, ''), "
        "parent_id: r.parent_id, created_at: coalesce(r.created_at, $now), "
        f"updated_at: coalesce(r.updated_at, $now), rev: {NEW_REV}}}) "
        "SET n += coalesce(r.props, {}) "
        + label_dispatch("n", "r.label", labels)
        + " FOREACH (o IN coalesce(r.obs, []) | CREATE (n)-[:HAS_OBSERVATION]->(:Observation "
        "{id: o.id, text: o.text, created_at: coalesce(o.at, $now)})) " + after
    )
    return cypher + f" RETURN {NODE_RETURN}"


async def create_entities(
    runner: Runner,
    project: str,
    rows: list[dict[str, Any]],
    *,
    now: str,
    own: Sequence[str],
    if_absent: IfAbsent = "always",
    parent: bool = False,
    prelude: str = "",
    carry: Sequence[str] = (),
    after: str = "",
    params: Mapping[str, Any] | None = None,
) -> list[Row]:
    """Create an entity per row: id, name, type, and optionally summary, parent_id (matched
    first with `parent`: a row whose parent is gone writes nothing), label (its second label),
    props (user properties, no None), obs [{id, text, at}], created_at, updated_at; `$now`
    stands in for missing times. A row `if_absent` finds existing writes nothing. Returns
    [node fields, labels, user property pairs] per entity created, in one query."""
    if not rows:
        return []
    labels = [Label(row["label"]) if row.get("label") is not None else None for row in rows]
    cypher = create_entities_cypher(
        labels, if_absent=if_absent, parent=parent, prelude=prelude, carry=carry, after=after
    )
    return await runner.write(project, cypher, {**(params or {}), "rows": rows, "now": now, "own": list(own)})


@dataclass(frozen=True)
class EdgeShape:
    """An edge a new node brings: its type, the other node's label, and its direction."""

    type: RelType
    other_label: Label
    outgoing: bool  # new node -> other


@dataclass(frozen=True)
class NodeShape:
    """What the query creating a node looks like: nodes of one shape are written together, by
    one query whatever edges each brings (`create_nodes`)."""

    extra: Label | None  # the label from its type
    parent: bool


def _edge_clause(kind: int, edge: EdgeShape) -> str:
    """The edge of `kind` from the new node `n` to `o` (or back), made only for edges `e` of that
    kind: FOREACH over a list of one element or none is Cypher's conditional write."""
    ends = ("n", "o") if edge.outgoing else ("o", "n")
    return (
        f"FOREACH (_ IN CASE WHEN e.k = {kind} THEN [1] ELSE [] END | "
        f"{new_relationship(ends[0], ends[1], 'e', edge.type, 'x')} SET o.updated_at = e.created_at) "
    )


def create_nodes_clauses(
    rows: list[dict[str, Any]], *, parent: bool
) -> tuple[list[dict[str, Any]], str, list[str], str]:
    """What `create_entities` needs to write rows of nodes with the edges they bring, each row's
    `edges` being [(EdgeShape, the other node's id, the edge id, description, properties)]:
    the rows as parameters, the clauses matching the other nodes (a row one of whose other
    nodes is missing writes nothing), the variables they bind, and the clauses making the
    edges of the node created (`n`). Edges of every type are made by the one query: each kind
    (type, direction) is a conditional CREATE, each label of the other nodes one indexed match."""
    kinds = sorted({e for row in rows for e, *_ in row["edges"]}, key=lambda e: (e.type, e.outgoing, e.other_label))
    kind_of = {edge: i for i, edge in enumerate(kinds)}
    others = sorted({edge.other_label for edge in kinds})
    params = []
    for row in rows:
        ends = [sorted({o for edge, o, *_ in row["edges"] if edge.other_label == label}) for label in others]
        edges = [
            {"k": kind_of[edge], "o": o, "id": i, "description": d, "props": p}
            | dict.fromkeys(("created_at", "updated_at"), row["now"])
            for edge, o, i, d, p in row["edges"]
        ]
        params.append({**{k: v for k, v in row.items() if k != "edges"}, "edges": edges, "ends": ends})
    carried = ["r", "p"] if parent else ["r"]
    prelude = ""
    for i, label in enumerate(others):
        # One indexed seek per id (`id IN list` would scan the label); a row whose list is empty
        # goes on with one null, which collect() drops.
        prelude += f"UNWIND CASE WHEN size(r.ends[{i}]) = 0 THEN [null] ELSE r.ends[{i}] END AS e{i} "
        prelude += f"OPTIONAL MATCH (a{i}:{label} {{id: e{i}}}) "
        prelude += f"WITH {', '.join(carried)}, collect(a{i}) AS os{i} "
        carried.append(f"os{i}")
    if others:
        complete = " AND ".join(f"size(os{i}) = size(r.ends[{i}])" for i in range(len(others)))
        found = " + ".join(f"os{i}" for i in range(len(others)))
        prelude += f"WITH {', '.join(c for c in carried if not c.startswith('os'))}, {found} AS os WHERE {complete} "
    after = ""
    if kinds:
        # `o` is the edge's other node, found among the matched ones by its id.
        after = "FOREACH (e IN r.edges | FOREACH (o IN [m IN os WHERE m.id = e.o | m] | "
        after += "".join(_edge_clause(i, edge) for i, edge in enumerate(kinds)) + ")) "
    return params, prelude, ["os"] if others else [], after


async def update_node(
    runner: Runner,
    project: str,
    kind: Label,
    node_id: str,
    sets: Mapping[str, Any],
    props: Mapping[str, Any],
    now: str,
    *,
    relabel: tuple[Label | None, Label | None] | None = None,
    text_changed: bool = False,
    own_keys: Sequence[str] = (),
) -> list[Row]:
    """Set own fields (`sets`: name, type, summary, parent_id) and merge user properties (a None
    value removes one); `relabel` swaps the type label (old, new); a text change bumps the
    revision and drops the head vector, which the vectorizer makes again."""
    assignments = [f"n.{_own_field(key)} = $set_{key}" for key in sets]
    if "name" in sets:  # a renamed entity is matched on its new name
        assignments.append(f"n.name_key = {NAME_KEY.format(name='$set_name')}")
    assignments += ["n += $props", "n.updated_at = $now"]
    if text_changed:
        assignments.append(bump_rev("n"))  # what its vector is made from changed
    cypher = f"MATCH (n:{kind} {{id: $id}}) "
    if relabel is not None:
        old, new = relabel
        if old is not None and old != new:
            cypher += f"REMOVE n:{old} "
        if new is not None:
            assignments.append(f"n:{new}")
    cypher += "SET " + ", ".join(assignments) + " "
    if text_changed:
        cypher += "REMOVE n.head_embedding "
    params = {"id": node_id, "props": dict(props), "now": now, "own": list(own_keys)}
    params.update({f"set_{key}": value for key, value in sets.items()})
    return await runner.write(project, cypher + f"RETURN {NODE_RETURN}", params)


def _own_field(key: str) -> str:
    if key not in SETTABLE:
        raise ValueError(f"not a settable node field: {key!r}")
    return key


# Follows a MATCH binding `e`: deletes the entities, their observations and relationships and
# the documents cached for them or built from them (`drop_documents`), and clears the parent
# of their children (found through the index on parent_id). Returns how many were deleted.
DELETE_ENTITY_TAIL = (
    "WITH e " + drop_documents("e") + "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
    "WITH e, collect(o) AS obs FOREACH (x IN obs | DELETE x) "
    "WITH e OPTIONAL MATCH (c:Entity {parent_id: e.id}) "
    "WITH e, collect(c) AS kids FOREACH (k IN kids | SET k.parent_id = NULL) "
    "WITH e, e.id AS gone DETACH DELETE e RETURN count(gone)"
)


async def delete_entities(runner: Runner, project: str, ids: list[str]) -> int:
    """Delete the entities with these ids (see DELETE_ENTITY_TAIL); how many were deleted."""
    rows = await runner.write(
        project, "UNWIND $ids AS id MATCH (e:Entity {id: id}) " + DELETE_ENTITY_TAIL, {"ids": ids}
    )
    return int(rows[0][0]) if rows else 0


async def delete_node(runner: Runner, project: str, kind: Label, node_id: str, now: str) -> list[Row]:
    """The node, its observations and edges, and the documents cached for it or built from it;
    its neighbours' `updated_at` is bumped (an edge touching them went away; not a template
    it used, which would stale every page of that template) and its children lose their
    parent. Returns the neighbours' ids."""
    return await runner.write(
        project,
        f"MATCH (n:{kind} {{id: $id}}) "
        + drop_documents("n")
        + f"OPTIONAL MATCH (n)-[r]-(m) WHERE {knowledge('r', 'n', 'm')} "
        "WITH n, collect(DISTINCT m) AS near FOREACH (m IN near | SET m.updated_at = $now) "
        f"WITH n, [m IN near | m.id] AS near OPTIONAL MATCH (n)-[:{HAS_OBSERVATION}]->(o:{OBSERVATION}) "
        "WITH n, near, collect(o) AS obs FOREACH (x IN obs | DELETE x) "
        f"WITH n, near OPTIONAL MATCH (c:{kind} {{parent_id: n.id}}) "
        "WITH n, near, collect(c) AS kids FOREACH (k IN kids | SET k.parent_id = NULL) "
        "WITH n, near, n.id AS gone DETACH DELETE n RETURN gone, near",
        {"id": node_id, "now": now, "own": sorted(STRUCTURAL_REL_TYPES), "shared": SHARED},
    )
