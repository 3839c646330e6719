"""Store load: how soon `polyg serve` (stdio) on a copy of a large embedded store is ready, what a
tool call answers meanwhile, and where FalkorDB's load time goes.

The run copies a pristine data dir (by default the recall benchmark's: run bench/latency/recall_bench.py
at that size first), spawns `polyg serve --toolsets memory` over stdio and calls get_statistics
until it answers. A call made while the store loads waits `store_wait_s` (30 s) and answers "The
store is still loading (N s so far)"; each such answer is recorded. Reported: spawn -> initialize,
spawn -> the first answer, polyg's "store ready" seconds (from its log), and FalkorDB's own "DB
loaded ... seconds" lines (the RDB base: reading it and building every index, when it answers
nothing at all; the incr file: replaying the commands written since the last compaction), with
the load average. There is no floor: this is FalkorDB's own load, which polyg does not shorten.

Usage: .venv/bin/python bench/latency/store_load.py [--memories 100000] [--pristine DIR] [--embedder hashing]
Results: bench/results/store_load-<memories>.md and .json, and a row in history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.datadirs import fresh_copy
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.results import write_results
from bench.lib.server import STILL_LOADING, PolygServer
from bench.lib.smoke import SMOKE_HELP, smoke_store

DB_LOADED = re.compile(r"DB loaded from (.+?): ([\d.]+) seconds")


async def measure(pristine: Path, workdir: Path, embedder: str | None) -> dict[str, Any]:
    run = fresh_copy(pristine, workdir / "run")
    falkor_log = run / "db" / "falkordb.log"
    log_from = falkor_log.stat().st_size if falkor_log.exists() else 0
    log_path = workdir / "server.log"
    log_path.write_text("")
    env = clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": embedder} if embedder else None)
    calls: list[dict[str, Any]] = []
    with LoadSampler() as load:
        async with PolygServer(run, log_path=log_path, env=env, extra_args=["--toolsets", "memory"]) as server:
            while True:
                t = time.perf_counter()
                result = await server.client.call_tool("get_statistics", {})
                text = result.content[0].text if result.is_error and result.content else None
                calls.append({"at_s": round(t - server.t_spawn, 1), "took_s": round(time.perf_counter() - t, 1)})
                if text is None:
                    break
                if not text.startswith(STILL_LOADING):
                    raise RuntimeError(f"get_statistics failed: {text}")
                calls[-1]["answer"] = text
            ready_s = time.perf_counter() - server.t_spawn
            init_s = server.init_s
    logs = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    store_ready: dict[str, Any] = next((entry for entry in logs if entry.get("msg") == "store ready"), {})
    with falkor_log.open("rb") as f:
        f.seek(log_from)
        loaded = DB_LOADED.findall(f.read().decode(errors="replace"))
    return {
        "pristine": str(pristine),
        "init_s": round(init_s, 2),
        "ready_s": round(ready_s, 1),
        "store_ready_s": store_ready.get("seconds"),
        "falkordb_loaded": [{"from": name, "seconds": float(seconds)} for name, seconds in loaded],
        "calls": calls,
        "load": load.summary(),
    }


def render(result: dict[str, Any], info: dict[str, Any]) -> str:
    lines = [
        "# Store load",
        "",
        describe_machine(info),
        "",
        f"Store: {result['pristine']}. spawn -> initialize {result['init_s']} s; spawn -> first answer "
        f"{result['ready_s']} s; polyg's 'store ready' after {result['store_ready_s']} s.",
        "",
        "FalkorDB: " + "; ".join(f"{item['from']} {item['seconds']:.1f} s" for item in result["falkordb_loaded"]) + ".",
        "",
        "| call at (s) | took (s) | answer |",
        "|---|---|---|",
        *(f"| {c['at_s']} | {c['took_s']} | {c.get('answer', 'ok')} |" for c in result["calls"]),
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int, default=100_000, help="the recall benchmark's store size")
    p.add_argument("--pristine", type=Path, help="a pristine data dir (default: the recall benchmark's)")
    p.add_argument("--embedder", default="hashing", help="the embedder the store was built with")
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "polyg-bench")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args()
    if args.smoke:
        # A tiny store from the bulk loader (in this process: no server started only to make it).
        args.pristine, args.no_save = smoke_store("store-load"), True
        args.workdir = args.pristine.parent
    pristine = args.pristine or args.workdir / f"recall-{args.memories}" / "pristine"
    if not pristine.is_dir():
        p.error(
            f"no pristine store at {pristine}: run bench/latency/recall_bench.py at that size first, or give --pristine"
        )
    workdir = args.workdir / f"store-load-{args.memories}"
    workdir.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    result = asyncio.run(measure(pristine, workdir, None if args.smoke else args.embedder))
    markdown = render(result, info)
    print(markdown)
    if not args.no_save:
        figures = {"ready_s": result["ready_s"], "store_ready_s": result["store_ready_s"]}
        md, _ = write_results(
            "store_load", markdown, {"machine": info, **result}, size=str(args.memories), figures=figures
        )
        print(f"saved {md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
