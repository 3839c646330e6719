"""Helpers for tests that drive a real `polyg serve` subprocess through the MCP client.

Every server gets its own directory (data, logs, HOME and XDG dirs), so nothing a test does
touches the user's home or another test's database. Readiness is always polled, never slept.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.to_thread
import httpx
import httpx2
import jsonschema
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextResourceContents

from bench.lib.env import FORKED_POLYG_ENV
from tests.fork_runner import REAL_POLYG, forked_polyg
from tests.ports import free_port

# The variables polyg reads; the developer's own values must not leak into a test server.
_POLYG_ENV_PREFIXES = ("POLYG_", "FALKORDB_")
_POLYG_ENV_NAMES = {"PORT", "LOG_LEVEL", "EMBEDDING_MODEL"}

POLL_S = 0.05
HEALTH_TIMEOUT_S = 60.0

__all__ = ["free_port"]  # re-exported: tests import it from here

# `httpx.get` builds a client, and with it a TLS context, for every request: about 30 ms of CPU,
# and a server's start polls /health dozens of times. One client serves every such request of
# the run; without keep-alive, each request opens its own connection (a kept one could outlive
# the server it reached, or reach another that took its port).
LOCAL_HTTP = httpx.Client(timeout=5, limits=httpx.Limits(max_keepalive_connections=0))


def polyg_command() -> list[str]:
    """How a test starts `polyg`: forked from this worker's runner (tests/fork_runner.py), or in
    a bench script run by the bench smoke test, by that test's runner."""
    if forked := os.environ.get(FORKED_POLYG_ENV):
        return [forked]
    return forked_polyg() or list(REAL_POLYG)


MODEL_CACHE_DIR = Path(tempfile.gettempdir()) / "polyg-test-model-cache"


def server_env(root: Path, **extra: str) -> dict[str, str]:
    """An environment for a server rooted at `root`: temp HOME/XDG dirs and log dir, no POLYG_* leaks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_POLYG_ENV_PREFIXES) and k not in _POLYG_ENV_NAMES}
    home = root / "home"
    for sub in ("config", "data", "cache", "state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_STATE_HOME=str(home / "state"),
        POLYG_LOG_DIR=str(root / "logs"),
        # The int8 model copy is derived once for the whole run, not once per server's HOME.
        POLYG_CACHE_DIR=str(MODEL_CACHE_DIR),
        PYTHONUNBUFFERED="1",
        # The English pipeline loads on a server's first remember, not at its start: most test
        # servers never parse, and the load is about 1 s of CPU each (tests/e2e/test_preload.py
        # covers the default, preloading).
        POLYG_PRELOAD_NLP="false",
    )
    env.update(extra)
    _count_start(root)
    return env


def _count_start(root: Path) -> None:
    """With POLYG_TESTS_STARTS_LOG set (in the tests' own environment), one line per server
    environment made, naming the test: how many servers a run starts, and where."""
    log = os.environ.get("POLYG_TESTS_STARTS_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}\t{root.name}\n")


def serve_args(data_dir: Path, *extra: str) -> list[str]:
    return ["serve", "--data-dir", str(data_dir), *extra]


# --- calling tools -------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    is_error: bool
    structured: dict[str, Any]  # a success's structuredContent; {} for an error, which has none
    text: str
    error_code: int | None = None  # an error's `_meta` "polyg/errorCode"
    server_ms: float = 0.0  # `_meta` "polyg/serverMs"

    @property
    def code(self) -> int:
        assert self.error_code is not None, f"not an error: {self.text}"
        return self.error_code

    @property
    def message(self) -> str:
        """An error's message: its text without the leading `Error: `."""
        assert self.is_error, self.text
        return self.text.removeprefix("Error: ")


# What each client's server publishes of its tools' output schemas, kept for the client's
# session (by id, as Client is unhashable; the weak reference tells a reused id apart): the lean
# `outputSchema` of tools/list, and the full one, read once per tool from its page.
_output_schemas: dict[int, tuple[weakref.ref[Client], dict[str, dict[str, Any] | None]]] = {}
_full_schemas: dict[int, tuple[weakref.ref[Client], dict[str, dict[str, Any] | None]]] = {}


def _cached[T](cache: dict[int, tuple[weakref.ref[Client], T]], client: Client, make: T) -> T:
    known = cache.get(id(client))
    if known is not None and known[0]() is client:
        return known[1]
    cache[id(client)] = (weakref.ref(client), make)
    return make


async def output_schemas(client: Client) -> dict[str, dict[str, Any] | None]:
    known = _output_schemas.get(id(client))
    if known is not None and known[0]() is client:
        return known[1]
    listed = (await client.list_tools()).tools
    return _cached(_output_schemas, client, {tool.name: tool.output_schema for tool in listed})


_SCHEMA_BLOCK = re.compile(r"## Output schema\n\n```json\n(?P<json>.*?)\n```", re.DOTALL)


async def full_output_schema(client: Client, tool: str) -> dict[str, Any] | None:
    """The whole output schema the server publishes for `tool` on its page `polyg://tools/{tool}`
    (tools/list carries only its top level: `polyg.tools.listing`); None for a tool it does not
    serve. Read once per tool and session."""
    schemas = _cached(_full_schemas, client, {})
    if tool not in schemas:
        if tool not in await output_schemas(client):
            return None
        page = await client.read_resource(f"polyg://tools/{tool}")
        text = page.contents[0].text if isinstance(page.contents[0], TextResourceContents) else ""
        found = _SCHEMA_BLOCK.search(text)
        assert found is not None, f"{tool}: its page publishes no output schema:\n{text}"
        schemas[tool] = json.loads(found["json"])
    return schemas[tool]


def schema_violations(schema: dict[str, Any], value: Any) -> list[str]:
    """Each way `value` breaks `schema` (JSON Schema 2020-12, formats checked), as `at <path>:
    <message>`, the offending value cut short."""
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(value), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"at {error.json_path}: {error.message[:300]}" for error in errors]


