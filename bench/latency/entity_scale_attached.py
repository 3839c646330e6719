"""Entity-scale calls on a database already running (a size's store while its loader still builds
the indexes, say): a stdio `polyg serve` attached to it (it neither starts nor stops it) measures
the time to its first answer, its idle memory and FalkorDB's, and the sequential latency of
entity_scale.py's operations, with its functions. The result is printed as JSON; nothing is
saved (bench/results/entity-scale.md takes what it measured by hand, marked as such).

Usage: .venv/bin/python bench/latency/entity_scale_attached.py --data-dir DIR --n N
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.latency import entity_scale
from bench.latency.entity_scale import TOOLSETS, Calls, RssWatch, latency, log, mb
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, machine_info
from bench.lib.procs import dir_size_mb
from bench.lib.server import PolygServer
from bench.lib.smoke import SMOKE_HELP, smoke_store
from bench.lib.synthetic import entity_id


async def attached(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"machine": machine_info(), "data_dir_mb": dir_size_mb(args.data_dir)}
    env = clean_env(args.workdir, {"POLYG_STORE_OPEN_TIMEOUT_S": "3600"})
    log_path = args.workdir / "attached-server.log"
    with LoadSampler() as load, RssWatch(args.data_dir, limit_kb=1 << 62) as watch:
        async with PolygServer(
            args.data_dir, log_path=log_path, env=env, extra_args=["--toolsets", TOOLSETS], shared_db=True
        ) as s:
            watch.polyg_pid = s.pid
            watch.enter("attach")
            out["attach"] = await restart_once(s, args.n)
            watch.enter("idle")
            await asyncio.sleep(args.idle_s)
            now = watch.sample()
            out["idle"] = {"polyg_mb": mb(now["polyg_kb"]), "db_mb": mb(now["db_kb"])}
            log(f"idle {out['idle']}")
            watch.enter("latency")
            calls = Calls(s, args.n, args.seed + args.n)
            progress: dict[str, Any] = {}
            out["latency"] = await latency(calls, args.calls, args.block, 1, args.op_budget_s, progress)
            for op in entity_scale.OPS:
                st = out["latency"]["stats"].get(op)
                if st:
                    log(f"{op:20s} p50 {st['p50_ms']:8.2f} ms ({st['n']} calls)")
            t = time.perf_counter()
            try:  # what a search answers meanwhile (degraded while its indexes build, or an error)
                probe = await s.call("search_nodes", {"query": "parser auth", "limit": 10})
                out["search_probe"] = {"degraded": (probe.structured_content or {}).get("degraded")}
            except Exception as exc:
                out["search_probe"] = {"error": str(exc)[:300]}
            out["search_probe"]["seconds"] = round(time.perf_counter() - t, 1)
            peaks = watch.peaks.items()
            out["peak_mb"] = {ph: {"polyg_mb": mb(p["polyg_kb"]), "db_mb": mb(p["db_kb"])} for ph, p in peaks}
    out["machine_load"] = load.summary()
    return out


async def restart_once(s: PolygServer, n: int) -> dict[str, Any]:
    t = time.perf_counter()
    result = await restart_probe(s, n)
    result["measured_s"] = round(time.perf_counter() - t, 2)
    return result


async def restart_probe(s: PolygServer, n: int) -> dict[str, Any]:
    """The first answered get_entity after the spawn (the database is up: no load), without
    waiting for full search (its index may be building)."""
    t0 = s.t_spawn
    result = await s.client.call_tool("get_entity", {"entity_id": entity_id(n // 2)})
    return {"init_s": round(s.init_s, 3), "first_call_s": round(time.perf_counter() - t0, 2), "error": result.is_error}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path)
    p.add_argument("--n", type=int)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-bench"))
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--block", type=int, default=20)
    p.add_argument("--op-budget-s", type=float, default=30.0)
    p.add_argument("--idle-s", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=20261127)
    p.add_argument(
        "--skip",
        default="",
        help="operations left out, comma-separated (create_entity: a write waits behind an index build)",
    )
    args = p.parse_args()
    if args.smoke:
        args.data_dir, args.n = smoke_store("scale-attached"), 200
        args.workdir, args.calls, args.block, args.idle_s = args.data_dir.parent, 4, 2, 0.5
    elif args.data_dir is None or args.n is None:
        p.error("--data-dir and --n are required (or --smoke)")
    skipped = {op for op in args.skip.split(",") if op}
    entity_scale.OPS = tuple(op for op in entity_scale.OPS if op not in skipped)
    print(json.dumps(asyncio.run(attached(args)), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
