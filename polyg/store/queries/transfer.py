"""Cypher for import and export: the whole graph read in pages (nodes with their labels and
properties, edges with their ends), memory-jsonl's relations read in pages by id, and an
export read back (nodes restored with their ids and vectors, relationship types)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import ENTITY, RELATIONSHIP_TYPE, Label
from polyg.store.queries import Runner
from polyg.store.queries.nodes import NAME_KEY


async def relations_after(runner: Runner, project: str, after: str, page: int) -> list[Row]:
    """[id, source id, source name, target id, target name, type, properties] of the first
    `page` relations between entities with an id after `after`, in id order."""
    return await runner.read(
        project,
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE r.id > $after "
        "RETURN r.id, a.id, a.name, b.id, b.name, type(r), properties(r) ORDER BY r.id LIMIT $page",
        {"after": after, "page": page},
    )


# A node's own label, by which an export finds it again: an entity's type label (`:Person`)
# may come first in labels(n), which lists labels in the order the graph first saw them.
KIND = "CASE WHEN {n}:Entity THEN 'Entity' WHEN {n}:Event THEN 'Event' ELSE labels({n})[0] END"


VECTOR_KEYS = ("embedding", "head_embedding")  # vector properties (stored as vecf32)


async def labels(run: Runner, project: str) -> list[str]:
    rows = await run.read(project, "CALL db.labels() YIELD label RETURN label ORDER BY label", {})
    return [row[0] for row in rows]


async def node_count(run: Runner, project: str) -> int:
    rows = await run.read(project, "MATCH (n) RETURN count(n)", {})
    return int(rows[0][0]) if rows else 0


async def edge_count(run: Runner, project: str) -> int:
    rows = await run.read(project, "MATCH ()-[r]->() RETURN count(r)", {})
    return int(rows[0][0]) if rows else 0


async def nodes_page(run: Runner, project: str, skip: int, limit: int, *, vectors: bool = True) -> list[Row]:
    """(labels, properties) of nodes in internal-id order; without `vectors`, the properties
    are [key, value] pairs but the vectors and their revision (not read at all: a page of
    5,000 embedded nodes took 1.3 s with them, most of it their 384 floats each)."""
    values = "properties(n)" if vectors else "[k IN keys(n) WHERE NOT k IN $drop | [k, n[k]]]"
    return await run.read(
        project,
        f"MATCH (n) WITH n ORDER BY id(n) SKIP $skip LIMIT $limit RETURN labels(n), {values}",
        {"skip": skip, "limit": limit, "drop": [*VECTOR_KEYS, "vec_rev"]},
    )


async def edges_page(run: Runner, project: str, skip: int, limit: int) -> list[Row]:
    """(type, properties, start label, start id, end label, end id) in internal-id order."""
    return await run.read(
        project,
        "MATCH (a)-[r]->(b) WITH a, r, b ORDER BY id(r) SKIP $skip LIMIT $limit "
        f"RETURN type(r), properties(r), {KIND.format(n='a')}, a.id, {KIND.format(n='b')}, b.id",
        {"skip": skip, "limit": limit},
    )


# Sets a vector property from a row key when the row has it.
_VECTOR = "FOREACH (v IN CASE WHEN row.{key} IS NULL THEN [] ELSE [row.{key}] END | SET n.{key} = vecf32(v))"


async def existing_ids(run: Runner, project: str, label: Label, ids: list[str]) -> list[str]:
    rows = await run.read(project, f"UNWIND $ids AS i MATCH (n:{label} {{id: i}}) RETURN n.id", {"ids": ids})
    return [row[0] for row in rows]


async def merge_relationship_types(run: Runner, project: str, rows: list[dict[str, Any]]) -> int:
    """Relationship types by name, created with the given properties where the project has
    none of that name (a type it has keeps its own); how many were created."""
    return await _created(
        run,
        project,
        f"UNWIND $rows AS row OPTIONAL MATCH (old:{RELATIONSHIP_TYPE} {{name: row.name}}) "
        f"WITH row, old WHERE old IS NULL CREATE (t:{RELATIONSHIP_TYPE}) SET t = row RETURN count(t)",
        rows,
    )


async def create_nodes(
    run: Runner, project: str, labels: Sequence[Label], kind: Label, rows: list[dict[str, Any]]
) -> int:
    """Nodes (row: id, props, vectors by key) with these labels, but those whose id a `kind`
    node has already; how many were created."""
    vectors = " ".join(_VECTOR.format(key=key) for key in sorted(VECTOR_KEYS))
    if ENTITY in labels:  # an export older than name keys restores entities memory can match
        vectors += f" SET n.name_key = coalesce(n.name_key, {NAME_KEY.format(name='n.name')})"
    return await _created(
        run,
        project,
        f"UNWIND $rows AS row OPTIONAL MATCH (old:{kind} {{id: row.id}}) WITH row, old WHERE old IS NULL "
        f"CREATE (n:{':'.join(labels)}) SET n = row.props {vectors} RETURN count(n)",
        rows,
    )


async def _created(run: Runner, project: str, cypher: str, rows: list[dict[str, Any]]) -> int:
    """Run a write over `rows` that returns how many it created."""
    found = await run.write(project, cypher, {"rows": rows})
    return int(found[0][0]) if found else 0
