"""A polyg server over MCP stdio for a benchmark: its environment, its calls, its memory, a served copy."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.lib.database import read_db_pid, stop_db
from bench.lib.datadirs import fresh_copy
from bench.lib.env import clean_env, polyg_executable
from bench.lib.procs import find_child, memory_kb
from bench.lib.stats import summarize

SERVER_MS_META = "polyg/serverMs"
STILL_LOADING = "Error: The store is still loading"


def server_ms(result: Any) -> float | None:
    """The handler time polyg reports in a tool result's `_meta` (argument validation to
    result, without the MCP transport), or None from a server that does not report it."""
    meta = getattr(result, "meta", None) or {}
    value = meta.get(SERVER_MS_META)
    return float(value) if isinstance(value, int | float) else None


class McpCalls:
    """Tool calls and pings over an MCP client session held in `self.client`."""

    client: Any

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """call_tool; raise if the tool answered with an error. A call answered "the store is
        still loading" (polyg waits `store_wait_s` for it; a 100k store loads for minutes) is
        made again: a benchmark's calls are about a loaded store."""
        while True:
            result = await self.client.call_tool(name, arguments)
            if not result.is_error:
                return result
            text = result.content[0].text if result.content else ""
            if not text.startswith(STILL_LOADING):
                raise RuntimeError(f"{name} failed: {text}")

    async def ping(self) -> None:
        # The legacy ping is deprecated for 2026 protocol versions; the bench uses legacy mode.
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await self.client.send_ping()


class PolygServer(McpCalls):
    """`polyg serve --data-dir DIR` over stdio, driven by the MCP Python client.

    Times process spawn -> `initialize` answered (`init_s`). The server's stderr (its JSON
    log lines) goes to `log_path`. On exit the client closes stdin (polyg then stops its
    embedded FalkorDB); anything left running in the data dir is stopped by pid.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        log_path: Path,
        env: dict[str, str],
        extra_args: Sequence[str] = (),
        command: Sequence[str] | None = None,
        mode: str = "legacy",
        read_timeout_s: float | None = 600.0,
        shared_db: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.log_path = log_path
        self.env = env
        self.extra_args = list(extra_args)
        self.command = list(command) if command else [polyg_executable()]
        self.mode = mode
        self.read_timeout_s = read_timeout_s
        self.shared_db = shared_db  # a HeldDatabase owns the database: neither refuse nor stop it
        self.client: Any = None
        self.pid: int | None = None
        self.db_pid: int | None = None
        self.t_spawn = 0.0
        self.init_s = float("nan")
        self.protocol_version = ""
        self.leftover_db = False
        self._stack: AsyncExitStack | None = None
        self._errlog: IO[str] | None = None

    async def __aenter__(self) -> PolygServer:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        if not self.shared_db and read_db_pid(self.data_dir) is not None:
            raise RuntimeError(f"a FalkorDB server is already running on {self.data_dir}")
        params = StdioServerParameters(
            command=self.command[0],
            args=[*self.command[1:], "serve", "--data-dir", str(self.data_dir), *self.extra_args],
            env=self.env,
        )
        self._errlog = self.log_path.open("a")
        stack = AsyncExitStack()
        self.t_spawn = time.perf_counter()
        try:
            # Client(StdioServerParameters) would send the server's stderr to ours; the
            # transport is the same stdio_client, given a log file.
            client = Client(
                stdio_client(params, errlog=self._errlog),
                mode=self.mode,
                cache=None,
                read_timeout_seconds=self.read_timeout_s,
            )
            self.client = await stack.enter_async_context(client)
            self.init_s = time.perf_counter() - self.t_spawn
        except BaseException:
            await stack.aclose()
            self._errlog.close()
            if not self.shared_db:
                stop_db(self.data_dir)
            raise
        self._stack = stack
        self.protocol_version = str(self.client.protocol_version)
        self.pid = find_child("serve")
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._stack is not None:
                await self._stack.aclose()
        finally:
            if self._errlog is not None:
                self._errlog.close()
            if not self.shared_db:
                self.leftover_db = await asyncio.to_thread(stop_db, self.data_dir)

    def locate_db(self) -> int | None:
        self.db_pid = read_db_pid(self.data_dir)
        return self.db_pid

    def memory(self) -> dict[str, Any]:
        """Current and peak RSS of the server (with its children) and of the database process."""
        out: dict[str, Any] = {}
        if self.pid is not None:
            out["server"] = memory_kb(self.pid)
        db = self.db_pid or self.locate_db()
        if db is not None:
            out["db"] = memory_kb(db, with_children=False)
        return out


def client_check(schema: dict[str, Any], results: list[Any], rounds: int = 10) -> dict[str, float]:
    """Time of the Python client's output-schema check of these results (a compiled validator,
    `best_match` over `iter_errors`, as the client runs it on every call)."""
    from jsonschema import exceptions, validators

    validator = validators.validator_for(schema)(schema)
    times = []
    for _ in range(rounds):
        for body in results:
            t = time.perf_counter()
            exceptions.best_match(validator.iter_errors(body))
            times.append(time.perf_counter() - t)
    return summarize(times)


@dataclass
class ServedCopy:
    """A polyg server over stdio on a fresh copy of a pristine data dir, its store ready."""

    server: PolygServer
    run_dir: Path
    env: dict[str, str]
    ready_s: float


@contextlib.asynccontextmanager
async def served_copy(
    pristine: Path, base: Path, workdir: Path, toolsets: str = "memory", embedder: str | None = None
) -> AsyncIterator[ServedCopy]:
    """Copy `pristine` to `base`/run, serve it (`toolsets`) over stdio, its log in
    `base`/server.log, and wait until the store and its indexes answer (`ready_s`). `embedder`:
    the one the preload made the vectors with, when not the default (queries are embedded alike)."""
    run_dir = base / "run"
    await asyncio.to_thread(fresh_copy, pristine, run_dir)
    log_path = base / "server.log"
    log_path.write_text("")
    env = clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": embedder} if embedder else None)
    async with PolygServer(run_dir, log_path=log_path, env=env, extra_args=["--toolsets", toolsets]) as server:
        t = time.perf_counter()
        await server.call("get_statistics", {})  # waits for the store (again while it loads) and its indexes
        yield ServedCopy(server, run_dir, env, time.perf_counter() - t)
