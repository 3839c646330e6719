"""One polyg core on an embedded FalkorDB per test module; each test works in its own project."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from polyg.config import load_settings
from polyg.core.app import Polyg, Services
from polyg.embed import create_embedder


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
