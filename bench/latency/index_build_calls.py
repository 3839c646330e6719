"""Calls made while FalkorDB builds an index on a large graph (issue 28, "degrade, don't fail").

FalkorDB holds a write to a graph until an index build on it ends, and every read arriving
after that write waits behind it. polyg refuses a write during a build (2005, retryable, with
the build's progress) before sending it, so searches keep answering (degraded, by words). This
measures it on a store written by the bench's bulk loader (hashed vectors): polyg's core opens
the store, the entities' vector index is dropped and created again with polyg's options, and,
while FalkorDB builds it, `rounds` times: one entity write (as one tool call) and one search;
then the build's length and the same two calls once it is done.

`--mode scan` measures what a search's words cost while the indexes are built: the words of
queries of 1, 3 and 5 words (and their stems) looked up by reading every node, as a degraded
search does (`term_hits_scan`), against the same lookups through the full-text index; p50 of
`--runs` each. It changes nothing in the store. `--smoke` runs both modes.

Usage: .venv/bin/python bench/latency/index_build_calls.py --entities 100000 [--workdir DIR]
       .venv/bin/python bench/latency/index_build_calls.py --data-dir DIR   # a bulk-loaded store
       .venv/bin/python bench/latency/index_build_calls.py --mode scan --data-dir DIR [--runs 5]
Prints its measurements (JSON, then a short table); nothing is saved.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg

from bench.lib import bulk_load
from bench.lib.database import stop_db
from bench.lib.inprocess import DEFAULT_PROJECT
from bench.lib.smoke import SMOKE_HELP, smoke_workdir

REBUILD = (
    "CREATE VECTOR INDEX FOR (n:Entity) ON (n.embedding) OPTIONS "
    "{dimension: 384, similarityFunction: 'cosine', M: 16, efConstruction: 100, efRuntime: 100}"
)
QUERY = "optimizer function caches requests"
# Words of the bulk loader's texts (bench/lib/synthetic.py), and one found nowhere.
SCAN_QUERIES = (
    "planner",
    "pydantic",
    "saxophone",
    "optimizer function caches",
    "proxy stores tokens",
    "redis route queries",
    "planner function indexes events subsystem",
    "proxy service stores tokens infra",
    "uses moment store payloads release",
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


async def measure(data_dir: Path, rounds: int, pause_s: float) -> dict[str, Any]:
    from polyg.config import load_settings
    from polyg.core import degraded
    from polyg.core.graph.indexes import builds, one_check_per_call
    from polyg.errors import PolygError
    from polyg.runtime.app import Polyg
    from polyg.store.queries import indexes as q

    logs = data_dir.parent / "logs"
    settings = load_settings(
        None, data_dir=data_dir, log_dir=logs, embedding_provider="hashing", store_open_timeout_s=3600
    )
    out: dict[str, Any] = {"during": []}
    t = time.monotonic()
    core = Polyg(settings)
    try:
        s = await core.ready()
        out["open_s"] = round(time.monotonic() - t, 1)
        project = DEFAULT_PROJECT

        async def write(name: str) -> dict[str, Any]:
            with one_check_per_call():
                t = time.monotonic()
                try:
                    await s.entities.create(project, name=name, type_="note")
                    return {"write": "applied", "write_s": round(time.monotonic() - t, 3)}
                except PolygError as exc:
                    return {"write": f"{exc.code}: {exc.message[:120]}", "write_s": round(time.monotonic() - t, 3)}

        async def search() -> dict[str, Any]:
            with degraded.collecting() as notes:
                t = time.monotonic()
                hits = await s.search.entities(project, QUERY)
                return {"hits": len(hits), "search_s": round(time.monotonic() - t, 3), "degraded": notes}

        await s.store.query(project, "DROP VECTOR INDEX FOR (n:Entity) ON (n.embedding)")
        await s.store.query(project, REBUILD)
        began = time.monotonic()
        for i in range(rounds):
            row = {"at_s": round(time.monotonic() - began, 1), **await write(f"during build {i}"), **await search()}
            log(json.dumps(row))
            out["during"].append(row)
            await asyncio.sleep(pause_s)
        while True:  # polled: FalkorDB tells no one when a build ends
            if not builds(await q.index_states(s.ctx, project)):
                break
            await asyncio.sleep(0.5)
        out["build_s"] = round(time.monotonic() - began, 1)
        out["after"] = {**await write("after the build"), **await search()}
        log(f"built in {out['build_s']} s; after: {json.dumps(out['after'])}")
    finally:
        await core.close()
    return out


async def measure_scan(data_dir: Path, runs: int) -> dict[str, Any]:
    """p50 seconds of each query's word lookups, by a scan of the nodes and by the index."""
    from polyg.config import load_settings
    from polyg.core.search.service import DEFAULT, ENTITY_TARGETS, query_terms
    from polyg.runtime.app import Polyg

    logs = data_dir.parent / "logs"
    settings = load_settings(
        None, data_dir=data_dir, log_dir=logs, embedding_provider="hashing", store_open_timeout_s=3600
    )
    core = Polyg(settings)
    out: dict[str, Any] = {"queries": []}
    try:
        s = await core.ready()
        k = max(DEFAULT.candidates, 10)  # as `hits` asks for 10 results
        for query in SCAN_QUERIES:
            terms = query_terms(query)
            row: dict[str, Any] = {"query": query, "words": len(terms)}
            for how, scan in (("scan", True), ("index", False)):
                times = []
                for _ in range(runs):
                    t = time.perf_counter()
                    # What a search's words cost (hits -> _text), stems included.
                    found = await s.search._text(DEFAULT_PROJECT, terms, k, ENTITY_TARGETS, DEFAULT, scan=scan)
                    times.append(time.perf_counter() - t)
                row[f"{how}_p50_s"] = round(statistics.median(times), 3)
                row[f"{how}_found"] = len(found)
            log(json.dumps(row))
            out["queries"].append(row)
        out["nodes"] = await s.search._totals(DEFAULT_PROJECT)
    finally:
        await core.close()
    return out


