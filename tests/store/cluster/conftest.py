"""One real FalkorDB cluster for the whole session (3 primaries, one replica each), started
only when a cluster test runs. Tests that kill nodes bring them back before they return."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from polyg.config import Settings, load_settings
from polyg.runtime.app import Services
from tests.falkor_cluster import FalkorCluster


@pytest.fixture(scope="session")
def falkor_cluster() -> Iterator[FalkorCluster]:
    with FalkorCluster() as cluster:
        yield cluster


@pytest.fixture
def cluster(falkor_cluster: FalkorCluster) -> Iterator[FalkorCluster]:
    """The session's cluster, whole again after the test (a killed node restarted, the
    cluster healthy)."""
    yield falkor_cluster
    falkor_cluster.heal()


@pytest.fixture
def settings(tmp_path: Path, cluster: FalkorCluster) -> Callable[..., Settings]:
    """Settings for a polyg core on the cluster, with `overrides`."""

    def make(**overrides: Any) -> Settings:
        base: dict[str, Any] = {"data_dir": tmp_path / "data", "log_dir": tmp_path / "logs", "store": cluster.url}
        return load_settings(None, **{**base, **overrides})

    return make


async def drop(s: Services, project: str) -> None:
    """Delete a project as the core does: its queued vectors first, which would otherwise be
    written after the delete and make the graph again."""
    await s.ctx.vectors.forget(project)
    await s.store.delete_project(project)
