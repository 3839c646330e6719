"""Cypher by capability: one module per kind of query, the only Cypher outside the store driver.

Each module's functions take a `Runner` (the core's `GraphContext` is one: it ensures the
project's schema before a write and counts writes) and return plain rows or small typed tuples;
the core turns them into its model.
"""

from __future__ import annotations

from typing import Any, Protocol

from polyg.store.falkor import Row


class Runner(Protocol):
    async def read(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]: ...

    async def write(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]: ...
