"""What background vector work costs the calls around it: get_entity with and without writes.

Writes are acknowledged before their vectors are made (polyg.core.graph.vectorizer); the embedding
then runs at low priority while the next calls are answered. On a 2-core machine that work
still competes for the cores. This drives one `polyg serve` (stdio, embedded store, default
embedder, the kg benchmark's cached data) with the MCP Python client in two phases:

- reads only: ping and get_entity, alternating;
- with writes: the same, plus a create_entity (one-sentence description) after each get.

and reports p50/p95 of ping and get_entity in each phase, same process, same data.

    .venv/bin/python bench/latency/read_write_mix.py [--entities 10000] [--rounds 300] [--no-save]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.lib.database import stop_db
from bench.lib.datadirs import ensure_preloaded, fresh_copy
from bench.lib.env import clean_env, polyg_executable
from bench.lib.machine import machine_info
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_ENTITIES, SMOKE_HELP, smoke_workdir
from bench.lib.stats import fmt_ms, summarize

WARMUP = 30
DESCRIPTION = "Parses the authentication tokens issued by the gateway and checks their expiry."


async def measure(data_dir: Path, rounds: int, warmup: int = WARMUP) -> dict[str, dict[str, Any]]:
    params = StdioServerParameters(
        command=polyg_executable(),
        args=["serve", "--data-dir", str(data_dir)],
        env=clean_env(data_dir.parent, {"POLYG_LOG_LEVEL": "WARNING"}),
    )
    samples: dict[str, list[float]] = {}
    with (data_dir.parent / "mix-server.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.call_tool("list_entities", {"limit": 1000})
            assert listed.structured_content is not None, listed
            ids = [e["id"] for e in listed.structured_content["entities"]]
            for phase in ("reads only", "with writes"):
                for i in range(warmup + rounds):
                    keep = i >= warmup
                    t = time.perf_counter()
                    await session.send_ping()
                    if keep:
                        samples.setdefault(f"{phase}: ping", []).append(time.perf_counter() - t)
                    t = time.perf_counter()
                    await session.call_tool("get_entity", {"entity_id": random.choice(ids)})
                    if keep:
                        samples.setdefault(f"{phase}: get_entity", []).append(time.perf_counter() - t)
                    if phase == "with writes":
                        await session.call_tool(
                            "create_entity", {"name": f"mix/{i}.py", "type": "module", "description": DESCRIPTION}
                        )
    return {name: summarize(values) for name, values in samples.items()}


def render(n: int, stats: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    lines = [
        f"# Reads with and without background vector work, {info['date']}",
        "",
        f"polyg {info['polyg_commit']}, {info['nproc']} CPUs ({info['cpu']}), load average at start "
        f"{', '.join(f'{x:.2f}' for x in info['loadavg_at_start'])}. One `polyg serve` over stdio, "
        f"{n:,} preloaded entities, default embedder; sequential calls.",
        "",
        "| phase: call | p50 ms | p95 ms |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {fmt_ms(s['p50_ms'])} | {fmt_ms(s['p95_ms'])} |" for name, s in stats.items()]
    return "\n".join([*lines, ""])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entities", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-bench"))
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args()
    embed, warmup = "auto", WARMUP
    if args.smoke:
        args.entities, args.rounds, args.no_save = SMOKE_ENTITIES, 3, True
        args.workdir = smoke_workdir("read-write-mix")
        embed, warmup = "hashing", 1
    info = machine_info()
    pristine, _ = ensure_preloaded(args.workdir, args.entities, embed=embed)
    data_dir = fresh_copy(pristine, args.workdir / f"kg-{args.entities}" / "mix")
    try:
        stats = asyncio.run(measure(data_dir, args.rounds, warmup))
    finally:
        stop_db(data_dir)
    markdown = render(args.entities, stats, info)
    print(markdown)
    if not args.no_save:
        figures = {f"{name.replace(' ', '_').replace(':', '')}_p50_ms": st["p50_ms"] for name, st in stats.items()}
        data = {"machine": info, "entities": args.entities, **stats}
        md, _ = write_results("read-write-mix", markdown, data, size=str(args.entities), figures=figures)
        print(f"saved {md}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
