"""Cypher for nodes: resolving references; creating (nodes of one shape per query), updating and
deleting nodes; the per-label index statements.

Each item is written by one query, and FalkorDB applies a query whole or not at all (a query that fails
part-way is rolled back), so an item of a batch is never half-written. Endpoints and parents are
matched before anything is created: a node that vanished in between makes the query return no
row and write nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import HAS_OBSERVATION, OBSERVATION, STRUCTURAL_REL_TYPES, Label, RelType
from polyg.store.queries import SHARED, Runner, knowledge
from polyg.store.queries.document_cache import drop_documents
from polyg.store.queries.edges import new_relationship
from polyg.store.queries.entities import NAME_KEY, bump_rev

# A node's own fields as one map, and its user properties as [key, value] pairs: the keys
# polyg owns (embeddings among them: 384 floats each) are not sent back.
NODE_RETURN = (
    "n {.id, .name, .type, .summary, .parent_id, .created_at, .updated_at} AS node, labels(n) AS labels, "
    "[k IN keys(n) WHERE NOT k IN $own | [k, n[k]]] AS props"
)

SETTABLE = frozenset({"name", "type", "summary", "parent_id"})


def labels(kind: Label, extra: Label | None) -> str:
    return f"{kind}:{extra}" if extra else str(kind)


async def resolve(
    runner: Runner, project: str, id_labels: Sequence[Label], name_labels: Sequence[Label], refs: list[str]
) -> list[Row]:
    """Each reference -> [id, labels, type] of the node with that id, else of the oldest node
    with that name; unresolved references have no row. One indexed lookup per label, one round
    trip."""
    branches = [f"WITH ref MATCH (n:{label} {{id: ref}}) RETURN n, 0 AS rank" for label in id_labels]
    branches += [f"WITH ref MATCH (n:{label} {{name: ref}}) RETURN n, 1 AS rank" for label in name_labels]
    return await runner.read(
        project,
        f"UNWIND $refs AS ref CALL {{ {' UNION '.join(branches)} }} "
        "WITH ref, n, rank ORDER BY rank, n.created_at, n.id "
        "RETURN ref, collect([n.id, labels(n), n.type])[0]",
        {"refs": refs},
    )


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


async def get_nodes(runner: Runner, project: str, kind: Label, ids: list[str], own_keys: Sequence[str]) -> list[Row]:
    return await runner.read(
        project,
        f"UNWIND $ids AS id MATCH (n:{kind} {{id: id}}) RETURN {NODE_RETURN}",
        {"ids": ids, "own": list(own_keys)},
    )


@dataclass(frozen=True)
class NodeIndexes:
    """The indexes of node labels: range (equality lookups), full-text, vector (`embedding`)."""

    range: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fulltext: dict[str, tuple[str, ...]] = field(default_factory=dict)
    vector: tuple[str, ...] = ()

    def missing(
        self, found: Mapping[tuple[str, str], set[str]], dimension: int, *, hnsw: Mapping[str, int]
    ) -> list[str]:
        """Statements creating the indexes `found` (label, property) -> kinds lacks. `hnsw`:
        M, efConstruction, efRuntime of new vector indexes."""
        statements = []
        for label, props in self.range.items():
            for prop in props:
                if "RANGE" not in found.get((label, prop), set()):
                    statements.append(f"CREATE INDEX FOR (n:{Label(label)}) ON (n.{Label(prop)})")
        for label, props in self.fulltext.items():
            # FalkorDB refuses a field already indexed: only the missing ones are named.
            missing = [p for p in props if "FULLTEXT" not in found.get((label, p), set())]
            if missing:
                args = ", ".join(f"'{Label(p)}'" for p in missing)
                statements.append(f"CALL db.idx.fulltext.createNodeIndex('{Label(label)}', {args})")
        for label in self.vector:
            if "VECTOR" not in found.get((label, "embedding"), set()):
                statements.append(
                    f"CREATE VECTOR INDEX FOR (n:{Label(label)}) ON (n.embedding) OPTIONS "
                    f"{{dimension: {int(dimension)}, similarityFunction: 'cosine', M: {int(hnsw['M'])}, "
                    f"efConstruction: {int(hnsw['efConstruction'])}, efRuntime: {int(hnsw['efRuntime'])}}}"
                )
        return statements
