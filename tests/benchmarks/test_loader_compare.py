"""bench/latency/loader_compare.py runs each loader in a child process whose embedded database
daemonizes: a child that fails (or is stopped) must not leave that database running."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench.latency.loader_compare import child
from bench.lib import database
from tests.mcp_helpers import redis_servers_under

# A loader step that dies with its database up: it starts the data dir's embedded store and
# exits with an error before detaching (as a preload that fails midway did).
DIES_WITH_ITS_DATABASE_UP = """
import sys
from pathlib import Path
from polyg.store.embedded import EmbeddedFalkor
db = EmbeddedFalkor(Path(sys.argv[1]) / "db")
db.start()
db.wait_until_loaded(120)
print("started", flush=True)
sys.exit(3)
"""


def test_a_failing_loader_leaves_no_database_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The child exits without a shutdown under way: stop_db's grace for one (5 s) would only
    # be waited out before it steps in.
    monkeypatch.setattr(database, "SHUTDOWN_GRACE_S", 0.0)
    data = tmp_path / "data"
    log_file = tmp_path / "child.log"
    with pytest.raises(RuntimeError, match="failed"):
        child([sys.executable, "-c", DIES_WITH_ITS_DATABASE_UP, str(data)], tmp_path, log_file, data)
    assert (data / "db").exists(), log_file.read_text()  # the child did start its database
    assert redis_servers_under(tmp_path) == []
