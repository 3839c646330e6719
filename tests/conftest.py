"""Shared fixtures: real `polyg serve` subprocesses driven through the official MCP client.

`kg_server` (module scope) starts one stdio server per module; tests keep out of each other's
way by working in their own `project`. A toolset's tests run over stdio only: that every toolset
answers the same over HTTP is tests/tools/test_transport_matrix.py's, once.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_helpers import KG, HttpServer, kg_session, reap_embedded, redis_servers_under

TRANSPORTS = ("stdio", "http")
DEFAULT_PROJECT = "defproj"


# The modules that take longest (minutes on a loaded machine): under xdist they are handed out
# first, so they run beside the many short ones instead of after them. Measured with
# `--durations`; the bench smoke run once started last and ended the run 4 minutes after the rest.
HEAVY_FIRST = (
    "tests/e2e/test_bench_smoke.py",
    "tests/e2e/test_install.py",
    "tests/tools/test_fuzz.py",
    "tests/e2e/test_durability.py",
    "tests/e2e/test_startup.py",
    "tests/store/cluster/",
    "tests/e2e/test_http.py",
    "tests/core/search/test_search_indexing.py",
    "tests/e2e/test_native_imports.py",
    "tests/tools/memory/",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, the HEAVY_FIRST modules' tests first, in that order (every worker
    sorts alike, and a module's tests keep their order); a single process keeps pytest's order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return next((i for i, heavy in enumerate(HEAVY_FIRST) if path.startswith(heavy)), len(HEAVY_FIRST))

    items.sort(key=rank)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `-n N --dist loadscope` (the Makefile's default), a module's tests run on one worker
    (its module-scoped server starts once), and so do all the tests on the session's FalkorDB
    cluster (one cluster per run, not one per worker) and the memory tools' tests (one memory
    server). xdist's own `loadgroup` marks do not reach its scheduler under pytest 9 (it renames
    node ids, which pytest 9 no longer allows)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModuleClusterTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if "/cluster/" in module:
                return "cluster"
            if module.startswith("tests/ui/"):
                return "ui"  # one worker, so one Chromium (tests/ui/conftest.py) for every module
            # One worker runs the memory tools' modules: they share its session's memory server,
            # which each worker would otherwise start and load the English pipeline into.
            return "memory" if module.startswith("tests/tools/memory/") else module

    # Scopes in collection order, where HEAVY_FIRST put the long modules first (xdist would
    # otherwise order them by their number of tests, which sent the one-test bench smoke run last).
    config.option.loadscopereorder = False
    return ByModuleClusterTogether(config, log)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def servers_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Parent of every server directory; no embedded FalkorDB under it may outlive the session."""
    root = tmp_path_factory.mktemp("srv")
    yield root
    leftovers = redis_servers_under(root)
    for data_dir in root.glob("*/data"):
        reap_embedded(data_dir)
    assert not leftovers, f"redis-server processes left behind: {leftovers}"


@pytest.fixture(scope="module")
async def kg_server(request: pytest.FixtureRequest, servers_root: Path) -> AsyncIterator[KG]:
    """One kg server (stdio) per test module, default project `defproj`."""
    transport = "stdio"
    root = servers_root / f"{request.module.__name__.rsplit('.', 1)[-1]}-{transport}"
    async with kg_session(transport, root, "--toolsets", "kg", "--project", DEFAULT_PROJECT) as kg:
        kg.default_project = DEFAULT_PROJECT
        yield kg


@pytest.fixture
def kg(kg_server: KG) -> KG:
    return kg_server


@pytest.fixture
def project() -> str:
    """A fresh project id per test, so tests sharing a server never see each other's data."""
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def no_database_left_behind(tmp_path: Path) -> Iterator[None]:
    """Fails a test that leaves a FalkorDB process under its tmp_path. Request it first, so it
    checks after every other fixture of the test has cleaned up."""
    yield
    assert redis_servers_under(tmp_path) == []


@pytest.fixture
def servers() -> Iterator[list[HttpServer]]:
    """Every polyg server a test starts; stopped (and any embedded FalkorDB reaped) at the end."""
    started: list[HttpServer] = []
    yield started
    for server in started:
        server.stop()
