"""Starting and stopping `polyg serve`: stdout hygiene, logs, the handshake before the store, shutdown.

Tests that do not care about embeddings use the hashing embedder (it starts instantly).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.to_thread
import httpx
import pytest
from mcp import Client

from tests.fakes.openai_server import FakeOpenAIServer
from tests.mcp_helpers import (
    KG,
    HttpServer,
    embedded_pid,
    kg_session,
    ok,
    polyg_command,
    redis_servers_under,
    serve_args,
    server_env,
)

pytestmark = pytest.mark.anyio

FAST = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
STILL_LOADING = re.compile(r"Error: The store is still loading \(\d+ s so far\); try again\.")
PROTOCOL_VERSION = "2025-06-18"


class RawStdio:
    """`polyg serve` over stdio driven by hand, so every byte on its stdout can be inspected."""

    def __init__(self, root: Path, *args: str, sigint_ignored: bool = False, **env: str) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.stderr_path = root / "stderr.log"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [*polyg_command(), *serve_args(root / "data", *args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=server_env(root, **env),
            # As a shell starts a background job: SIGINT ignored, and the ignoring inherited.
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
        )
        self.lines: list[bytes] = []  # every line the server wrote to stdout
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        self._next_id = 0

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def next_message(self, timeout: float = 30) -> dict[str, Any]:
        """The next line the server writes, parsed (fails if it writes none in time)."""
        line = self._queue.get(timeout=timeout)
        assert line is not None, f"stdout closed:\n{self.stderr()}"
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        deadline = time.monotonic() + timeout
        while True:
            line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert line is not None, f"stdout closed:\n{self.stderr()}"
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == rid:
                return message

    def initialize(self) -> dict[str, Any]:
        response = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        return result

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close(self, timeout: float = 20) -> int:
        """Close stdin (how a client ends a stdio session) and wait for the server to exit."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.wait(timeout)

    def wait(self, timeout: float = 20) -> int:
        try:
            rc = self.proc.wait(timeout)
        finally:
            self.kill()
        self._reader.join(5)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self._stderr.closed:
            self._stderr.close()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[list[RawStdio]]:
    """Collects RawStdio servers and kills whatever a failing test leaves running."""
    started: list[RawStdio] = []
    yield started
    for server in started:
        server.kill()
        pid = embedded_pid(server.root / "data")
        if pid is not None:
            os.kill(pid, signal.SIGKILL)


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def log_lines(text: str) -> list[dict[str, Any]]:
    """The JSON log lines of a server's stderr (over HTTP, it also prints where it listens)."""
    return json_lines("\n".join(line for line in text.splitlines() if line.startswith("{")))


def test_stdout_carries_only_json_rpc_and_logs_go_to_stderr_and_file(servers_root: Path, raw: list[RawStdio]) -> None:
    root = servers_root / "stdio-raw"
    server = RawStdio(root, "--toolsets", "kg", "--project", "logs", **FAST)
    raw.append(server)
    init = server.initialize()
    assert init["result"]["serverInfo"]["name"] == "polyg"
    assert "tools" in init["result"]["capabilities"] and "prompts" in init["result"]["capabilities"]
    tools = server.request("tools/list")["result"]["tools"]
    assert len(tools) == 11
    created = server.call_tool("create_entity", {"name": "logged", "type": "t"})
    assert created.get("isError") is not True, created
    failed = server.call_tool("get_entity", {"entity_id": "ent_missing"})
    assert failed["isError"] is True
    # No structured content on an error (it would contradict the tool's output schema).
    assert "structuredContent" not in failed
    assert failed["content"] == [{"type": "text", "text": "Error: Entity ent_missing not found."}]
    assert failed["_meta"]["polyg/errorCode"] == 4004
    prompts = server.request("prompts/list")["result"]["prompts"]
    assert len(prompts) == 5
    unknown = server.request("no/such_method")
    assert unknown["error"]["code"] == -32601
    assert server.close() == 0

    # stdout: nothing but JSON-RPC 2.0 messages, one per line.
    assert server.lines, "no output"
    for line in server.lines:
        assert line.endswith(b"\n")
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", line
        assert "id" in message or "method" in message, line

    # stderr: JSON log lines, one per tool call, carrying the request id the result carries too.
    logs = json_lines(server.stderr())
    calls = [entry for entry in logs if entry.get("msg") == "tool call"]
    assert [(c["tool"], c["ok"]) for c in calls] == [("create_entity", True), ("get_entity", False)]
    assert calls[1]["code"] == 4004
    for entry, result in zip(calls, (created, failed), strict=True):
        assert entry["request_id"] == result["_meta"]["polyg/requestId"]
        assert entry["level"] == "INFO" and entry["logger"] == "polyg.calls"
        assert isinstance(entry["ms"], (int, float))
    assert len({c["request_id"] for c in calls}) == 2

    # The same lines land in the log file under POLYG_LOG_DIR, and nothing under HOME.
    log_file = root / "logs" / "polyg.log"
    assert log_file.exists()
    file_calls = [entry for entry in json_lines(log_file.read_text()) if entry.get("msg") == "tool call"]
    assert [c["request_id"] for c in file_calls] == [c["request_id"] for c in calls]
    # (FalkorDB's GraphBLAS keeps a JIT cache in ~/.SuiteSparse unless GRAPHBLAS_CACHE_PATH
    # says otherwise; that one is the database engine's, not polyg's.)
    home = root / "home"
    home_files = [p for p in home.rglob("*") if p.is_file() and p.relative_to(home).parts[0] != ".SuiteSparse"]
    assert home_files == []
    assert not (root / "data" / "logs").exists()
    # The session's end shut the embedded database down.
    assert embedded_pid(root / "data") is None


