"""Concurrent HTTP clients on each store mode in one run: embedded, one FalkorDB server, and a
cluster (3 primaries, one replica each), with spec 003's mixed workload.

Each mode gets its own `polyg serve --transport http` (hashing embedder: the store, not the
model, is measured), seeded with a few memories and facts. Then, for each client count, that
many MCP clients (one HTTP session each) run calls in parallel for `--seconds`: 80% reads
(`recall`, `search_nodes`, `get_entity`, `query_timeline`, in turn) and 20% writes
(`remember`, `add_fact`, `create_entities`, in turn). Reported per mode and client count:
calls/s, mean and p99 latency, and the error rate (the target is 0); and per mode the memory
(RSS) of polyg and of the database idle and after a phase at 10 calls/s. Every node runs on this
machine: 2 shared cores here, so the figures are floors for what more cores would give.

Usage: .venv/bin/python bench/latency/concurrency_modes.py [--clients 1,10,50,100] [--seconds 20]
Results: bench/results/concurrency-modes.md and .json, and a row in history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from mcp import Client

from bench.lib.database import read_db_pid
from bench.lib.env import SERVER_START_S
from bench.lib.machine import machine_label
from bench.lib.procs import memory_kb
from bench.lib.runner import bench_parser, run_benchmark
from bench.lib.smoke import smoke_env
from bench.lib.stats import summarize
from tests.falkor_cluster import FalkorCluster
from tests.falkor_server import FalkorServer
from tests.mcp_helpers import HttpServer

REF = "2026-03-02T10:00:00Z"
NAMES = ["auth-service", "billing", "gateway", "Alice", "Bob"]
SEED = [
    "The auth service crashed after the Redis upgrade.",
    "Alice moved billing to the new gateway on Monday.",
    "Bob rolled back the gateway after the latency alert.",
]


def reads(i: int) -> tuple[str, dict[str, Any]]:
    name = NAMES[i % len(NAMES)]
    return [
        ("recall", {"query": f"What happened to {name}?", "reference_time": REF}),
        ("search_nodes", {"query": name}),
        ("get_entity", {"name": name}),
        ("query_timeline", {"from": "2026-01-01T00:00:00Z", "to": "2026-04-01T00:00:00Z", "limit": 10}),
    ][i % 4]


def writes(i: int, client: int) -> tuple[str, dict[str, Any]]:
    name = NAMES[i % len(NAMES)]
    return [
        ("remember", {"content": f"Client {client} saw {name} change state, call {i}.", "reference_time": REF}),
        ("add_fact", {"subject": name, "predicate": "works_with", "object": f"team-{client}-{i}"}),
        (
            "create_entities",
            {"entities": [{"name": f"c{client}-e{i}", "entityType": "note", "observations": [f"call {i}"]}]},
        ),
    ][i % 3]


ERRORS: dict[str, str] = {}  # a tool's first error message, to show with the figures


async def client_loop(url: str, client: int, until: float, out: list[tuple[float, bool]]) -> None:
    async with Client(url) as mcp:
        for i in itertools.count():
            if time.monotonic() >= until:
                return
            tool, args = writes(i // 5, client) if i % 5 == 4 else reads(i)
            t = time.perf_counter()
            try:
                result = await mcp.call_tool(tool, args)
                ok = not result.is_error
                if not ok:
                    ERRORS.setdefault(tool, result.content[0].text[:200] if result.content else "?")
            except Exception as exc:
                ok = False
                ERRORS.setdefault(tool, f"{type(exc).__name__}: {exc}"[:200])
            out.append((time.perf_counter() - t, ok))


async def measure(url: str, clients: int, seconds: float) -> dict[str, Any]:
    samples: list[tuple[float, bool]] = []
    began = time.monotonic()
    await asyncio.gather(*(client_loop(url, c, began + seconds, samples) for c in range(clients)))
    took = time.monotonic() - began
    stats = summarize([s for s, _ in samples])
    errors = sum(1 for _, ok in samples if not ok)
    return {
        "clients": clients,
        "calls": len(samples),
        "calls_per_s": round(len(samples) / took, 1),
        "mean_ms": round(stats["mean_ms"], 1),
        "p99_ms": round(stats["p99_ms"], 1),
        "error_rate": round(errors / len(samples), 4) if samples else None,
    }


async def paced(url: str, qps: float, seconds: float) -> int:
    """One client calling at `qps` calls per second (the same mix) for `seconds`: calls made."""
    made = 0
    async with Client(url) as mcp:
        began = time.monotonic()
        for i in itertools.count():
            due = began + i / qps
            if due >= began + seconds:
                return made
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            tool, args = writes(i // 5, 0) if i % 5 == 4 else reads(i)
            await mcp.call_tool(tool, args)
            made += 1
    return made


def rss_mb(pids: list[int]) -> float:
    return round(sum(memory_kb(p, with_children=False)["rss_kb"] for p in pids) / 1024, 1)


async def seed(url: str) -> None:
    async with Client(url) as mcp:
        entities = [{"name": n, "entityType": "service", "observations": [f"{n} is in the stack."]} for n in NAMES]
        await mcp.call_tool("create_entities", {"entities": entities})
        for text in SEED:
            await mcp.call_tool("remember", {"content": text, "reference_time": REF})
        await mcp.call_tool("add_fact", {"subject": "Alice", "predicate": "works_on", "object": "billing"})


async def run_mode(
    store: str | None, root: Path, client_counts: list[int], seconds: float, database_pids: list[int], idle_s: float
) -> dict[str, Any]:
    """The rows of one mode, and its memory: polyg's RSS idle (seeded, after `idle_s`) and after
    `seconds` at 10 calls/s, and the database's (every node) at the same moments."""
    args = ["--toolsets", "kg,memory-compat,memory"] + (["--store", store] if store else [])
    server = HttpServer(root, args=args, env={"POLYG_EMBEDDING_PROVIDER": "hashing", **smoke_env()}).start()
    try:
        await asyncio.to_thread(server.wait_ready, SERVER_START_S)
        await seed(server.url)
        assert server.proc is not None
        polyg_pid = server.proc.pid
        pids = database_pids or [p for p in [read_db_pid(server.data_dir)] if p]
        await asyncio.sleep(idle_s)
        memory = {"idle_polyg_mb": rss_mb([polyg_pid]), "idle_database_mb": rss_mb(pids)}
        await paced(server.url, 10.0, seconds)
        memory.update(qps10_polyg_mb=rss_mb([polyg_pid]), qps10_database_mb=rss_mb(pids))
        rows = [await measure(server.url, n, seconds) for n in client_counts]
        return {"rows": rows, "memory": memory}
    finally:
        await asyncio.to_thread(server.stop)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    counts = [int(n) for n in args.clients.split(",")]
    out: dict[str, Any] = {"seconds": args.seconds, "modes": {}}
    with tempfile.TemporaryDirectory(prefix="polyg-concurrency-") as tmp:
        root = Path(tmp)
        out["modes"]["embedded"] = await run_mode(None, root / "embedded", counts, args.seconds, [], args.idle_s)
        # The smoke run checks run_mode on the embedded store only: the other modes differ by the
        # server's --store (FalkorServer and FalkorCluster are run by cluster_bench.py's smoke), and
        # each mode costs a polyg server start with three toolsets.
        if not args.smoke:
            with FalkorServer(start_timeout=SERVER_START_S) as server:
                out["modes"]["server"] = await run_mode(
                    server.url, root / "server", counts, args.seconds, [server.pid], args.idle_s
                )
            with FalkorCluster(start_timeout=SERVER_START_S) as cluster:
                pids = [n.pid for n in cluster.nodes]
                out["modes"]["cluster"] = await run_mode(
                    cluster.url, root / "cluster", counts, args.seconds, pids, args.idle_s
                )
    out["errors"] = dict(ERRORS)
    return out


