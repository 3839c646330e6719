"""The loss window without `wait_replicas`: acknowledged writes a replica does not hold when its
primary is killed, under concurrent writers.

Replicas copy asynchronously: a write is acknowledged once the primary has applied it, and the
replica receives it one replication lag later. Writes acknowledged within that lag before the
primary dies are lost on failover. Two measurements, both on this machine's loopback:

1. One server and one replica whose replication link goes through a proxy that delays each
   direction by 0, 1, 5 and 20 ms, standing in for a network (none was available here). Under
   writes, either the primary's process is SIGKILLed (its kernel still delivers what it had
   written to the replica's socket), or its machine is lost (the link cut, what was on its way
   dropped, then the process killed); the replica's copy is then compared with what was
   acknowledged.
2. The cluster (3 primaries, one replica each): a shard's primary SIGKILLed under concurrent
   writes to projects on that shard; after its replica has taken over, every acknowledged write
   is looked for, without and with `wait_replicas: 1`.

Writes are `EntityService.create` from `--writers` tasks, each on its own project (polyg sends
the writes to one graph one at a time, so writers on one project would queue).

Usage: .venv/bin/python bench/latency/replica_loss.py [--writers 8] [--before 600]
Results: bench/results/replica-loss.md and .json, and a row in history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.machine import machine_info, machine_label
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, enter_smoke_mode
from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.errors import PolygError
from polyg.names import graph_key
from polyg.runtime.app import Polyg, Services
from tests.falkor_cluster import FalkorCluster
from tests.falkor_server import FalkorServer
from tests.store.test_wait_replicas import wait_until_synced

DELAYS_MS = (0, 1, 5, 20)


class DelayProxy:
    """A TCP proxy on a loopback port that holds every chunk `delay_s` before passing it on, in
    order, in both directions; it runs its own event loop in a thread, so that polyg's work
    does not slow it."""

    def __init__(self, target: tuple[str, int], delay_s: float) -> None:
        self.target, self.delay_s = target, delay_s
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._writers: set[asyncio.StreamWriter] = set()
        self._cut_off = False
        self.held = 0  # chunks read and not yet passed on (or dropped)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the delay proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._connect, "127.0.0.1", 0))
        sock: socket.socket = server.sockets[0]
        self.port = int(sock.getsockname()[1])
        self._ready.set()
        self._loop.run_forever()
        server.close()

    def cut(self) -> None:
        """The link is lost with what it carries: every chunk held is dropped, every connection
        closed, and no new one made (a machine gone, or the network between cut)."""
        asyncio.run_coroutine_threadsafe(self._cut(), self._loop).result(10)

    async def _cut(self) -> None:
        self._cut_off = True
        for writer in list(self._writers):
            writer.transport.abort()

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut_off:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:  # the primary is down: the replica will try again
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def forward() -> None:
            while True:
                due, chunk = await held.get()
                if not chunk:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                self.held -= 1
                if self._cut_off:
                    continue
                with contextlib.suppress(OSError):
                    writer.write(chunk)
                    await writer.drain()

        sender = asyncio.ensure_future(forward())
        try:
            while chunk := await reader.read(65536):
                self.held += 1
                held.put_nowait((time.monotonic() + self.delay_s, chunk))
        finally:
            held.put_nowait((0.0, b""))
            with contextlib.suppress(Exception):
                await sender
            writer.close()


def _serve_proxy(target: tuple[str, int], delay_s: float, conn: Any) -> None:
    with DelayProxy(target, delay_s) as proxy:
        conn.send(proxy.port)
        while (asked := conn.recv()) != "stop":
            if asked == "cut":
                proxy.cut()
                conn.send("cut")
            else:
                conn.send(proxy.held)
    conn.send("stopped")


class ProxyProcess:
    """A `DelayProxy` in a process of its own: in this one, polyg's work would hold the
    interpreter and stretch the delay (20 ms measured as some 60 under 8 writers)."""

    def __init__(self, target: tuple[str, int], delay_s: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._proc = context.Process(target=_serve_proxy, args=(target, delay_s, child), daemon=True)
        self.port = 0

    def __enter__(self) -> ProxyProcess:
        self._proc.start()
        if not self._conn.poll(60):
            raise RuntimeError("the delay proxy did not start")
        self.port = int(self._conn.recv())
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self._conn.send("stop")
            self._conn.poll(10)
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()

    def cut(self) -> None:
        self._conn.send("cut")
        self._conn.recv()

    @property
    def held(self) -> int:
        self._conn.send("held")
        return int(self._conn.recv())


def core(url: str, workdir: Path, **options: Any) -> Polyg:
    settings = load_settings(None, store=url, data_dir=workdir / "data", log_dir=workdir / "logs", **options)
    return Polyg(settings, embedder=create_embedder("hashing"), sweep=False)


async def write_until_killed(
    s: Services, projects: list[str], before: int, kill: Any
) -> tuple[dict[str, list[str]], float, float]:
    """Every project written to by its own task; after `before` acknowledged writes in all,
    `kill()` runs and the writers stop at their next failure. The names acknowledged per
    project, the write rate (per second) just before the kill, and the kill's moment."""
    acked: dict[str, list[str]] = {p: [] for p in projects}
    count = 0
    killed = asyncio.Event()
    halfway = time.monotonic()
    rate = 0.0
    killed_at = 0.0

    async def writer(project: str) -> None:
        nonlocal count, rate, killed_at, halfway
        i = 0
        while True:
            name = f"w{i}"
            i += 1
            try:
                await s.entities.create(project, name=name, type_="note")
            except PolygError:
                if killed.is_set():
                    return
                raise
            acked[project].append(name)
            count += 1
            if count == before // 2:
                halfway = time.monotonic()
            if count == before and not killed.is_set():
                rate = (before - before // 2) / (time.monotonic() - halfway)
                killed.set()
                killed_at = time.monotonic()
                kill()
            if killed.is_set() and time.monotonic() - killed_at > 30:
                return  # a write that goes on succeeding: the kill did not reach its node

    await asyncio.gather(*(writer(p) for p in projects))
    return acked, rate, killed_at


def settle(proxy: ProxyProcess, replica: FalkorServer) -> None:
    """Wait until the proxy has passed on what it held and the replica's offset stands still."""
    deadline = time.monotonic() + 30
    while proxy.held > 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    client = replica.client()
    try:
        offsets = [-1, -2]
        while offsets[-1] != offsets[-2] and time.monotonic() < deadline:
            offsets.append(int(client.info("replication").get("slave_repl_offset", 0)))
            time.sleep(0.1)
    finally:
        client.close()


def held_by(node: FalkorServer, project: str) -> set[str]:
    client = node.client()
    try:
        reply = client.execute_command(  # type: ignore[no-untyped-call]
            "GRAPH.RO_QUERY", graph_key(project), "MATCH (e:Entity) RETURN e.name"
        )
    except Exception as exc:
        if "empty key" in str(exc):
            return set()
        raise
    finally:
        client.close()
    return {row[0].decode() for row in reply[1]}


async def server_loss(workdir: Path, delay_ms: int, writers: int, before: int, machine: bool) -> dict[str, Any]:
    """`machine`: the primary's machine is lost (its link cut, what was on the way dropped, then
    the process killed); else only its process is killed, and the kernel still sends what the
    process had written to its sockets."""
    projects = [f"loss_{i}" for i in range(writers)]
    with FalkorServer(extra_args=["--repl-diskless-sync-delay", "0"]) as primary:
        with ProxyProcess((primary.host, primary.port), delay_ms / 1000) as proxy:
            with FalkorServer(extra_args=["--replicaof", "127.0.0.1", str(proxy.port)]) as replica:
                wait_until_synced(replica)
                polyg = core(primary.url, workdir)

                def kill() -> None:
                    primary.kill()
                    if machine:  # at once: what the link carried at that moment is dropped
                        proxy.cut()

                try:
                    s = await polyg.ready()
                    acked, rate, _ = await write_until_killed(s, projects, before, kill)
                finally:
                    with contextlib.suppress(Exception):
                        await polyg.close()
                # What the replica holds once what was on its way has arrived (nothing after a
                # cut) is what a failover to it would keep.
                await asyncio.to_thread(settle, proxy, replica)
                lost = sum(len(set(names) - held_by(replica, p)) for p, names in acked.items())
    total = sum(len(n) for n in acked.values())
    return {
        "lost_with": "machine" if machine else "process",
        "delay_ms": delay_ms,
        "acknowledged": total,
        "lost": lost,
        "writes_per_s": round(rate, 1),
        "window_ms": round(1000 * lost / rate, 1) if rate else None,
    }


def projects_on(cluster: FalkorCluster, shard: int, count: int) -> list[str]:
    found = []
    i = 0
    while len(found) < count:
        project = f"loss_{i}"
        if cluster.shard_of(graph_key(project)) == shard:
            found.append(project)
        i += 1
    return found


async def names_in(s: Services, project: str) -> set[str]:
    """The project's entity names, asked again while the client learns of the new primary."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return {e.name for e in await s.entities.find(project, limit=1000)}
        except PolygError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def cluster_loss(
    cluster: FalkorCluster, workdir: Path, writers: int, before: int, **options: Any
) -> dict[str, Any]:
    projects = projects_on(cluster, 0, writers)
    polyg = core(cluster.url, workdir, **options)
    try:
        s = await polyg.ready()
        for project in projects:
            await s.store.delete_project(project)
        primary = cluster.primary_for(graph_key(projects[0]))
        acked, rate, _ = await write_until_killed(s, projects, before, primary.kill)
        promoted_s = await asyncio.to_thread(cluster.wait_for_failover, graph_key(projects[0]), primary)
        lost = 0
        for project in projects:
            lost += len(set(acked[project]) - await names_in(s, project))
        for project in projects:
            await s.store.delete_project(project)
    finally:
        await polyg.close()
        await asyncio.to_thread(cluster.heal)
    return {
        "wait_replicas": options.get("wait_replicas", 0),
        "acknowledged": sum(len(n) for n in acked.values()),
        "lost": lost,
        "writes_per_s": round(rate, 1),
        "window_ms": round(1000 * lost / rate, 1) if rate else None,
        "promoted_s": round(promoted_s, 2),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"writers": args.writers, "before": args.before}
    with tempfile.TemporaryDirectory(prefix="polyg-replica-loss-") as tmp:
        workdir = Path(tmp)
        out["server"] = []
        for machine in (False, True):
            for delay in args.delays:
                for attempt in range(args.repeat):
                    where = workdir / f"s{delay}-{machine}-{attempt}"
                    row = await server_loss(where, delay, args.writers, args.before, machine)
                    out["server"].append(row)
                    print(row, flush=True)
        if args.server_only:
            out["cluster"] = []
            return out
        with FalkorCluster() as cluster:
            out["cluster"] = []
            for options in ({}, {"wait_replicas": 1}):
                for _ in range(args.repeat):
                    row = await cluster_loss(
                        cluster, workdir / f"c{len(out['cluster'])}", args.writers, args.before, **options
                    )
                    out["cluster"].append(row)
                    print(row, flush=True)
    return out


def render(r: dict[str, Any], info: dict[str, Any]) -> str:
    lines = [
        "# The loss window without wait_replicas",
        "",
        f"{machine_label(info)}; {r['writers']} concurrent writers (one project each), the primary",
        f"SIGKILLed after {r['before']} acknowledged writes; every node on loopback (no network was available:",
        "the server's replication link goes through a proxy adding the delay shown, each way). A machine",
        "lost: the process killed and the link cut at once, what it carried dropped.",
        "Window: lost writes / write rate (over the second half of the writes before the kill), the time",
        "before the kill whose acknowledged writes were lost.",
        "",
        "One server, one replica (what the replica holds after the kill):",
        "",
        "| what fails | replication delay each way ms | acknowledged | lost | writes/s | window ms |",
        "|---|---|---|---|---|---|",
    ]
    for row in r["server"]:
        what = "the machine (link cut)" if row["lost_with"] == "machine" else "the process (SIGKILL)"
        cells = (what, row["delay_ms"], row["acknowledged"], row["lost"], row["writes_per_s"], row["window_ms"])
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        "Cluster, 3 primaries + 3 replicas, node timeout 1 s (what the promoted replica holds):",
        "",
        "| wait_replicas | acknowledged | lost | writes/s | window ms | replica promoted after s |",
        "|---|---|---|---|---|---|",
    ]
    for row in r["cluster"]:
        lines.append(
            f"| {row['wait_replicas']} | {row['acknowledged']} | {row['lost']} | {row['writes_per_s']} | "
            f"{row['window_ms']} | {row['promoted_s']} |"
        )
    return "\n".join([*lines, ""])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--before", type=int, default=600, help="acknowledged writes before the kill")
    p.add_argument("--delays", type=int, nargs="+", default=list(DELAYS_MS), help="ms each way")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--server-only", action="store_true", help="leave the cluster out")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args()
    if args.smoke:
        enter_smoke_mode()
        # The cluster's failover is run in cluster_bench's smoke already.
        args.writers, args.before, args.delays, args.repeat, args.no_save = 2, 6, [1], 1, True
        args.server_only = True
    info = machine_info()
    result = asyncio.run(run(args))
    markdown = render(result, info)
    print(markdown)
    if not args.no_save:
        figures = {
            "server_machine_lost_by_delay": {
                row["delay_ms"]: row["lost"] for row in result["server"] if row["lost_with"] == "machine"
            },
            "cluster_lost_no_wait": [row["lost"] for row in result["cluster"] if not row["wait_replicas"]],
            "cluster_lost_wait1": [row["lost"] for row in result["cluster"] if row["wait_replicas"]],
        }
        md, _ = write_results("replica-loss", markdown, {"machine": info, **result}, figures=figures)
        print(f"saved {md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
