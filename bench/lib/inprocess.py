"""polyg's services in the benchmark's own process, on a data dir a server may also be serving."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

DEFAULT_PROJECT = "default"


@contextlib.asynccontextmanager
async def core_on(data_dir: Path, embedder: str | None) -> AsyncIterator[Any]:
    """polyg's services in process on `data_dir` (its server stopped, or running: the embedded
    store lets a second process attach), with the server's embedder, once the database has
    rebuilt the default project's search indexes."""
    from polyg.config import load_settings
    from polyg.errors import IndexNotFound
    from polyg.runtime.app import Polyg

    chosen = {"embedding_provider": embedder} if embedder else {}
    core = Polyg(load_settings(None, data_dir=data_dir, log_level="WARNING", **chosen))
    try:
        services = await core.ready()
        for _ in range(600):  # the database rebuilds its vector indexes after it starts
            try:
                await services.search.entities(DEFAULT_PROJECT, "warm up")
                break
            except IndexNotFound:
                await asyncio.sleep(0.5)
        yield services
    finally:
        await core.close()


async def knn(services: Any, label: str, vector: list[float], k: int = 10) -> list[Any]:
    """One KNN over `label`'s vector index of the default project: a floor's read; (id,
    distance) rows."""
    from polyg.store.falkor import VectorParam
    from polyg.store.names import Label

    rows: list[Any] = await services.ctx.read(
        DEFAULT_PROJECT,
        f"CALL db.idx.vector.queryNodes('{Label(label)}', 'embedding', $k, vecf32($v)) YIELD node, score "
        "RETURN node.id, score",
        {"k": k, "v": VectorParam(vector)},
    )
    return rows