def check_as_a_validating_client(tool: str, schema: dict[str, Any] | None, result: Any) -> None:
    """What the TypeScript SDK's client does with a result of a tool that declares an output
    schema (it throws -32602 otherwise, and the host never sees the result): structured content,
    whenever present (on an error too), must validate against the schema, and a success must
    carry it."""
    if schema is None:
        return
    structured = result.structured_content
    if structured is None:
        assert result.is_error, f"{tool}: a success without structured content, though the tool declares a schema"
        return
    problems = schema_violations(schema, structured)
    assert not problems, f"{tool}: structured content does not match the listed output schema: " + "; ".join(problems)


async def check_result(client: Client, tool: str, result: Any) -> None:
    """Every check a result of `tool` must pass against what the server publishes: the listed
    schema as a validating client applies it, and the tool's full output schema, so a result
    that contradicts its own declared shape anywhere fails the test that got it."""
    check_as_a_validating_client(tool, (await output_schemas(client)).get(tool), result)
    structured = result.structured_content
    if structured is None:
        return
    schema = await full_output_schema(client, tool)
    if schema is None:
        return
    problems = schema_violations(schema, structured)
    assert not problems, (
        f"{tool}: its result breaks the output schema published on polyg://tools/{tool} "
        f"({len(problems)} problems):\n  " + "\n  ".join(problems[:10])
    )


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> Result:
    """Call a tool and check the invariants every polyg result keeps.

    Every result: one text item; `_meta` with "polyg/requestId" and "polyg/serverMs" (a float,
    milliseconds); whatever a validating client checks and the full published output schema (`check_result`).
    Success: structuredContent is the text parsed as JSON (JSON tools) or {"message": text}
    (sentence tools). Error: text `Error: <message>`, no structuredContent, and the 4-digit
    code in `_meta` "polyg/errorCode".
    """
    result = await client.call_tool(tool, args or {})
    await check_result(client, tool, result)
    assert len(result.content) == 1, result.content
    item = result.content[0]
    assert item.type == "text", item
    text = item.text
    meta = result.meta or {}
    assert isinstance(meta.get("polyg/requestId"), str), meta
    server_ms = meta.get("polyg/serverMs")
    assert isinstance(server_ms, float) and server_ms >= 0.0, meta
    structured = result.structured_content
    if result.is_error:
        assert text.startswith("Error: "), text
        assert structured is None, structured
        code = meta.get("polyg/errorCode")
        assert isinstance(code, int) and 1000 <= code <= 9999, meta
        return Result(True, {}, text, code, server_ms)
    assert "polyg/errorCode" not in meta, meta
    assert isinstance(structured, dict), result
    if set(structured) == {"message"}:
        assert structured == {"message": text}, (structured, text)
    else:
        assert structured == json.loads(text), (structured, text)
    return Result(False, structured, text, None, server_ms)


