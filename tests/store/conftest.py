"""Fixtures for the store contract suite: one polyg core per store mode.

`services` runs each test against the embedded store, a real FalkorDB server on loopback TCP,
and the same server behind a password (given the way users give it: `FALKORDB_PASSWORD`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from polyg.config import Settings, load_settings
from polyg.core.graph.vectorizer import TASK_NAME as VECTORIZER_TASK
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg, Services
from tests.falkor_server import FalkorServer

MODES = ("embedded", "server", "server-password")
PASSWORD = "contract-s3cret"


@pytest.fixture(scope="session")
def falkor_server() -> Iterator[FalkorServer]:
    with FalkorServer() as server:
        yield server


@pytest.fixture(scope="session")
def falkor_server_with_password() -> Iterator[FalkorServer]:
    with FalkorServer(password=PASSWORD) as server:
        yield server


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user configuration leaks in: no config file, no POLYG_* or FALKORDB_* variables."""
    for name in list(os.environ):
        if name.startswith(("POLYG_", "FALKORDB_")) or name == "EMBEDDING_MODEL":
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


@dataclass
class StoreMode:
    name: str
    settings: Callable[..., Settings]
    server: FalkorServer | None


@pytest.fixture(params=MODES)
def store_mode(request: pytest.FixtureRequest, clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StoreMode]:
    mode: str = request.param
    server: FalkorServer | None = None
    store: str | None = None
    if mode == "server":
        server = request.getfixturevalue("falkor_server")
    elif mode == "server-password":
        server = request.getfixturevalue("falkor_server_with_password")
        monkeypatch.setenv("FALKORDB_PASSWORD", PASSWORD)
    if server is not None:
        store = server.url
        _flush(server)  # whatever ran on this session's server before, the test starts on an empty one

    def settings(**overrides: Any) -> Settings:
        return load_settings(None, data_dir=clean_env / "data", store=store, log_dir=clean_env / "logs", **overrides)

    yield StoreMode(mode, settings, server)
    if server is not None:
        _flush(server)  # the servers are shared by the whole session: nothing is left to the next


def _flush(server: FalkorServer) -> None:
    client = server.client()
    try:
        client.flushall()
    finally:
        client.close()


def running_vectorizers() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task.get_name() == VECTORIZER_TASK and not task.done()}


@pytest.fixture
async def core(store_mode: StoreMode) -> AsyncIterator[Polyg]:
    before = running_vectorizers()
    polyg = Polyg(store_mode.settings(), embedder=create_embedder("hashing"))
    try:
        yield polyg
    finally:
        await polyg.close()
    # A vectorizer the test started and never closed (a second GraphContext or Vectorizer of its
    # own) goes on writing after the test: when the worker's event loop outlives the test (a
    # session-scoped async fixture keeps it open), onto the session's shared server after its
    # flush, where the next test finds a project it never made.
    left = running_vectorizers() - before
    assert not left, "the test left a vectorizer running: close every GraphContext or Vectorizer it makes"


@pytest.fixture
async def services(core: Polyg) -> Services:
    return await core.ready()
