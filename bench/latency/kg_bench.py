"""kg toolset benchmark: polyg over MCP stdio, embedded FalkorDB store, default MiniLM embedder.

For each store size (entities preloaded straight into the store, cached under --workdir):

- startup: process spawn -> `initialize` answered, and -> first tool call (a get_entity on an
  existing id) answered; --startup-runs fresh server processes, medians reported;
- tool calls, one server process, sequential (one request in flight): create_entity,
  get_entity, list_entities (default limit 50, and with name_contains), add_observation, plus
  the SDK floor (ping, tools/list) for reading results as ratios. Twice: each operation in
  blocks of its own (the blocks rotating, so that noise on a shared machine spreads over all
  of them; after a block of writes, an unmeasured search_nodes waits for their vectors; the
  per-operation figures and targets), then all interleaved call by call (reads among writes
  whose vectors the server makes in the background);
- peak RSS (VmHWM) of the polyg server process and of its FalkorDB (redis-server) process.

Usage: .venv/bin/python bench/latency/kg_bench.py [--sizes 1000,10000,100000] [--calls 300]
Results: bench/results/kg-<size>.md and .json, and a row in history.csv. Timings are informational: nothing here fails
on a slow run; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.database import HeldDatabase, kill_db, stop_db
from bench.lib.datadirs import ensure_preloaded, fresh_copy
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.paths import REPO
from bench.lib.procs import dir_size_mb
from bench.lib.results import write_results
from bench.lib.server import PolygServer, server_ms
from bench.lib.smoke import SMOKE_ENTITIES, SMOKE_HELP, smoke_workdir
from bench.lib.stats import fmt_mb, fmt_ms, median, summarize
from bench.lib.synthetic import OBJECTS, TYPES, VERBS, WORDS, entity_id

# Targets (informational): PASS/MISS is printed next to each, nothing fails on a MISS.
TARGET_SIZE = 10_000
TARGET_CREATE_P50_MS = 6.0
TARGET_GET_P50_MS = 2.5
TARGET_INIT_S = 1.5

# Every toolset, as in the runs recorded before kg,memory became the default: the barrier
# between blocks is memory-compat's search_nodes.
SERVED = ["--toolsets", "all"]
OPS = (
    "ping",
    "tools/list",
    "create_entity",
    "get_entity",
    "list_entities",
    "list_entities name_contains",
    "add_observation",
)
FLOOR_OP = "ping"
SDK_OPS = ("ping", "tools/list")
BLOCK = 30  # calls of one operation in a row, in the per-operation schedule
WRITE_OPS = ("create_entity", "add_observation")  # their vectors are made after they answer
BARRIER = "search_nodes (barrier)"
SLOW_START_S = 60.0

_used_dirs: list[Path] = []


def _cleanup() -> None:
    for d in _used_dirs:
        stop_db(d)


atexit.register(_cleanup)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


async def startup_trial(data_dir: Path, env: dict[str, str], log_path: Path, probe_id: str) -> dict[str, Any]:
    """Spawn a server on a data dir with no database running: time to `initialize` answered and
    to a first get_entity answered. A failed first call is recorded (with its time and error),
    retried a few times, and the database of this disposable copy is then killed."""
    server = PolygServer(data_dir, log_path=log_path, env=env, extra_args=SERVED)
    error = None
    async with server as s:
        try:
            await s.call("get_entity", {"entity_id": probe_id})
        except RuntimeError as exc:
            error = {"after_s": time.perf_counter() - s.t_spawn, "error": str(exc)}
            log(f"first get_entity failed after {error['after_s']:.1f} s: {exc}")
            for _ in range(3):  # does the server recover, or is the failure sticky?
                await asyncio.sleep(2)
                try:
                    await s.call("get_entity", {"entity_id": probe_id})
                    error["recovered_after_s"] = time.perf_counter() - s.t_spawn
                    break
                except RuntimeError as again:
                    error["retry_error"] = str(again)
            if "recovered_after_s" not in error:
                kill_db(data_dir)  # still building its indexes: it would not answer SHUTDOWN
        first = time.perf_counter() - s.t_spawn
        t_close = time.perf_counter()
    return {
        "init_s": s.init_s,
        "first_call_s": first if error is None else float("nan"),
        "first_call_error": error,
        "shutdown_s": time.perf_counter() - t_close,
        "protocol": s.protocol_version,
        "leftover_db": s.leftover_db,
    }


async def ops_session(
    data_dir: Path, env: dict[str, str], log_path: Path, n: int, calls: int, warmup: int, seed: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    tag = f"{seed:x}"
    held = HeldDatabase(data_dir)
    await asyncio.to_thread(held.__enter__)
    log(f"n={n}: database loaded in {held.load_s:.1f} s (held open for the session)")
    try:
        return await _ops_session(held, data_dir, env, log_path, n, calls, warmup, rng, tag)
    finally:
        await asyncio.to_thread(held.__exit__, None, None, None)


async def _ops_session(
    held: HeldDatabase,
    data_dir: Path,
    env: dict[str, str],
    log_path: Path,
    n: int,
    calls: int,
    warmup: int,
    rng: random.Random,
    tag: str,
) -> dict[str, Any]:
    obs_targets = rng.sample(range(n), min(n, warmup + 2 * calls))

    def obs_target(i: int) -> str:
        return entity_id(obs_targets[i % len(obs_targets)])

    async with PolygServer(data_dir, log_path=log_path, env=env, shared_db=True, extra_args=SERVED) as s:
        await s.call("get_entity", {"entity_id": entity_id(0)})  # waits for the store and the model
        ready_s = time.perf_counter() - s.t_spawn

        def make(op: str, i: int) -> Any:
            if op == "ping":
                return s.ping()
            if op == "tools/list":
                return s.client.list_tools()
            if op == "create_entity":
                word = WORDS[i % len(WORDS)]
                return s.call(
                    "create_entity",
                    {
                        "name": f"bench/{tag}/{word}_{i}.py",
                        "type": TYPES[i % len(TYPES)],
                        "description": f"The {word} module {VERBS[i % len(VERBS)]} "
                        f"{OBJECTS[i % len(OBJECTS)]} for the benchmark.",
                    },
                )
            if op == "get_entity":
                return s.call("get_entity", {"entity_id": entity_id(rng.randrange(n))})
            if op == "list_entities":
                return s.call("list_entities", {})
            if op == "list_entities name_contains":
                return s.call("list_entities", {"name_contains": WORDS[i % len(WORDS)]})
            if op == "add_observation":
                return s.call(
                    "add_observation",
                    {"entity_id": obs_target(i), "observation": f"Benchmark note {i}: calls {WORDS[i % 7]}."},
                )
            raise ValueError(op)

        for i in range(warmup):
            for op in OPS:
                await make(op, 2 * calls + i)

        async def run(schedule: list[tuple[str, int]]) -> dict[str, Any]:
            samples: dict[str, list[float]] = {op: [] for op in OPS}
            inside: dict[str, list[float]] = {}  # server-side ms per operation, from each result's _meta
            t_loop = time.perf_counter()
            for op, i in schedule:
                if op == BARRIER:
                    # A search answers once the vectors of every earlier write are stored: the
                    # next block starts on a server with no embedding left to do. Not measured.
                    await s.call("search_nodes", {"query": "barrier", "limit": 1})
                    continue
                t = time.perf_counter()
                result = await make(op, i)
                samples[op].append(time.perf_counter() - t)
                if (ms := server_ms(result)) is not None:
                    inside.setdefault(op, []).append(ms)
            loop_s = time.perf_counter() - t_loop
            return {
                "loop_s": loop_s,
                "stats": {op: summarize(v) for op, v in samples.items()},
                "server_side": {op: summarize([x / 1000 for x in v]) for op, v in inside.items()},
            }

        # Each operation in blocks of its own (what one operation costs), the blocks rotating so
        # that noise on a shared machine spreads over all of them, and a block of writes followed
        # by a barrier (so that it is not the next block that pays for the writes' vectors); then
        # all of them interleaved call by call (what a read costs among writes, whose vectors are
        # made in the background meanwhile). Indices of the second schedule follow the first:
        # every create is new.
        blocks = []
        block = min(BLOCK, calls)
        for b in range(max(1, calls // block)):
            for k in range(len(OPS)):
                op = OPS[(b + k) % len(OPS)]
                blocks += [(op, b * block + j) for j in range(block)]
                if op in WRITE_OPS:
                    blocks.append((BARRIER, 0))
        interleaved = [(OPS[(i + k) % len(OPS)], calls + i) for i in range(calls) for k in range(len(OPS))]
        phases = {"blocks": await run(blocks), "interleaved": await run(interleaved)}
        check = await s.call("list_entities", {"name_contains": f"bench/{tag}/", "limit": 1000})
        created = len(check.structured_content["entities"])
        memory = s.memory()
    return {
        "ready_s": ready_s,
        "init_s": s.init_s,
        "created_entities_seen": created,
        # The per-operation figures (and the targets) are those of the blocks.
        **phases["blocks"],
        "interleaved": phases["interleaved"],
        "memory": memory,
        "db_load_s": held.load_s,
    }


async def measure(
    args: argparse.Namespace, n: int, env: dict[str, str], pristine: Path, run_dir: Path, log_path: Path
) -> dict[str, Any]:
    trials = []
    for k in range(args.startup_runs):
        trial = await startup_trial(run_dir, env, log_path, entity_id(n // 2))
        log(
            f"n={n} startup {k + 1}/{args.startup_runs}: initialize {trial['init_s']:.3f} s, "
            f"first get_entity {trial['first_call_s']:.3f} s"
        )
        trials.append(trial)
        if trial["first_call_error"] is not None or trial["first_call_s"] > SLOW_START_S:
            if trial["first_call_error"] is not None:
                await asyncio.to_thread(fresh_copy, pristine, run_dir)
            break  # one slow or failed start says enough; repeating would cost minutes each
    result: dict[str, Any] = {
        "entities": n,
        "data_dir_mb": dir_size_mb(run_dir),
        "startup": {
            "trials": trials,
            "init_s_median": median([t["init_s"] for t in trials]),
            "first_call_s_median": median([t["first_call_s"] for t in trials if t["first_call_error"] is None]),
            "first_call_errors": [t["first_call_error"] for t in trials if t["first_call_error"] is not None],
        },
    }
    if args.calls > 0:
        log(f"n={n}: {args.calls} calls x {len(OPS)} operations (+{args.warmup} warm-up rounds) ...")
        session_log = log_path.with_name("session.log")
        session_log.write_text("")
        session = await ops_session(run_dir, env, session_log, n, args.calls, args.warmup, args.seed + n)
        result["ops"] = session
        for op in OPS:
            st = session["stats"][op]
            log(f"n={n} {op:28s} p50 {st['p50_ms']:7.2f} ms  p95 {st['p95_ms']:7.2f} ms")
    return result


async def bench_size(args: argparse.Namespace, n: int, env: dict[str, str]) -> dict[str, Any]:
    workdir: Path = args.workdir
    pristine, preload = await asyncio.to_thread(
        ensure_preloaded, workdir, n, embed=args.embed, max_embed_s=args.max_embed_s, log=log
    )
    run_dir = workdir / f"kg-{n}" / "run"
    _used_dirs.append(run_dir)
    t = time.perf_counter()
    await asyncio.to_thread(fresh_copy, pristine, run_dir)
    copy_s = time.perf_counter() - t
    log_path = workdir / f"kg-{n}" / "server.log"
    log_path.write_text("")

    with LoadSampler() as sampler:
        result = await measure(args, n, env, pristine, run_dir, log_path)
    result.update(preload=preload, copy_s=round(copy_s, 2), machine_load=sampler.summary())
    log(f"n={n}: machine load while measuring {result['machine_load']}")
    return result


# --- report --------------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def targets(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    at = next((r for r in results if r["entities"] == TARGET_SIZE and "ops" in r), None)
    for op, limit in (("create_entity", TARGET_CREATE_P50_MS), ("get_entity", TARGET_GET_P50_MS)):
        value = at["ops"]["stats"][op]["p50_ms"] if at else None
        mixed = at["ops"]["interleaved"]["stats"][op]["p50_ms"] if at else None
        out.append(
            {
                "target": f"{op} p50 at {TARGET_SIZE:,} entities <= {limit} ms",
                "value": f"{value:.2f} ms" if value is not None else "not measured",
                "interleaved": f"{mixed:.2f} ms" if mixed is not None else "not measured",
                "verdict": verdict(None if value is None else value <= limit),
            }
        )
    for r in results:
        init = r["startup"]["init_s_median"]
        worst = max(t["init_s"] for t in r["startup"]["trials"])
        out.append(
            {
                "target": f"initialize answered <= {TARGET_INIT_S} s after start, {r['entities']:,} entities",
                "value": f"median {init:.3f} s (worst {worst:.3f} s)",
                "verdict": verdict(init <= TARGET_INIT_S),
            }
        )
    return out


def tool_call_rows(results: list[dict[str, Any]], phase: str | None) -> list[str]:
    lines = [
        "| entities | operation | calls/s | p50 ms | p95 ms | p50 / ping p50 | in polyg p50 ms |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "ops" not in r:
            continue
        ops = r["ops"][phase] if phase else r["ops"]
        stats, inside = ops["stats"], ops.get("server_side", {})
        floor = stats[FLOOR_OP]["p50_ms"]
        for op in OPS:
            st = stats[op]
            label = f"{op} (SDK floor)" if op in SDK_OPS else op
            srv = fmt_ms(inside[op]["p50_ms"]) if op in inside else "-"
            lines.append(
                f"| {r['entities']:,} | {label} | {st['calls_per_s']:.0f} | {fmt_ms(st['p50_ms'])} | "
                f"{fmt_ms(st['p95_ms'])} | {st['p50_ms'] / floor:.1f}x | {srv} |"
            )
    return lines


def render(data: dict[str, Any]) -> str:
    results = data["results"]
    m = data["machine"]
    lines = [
        f"# kg benchmark, {m['date']}",
        "",
        describe_machine(m),
        "",
        f"MCP stdio (Python SDK client, `{data['config']['mode']}` handshake), embedded FalkorDB, "
        f"MiniLM embedder, {data['config']['warmup']} warm-up rounds, then "
        f"{data['config']['calls']} sequential calls per operation twice: in blocks of {BLOCK} calls "
        "of one operation (the blocks of all operations rotating; after a block of writes, an "
        "unmeasured search_nodes, which answers once their vectors are stored), and interleaved call by call "
        "(a read among writes whose vectors are being made in the background). Shared, noisy "
        "machine: read medians and the ratio to the SDK floor (ping) rather than absolute numbers. "
        "'in polyg' is the handler time polyg reports in each result's `_meta` (validation, store, embedding, "
        "result), i.e. without the MCP transport and SDK.",
    ]
    for title, phase in (("each operation in blocks", None), ("all operations interleaved", "interleaved")):
        lines += ["", f"## Tool calls: {title}", ""]
        lines += tool_call_rows(results, phase)
    lines += [
        "",
        "## Startup (process spawn to answer)",
        "",
        "| entities | initialize answered, median s | first get_entity answered, median s | runs | "
        "FalkorDB load alone, s | data dir MB |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for r in results:
        st = r["startup"]
        first = f"{st['first_call_s_median']:.3f}" if st["first_call_s_median"] == st["first_call_s_median"] else ""
        for err in st.get("first_call_errors", []):
            sticky = "" if "recovered_after_s" in err else "; retries fail too"
            first += f" **FAILED** after {err['after_s']:.1f} s: {err['error'][:160]}{sticky}"
        load = r.get("ops", {}).get("db_load_s", float("nan"))
        lines.append(
            f"| {r['entities']:,} | {st['init_s_median']:.3f} | {first.strip()} | "
            f"{len(st['trials'])} | {load:.1f} | {r['data_dir_mb']} |"
        )
    lines += [
        "",
        "## Memory (peak RSS, VmHWM, over the tool-call session)",
        "",
        "| entities | polyg server MB | FalkorDB (redis-server) MB | polyg RSS at end MB | FalkorDB RSS at end MB |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        mem = r.get("ops", {}).get("memory", {})
        srv, db = mem.get("server", {}), mem.get("db", {})
        peak_srv, peak_db = fmt_mb(srv.get("peak_rss_kb", 0)), fmt_mb(db.get("peak_rss_kb", 0))
        lines.append(
            f"| {r['entities']:,} | {peak_srv} | {peak_db} | "
            f"{fmt_mb(srv.get('rss_kb', 0))} | {fmt_mb(db.get('rss_kb', 0))} |"
        )
    lines += [
        "",
        "## Preloaded data",
        "",
        "| entities | observations | embeddings | MiniLM ms/text (measured) | embed s | write s |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for r in results:
        p = r["preload"]
        mode = p["embed_mode"]
        if mode == "hashing":
            mode = (
                f"**hashed vectors** (MiniLM projected {p.get('minilm_projected_s', '?')} s > "
                f"{data['config']['max_embed_s']:.0f} s)"
                if "minilm_projected_s" in p
                else "**hashed vectors**"
            )
        else:
            mode = "MiniLM (real)"
        lines.append(
            f"| {p['entities']:,} | {p['observations']:,} | {mode} | {p.get('minilm_ms_per_text', '-')} | "
            f"{p['embed_s']} | {p['write_s']} |"
        )
    lines += [
        "",
        "## Machine load while measuring (other work shares this machine)",
        "",
        "| entities | 1-min load average, median (max) | CPU busy, median (max) |",
        "|---:|---:|---:|",
    ]
    for r in results:
        ml = r.get("machine_load", {})
        la, busy = ml.get("load1", {}), ml.get("cpu_busy", {})
        if la and busy:
            lines.append(
                f"| {r['entities']:,} | {la['median']:.2f} ({la['max']:.2f}) | "
                f"{busy['median']:.0%} ({busy['max']:.0%}) |"
            )
    lines += [
        "",
        "## Targets (informational)",
        "",
        "Measured on the blocks; the p50 of the same operation interleaved with the others is beside it.",
        "",
        "| target | measured | | interleaved |",
        "|---|---|---|---|",
    ]
    for t in data["targets"]:
        lines.append(f"| {t['target']} | {t['value']} | {t['verdict']} | {t.get('interleaved', '')} |")
    lines.append("")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    args.workdir.mkdir(parents=True, exist_ok=True)
    env = clean_env(args.workdir)
    machine = machine_info()
    results = []
    for n in args.sizes:
        results.append(await bench_size(args, n, env))
    data = {
        "benchmark": "kg",
        "machine": machine,
        "config": {
            "sizes": args.sizes,
            "calls": args.calls,
            "warmup": args.warmup,
            "startup_runs": args.startup_runs,
            "embed": args.embed,
            "max_embed_s": args.max_embed_s,
            "mode": "legacy",
            "workdir": str(args.workdir),
            "loadavg_at_end": list(os.getloadavg()),
        },
        "results": results,
    }
    data["targets"] = targets(results)
    return data


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="comma-separated store sizes (entities)")
    p.add_argument("--calls", type=int, default=300, help="measured calls per operation (0: startup only)")
    p.add_argument("--warmup", type=int, default=20, help="warm-up rounds (all operations) before measuring")
    p.add_argument("--startup-runs", type=int, default=3, help="fresh server starts per size")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-bench"), help="cache of preloaded dirs")
    p.add_argument(
        "--embed",
        choices=("auto", "minilm", "hashing"),
        default="auto",
        help="preload vectors: MiniLM, the hashing embedder, or auto (hashing if MiniLM > --max-embed-s)",
    )
    p.add_argument("--max-embed-s", type=float, default=600.0)
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--no-save", action="store_true", help="print only; do not write bench/results")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args(argv)
    if args.smoke:
        args.sizes, args.calls, args.warmup, args.startup_runs = str(SMOKE_ENTITIES), 3, 1, 1
        args.embed = "hashing"
        args.workdir, args.no_save = smoke_workdir("kg"), True
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.workdir = args.workdir.resolve()
    return args


def key_figures(result: dict[str, Any]) -> dict[str, Any]:
    """What history.csv keeps of one size: startup and the per-operation p50s (ms)."""
    figures: dict[str, Any] = {
        "init_s": result["startup"]["init_s_median"],
        "first_call_s": result["startup"]["first_call_s_median"],
    }
    for op, st in result.get("ops", {}).get("stats", {}).items():
        if op not in SDK_OPS:
            figures[f"{op.replace(' ', '_')}_p50_ms"] = st["p50_ms"]
    return figures


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        data = asyncio.run(run(args))
    finally:
        _cleanup()
    markdown = render(data)
    print(markdown)
    if not args.no_save:
        for result in data["results"]:
            size = str(result["entities"])
            md, js = write_results(
                "kg", markdown, {**data, "results": [result]}, size=size, figures=key_figures(result)
            )
            print(f"results: {md.relative_to(REPO)}, {js.relative_to(REPO)}")
    else:
        print(json.dumps(data["targets"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