async def ok(client: Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; return its structuredContent."""
    result = await call(client, tool, args)
    assert not result.is_error, f"{tool}({args}) failed: {result.text}"
    return result.structured


async def fails(client: Client, tool: str, args: dict[str, Any] | None = None, *, code: int) -> Result:
    """Call a tool that must fail with `code`; return the result."""
    result = await call(client, tool, args)
    assert result.is_error, f"{tool}({args}) unexpectedly succeeded: {result.text}"
    assert result.code == code, result
    return result


# --- servers -------------------------------------------------------------------------------


def embedded_pid(data_dir: Path) -> int | None:
    """The pid of the embedded FalkorDB of a data dir, if it is still running."""
    try:
        pid = int((data_dir / "db" / "falkordb.pid").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"redis-server" in cmdline else None


def redis_servers_under(root: Path) -> list[int]:
    """Pids of redis-server processes whose command line names a path under `root`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"redis-server" in cmdline and str(root).encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def reap_embedded(data_dir: Path) -> bool:
    """Kill an embedded FalkorDB left behind by a server that did not shut down cleanly.

    Returns whether one was found (a clean shutdown leaves none).
    """
    pid = embedded_pid(data_dir)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return True


@dataclass
class HttpServer:
    """`polyg serve --transport http` in a subprocess; stderr goes to `root/stderr.log`."""

    root: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    # Set by stop(): whether an embedded FalkorDB outlived the server and had to be killed.
    left_embedded_behind: bool = False
    _stderr: IO[bytes] | None = None
    _own_port: bool = False
    _stderr_from: int = 0

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def stderr_path(self) -> Path:
        return self.root / "stderr.log"

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def start(self) -> HttpServer:
        self.root.mkdir(parents=True, exist_ok=True)
        # A port we pick ourselves may be taken by another run between the pick and the bind:
        # then _check_alive starts the server again on another one.
        self._own_port = self._own_port or not self.port
        self.port = self.port or free_port()
        command = [
            *polyg_command(),
            *serve_args(self.data_dir, "--transport", "http", "--host", self.host, "--port", str(self.port)),
            *self.args,
        ]
        self._stderr = self.stderr_path.open("ab")
        self._stderr_from = self._stderr.tell()  # this start's output begins here (the file is shared)
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._stderr,
            stderr=self._stderr,
            env=server_env(self.root, **self.env),
        )
        return self

    def health(self) -> httpx.Response:
        return LOCAL_HTTP.get(f"{self.base_url}/health")

    def wait_listening(self, timeout: float = HEALTH_TIMEOUT_S) -> dict[str, Any]:
        """Poll /health until it answers (any status); return its first body."""
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            try:
                return dict(self.health().json())
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"polyg did not listen on {self.port}:\n{self.stderr_text()}")
            time.sleep(POLL_S)

    def wait_ready(self, timeout: float = HEALTH_TIMEOUT_S) -> dict[str, Any]:
        """Poll /health until it says ok; return the body."""
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            try:
                body = dict(self.health().json())
                if body["status"] == "ok":
                    return body
                assert body["status"] == "loading", body
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"polyg not ready on {self.port}:\n{self.stderr_text()}")
            time.sleep(POLL_S)

    def _port_was_taken(self) -> bool:
        """Whether this start (not an earlier server of the same root) failed on a port in use."""
        with self.stderr_path.open("rb") as f:
            f.seek(self._stderr_from)
            return b"address already in use" in f.read().lower()

    def _check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None and self._own_port and self._port_was_taken():
            if self._stderr is not None:
                self._stderr.close()
            self.port = free_port()
            self.start()
            return
        if self.proc.poll() is not None:
            raise RuntimeError(f"polyg exited with {self.proc.returncode}:\n{self.stderr_text()}")

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (uvicorn shuts down gracefully and closes the store), SIGKILL if it hangs."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self.left_embedded_behind = reap_embedded(self.data_dir)
        return self.proc.returncode if self.proc is not None else None

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def authorized_client(url: str, api_key: str | None, **headers: str) -> Client:
    """An MCP client for `url` whose every request carries the given headers (and bearer key)."""
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
    return Client(_owned(streamable_http_client(url, http_client=http), http))


@contextlib.asynccontextmanager
async def _owned(transport: Any, http: httpx2.AsyncClient) -> AsyncIterator[Any]:
    async with http, transport as streams:
        yield streams


@contextlib.contextmanager
def open_log(path: Path) -> Iterator[IO[str]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        yield f


def stdio_client_for(root: Path, *extra_args: str, errlog: IO[str], **env: str) -> Client:
    """An MCP client that spawns `polyg serve` (stdio) rooted at `root`; the server's stderr goes to errlog."""
    command, *prefix = polyg_command()
    params = StdioServerParameters(
        command=command,
        args=[*prefix, *serve_args(root / "data", *extra_args)],
        env=server_env(root, **env),
    )
    return Client(stdio_client(params, errlog=errlog))


# --- a connected kg client -------------------------------------------------------------------


@dataclass
class KG:
    """A connected MCP client plus shorthands that check polyg's result invariants."""

    client: Client
    transport: str
    root: Path
    default_project: str = "default"

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> Result:
        return await call(self.client, tool, args)

    async def ok(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        return await ok(self.client, tool, args)

    async def fails(self, tool: str, args: dict[str, Any] | None = None, *, code: int) -> Result:
        return await fails(self.client, tool, args, code=code)


@contextlib.asynccontextmanager
async def kg_session(transport: str, root: Path, *args: str, **env: str) -> AsyncIterator[KG]:
    """Start `polyg serve` over `transport` in `root` and connect the MCP client to it.

    The server's stderr goes to `root/stderr.log`; on exit the server is stopped, and an
    embedded FalkorDB it failed to shut down is killed.
    """
    if transport == "stdio":
        with open_log(root / "stderr.log") as errlog:
            try:
                async with stdio_client_for(root, *args, errlog=errlog, **env) as client:
                    yield KG(client, transport, root)
            finally:
                reap_embedded(root / "data")
    else:
        server = HttpServer(root, args=list(args), env=env).start()
        try:
            await anyio.to_thread.run_sync(server.wait_ready)
            async with Client(server.url) as client:
                yield KG(client, transport, root)
        finally:
            await anyio.to_thread.run_sync(server.stop)