def print_scan(result: dict[str, Any]) -> None:
    print(json.dumps(result))
    print(f"nodes: {result['nodes']}")
    print("| query | words | scan p50 s | index p50 s | found (scan / index) |")
    print("|---|---:|---:|---:|---|")
    for row in result["queries"]:
        print(
            f"| {row['query']} | {row['words']} | {row['scan_p50_s']} | {row['index_p50_s']} | "
            f"{row['scan_found']} / {row['index_found']} |"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--entities", type=int, default=100_000, help="bulk-load a store of this many (with --workdir)")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-index-build"))
    p.add_argument("--data-dir", type=Path, help="a store the bulk loader wrote (disposable: its index is rebuilt)")
    p.add_argument("--mode", choices=("calls", "scan"), default="calls", help="calls during a build, or word scans")
    p.add_argument("--runs", type=int, default=5, help="scan mode: runs per query (p50)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pause-s", type=float, default=2.0)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args(argv)
    if args.smoke:
        args.entities, args.workdir, args.rounds, args.pause_s = 300, smoke_workdir("index-build"), 1, 0.0
        args.runs = 1
    data_dir = args.data_dir
    if data_dir is None:
        data_dir = args.workdir.resolve() / f"store-{args.entities}"
        if not data_dir.exists():
            log(f"bulk-loading {args.entities} entities into {data_dir} ...")
            bulk_load.main(["--data-dir", str(data_dir), "--entities", str(args.entities), "--links", "1"])
    if args.mode == "scan" or args.smoke:
        try:
            print_scan(asyncio.run(measure_scan(data_dir, args.runs)))
        finally:
            stop_db(data_dir)
        if not args.smoke:
            return 0
    try:
        measured = asyncio.run(measure(data_dir, args.rounds, args.pause_s))
        result = {"entities": args.entities if args.data_dir is None else None, **measured}
    finally:
        stop_db(data_dir)  # also on an error: the embedded database must not outlive the script
    print(json.dumps(result))
    print("| when | write | write s | search hits | search s | degraded |")
    print("|---|---|---:|---:|---:|---|")
    for row in [*result["during"], {**result["after"], "at_s": f"after ({result['build_s']} s build)"}]:
        print(
            f"| {row['at_s']} | {row['write'][:60]} | {row['write_s']} | {row['hits']} | {row['search_s']} | "
            f"{', '.join(row['degraded']) or '-'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
