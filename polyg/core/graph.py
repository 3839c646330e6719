"""What every core service needs: the store, the embedder, and the per-project schema guard."""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from polyg.embed import Embedder
from polyg.names import check_project_id
from polyg.store.falkor import FalkorStore, Row
from polyg.store.schema import SchemaGuard


@dataclass
class GraphContext:
    store: FalkorStore
    embedder: Embedder
    schema: SchemaGuard
    # Striped locks serialise read-embed-write cycles on one entity within this process, so
    # two concurrent observation writes cannot leave an embedding that misses one of them.
    _stripes: list[asyncio.Lock] = field(default_factory=lambda: [asyncio.Lock() for _ in range(64)])

    def entity_lock(self, project: str, entity_id: str) -> asyncio.Lock:
        return self._stripes[self._stripe(project, entity_id)]

    def _stripe(self, project: str, entity_id: str) -> int:
        return zlib.crc32(f"{project}\0{entity_id}".encode()) % len(self._stripes)

    @contextlib.asynccontextmanager
    async def entity_locks(self, project: str, entity_ids: list[str]) -> AsyncIterator[None]:
        """Locks for several entities, taken in stripe order so two batches cannot deadlock."""
        async with contextlib.AsyncExitStack() as stack:
            for stripe in sorted({self._stripe(project, i) for i in entity_ids}):
                await stack.enter_async_context(self._stripes[stripe])
            yield

    async def write(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        check_project_id(project)
        await self.schema.ensure(project)
        return await self.store.query(project, cypher, params)

    async def read(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        check_project_id(project)
        return await self.store.ro_query(project, cypher, params)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await self.embedder.embed_batch(texts)
