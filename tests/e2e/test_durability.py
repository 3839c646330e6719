"""Nothing acknowledged is lost: real `polyg serve` processes and databases killed with SIGKILL.

The embedded store runs FalkorDB with `appendfsync everysec`: the database writes each command
to its append-only file before it replies, and the kernel keeps what a killed process wrote,
so a database killed -9 right after a write keeps everything it acknowledged (the tests kill it
at once; only a crash of the operating system can lose the last second, which the fsync
covers). Killing only polyg loses nothing at all: the database outlives it and the next polyg
process attaches to it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.falkor_server import FalkorServer
from tests.mcp_helpers import HttpServer, call, embedded_pid, ok, redis_servers_under

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_database_left_behind")]

HASHING = {"POLYG_EMBEDDING_PROVIDER": "hashing"}
# The tests call kg tools only; each other toolset would add to every server's start.
KG = ("--toolsets", "kg")
# A tool call after the database died must fail, not hang.
PROMPT_S = 15.0


def serve(servers: list[HttpServer], root: Path, *args: str) -> HttpServer:
    server = HttpServer(root, args=[*KG, *args], env=HASHING)
    servers.append(server)
    server.start().wait_ready()
    return server


def kill9(server: HttpServer) -> None:
    assert server.proc is not None
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()


def kill9_pid(pid: int) -> None:
    """SIGKILL a process we did not fork (the daemonized database) and wait until it is dead."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":  # dead; its parent (init) reaps it
            return
        assert time.monotonic() < deadline, f"pid {pid} survived SIGKILL"
        time.sleep(0.02)


async def create_entities(url: str, count: int, tag: str) -> dict[str, str]:
    """Create `count` entities, each with an observation; return the acknowledged ones (id -> name)."""
    acked: dict[str, str] = {}
    async with Client(url) as client:
        for i in range(count):
            name = f"{tag}-{i}"
            made = await ok(
                client, "create_entity", {"name": name, "type": "note", "observations": [f"{name} was written"]}
            )
            acked[made["entity"]["id"]] = name
    return acked


async def stored_entities(url: str) -> dict[str, str]:
    async with Client(url) as client:
        listed = await ok(client, "list_entities", {"limit": 1000})
    return {e["id"]: e["name"] for e in listed["entities"]}


async def check_observations(url: str, acked: dict[str, str]) -> None:
    async with Client(url) as client:
        for entity_id, name in list(acked.items())[:: max(1, len(acked) // 10)]:
            got = await ok(client, "get_entity", {"entity_id": entity_id})
            assert [o["text"] for o in got["entity"]["observations"]] == [f"{name} was written"]


async def test_polyg_killed_then_both_then_the_database_under_a_running_polyg_lose_nothing(
    tmp_path: Path, servers: list[HttpServer]
) -> None:
    """One data directory through every kill: polyg alone, polyg and its database, then the
    database under a running polyg, and at last a clean stop (each stage starts the server the
    next one kills)."""
    root = tmp_path / "srv"
    first = serve(servers, root)
    acked = await create_entities(first.url, 40, "first")
    db_pid = embedded_pid(first.data_dir)
    assert db_pid is not None

    # polyg dies: the database outlives it, the next polyg attaches to it, nothing is lost.
    kill9(first)
    assert embedded_pid(first.data_dir) == db_pid
    second = serve(servers, root)
    assert embedded_pid(second.data_dir) == db_pid
    assert await stored_entities(second.url) == acked
    await check_observations(second.url, acked)

    acked |= await create_entities(second.url, 40, "second")

    # Both die: a new database replays the AOF.
    kill9(second)
    kill9_pid(db_pid)
    server = serve(servers, root)
    new_pid = embedded_pid(server.data_dir)
    assert new_pid is not None and new_pid != db_pid
    assert await stored_entities(server.url) == acked
    await check_observations(server.url, acked)
    assert redis_servers_under(root) == [new_pid]

    # The database dies under the running polyg.
    acked |= await create_entities(server.url, 30, "before")
    db_pid = new_pid
    async with Client(server.url) as client:
        kill9_pid(db_pid)
        with anyio.fail_after(PROMPT_S):
            write = await call(client, "create_entity", {"name": "after", "type": "note"})
        # The call that meets the dead database fails, promptly and clearly...
        assert write.is_error, write
        assert 2000 <= write.code < 3000, write
        assert "FalkorDB" in write.text, write.text
        # ...and polyg starts the database again (AOF replay), so the calls after it succeed.
        with anyio.fail_after(PROMPT_S * 2):
            for _ in range(1000):
                listed = await call(client, "list_entities", {"limit": 1000})
                if not listed.is_error:
                    break
                await anyio.sleep(0.1)
        assert not listed.is_error, listed
        assert {e["id"]: e["name"] for e in listed.structured["entities"]} == acked
    revived = embedded_pid(server.data_dir)
    assert revived is not None and revived != db_pid

    # SIGTERM: polyg exits cleanly and shuts its database down; a new polyg finds everything.
    assert server.stop() == 0, server.stderr_text()
    again = serve(servers, root)
    assert await stored_entities(again.url) == acked
    await check_observations(again.url, acked)


async def test_server_mode_database_killed_and_restarted(tmp_path: Path, servers: list[HttpServer]) -> None:
    with FalkorServer() as database:
        server = serve(servers, tmp_path / "srv", "--store", database.url)
        acked = await create_entities(server.url, 30, "server")

        async with Client(server.url) as client:
            database.kill()
            with anyio.fail_after(PROMPT_S):
                down = await call(client, "list_entities", {})
            assert down.is_error and down.code == 2001, down
            assert database.url.removeprefix("falkor://") in down.text

            database.restart()  # same directory and port: replays its AOF
            # The same polyg process reconnects.
            listed = await ok(client, "list_entities", {"limit": 1000})
            assert {e["id"]: e["name"] for e in listed["entities"]} == acked
            await ok(client, "create_entity", {"name": "after-restart", "type": "note"})
        await check_observations(server.url, acked)
        assert not (tmp_path / "srv" / "data" / "db").exists()  # server mode starts no embedded store