def render(r: dict[str, Any], info: dict[str, Any]) -> str:
    lines = [
        "# Concurrent clients on each store mode",
        "",
        f"{machine_label(info)}; {r['seconds']} s per row; 80% reads (recall, search_nodes, get_entity, "
        "query_timeline), 20% writes (remember, add_fact, create_entities); HTTP, one session per client; "
        "hashing embedder; every node on this machine.",
        "",
        "| store | clients | calls | calls/s | mean ms | p99 ms | error rate |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, found in r["modes"].items():
        for row in found["rows"]:
            lines.append(
                f"| {mode} | {row['clients']} | {row['calls']} | {row['calls_per_s']} | {row['mean_ms']} | "
                f"{row['p99_ms']} | {row['error_rate']} |"
            )
    lines += [
        "",
        "Memory (RSS, MB; spec 003: polyg idle < 150, under 10 calls/s < 500): polyg idle / after "
        f"{r['seconds']} s at 10 calls/s; the database (every node) likewise.",
        "",
        "| store | polyg idle | polyg at 10/s | database idle | database at 10/s |",
        "|---|---|---|---|---|",
    ]
    for mode, found in r["modes"].items():
        m = found["memory"]
        lines.append(
            f"| {mode} | {m['idle_polyg_mb']} | {m['qps10_polyg_mb']} | {m['idle_database_mb']} | "
            f"{m['qps10_database_mb']} |"
        )
    if r.get("errors"):
        lines += ["", "First error per tool:", ""] + [f"- {tool}: {text}" for tool, text in r["errors"].items()]
    return "\n".join([*lines, ""])


def figures(result: dict[str, Any]) -> dict[str, Any]:
    modes = result["modes"]
    out = {f"{mode}_{row['clients']}c_calls_per_s": row["calls_per_s"] for mode in modes for row in modes[mode]["rows"]}
    out.update({f"{mode}_polyg_idle_mb": modes[mode]["memory"]["idle_polyg_mb"] for mode in modes})
    return out


def main() -> int:
    p = bench_parser(__doc__)
    p.add_argument("--clients", default="1,10,50,100")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--idle-s", type=float, default=2.0, help="pause after seeding before the idle memory")
    args = p.parse_args()
    # One client count and short phases: every step still runs (seed, idle memory, 10 calls/s,
    # parallel clients), the run checks the script; no idle pause, as nothing is measured.
    smoke = {"clients": "2", "seconds": 0.5, "idle_s": 0.0}
    return run_benchmark("concurrency-modes", args, measure=run, render=render, figures=figures, smoke=smoke)


if __name__ == "__main__":
    raise SystemExit(main())
