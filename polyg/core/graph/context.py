"""What every core service needs: the store, the embedder, the per-project schema guard, and
the worker that stores entity vectors after their text (`polyg.core.graph.vectorizer`)."""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from polyg.core.ahead import started
from polyg.embed import Embedder
from polyg.names import check_project_id
from polyg.store.falkor import FalkorStore, Row
from polyg.store.schema import SchemaGuard

if TYPE_CHECKING:
    from polyg.core.graph.indexes import IndexReadiness
    from polyg.core.graph.vectorizer import Vectorizer


@dataclass
class GraphContext:
    store: FalkorStore
    embedder: Embedder
    schema: SchemaGuard
    vectors: Vectorizer = field(init=False)
    # Whether each project's search indexes answer: every full-text or vector read checks it.
    indexes: IndexReadiness = field(init=False)
    # Striped locks serialise read-then-write cycles on one entity within this process (adding
    # observations by name skips ones already present: two concurrent calls must not both add).
    _stripes: list[asyncio.Lock] = field(default_factory=lambda: [asyncio.Lock() for _ in range(64)])
    # Writes this process made, per project: lets a cache of derived figures (search's node
    # counts) see its own writes at once.
    writes: dict[str, int] = field(default_factory=dict)
    # Vectors being made right now, by text (queries' and documents' apart: an embedder may
    # tell them apart): readers that run at once (recall's graphs) ask for the same query's
    # vector, and a write may have asked ahead for its texts' (`prefetch`); the model runs
    # once for all of them.
    _queries: dict[str, asyncio.Future[list[float]]] = field(default_factory=dict, repr=False)
    _documents: dict[str, asyncio.Future[list[float]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # Both need this class: imported late.
        from polyg.core.graph.indexes import IndexReadiness
        from polyg.core.graph.vectorizer import Vectorizer

        self.vectors = Vectorizer(self)
        self.indexes = IndexReadiness(self)

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
        # Not sent while an index of the graph is being built (polyg.core.graph.indexes).
        await self.indexes.writable(project)
        try:
            return await self.store.query(project, cypher, params)
        finally:
            self.writes[project] = self.writes.get(project, 0) + 1

    async def read(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Row]:
        check_project_id(project)
        return await self.store.ro_query(project, cypher, params)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if len(texts) != 1:
            return await self.embedder.embed_batch(texts)
        return [await self._shared(self._documents, texts[0], self._document)]

    async def embed_query(self, text: str) -> list[float]:
        return await self._shared(self._queries, text, self.embedder.embed_query)

    def prefetch(self, texts: list[str]) -> None:
        """Start making the vectors of documents about to be written (`embed` then waits for
        them): the model runs while the store answers the write's lookups."""
        for text in dict.fromkeys(texts):
            if text.strip():
                self._start(self._documents, text, self._document)

    def prefetch_query(self, text: str) -> None:
        """Start making the vector of a query about to be searched (`embed_query` then waits
        for it): the model runs while the store answers the lookups that come first."""
        if text.strip():
            self._start(self._queries, text, self.embedder.embed_query)

    async def _document(self, text: str) -> list[float]:
        return (await self.embedder.embed_batch([text]))[0]

    def _start(
        self,
        pending: dict[str, asyncio.Future[list[float]]],
        text: str,
        make: Callable[[str], Awaitable[list[float]]],
    ) -> asyncio.Future[list[float]]:
        future = pending.get(text)
        if future is None:
            future = started(make(text))  # a prefetched vector nobody asks for fails quietly
            pending[text] = future
            future.add_done_callback(lambda _: pending.pop(text, None))
        return future

    async def _shared(
        self,
        pending: dict[str, asyncio.Future[list[float]]],
        text: str,
        make: Callable[[str], Awaitable[list[float]]],
    ) -> list[float]:
        # Shielded: one caller's timeout must not cancel the vector the others wait for.
        return list(await asyncio.shield(self._start(pending, text, make)))
