"""Cypher by capability: one module per kind of query, the only Cypher outside the store driver.

Each module's functions take a `Runner` (the core's `GraphContext` is one: it ensures the
project's schema before a write and counts writes) and return plain rows or small typed tuples;
the core turns them into its model.
"""

from __future__ import annotations

from typing import Any, Protocol

from polyg.store.falkor import Row
from polyg.store.names import OWN_REL_TYPES, SHARED_REL_TYPES

# The types a user shares with polyg (`polyg.store.names.SHARED_REL_TYPES`), as `$shared`.
SHARED = sorted(SHARED_REL_TYPES)
# Every type polyg owns (`polyg.store.names.OWN_REL_TYPES`), shared ones included, as `$own`.
OWN = sorted(OWN_REL_TYPES)


def knowledge(r: str, a: str, b: str) -> str:
    """Cypher: relationship `r` between nodes `a` and `b` is knowledge, not polyg's structure:
    of none of the types in `$own`, or of a type in `$shared` between two entities."""
    return f"(NOT type({r}) IN $own OR (type({r}) IN $shared AND {a}:Entity AND {b}:Entity))"


def knowledge_path(p: str) -> str:
    """Cypher: every relationship of path `p` is knowledge (as `knowledge` says)."""
    return (
        f"none(r IN relationships({p}) WHERE type(r) IN $own AND NOT (type(r) IN $shared "
        "AND 'Entity' IN labels(startNode(r)) AND 'Entity' IN labels(endNode(r))))"
    )


class Runner(Protocol):
    async def read(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]: ...

    async def write(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]: ...
