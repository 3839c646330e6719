"""One real FalkorDB cluster for the whole session (3 primaries, one replica each), started
only when a cluster test runs. Tests that kill nodes bring them back before they return."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
