"""The embedded FalkorDB of a data dir: its pid, stopping it after a crash, holding it open."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from bench.lib.procs import cmdline, pid_alive

# How long stop_db lets a polyg that is shutting its server down finish before stepping in.
SHUTDOWN_GRACE_S = 5.0


def db_pid_file(data_dir: Path) -> Path:
    """Where polyg's embedded store writes the FalkorDB (redis-server) pid."""
    return Path(data_dir) / "db" / "falkordb.pid"


def read_db_pid(data_dir: Path) -> int | None:
    """The pid of the data dir's running redis-server, or None."""
    try:
        pid = int(db_pid_file(data_dir).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) and "redis-server" in cmdline(pid) else None


def stop_db(data_dir: Path, *, timeout: float = 60.0) -> bool:
    """Make sure the data dir's redis-server is gone: wait, then SHUTDOWN, then SIGTERM/SIGKILL.

    polyg's last process shuts the server down itself; this only cleans up after a crash or
    a client that killed polyg before it got there. Returns True if it had to intervene.
    """
    pid = read_db_pid(data_dir)
    if pid is None:
        return False
    deadline = time.monotonic() + SHUTDOWN_GRACE_S
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
    if not pid_alive(pid):
        return False
    sock = Path(data_dir) / "db" / "falkordb.sock"
    with contextlib.suppress(Exception):
        import redis

        redis.Redis(unix_socket_path=str(sock), socket_timeout=timeout).shutdown()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (timeout if sig is None else 10.0)
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.05)
        if not pid_alive(pid):
            break
    return True


def kill_db(data_dir: Path) -> bool:
    """SIGKILL the data dir's redis-server (for disposable copies only: a database still
    building its indexes answers nothing, SHUTDOWN included, until it is done)."""
    pid = read_db_pid(data_dir)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
    return True


class HeldDatabase:
    """The data dir's embedded FalkorDB, started and held open with polyg's own EmbeddedFalkor.

    polyg servers started meanwhile attach to it (the embedded store is shared per data dir),
    so a session measures a loaded database whatever its load time. `load_s` is start ->
    loaded (answers PING), as measured by EmbeddedFalkor, which waits through silent loading.
    """

    def __init__(self, data_dir: Path, *, timeout_s: float = 1800.0) -> None:
        self.data_dir = Path(data_dir)
        self.timeout_s = timeout_s
        self.load_s = float("nan")
        self.pid: int | None = None
        self._db: Any = None

    def __enter__(self) -> HeldDatabase:
        from polyg.store.embedded import EmbeddedFalkor

        self._db = EmbeddedFalkor(self.data_dir / "db", start_timeout=self.timeout_s)
        t = time.perf_counter()
        self._db.start()
        try:
            self._db.wait_until_loaded(self.timeout_s)
        except BaseException:
            self._db.stop()
            raise
        self.load_s = time.perf_counter() - t
        self.pid = read_db_pid(self.data_dir)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.stop()