@pytest.mark.parametrize(
    ("signum", "sigint_ignored"),
    [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True)],
    ids=["SIGTERM", "SIGINT", "SIGINT-ignored-by-parent"],
)
def test_a_signal_stops_a_stdio_server_and_its_database(
    servers_root: Path, raw: list[RawStdio], signum: signal.Signals, sigint_ignored: bool
) -> None:
    root = servers_root / f"stdio-{signum.name}-{sigint_ignored}"
    server = RawStdio(root, "--toolsets", "kg", sigint_ignored=sigint_ignored, **FAST)
    raw.append(server)
    server.initialize()
    assert server.call_tool("create_entity", {"name": "x", "type": "t"}).get("isError") is not True
    assert embedded_pid(root / "data") is not None
    server.proc.send_signal(signum)
    assert server.wait(20) == 0
    assert embedded_pid(root / "data") is None
    assert redis_servers_under(root) == []


KEEP = ("--toolsets", "kg", "--project", "keep")


@pytest.fixture(scope="module")
def kept(servers_root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The data directory of a stdio session that created one entity and ended (closing stdin
    stopped the server, with exit code 0, and the server its database), and the entity's
    structured result. Made once: the tests that start servers on it copy it."""
    root = servers_root / "stdio-kept"
    server = RawStdio(root, *KEEP, **FAST)
    try:
        server.initialize()
        created = server.call_tool("create_entity", {"name": "durable", "type": "t", "observations": ["still here"]})
        assert embedded_pid(root / "data") is not None
        assert server.close() == 0
    finally:
        server.kill()
    assert embedded_pid(root / "data") is None
    yield root / "data", created["structuredContent"]


def copy_data(data_dir: Path, root: Path) -> None:
    """Copy a stopped server's data directory to `root/data` (its files are all it is)."""
    shutil.copytree(data_dir, root / "data", ignore=shutil.ignore_patterns("*.sock", "*.pid"))


async def test_closing_the_session_stops_the_database_and_data_persists(
    servers_root: Path, kept: tuple[Path, dict[str, Any]]
) -> None:
    # `kept` checked that closing its session stopped the database; here a new session on its files.
    data_dir, entity = kept
    root = servers_root / "stdio-restart"
    copy_data(data_dir, root)
    async with kg_session("stdio", root, *KEEP, **FAST) as kg:
        assert await kg.ok("get_entity", {"entity_id": entity["entity"]["id"]}) == entity
    assert embedded_pid(root / "data") is None


# --- the handshake does not wait for the store ---------------------------------------------


class BlackHole:
    """A TCP port that accepts connections (the kernel does) but never answers a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def black_hole() -> Iterator[BlackHole]:
    hole = BlackHole()
    yield hole
    hole.close()


async def poll_until_code(kg: KG, code: int) -> str:
    """Call a tool until it fails with `code` (it fails with another code meanwhile)."""
    with anyio.fail_after(60):
        while True:
            result = await kg.call("list_entities", {})
            assert result.is_error, result
            if result.code == code:
                return result.message
            await anyio.sleep(0.1)


async def test_initialize_is_answered_while_the_store_is_loading(servers_root: Path, black_hole: BlackHole) -> None:
    store = f"falkor://127.0.0.1:{black_hole.port}"
    started = time.monotonic()
    async with kg_session(
        "stdio",
        servers_root / "stdio-loading",
        "--toolsets",
        "kg",
        "--store",
        store,
        POLYG_STORE_OPEN_TIMEOUT_S="1",
        # Long socket timeouts: the store stays "loading" until the test closes the black hole.
        POLYG_STORE_TIMEOUT_S="120",
        **FAST,
    ) as kg:
        tools = (await kg.client.list_tools()).tools
        prompts = (await kg.client.list_prompts()).prompts
        handshake_s = time.monotonic() - started
        assert len(tools) == 11 and len(prompts) == 5
        # The store is still opening: a tool call waits (at most store_wait_s, and never longer
        # than the open may take, store_open_timeout_s), then says for how long it has loaded.
        result = await kg.fails("list_entities", {}, code=2005)
        assert STILL_LOADING.fullmatch(result.text), result.text
        # Once the store gives up (the server vanishes), tool calls say why.
        black_hole.close()
        error = await poll_until_code(kg, 2001)
        assert error.startswith(f"Cannot reach FalkorDB at 127.0.0.1:{black_hole.port}")
    # Well under the store's timeouts: the handshake did not wait for the store.
    assert handshake_s < 15, handshake_s


async def test_unreachable_store_is_a_tool_error(servers_root: Path) -> None:
    async with kg_session(
        "stdio", servers_root / "stdio-unreachable", "--toolsets", "kg", "--store", "falkor://127.0.0.1:1", **FAST
    ) as kg:
        assert len((await kg.client.list_tools()).tools) == 11
        for tool, args in (("list_entities", {}), ("create_entity", {"name": "n", "type": "t"})):
            result = await kg.fails(tool, args, code=2001)
            assert result.text.startswith("Error: Cannot reach FalkorDB at 127.0.0.1:1"), result.text
        # Argument errors are still reported as such, without touching the store.
        await kg.fails("create_entity", {"name": 3, "type": "t"}, code=4002)


def test_health_says_loading_then_error(servers_root: Path, black_hole: BlackHole) -> None:
    server = HttpServer(
        servers_root / "http-loading",
        args=["--toolsets", "kg", "--store", f"falkor://127.0.0.1:{black_hole.port}"],
        env={**FAST, "POLYG_STORE_TIMEOUT_S": "120"},
    ).start()
    try:
        body = server.wait_listening()
        assert body == {"status": "loading", "store": f"falkordb-server falkor://127.0.0.1:{black_hole.port}"}
        black_hole.close()
        deadline = time.monotonic() + 60
        while (response := server.health()).status_code != 503:
            assert response.json()["status"] == "loading"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        body = response.json()
        assert body["status"] == "error"
        assert body["error"].startswith(f"Cannot reach FalkorDB at 127.0.0.1:{black_hole.port}")
    finally:
        server.stop()


def test_bad_configuration_exits_with_a_clear_message(servers_root: Path) -> None:
    root = servers_root / "bad-config"
    root.mkdir()
    (root / "bad.yaml").write_text("project: [unclosed\n")
    cases = [
        (["--config", str(root / "missing.yaml")], "code 1001"),
        (["--config", str(root / "bad.yaml")], "code 1002"),
        (["--toolsets", "kg,nope"], "code 1003"),
        (["--transport", "carrier-pigeon"], "code 1003"),
    ]
    for args, code in cases:
        done = subprocess.run(
            [*polyg_command(), *serve_args(root / "data", *args)],
            capture_output=True,
            text=True,
            timeout=60,
            env=server_env(root, **FAST),
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stdout == ""
        assert done.stderr.startswith("Error: "), done.stderr
        assert code in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (root / "data").exists()


def test_stdin_from_a_regular_file_is_served_too(servers_root: Path) -> None:
    # The event loop cannot poll a regular file: polyg then reads through the SDK's own
    # (thread-based) streams. `polyg serve < requests.jsonl` answers, and at the end of the
    # file it exits and stops the database it was still starting.
    root = servers_root / "stdio-file"
    root.mkdir(parents=True, exist_ok=True)
    requests = root / "requests.jsonl"
    init = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "file", "version": "0"}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages))
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [*polyg_command(), *serve_args(root / "data", "--toolsets", "kg")],
            stdin=stdin,
            capture_output=True,
            env=server_env(root, **FAST),
            timeout=60,
            check=False,
        )
    answers = {m["id"]: m for m in json_lines(done.stdout.decode())}
    assert answers[1]["result"]["serverInfo"]["name"] == "polyg", done.stderr.decode()[-2000:]
    assert done.returncode == 0
    assert embedded_pid(root / "data") is None


# --- bad input on stdio ----------------------------------------------------------------------

BAD_LINES = {
    "malformed": b'{"jsonrpc": "2.0", "id": 1, "method": ',
    "lone surrogate": b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "\\ud800"}}',
    "invalid UTF-8": b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "\xff\xfe"}}',
    "nested 300 deep": b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": '
    + b"[" * 300
    + b"]" * 300
    + b"}}",
    "not JSON at all": b"hello",
}


def test_stdio_answers_bad_input_and_a_line_over_the_maximum_with_parse_errors_and_goes_on(
    servers_root: Path, raw: list[RawStdio]
) -> None:
    """Neither bad lines nor one over the maximum end a stdio session (one server for both)."""
    from polyg.stdio import MAX_LINE

    root = servers_root / "stdio-bad-input"
    server = RawStdio(root, "--toolsets", "kg", **FAST)
    raw.append(server)
    server.initialize()
    assert server.call_tool("create_entity", {"name": "before", "type": "t"}).get("isError") is not True
    # A line over the maximum is a parse error, not the end.
    chunk = b"x" * (1024 * 1024)
    for _ in range(MAX_LINE // len(chunk) + 1):
        server.send_raw(chunk)
    server.send_raw(b"\n")
    answer = server.next_message(timeout=120)
    assert answer["error"]["code"] == -32700, answer
    assert server.request("ping")["result"] == {}
    listed = server.call_tool("list_entities", {})["structuredContent"]["entities"]
    assert [e["name"] for e in listed] == ["before"]
    for name, line in BAD_LINES.items():
        server.send_raw(line + b"\n")
        answer = server.next_message()
        assert answer["jsonrpc"] == "2.0" and answer["id"] is None, (name, answer)
        assert answer["error"]["code"] == -32700, (name, answer)
        assert answer["error"]["message"].startswith("Parse error"), (name, answer)
    # JSON that is no JSON-RPC message: invalid request, with its id when it has one.
    server.send_raw(b'{"id": 9, "hello": "world"}\n')
    assert server.next_message()["error"]["code"] == -32600
    # The session goes on.
    assert server.request("ping")["result"] == {}
    assert server.call_tool("list_entities", {}).get("isError") is not True
    # A line cut short by the end of input is answered too, then the server exits.
    server.send_raw(b'{"jsonrpc": "2.0", "id": 10, "meth')
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.next_message()["error"]["code"] == -32700
    assert server.wait(30) == 0
    assert embedded_pid(root / "data") is None


@pytest.mark.parametrize("stdin", ["devnull", "closed-pipe"])
def test_stdio_with_stdin_at_its_end_exits(servers_root: Path, stdin: str) -> None:
    root = servers_root / f"stdio-eof-{stdin}"
    root.mkdir(parents=True, exist_ok=True)
    command = [*polyg_command(), *serve_args(root / "data", "--toolsets", "kg")]
    env = server_env(root, **FAST)
    if stdin == "devnull":
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=60, check=False)
        rc, out, err = done.returncode, done.stdout, done.stderr
    else:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out, err = proc.communicate(b"", timeout=60)
        rc = proc.returncode
    assert rc == 0, err.decode()[-3000:]
    assert out == b""
    assert b"Traceback" not in err
    assert embedded_pid(root / "data") is None


# --- signals ---------------------------------------------------------------------------------


def test_ctrl_c_stops_an_http_server_and_its_database(servers_root: Path) -> None:
    root = servers_root / "http-sigint"
    server = HttpServer(root, args=["--toolsets", "kg"], env=FAST).start()
    try:
        server.wait_ready()
        assert redis_servers_under(root), "the embedded database is not running"
        assert server.proc is not None
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(30) == 0, server.stderr_text()[-3000:]
        assert redis_servers_under(root) == []
    finally:
        server.stop()


# --- signals while the store loads -----------------------------------------------------------


def silent_database(data_dir: Path) -> int:
    """The pid of an embedded FalkorDB for `data_dir`, started by a process that has exited since
    (as one killed with -9 leaves it: no user holds it), then stopped with SIGSTOP.

    It accepts connections and answers nothing, SHUTDOWN and SIGTERM included: what FalkorDB
    does while it builds its indexes after a restart (a minute for 100k vectors), and the same
    code path in polyg (it attaches, waits for a PING, is the only user when it stops), without
    a store that takes minutes to build for each test."""
    start = "import sys; from polyg.store.embedded import EmbeddedFalkor; EmbeddedFalkor(sys.argv[1]).start()"
    subprocess.run([sys.executable, "-c", start, str(data_dir / "db")], check=True, timeout=60)
    pid = embedded_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    return pid


def wait_for_log(read: Callable[[], str], message: str, timeout: float = 60) -> None:
    """Poll a server's stderr until a JSON log line's message starts with `message`."""
    deadline = time.monotonic() + timeout
    while not any(entry.get("msg", "").startswith(message) for entry in log_lines(read())):
        assert time.monotonic() < deadline, f"no log line {message!r}:\n{read()[-3000:]}"
        time.sleep(0.05)


def is_gone(pid: int) -> bool:
    """Whether process `pid` has exited (a zombie not yet reaped counts as gone)."""
    try:
        return not Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


LOADING = "FalkorDB in "  # "FalkorDB in <dir> is loading its data and building its indexes"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_stdio_server_whose_store_is_loading(
    servers_root: Path, raw: list[RawStdio], kept: tuple[Path, dict[str, Any]], signum: signal.Signals
) -> None:
    root = servers_root / f"stdio-loading-{signum.name}"
    # The data a stdio server wrote and closed cleanly (`kept`), copied for this test.
    data_dir, made = kept
    entity = made["entity"]
    copy_data(data_dir, root)
    database = silent_database(root / "data")
    server = RawStdio(root, *KEEP, **FAST)
    raw.append(server)
    server.initialize()
    wait_for_log(server.stderr, LOADING)
    server.proc.send_signal(signum)
    # Within a few seconds (not after the whole stop timeout a silent database would take),
    # and the database it was the only user of is gone.
    assert server.wait(15) == 0, server.stderr()[-3000:]
    assert embedded_pid(root / "data") is None and is_gone(database)
    # Loading had only read the files: a new server finds everything.
    again = RawStdio(root, *KEEP, **FAST)
    raw.append(again)
    again.initialize()
    found = again.call_tool("get_entity", {"entity_id": entity["id"]})["structuredContent"]["entity"]
    assert found["name"] == "durable"
    assert again.close() == 0


def test_a_tool_call_says_the_store_is_loading_then_works(servers_root: Path, raw: list[RawStdio]) -> None:
    root = servers_root / "stdio-loading-call"
    database = silent_database(root / "data")
    server = RawStdio(root, "--toolsets", "kg", POLYG_STORE_WAIT_S="1", **FAST)
    raw.append(server)
    server.initialize()
    wait_for_log(server.stderr, LOADING)
    # The call waits store_wait_s for the store, then says how long it has been loading.
    failed = server.call_tool("list_entities", {})
    assert failed["isError"] is True and failed["_meta"]["polyg/errorCode"] == 2005
    text = failed["content"][0]["text"]
    assert STILL_LOADING.fullmatch(text), text
    os.kill(database, signal.SIGCONT)
    wait_for_log(server.stderr, "store ready")
    assert server.call_tool("list_entities", {}).get("isError") is not True
    assert server.close() == 0
    # Start-up says the store is opening, that the database is loading, and when it is ready.
    logs = {entry["msg"]: entry for entry in json_lines(server.stderr()) if entry["logger"] != "polyg.calls"}
    data = (root / "data" / "db").resolve()
    assert list(logs)[:5] == [
        "opening the store",
        f"FalkorDB in {data} is loading its data and building its indexes",
        "a call waits for the store",
        *[m for m in logs if re.fullmatch(rf"FalkorDB in {re.escape(str(data))} loaded in \d+\.\d s", m)],
        "store ready",
    ], list(logs)
    assert logs["store ready"]["seconds"] > 0, logs["store ready"]


def call_over_http(url: str, tool: str) -> dict[str, Any]:
    """A session of one tool call over Streamable HTTP, by hand: the JSON-RPC answer to the call.
    (The SDK's client would post again as it closes, to a server this test has stopped.)"""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    with httpx.Client(timeout=60) as http:

        def post(message: dict[str, Any]) -> httpx.Response:
            return http.post(url, headers=headers, json={"jsonrpc": "2.0", **message})

        opened = post({"id": 1, "method": "initialize", "params": init})
        headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL_VERSION}
        post({"method": "notifications/initialized"})
        answer = post({"id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
    if answer.headers["content-type"].startswith("application/json"):
        return dict(answer.json())
    events = [json.loads(line.removeprefix("data:")) for line in answer.text.splitlines() if line.startswith("data:")]
    return next(event for event in events if event.get("id") == 2)


def test_sigterm_stops_an_http_server_whose_store_is_loading(servers_root: Path) -> None:
    root = servers_root / "http-loading-sigterm"
    database = silent_database(root / "data")
    server = HttpServer(root, args=["--toolsets", "kg"], env=FAST).start()
    assert server.proc is not None
    try:
        server.wait_listening()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(call_over_http, server.url, "list_entities")
            wait_for_log(server.stderr_text, "a call waits for the store")
            server.proc.send_signal(signal.SIGTERM)
            # The call waiting for the store is answered at once (uvicorn waits for requests
            # under way before it closes polyg), and polyg stops the database it alone used.
            assert server.proc.wait(15) == 0, server.stderr_text()[-3000:]
            result = answer.result(30)["result"]
    finally:
        server.stop()
    assert result["isError"] is True and result["_meta"]["polyg/errorCode"] == 2005, result
    assert result["content"] == [{"type": "text", "text": "Error: polyg is shutting down."}]
    assert not server.left_embedded_behind and is_gone(database)


# --- nothing blocks the event loop at start ---------------------------------------------------


def wait_for_request(fake: FakeOpenAIServer, path: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not fake.requests_to(path):
        assert time.monotonic() < deadline, f"no request to {path}"
        time.sleep(0.05)


async def test_handshake_and_health_answer_while_the_embedding_provider_is_probed(servers_root: Path) -> None:
    """With an OpenAI-compatible provider and no configured dimension, polyg asks the endpoint
    for one vector to learn the dimension. That request is held unanswered here: the MCP
    handshake and /health must answer meanwhile (they did not while it ran on the event loop)."""
    with FakeOpenAIServer(dimension=12) as fake:
        fake.hold()
        env = {
            "POLYG_EMBEDDING_PROVIDER": "openai",
            "POLYG_EMBEDDING_BASE_URL": fake.base_url,
            "POLYG_EMBEDDING_MODEL": "fake-embedding",
        }
        server = HttpServer(servers_root / "http-embedder-probe", args=["--toolsets", "kg"], env=env).start()
        try:
            await anyio.to_thread.run_sync(server.wait_listening)
            await anyio.to_thread.run_sync(wait_for_request, fake, "/v1/embeddings")
            # The probe is in flight and held.
            assert server.health().json()["status"] == "loading"
            with anyio.fail_after(30):
                async with Client(server.url) as client:
                    assert len((await client.list_tools()).tools) == 11
                    assert server.health().json()["status"] == "loading"
                    fake.release()
                    await anyio.to_thread.run_sync(server.wait_ready)
                    await ok(client, "create_entity", {"name": "probed", "type": "t"})
        finally:
            fake.release()
            await anyio.to_thread.run_sync(server.stop)
        assert not server.left_embedded_behind
