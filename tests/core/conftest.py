"""One polyg core on an embedded FalkorDB per test module; each test works in its own project.

`services` serves async tests. `core` serves tests of the batch writes, whose hypothesis
property tests cannot be async: they run their queries through `run` on the fixture's own
event loop."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from polyg.config import Settings, load_settings
from polyg.core.graph.edges import EdgeService
from polyg.core.graph.nodes import NodeService
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg, Services


@pytest.fixture(scope="module")
async def services(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Services]:
    root: Path = tmp_path_factory.mktemp("core")
    settings = load_settings(None, data_dir=root / "data", log_dir=root / "logs", store=None)
    core = Polyg(settings, embedder=create_embedder("hashing"))
    try:
        yield await core.ready()
    finally:
        await core.close()


@pytest.fixture
def project() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@dataclass
class Core:
    runner: asyncio.Runner
    services: Services
    nodes: NodeService
    edges: EdgeService


def isolated_settings(root: Path) -> Settings:
    """Settings for a core in `root`: the developer's POLYG_* variables and config file ignored."""
    with pytest.MonkeyPatch.context() as env:
        for name in list(os.environ):
            if name.startswith(("POLYG_", "FALKORDB_")) or name == "EMBEDDING_MODEL":
                env.delenv(name)
        env.setenv("XDG_CONFIG_HOME", str(root / "config"))
        return load_settings(None, data_dir=root / "data", log_dir=root / "logs", store=None)


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Core]:
    settings = isolated_settings(tmp_path_factory.mktemp("core"))
    with asyncio.Runner() as runner:
        polyg = Polyg(settings, embedder=create_embedder("hashing"))
        try:
            services = runner.run(polyg.ready())
            edges = EdgeService(services.ctx)
            yield Core(runner, services, NodeService(services.ctx, edges), edges)
        finally:
            runner.run(polyg.close())


def run[T](core: Core, coro: object) -> T:
    return core.runner.run(coro)  # type: ignore[arg-type,no-any-return]
