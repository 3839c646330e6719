"""Entity scale and memory (spec 003): polyg over MCP stdio on embedded stores of 100 to 1M entities.

For each size (entities preloaded by bench/lib/datadirs.py's bulk path, cached under --workdir; then
two relationships per entity written through the core's `write_relations`, the path an import
takes, so that a traversal has somewhere to go), one `polyg serve` process on a fresh copy,
started cold (no database running), measures in order:

- restart: spawn -> `initialize` answered, -> the first answered call (get_entity on an existing
  id; a call made while FalkorDB loads answers "still loading" after 30 s and is made again), ->
  full search (the first search_nodes whose result is not `degraded`, i.e. the vector index is
  built), and FalkorDB's own "DB loaded" lines;
- memory idle: RSS of polyg (with its children) and of its FalkorDB after `--idle-s` with no call;
- latency, sequential (one request in flight), p50 over MCP stdio as every kg benchmark: ping (the
  SDK floor), create_entity (add), get_entity, search_nodes, get_entity_neighbors at depth 3, in
  rotating blocks (after a block of creates, an unmeasured search_nodes waits for their vectors);
  an operation stops being called once its calls have taken `--op-budget-s` in all;
- memory under 10 QPS: `--qps-s` seconds of calls started every 100 ms whether or not the
  previous one has answered (80% reads: get_entity and search_nodes; 20% create_entity; the
  depth-3 traversal, seconds a call from 10k entities, is left out); the highest RSS sampled
  (every 0.25 s);
- memory in a burst: `--burst-calls` calls of the same mix with `--burst-width` in flight.

Spec 003's targets: polyg idle < 150 MB, under 10 QPS < 500 MB. Beside them, the floor measured
in the same run: a process holding what any MCP server embedding queries in process holds (the
interpreter, the MCP SDK, the embedder with one text embedded), and, for FalkorDB (no target),
an empty database's RSS plus the bytes of the vectors alone (n x 384 float32).

Above `--largest-minilm` (100k) entities the preload stores hashed vectors (same dimension) in
place of MiniLM's, which would take hours here; the server still runs MiniLM for queries. The
results say which. Above `--bulk-above` (100k) the store is written by the bench's bulk loader
(`bench/lib/bulk_load.py`: the same nodes, vectors, relationships and indexes, in minutes
rather than hours; tests/benchmarks/test_bulk_load.py checks they are the same).
A size stopped by `--give-up-at` keeps what it measured (marked as stopped midway).
FalkorDB's RSS is watched every 0.25 s: over `--max-db-gb` the size is
stopped and recorded as such.

Usage: .venv/bin/python bench/entity_scale.py [--sizes 100,1000,10000,100000,1000000]
Results: bench/results/entity-scale.md and .json (sizes measured in an earlier run are kept unless
measured again), and a row in history.csv. Nothing fails on a slow run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import functools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib import bulk_load, datadirs
from bench.lib.database import HeldDatabase, kill_db, read_db_pid, stop_db
from bench.lib.datadirs import cached_build, fresh_copy, preload_meta_path
from bench.lib.env import clean_env
from bench.lib.inprocess import DEFAULT_PROJECT
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.measure import bounded
from bench.lib.paths import REPO, RESULTS_DIR
from bench.lib.procs import cmdline, descendants, dir_size_mb, memory_kb
from bench.lib.results import write_results
from bench.lib.server import STILL_LOADING, PolygServer, server_ms
from bench.lib.smoke import SMOKE_ENTITIES, SMOKE_HELP, smoke_workdir
from bench.lib.stats import fmt_ms, summarize
from bench.lib.synthetic import AREAS, OBJECTS, TYPES, VERBS, WORDS, entity_id, links, relation_id

BENCHMARK = "entity-scale"
TOOLSETS = "kg,memory-compat,graphrag"  # get_entity/create_entity, search_nodes, get_entity_neighbors
OPS = ("ping", "create_entity", "get_entity", "search_nodes", "neighbors depth 3")
WRITE_OPS = ("create_entity",)
BARRIER = "search_nodes (barrier)"
RELATIONS_VERSION = 1  # bump when the generated relationships change
LINKS_PER_ENTITY = 2
LINK_BATCH = 1000
DIMENSION = 384
SPEC_IDLE_MB = 150
SPEC_QPS10_MB = 500
DB_LOADED = re.compile(r"DB loaded from (.+?): ([\d.]+) seconds")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- relationships over the kg preload --------------------------------------------------------


async def _preload_relations(data_dir: Path, n: int, embed: str) -> dict[str, Any]:
    """Write the relationships through the core's `NamedGraph.write_relations` (what an import
    writes relationships with), then compact the AOF as the entity preload does."""
    from polyg.config import load_settings
    from polyg.core.memory.named import stored_type
    from polyg.names import now_iso
    from polyg.runtime.app import Polyg
    from polyg.store.embedded import EmbeddedFalkor

    core = Polyg(load_settings(None, data_dir=data_dir, log_level="WARNING", embedding_provider=embed))
    services = await core.ready()
    project = DEFAULT_PROJECT
    at = now_iso()
    t = time.perf_counter()
    written = 0
    batch: list[dict[str, Any]] = []
    last_log = t
    try:
        for i, j, kind in links(n, LINKS_PER_ENTITY):
            rel_id = relation_id(i, j, kind)
            row = {"id": rel_id, "a": entity_id(i), "b": entity_id(j), "type": stored_type(kind), "text": kind}
            batch.append({**row, "created_at": at})
            if len(batch) >= LINK_BATCH:
                written += len(await services.named.write_relations(project, batch, same="id"))
                batch = []
                if time.perf_counter() - last_log > 10:
                    last_log = time.perf_counter()
                    log(f"relations: {written}/{n * LINKS_PER_ENTITY} ({last_log - t:.0f} s)")
        written += len(await services.named.write_relations(project, batch, same="id"))
        write_s = time.perf_counter() - t
        if not await asyncio.to_thread(EmbeddedFalkor(data_dir / "db").compact, 1800):
            raise RuntimeError("compacting the store's AOF failed")
    finally:
        await core.close()
    return {
        "version": RELATIONS_VERSION,
        "entities": n,
        "relations": written,
        "write_s": round(write_s, 1),
        "relations_per_s": round(written / write_s, 1) if write_s > 0 else None,
        "data_dir_mb": dir_size_mb(data_dir),
    }


def build_progress(pristine: Path) -> dict[str, Any] | None:
    """Entities and vectors stored so far in a preload being built (its database is running)."""
    import redis

    try:
        db = redis.Redis(unix_socket_path=str(pristine / "db" / "falkordb.sock"), socket_timeout=120)
        reply = db.execute_command(  # type: ignore[no-untyped-call]
            "GRAPH.RO_QUERY",
            f"polyg:{DEFAULT_PROJECT}",
            "MATCH (e:Entity) RETURN count(e), count(e.embedding)",
        )
    except Exception:  # a database loading or stopping answers nothing useful
        return None
    entities, vectors = (int(x) for x in reply[1][0])
    return {"at": time.strftime("%H:%M:%S", time.gmtime()), "t": time.time(), "entities": entities, "vectors": vectors}


def wait_for_other_build(args: argparse.Namespace, n: int, give_up: GiveUp) -> dict[str, Any] | None:
    """While another process builds the kg preload of this size (its database is running and its
    info is not written yet), wait for it rather than delete it and start again. Returns what it
    stored while waited for (counts at the start and end of the wait), or None."""
    pristine = args.workdir / f"kg-{n}" / "pristine"
    meta = preload_meta_path(pristine)
    first = last = None
    while not meta.exists() and not give_up.fired:
        if read_db_pid(pristine) is None:
            if first is not None:
                time.sleep(30)  # the builder writes its info just after its database stops
            break
        if first is None:
            log(f"n={n}: another process is building {pristine}; waiting for it")
            first = build_progress(pristine)
        time.sleep(10)
    if first is None:
        return None
    last = build_progress(pristine)
    seen: dict[str, Any] = {"first": first, "last": last}
    if first and last and last["t"] > first["t"]:
        span = last["t"] - first["t"]
        seen["entities_per_s"] = round((last["entities"] - first["entities"]) / span, 1)
        seen["vectors_per_s"] = round((last["vectors"] - first["vectors"]) / span, 1)
    log(f"n={n}: the other build, while waited for: {seen}")
    return seen


def ensure_bulk_loaded(args: argparse.Namespace, n: int) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Entities, hashed vectors and relationships by the bench's bulk loader (`bench.lib.bulk_load`,
    cached): the store the preloads below write, in minutes rather than hours at 1M."""
    pristine = args.workdir / f"scale-{n}" / "pristine"
    cmd = [sys.executable, "-m", "bench.lib.bulk_load", "--data-dir", str(pristine), "--entities", str(n)]
    # `--resume`: a load stopped midway (its database kept running) goes on where it was.
    cmd += ["--links", str(LINKS_PER_ENTITY), "--resume"] + (["--leave-running"] if args.warm_first else [])
    meta = cached_build(
        pristine,
        cmd,
        fits=lambda m: m.get("version") == bulk_load.VERSION and m.get("entities") == n,
        workdir=args.workdir,
        log=log,
        resume=True,
    )
    relations = {
        "entities": n,
        "relations": meta["relations"],
        "write_s": meta["relations_s"],
        "relations_per_s": meta["relations_per_s"],
        "data_dir_mb": meta["data_dir_mb"],
    }
    return pristine, {**meta, "loader": "bulk"}, relations


def ensure_preloaded(args: argparse.Namespace, n: int) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """The kg preload of n entities (cached), and a copy of it with the relationships (cached)."""
    if n > args.bulk_above:
        return ensure_bulk_loaded(args, n)
    embed = "hashing" if n > args.largest_minilm else args.embed
    kg_pristine, kg_meta = datadirs.ensure_preloaded(
        args.workdir, n, embed=embed, max_embed_s=args.max_embed_s, log=log
    )
    pristine = args.workdir / f"scale-{n}" / "pristine"
    mode = str(kg_meta.get("embed_mode", "minilm"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "preload-relations", "--data-dir", str(pristine)]
    cmd += ["--n", str(n), "--embed", mode]
    meta = cached_build(
        pristine,
        cmd,
        fits=lambda m: m.get("version") == RELATIONS_VERSION and m.get("entities") == n,
        workdir=args.workdir,
        base=kg_pristine,
        log=log,
        in_smoke=lambda: asyncio.run(_preload_relations(pristine, n, mode)),
    )
    return pristine, kg_meta, meta


# --- memory: sampled RSS, watched ---------------------------------------------------------------


class RssWatch:
    """Samples the RSS of polyg (with children) and of the data dir's FalkorDB every
    `interval_s` in a thread, keeps the highest per phase, and SIGKILLs the database (a
    disposable copy) when it passes `limit_kb`, so that a size too large for the machine stops
    instead of taking the machine down."""

    def __init__(self, data_dir: Path, limit_kb: int, interval_s: float = 0.25) -> None:
        self.data_dir = data_dir
        self.limit_kb = limit_kb
        self.interval_s = interval_s
        self.polyg_pid: int | None = None
        self.stopped: str | None = None
        self.phase = "start"
        self.peaks: dict[str, dict[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-watch")

    def sample(self) -> dict[str, int]:
        polyg = memory_kb(self.polyg_pid)["rss_kb"] if self.polyg_pid else 0
        db_pid = read_db_pid(self.data_dir)
        db = memory_kb(db_pid, with_children=False)["rss_kb"] if db_pid else 0
        return {"polyg_kb": polyg, "db_kb": db}

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            now = self.sample()
            peak = self.peaks.setdefault(self.phase, {"polyg_kb": 0, "db_kb": 0})
            for key, value in now.items():
                peak[key] = max(peak[key], value)
            if now["db_kb"] > self.limit_kb and self.stopped is None:
                self.stopped = f"FalkorDB RSS {now['db_kb'] / 1024:.0f} MB passed the limit in phase {self.phase}"
                log(self.stopped + ": killing it")
                kill_db(self.data_dir)

    def enter(self, phase: str) -> None:
        self.phase = phase

    def __enter__(self) -> RssWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def mb(kb: int) -> float:
    return round(kb / 1024, 1)


def polyg_floor_mb(env: dict[str, str], *, english: bool = False) -> float:
    """RSS of a process holding what any MCP server embedding queries in process holds: the
    interpreter, the MCP SDK's server and stdio transport, and the server's embedder loaded with
    one text embedded (the same provider and model files as the servers measured); `english`:
    and the English pipeline with one text parsed (what the memory toolset cannot do without).
    Its freed heap is given back as polyg gives back its own (polyg.heap)."""
    code = (
        "import mcp.server.lowlevel, mcp.server.stdio, os, sys\n"
        "from polyg.embed import create_embedder\n"
        "from polyg.heap import release_freed_memory\n"
        "e = create_embedder(os.environ.get('POLYG_EMBEDDING_PROVIDER', 'minilm'))\n"
        "e.embed_batch_sync(['warm up'])\n"
        "if sys.argv[1] == 'english':\n"
        "    from polyg.nlp.pipeline import pipeline\n"
        "    pipeline().parse('Alice moved to Paris in 2020.')\n"
        "release_freed_memory()\n"
        "print([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "english" if english else "-"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        cwd=REPO,
    )
    return mb(int(out.stdout.strip().splitlines()[-1]))


async def default_server_idle_mb(workdir: Path, idle_s: float) -> float:
    """RSS of `polyg serve` with the default toolsets (kg and memory: the English pipeline
    loaded) on an empty store, `idle_s` after one `remember`: what a user starting polyg as
    documented holds idle, beside `polyg_floor_mb(english=True)`."""
    run_dir = workdir / "idle-default"
    if run_dir.exists():
        stop_db(run_dir / "data")
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    async with PolygServer(run_dir / "data", log_path=run_dir / "polyg.log", env=clean_env(workdir)) as s:
        # One memory parsed, as the floor parses one text: the pipeline, loaded in the
        # background, is then in; idle is a pause after it.
        await s.call("remember", {"content": "Alice moved to Paris in 2020."})
        await asyncio.sleep(idle_s)
        assert s.pid is not None
        return mb(memory_kb(s.pid)["rss_kb"])


def default_idle_lines(floors: dict[str, Any]) -> list[str]:
    """The default toolsets' idle RSS beside its floor (runs before this figure had none)."""
    if "default_idle_mb" not in floors:
        return []
    idle, floor = floors["default_idle_mb"], floors["polyg_floor_english_mb"]
    return [
        "",
        f"Default toolsets (kg, memory: the English pipeline loaded), same run, empty store: polyg idle "
        f"{idle} MB; floor {floor} MB (the process above plus the English pipeline with one text parsed): "
        f"{round(idle - floor, 1)} MB above it. The spec's 150 MB is below both floors with the in-process "
        "MiniLM model: out of reach for any server holding it.",
    ]


def empty_db_mb(workdir: Path, settle_s: float = 1.0) -> float:
    """RSS of polyg's embedded FalkorDB on an empty data dir, loaded (after `settle_s`)."""
    data_dir = workdir / "empty-db"
    if data_dir.exists():
        stop_db(data_dir)
    with HeldDatabase(data_dir) as held:
        assert held.pid is not None
        time.sleep(settle_s)
        return mb(memory_kb(held.pid, with_children=False)["rss_kb"])


# --- calls --------------------------------------------------------------------------------------


class Calls:
    """The operations measured, with arguments drawn from a seeded generator."""

    def __init__(self, server: PolygServer, n: int, seed: int) -> None:
        self.s = server
        self.n = n
        self.rng = random.Random(seed)
        self.tag = f"{seed:x}"
        self.created = 0

    def make(self, op: str) -> Any:
        s, rng = self.s, self.rng
        if op == "ping":
            return s.ping()
        if op == "create_entity":
            self.created += 1
            i, word = self.created, rng.choice(WORDS)
            return s.call(
                "create_entity",
                {
                    "name": f"scale/{self.tag}/{word}_{i}",
                    "type": TYPES[i % len(TYPES)],
                    "description": f"The {word} module {rng.choice(VERBS)} {rng.choice(OBJECTS)} at scale.",
                },
            )
        if op == "get_entity":
            return s.call("get_entity", {"entity_id": entity_id(rng.randrange(self.n))})
        if op in ("search_nodes", BARRIER):
            return s.call("search_nodes", {"query": f"{rng.choice(WORDS)} {rng.choice(AREAS)}", "limit": 10})
        if op == "neighbors depth 3":
            return s.call("get_entity_neighbors", {"entity_id": entity_id(rng.randrange(self.n)), "depth": 3})
        raise ValueError(op)

    def mixed(self, i: int) -> str:
        """80% reads, 20% writes. The depth-3 traversal is left out: it grows with the store
        (seconds a call from 10k entities) and would turn a memory reading into a queue."""
        return ("get_entity", "search_nodes", "get_entity", "search_nodes", "create_entity")[i % 5]


async def restart(s: PolygServer, probe: str, give_up: GiveUp) -> dict[str, Any]:
    """From spawn: the first answered call, then the first search not degraded."""
    loading: list[float] = []
    while True:
        result = await s.client.call_tool("get_entity", {"entity_id": probe})
        if not result.is_error:
            break
        text = result.content[0].text if result.content else ""
        if not text.startswith(STILL_LOADING):
            raise RuntimeError(f"get_entity failed: {text}")
        loading.append(round(time.perf_counter() - s.t_spawn, 1))
        give_up.check()
    first_s = time.perf_counter() - s.t_spawn
    degraded: list[tuple[float, str]] = []
    while True:
        result = await s.call("search_nodes", {"query": "parser auth", "limit": 10})
        reason = (result.structured_content or {}).get("degraded")
        if not reason:
            break
        degraded.append((round(time.perf_counter() - s.t_spawn, 1), str(reason)))
        give_up.check()
        await asyncio.sleep(1.0)  # polling a build that takes seconds to minutes
    return {
        "init_s": round(s.init_s, 3),
        "first_call_s": round(first_s, 2),
        "full_search_s": round(time.perf_counter() - s.t_spawn, 2),
        "still_loading_answers": loading,
        "degraded_answers": len(degraded),
        "degraded_reason": degraded[0][1] if degraded else None,
    }


async def latency(
    calls: Calls, rounds: int, block: int, warmup: int, budget_s: float, progress: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Blocks of each operation in turn; an operation whose calls have taken `budget_s` in all
    stops being called (after 3 calls at least), so that one that grows with the store (the
    depth-3 traversal) does not hold the run for hours: its row says how many calls it had.
    `progress` holds the samples as they come (a run stopped midway keeps them)."""
    spent: dict[str, float] = dict.fromkeys(OPS, 0.0)
    for _ in range(warmup):
        for op in OPS:
            if spent[op] < budget_s / 10:
                t = time.perf_counter()
                await calls.make(op)
                spent[op] += time.perf_counter() - t
    schedule: list[str] = []
    for b in range(max(1, rounds // block)):
        for k in range(len(OPS)):
            op = OPS[(b + k) % len(OPS)]
            schedule += [op] * block
            if op in WRITE_OPS:
                schedule.append(BARRIER)
    samples: dict[str, list[float]] = {op: [] for op in OPS}
    inside: dict[str, list[float]] = {}
    if progress is not None:
        progress.update(samples=samples, inside=inside)
    for op in schedule:
        if op == BARRIER:  # answers once the creates' vectors are stored; not measured
            await calls.make(op)
            continue
        if len(samples[op]) >= 3 and sum(samples[op]) > budget_s:
            continue
        t = time.perf_counter()
        result = await calls.make(op)
        samples[op].append(time.perf_counter() - t)
        if (ms := server_ms(result)) is not None:
            inside.setdefault(op, []).append(ms / 1000)
    return latency_stats(samples, inside)


def latency_stats(samples: dict[str, list[float]], inside: dict[str, list[float]]) -> dict[str, Any]:
    return {
        "stats": {op: summarize(v) for op, v in samples.items() if v},
        "server_side": {op: summarize(v) for op, v in inside.items() if v},
    }


async def one(calls: Calls, op: str, times: list[float], errors: list[str]) -> None:
    t = time.perf_counter()
    try:
        await calls.make(op)
        times.append(time.perf_counter() - t)
    except Exception as exc:  # recorded: the error rate is a result
        errors.append(f"{op}: {exc}"[:200])


async def paced(calls: Calls, qps: float, seconds: float) -> dict[str, Any]:
    """Calls started every 1/qps s whether or not the previous ones have answered."""
    times: list[float] = []
    errors: list[str] = []
    tasks = []
    began = time.monotonic()
    for i in range(int(qps * seconds)):
        await asyncio.sleep(max(0.0, began + i / qps - time.monotonic()))
        tasks.append(asyncio.create_task(one(calls, calls.mixed(i), times, errors)))
    await asyncio.gather(*tasks)
    took = time.monotonic() - began
    return {"qps": qps, "seconds": round(took, 1), **_rates(times, errors, took)}


async def burst(calls: Calls, total: int, width: int) -> dict[str, Any]:
    times: list[float] = []
    errors: list[str] = []
    began = time.monotonic()
    await bounded([functools.partial(one, calls, calls.mixed(i), times, errors) for i in range(total)], width)
    took = time.monotonic() - began
    return {"width": width, **_rates(times, errors, took)}


def _rates(times: list[float], errors: list[str], took: float) -> dict[str, Any]:
    st = summarize(times)
    return {
        "calls": len(times) + len(errors),
        "calls_per_s": round((len(times) + len(errors)) / took, 1) if took > 0 else None,
        "p50_ms": round(st["p50_ms"], 2),
        "p99_ms": round(st["p99_ms"], 2),
        "errors": len(errors),
        "first_errors": errors[:3],
    }


# --- one size -----------------------------------------------------------------------------------


async def session(
    args: argparse.Namespace,
    n: int,
    run_dir: Path,
    watch: RssWatch,
    give_up: GiveUp,
    out: dict[str, Any],
    *,
    first: str = "restart",
    calls_too: bool = True,
) -> dict[str, Any]:
    """Measures into `out` as it goes: a run stopped midway (`--give-up-at`) keeps what it measured.
    `first`: the key the time to the first answer goes under ("attach" for a server started on a
    database already running and loaded); `calls_too`: False to stop after the restart."""
    base = run_dir.parent
    log_path = base / "server.log"
    log_path.write_text("")
    # A large store under load takes longer than polyg's default 300 s to load; the time it takes
    # is the measurement, so the server is let wait for it.
    env = clean_env(args.workdir, {"POLYG_STORE_OPEN_TIMEOUT_S": str(args.store_open_timeout_s)})
    # Attached to a database already running (the loader's): the server neither refuses nor stops it.
    shared = first == "attach"
    async with PolygServer(
        run_dir, log_path=log_path, env=env, extra_args=["--toolsets", TOOLSETS], shared_db=shared
    ) as s:
        watch.polyg_pid = s.pid
        watch.enter(first)
        out["spawned_at"] = s.t_spawn
        out[first] = await restart(s, entity_id(n // 2), give_up)
        log(f"n={n}: {first} {out[first]}")
        give_up.check()
        watch.enter("idle")
        await asyncio.sleep(args.idle_s)
        now = watch.sample()
        out["idle"] = {"polyg_mb": mb(now["polyg_kb"]), "db_mb": mb(now["db_kb"])}
        log(f"n={n}: idle {out['idle']}")
        if not calls_too:
            return out
        calls = Calls(s, n, args.seed + n)
        give_up.check()
        watch.enter("latency")
        progress: dict[str, Any] = {}
        out["latency_progress"] = progress
        out["latency"] = await latency(calls, args.calls, args.block, args.warmup, args.op_budget_s, progress)
        del out["latency_progress"]
        for op in OPS:
            log(f"n={n} {op:20s} p50 {out['latency']['stats'][op]['p50_ms']:8.2f} ms")
        await calls.make(BARRIER)
        give_up.check()
        watch.enter("qps10")
        out["qps10"] = await paced(calls, 10.0, args.qps_s)
        now = watch.sample()
        out["qps10"].update(polyg_mb_at_end=mb(now["polyg_kb"]), db_mb_at_end=mb(now["db_kb"]))
        log(f"n={n}: 10 QPS {out['qps10']}")
        give_up.check()
        watch.enter("burst")
        out["burst"] = await burst(calls, args.burst_calls, args.burst_width)
        log(f"n={n}: burst {out['burst']}")
        watch.enter("end")
        peaks = dict(watch.peaks)
        out["peak_mb"] = {phase: {"polyg_mb": mb(p["polyg_kb"]), "db_mb": mb(p["db_kb"])} for phase, p in peaks.items()}
        out["vmhwm"] = s.memory()
    return out


def falkordb_loads(run_dir: Path, since: int) -> list[dict[str, Any]]:
    path = run_dir / "db" / "falkordb.log"
    if not path.exists():
        return []
    with path.open("rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    return [{"from": name, "seconds": float(sec)} for name, sec in DB_LOADED.findall(text)]


class GiveUp:
    """At `--give-up-at` (UTC, HH:MM), this run's preload children are killed and so is the
    measured copy's database, so that a size too slow for the time left is recorded with how
    far it got (its preload log and the rates) rather than lost with the run."""

    def __init__(self, at: str | None) -> None:
        self.at = at
        self.fired = False
        self.run_dir: Path | None = None
        if at:
            hour, minute = (int(x) for x in at.split(":"))
            now = dt.datetime.now(dt.UTC)
            due = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
            timer = threading.Timer(max(0.0, (due - now).total_seconds()), self._fire)
            timer.daemon = True
            timer.start()

    def _fire(self) -> None:
        self.fired = True
        log(f"--give-up-at {self.at}: stopping the preload and the measured database")
        for pid in descendants(os.getpid()):
            if "preload" in cmdline(pid) or "bulk_load" in cmdline(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.run_dir is not None:
            kill_db(self.run_dir)

    def check(self) -> None:
        if self.fired:
            raise TimeoutError(f"not finished by --give-up-at {self.at} UTC")


def preload_progress(workdir: Path, n: int) -> str:
    """The last lines of the newest preload log of size n (entities, then relationships)."""
    logs = [p for p in (workdir / f"kg-{n}" / "preload.log", workdir / f"scale-{n}" / "preload.log") if p.exists()]
    if not logs:
        return ""
    newest = max(logs, key=lambda p: p.stat().st_mtime)
    return f"{newest.parent.name}: " + " | ".join(newest.read_text().strip().splitlines()[-2:])


async def bench_size(args: argparse.Namespace, n: int, give_up: GiveUp) -> dict[str, Any]:
    result: dict[str, Any] = {"entities": n, "machine": machine_info()}
    t = time.perf_counter()
    try:
        give_up.check()
        if seen := await asyncio.to_thread(wait_for_other_build, args, n, give_up):
            result["other_build"] = seen
        give_up.check()
        pristine, kg_meta, rel_meta = await asyncio.to_thread(ensure_preloaded, args, n)
        give_up.check()
    except Exception as exc:  # a size that cannot be loaded is recorded with how far it got
        reason = f"not finished by --give-up-at {give_up.at} UTC" if give_up.fired else f"preload failed: {exc}"
        result["error"] = f"{reason} ({time.perf_counter() - t:.0f} s in this run)"[:600]
        result["preload_log_tail"] = preload_progress(args.workdir, n)[-600:]
        log(f"{result['error']}: {result['preload_log_tail']}")
        return result
    # The code measured is the tree's when the server starts, after a preload of many minutes.
    result.update(preload=kg_meta, relations=rel_meta, machine=machine_info())
    if n > args.bulk_above and args.warm_first:
        # The calls first, on the loader's database still running (loaded and indexed: no
        # second index build), then the cold restart on a copy, as long as time allows.
        result["data_dir_mb"] = dir_size_mb(pristine)
        result["calls_on"] = "the loader's database, still running (not restarted); restart measured after"
        warm = await measure_dir(args, n, pristine, give_up, first="attach")
        result.update({k: v for k, v in warm.items() if k not in ("falkordb_loaded", "machine_load")})
        result["machine_load"] = warm.get("machine_load")
        if "error" in warm:
            return result
        await asyncio.to_thread(stop_db, pristine)
        run_dir = args.workdir / f"scale-{n}" / "run"
        await asyncio.to_thread(fresh_copy, pristine, run_dir)
        cold = await measure_dir(args, n, run_dir, give_up, calls_too=False)
        result["restart_idle"] = cold.pop("idle", None)
        result["restart_peak_mb"] = cold.pop("peak_mb", None)
        result["restart_machine_load"] = cold.pop("machine_load", None)
        result.update(cold)
        return result
    run_dir = args.workdir / f"scale-{n}" / "run"
    await asyncio.to_thread(fresh_copy, pristine, run_dir)
    result["data_dir_mb"] = dir_size_mb(run_dir)
    result.update(await measure_dir(args, n, run_dir, give_up))
    return result


async def measure_dir(
    args: argparse.Namespace,
    n: int,
    run_dir: Path,
    give_up: GiveUp,
    *,
    first: str = "restart",
    calls_too: bool = True,
) -> dict[str, Any]:
    """One server session on `run_dir` (see `session`), its database stopped at the end; what it
    measured, with the error that stopped it if one did."""
    result: dict[str, Any] = {}
    give_up.run_dir = run_dir
    falkor_log = run_dir / "db" / "falkordb.log"
    since = falkor_log.stat().st_size if falkor_log.exists() else 0
    limit_kb = int(args.max_db_gb * 1024 * 1024)
    try:
        with LoadSampler() as load, RssWatch(run_dir, limit_kb) as watch:
            measured: dict[str, Any] = {}
            try:
                result.update(
                    await session(args, n, run_dir, watch, give_up, measured, first=first, calls_too=calls_too)
                )
            except Exception as exc:
                late = f"not finished by --give-up-at {give_up.at} UTC" if give_up.fired else None
                result["error"] = (watch.stopped or late or f"{type(exc).__name__}: {exc}")[:600]
                log(f"n={n}: {result['error']}")
                # What was measured before it stopped is kept, marked partial.
                if progress := measured.pop("latency_progress", None):
                    measured["latency"] = {**latency_stats(progress["samples"], progress["inside"]), "partial": True}
                if first not in measured and "spawned_at" in measured:
                    measured[f"{first}_unanswered_after_s"] = round(time.perf_counter() - measured["spawned_at"], 1)
                measured["peak_mb"] = {
                    phase: {"polyg_mb": mb(p["polyg_kb"]), "db_mb": mb(p["db_kb"])} for phase, p in watch.peaks.items()
                }
                result.update(measured)
        result["machine_load"] = load.summary()
    finally:
        give_up.run_dir = None
        stop_db(run_dir)
    result.pop("spawned_at", None)
    result["falkordb_loaded"] = falkordb_loads(run_dir, since)
    result["data_dir_mb_at_end"] = dir_size_mb(run_dir)
    return result


# --- report -------------------------------------------------------------------------------------


def _p50(r: dict[str, Any], op: str, side: str = "stats") -> str:
    st = r.get("latency", {}).get(side, {}).get(op)
    return fmt_ms(st["p50_ms"]) if st else "-"


def _vectors(r: dict[str, Any]) -> str:
    p = r.get("preload", {})
    return "MiniLM" if p.get("embed_mode") == "minilm" else "**hashed**"


def _fewer(r: dict[str, Any], calls: int) -> str:
    """' (n calls)' when the time budget cut an operation's calls short."""
    st = r["latency"]["stats"].get("neighbors depth 3")
    return f" ({st['n']} calls)" if st and st["n"] < calls else ""


def _partial(r: dict[str, Any]) -> str:
    """For a size measured in part (stopped midway, or some operations left out): the calls of each."""
    if not r["latency"].get("partial"):
        return ""
    return " (partial; calls: " + ", ".join(f"{op} {st['n']}" for op, st in r["latency"]["stats"].items()) + ")"


def render(data: dict[str, Any]) -> str:
    results = sorted(data["results"], key=lambda r: r["entities"])
    floors = data["floors"]
    lines = [
        "# Entity scale and memory",
        "",
        "polyg over MCP stdio (Python SDK client), embedded FalkorDB, MiniLM for queries, toolsets "
        f"`{TOOLSETS}`; each size on a fresh copy of a cached preload (entities through the bulk path, "
        f"{LINKS_PER_ENTITY} relationships per entity through the core's `write_relations`). Vectors: "
        "MiniLM's up to the largest size it can embed here in time, **hashed vectors** (same dimension) "
        "above it, marked in the tables. Sequential calls, p50 ms; 'in polyg' is the handler time polyg "
        "reports in `_meta`. An operation stops being called once its calls have taken `--op-budget-s` "
        "(the number of calls is then shown). Shared, noisy 2-core machine: read the ping floor beside each figure and "
        "the machine load at the end. Sizes may come from different runs (each row's run is listed at "
        "the end).",
        "",
        "## Latency (p50 ms, sequential, over MCP stdio)",
        "",
        "| entities | vectors | ping (floor) | create_entity | get_entity | search_nodes | neighbours, depth 3 | "
        "in polyg: create / get / search / neighbours |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        if "latency" not in r:
            continue
        inside = " / ".join(_p50(r, op, "server_side") for op in OPS[1:])
        lines.append(
            f"| {r['entities']:,} | {_vectors(r)} | {_p50(r, 'ping')} | {_p50(r, 'create_entity')} | "
            f"{_p50(r, 'get_entity')} | {_p50(r, 'search_nodes')} | {_p50(r, 'neighbors depth 3')}"
            f"{_fewer(r, data['config']['calls'])} | "
            f"{inside}{_partial(r)} |"
        )
    for r in results:
        if "latency" in r and r.get("calls_on"):
            lines.append(f"\n{r['entities']:,} entities: calls measured on {r['calls_on']}.")
    lines += [
        "",
        "## Restart (cold: spawn of `polyg serve`, no database running)",
        "",
        "| entities | data dir MB | initialize s | first answered call s | full search s (vector index built) | "
        "'still loading' answers | degraded searches | FalkorDB load (its log) |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        if "restart" not in r:
            continue
        rs = r["restart"]
        loads = "; ".join(f"{x['from']} {x['seconds']:.1f} s" for x in r.get("falkordb_loaded", []))
        lines.append(
            f"| {r['entities']:,} | {r['data_dir_mb']} | {rs['init_s']:.2f} | {rs['first_call_s']:.1f} | "
            f"{rs['full_search_s']:.1f} | {len(rs['still_loading_answers'])} | {rs['degraded_answers']} | {loads} |"
        )
    lines += [
        "",
        "## Memory (RSS MB)",
        "",
        f"Spec 003 (polyg): idle < {SPEC_IDLE_MB} MB, under 10 QPS < {SPEC_QPS10_MB} MB. Floor, measured in the "
        f"same run: {floors['polyg_floor_mb']} MB for a process holding the interpreter, the MCP SDK and the "
        f"embedder with one text embedded (any in-process MCP server with this model); FalkorDB empty: "
        f"{floors['empty_db_mb']} MB, plus the vectors alone (n x {DIMENSION} float32) as its floor. "
        "Idle: after the restart and a pause with no call; 10 QPS and burst: the highest RSS sampled every "
        "0.25 s during the phase.",
        *default_idle_lines(floors),
        "",
        "| entities | polyg idle | polyg 10 QPS | polyg burst | FalkorDB idle | FalkorDB 10 QPS | FalkorDB burst | "
        "FalkorDB peak while loading | vectors alone |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "idle" not in r:
            continue
        pk = dict(r.get("peak_mb", {}))
        if r.get("restart_peak_mb"):  # calls measured warm first: the restart's peaks come from its own session
            pk["restart"] = r["restart_peak_mb"].get("restart", {})

        def peak(phase: str, who: str, pk: dict[str, Any] = pk) -> str:
            return str(pk.get(phase, {}).get(who, "-"))

        vec = round(r["entities"] * DIMENSION * 4 / 1024 / 1024, 1)
        lines.append(
            f"| {r['entities']:,} | {r['idle']['polyg_mb']} | {peak('qps10', 'polyg_mb')} | "
            f"{peak('burst', 'polyg_mb')} | "
            f"{r['idle']['db_mb']} | {peak('qps10', 'db_mb')} | {peak('burst', 'db_mb')} | "
            f"{peak('restart', 'db_mb')} | {vec} |"
        )
    lines += [
        "",
        "## Under load",
        "",
        "| entities | 10 QPS: calls, p50 / p99 ms, errors | burst: calls in flight, calls/s, p50 / p99 ms, errors |",
        "|---:|---|---|",
    ]
    for r in results:
        if "qps10" not in r:
            continue
        q, b = r["qps10"], r.get("burst")
        burst_cell = f"{b['width']}, {b['calls_per_s']}/s, {b['p50_ms']} / {b['p99_ms']}, {b['errors']}" if b else "-"
        lines.append(
            f"| {r['entities']:,} | {q['calls']} in {q['seconds']} s, {q['p50_ms']} / {q['p99_ms']}, {q['errors']} | "
            f"{burst_cell} |"
        )
    lines += [
        "",
        "## Targets (informational)",
        "",
        "| target | entities | measured | | floor (same run) |",
        "|---|---:|---:|---|---:|",
    ]
    for t in targets(results, floors):
        lines.append(f"| {t['target']} | {t['entities']:,} | {t['value']} | {t['verdict']} | {t['floor']} |")
    lines += [
        "",
        "## Loading (the preload, cached; not a tool call)",
        "",
        "| entities | vectors | loader | entity rows s | vectors s | relationships | relationships s | rel/s |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        p, rel = r.get("preload", {}), r.get("relations", {})
        if not p:
            continue
        lines.append(
            f"| {r['entities']:,} | {_vectors(r)} | {p.get('loader', 'tools')} | {p.get('write_s', '-')} | "
            f"{p.get('embed_s', '-')} | "
            f"{rel.get('relations', 0):,} | {rel.get('write_s', '-')} | {rel.get('relations_per_s', '-')} |"
        )
    lines += [
        "",
        "Loader 'tools': entity rows through the core's `write_entities`, then the vectorizer ('vectors s': until "
        "every vector is stored, indexed as it is written). 'bulk' (`bench/lib/bulk_load.py`): rows with their "
        "vectors in one statement ('entity rows s'), the full-text and vector indexes created after them "
        "('vectors s': rows plus index build).",
    ]
    failed = [r for r in results if "error" in r or "later_attempt" in r]
    if failed:
        lines += ["", "## Not measured", ""]
        for r in failed:
            if "later_attempt" in r:
                later = r["later_attempt"]
                lines.append(
                    f"- {r['entities']:,} entities, measured above; a later run ({later['date']}): {later['error']}"
                )
                continue
            lines.append(f"- {r['entities']:,} entities: {r['error']}")
            if r.get("restart_unanswered_after_s"):
                lines.append(
                    f"  Cold restart: no call answered {r['restart_unanswered_after_s']} s after the spawn of "
                    "`polyg serve` (FalkorDB still loading and building its indexes) when it was stopped."
                )
            seen = r.get("other_build") or {}
            first, last = seen.get("first"), seen.get("last")
            if first and last:
                lines.append(
                    f"  Its preload, built by another process meanwhile: at {first.get('at')} UTC "
                    f"{first.get('entities', '?'):,} entities, {first.get('vectors', '?'):,} with their vector; "
                    f"at {last.get('at')} {last.get('entities', '?'):,} and {last.get('vectors', '?'):,} "
                    f"({seen.get('entities_per_s', '?')} entities/s, {seen.get('vectors_per_s', '?')} vectors/s)."
                )
            if r.get("preload_log_tail"):
                lines.append(f"  (how far the load got: `{r['preload_log_tail'].strip()}`)")
    lines += [
        "",
        "## Runs",
        "",
        "| entities | run | machine | load average, median (max) |",
        "|---:|---|---|---|",
    ]
    for r in results:
        ml = r.get("machine_load", {}).get("load1", {})
        load = f"{ml['median']} ({ml['max']})" if ml else "-"
        lines.append(f"| {r['entities']:,} | {r['machine']['date']} | {describe_machine(r['machine'])} | {load} |")
    return "\n".join(lines) + "\n"


def targets(results: list[dict[str, Any]], floors: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        if "idle" not in r:
            continue
        for name, value, limit in (
            (f"polyg idle < {SPEC_IDLE_MB} MB", r["idle"]["polyg_mb"], SPEC_IDLE_MB),
            (
                f"polyg under 10 QPS < {SPEC_QPS10_MB} MB",
                r.get("peak_mb", {}).get("qps10", {}).get("polyg_mb"),
                SPEC_QPS10_MB,
            ),
        ):
            if value is None:
                continue
            out.append(
                {
                    "target": name,
                    "entities": r["entities"],
                    "value": f"{value} MB",
                    "verdict": "PASS" if value < limit else "MISS",
                    "floor": f"{r.get('floors', floors)['polyg_floor_mb']} MB",
                }
            )
    return out


def key_figures(results: list[dict[str, Any]]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for r in results:
        n = r["entities"]
        if "latency" in r:
            for op in ("create_entity", "get_entity", "search_nodes", "neighbors depth 3"):
                if op in r["latency"]["stats"]:
                    figures[f"{n}_{op}_p50_ms"] = r["latency"]["stats"][op]["p50_ms"]
        if "restart" in r:
            figures[f"{n}_first_call_s"] = r["restart"]["first_call_s"]
            figures[f"{n}_full_search_s"] = r["restart"]["full_search_s"]
        if "idle" in r:
            figures[f"{n}_polyg_idle_mb"] = r["idle"]["polyg_mb"]
            figures[f"{n}_db_idle_mb"] = r["idle"]["db_mb"]
        if "error" in r:
            figures[f"{n}_error"] = r["error"][:60]
    return figures


async def run(args: argparse.Namespace) -> dict[str, Any]:
    args.workdir.mkdir(parents=True, exist_ok=True)
    env = clean_env(args.workdir)
    floors = {
        "polyg_floor_mb": await asyncio.to_thread(polyg_floor_mb, env),
        "polyg_floor_english_mb": await asyncio.to_thread(functools.partial(polyg_floor_mb, env, english=True)),
        "default_idle_mb": await default_server_idle_mb(args.workdir, args.idle_s),
        # A smoke run measures nothing: no pause for the memory to settle.
        "empty_db_mb": await asyncio.to_thread(empty_db_mb, args.workdir, 0.0 if args.smoke else 1.0),
    }
    log(f"floors: {floors}")
    give_up = GiveUp(args.give_up_at)
    results = []
    for n in args.sizes:
        results.append({**await bench_size(args, n, give_up), "floors": floors})
    return {"benchmark": BENCHMARK, "floors": floors, "config": vars_for_json(args), "results": results}


def vars_for_json(args: argparse.Namespace) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


def merged(data: dict[str, Any]) -> dict[str, Any]:
    """This run's sizes over the saved result's other sizes (each keeps its own run's machine).
    A size this run could not measure does not replace a measured one: the measured one is kept,
    with this run's error beside it."""
    saved = RESULTS_DIR / f"{BENCHMARK}.json"
    if not saved.exists():
        return data
    with contextlib.suppress(ValueError, KeyError):
        old = {r["entities"]: r for r in json.loads(saved.read_text())["results"]}
        for r in data["results"]:
            before = old.get(r["entities"])
            if "error" in r and before is not None and "error" not in before:
                old[r["entities"]] = {**before, "later_attempt": {"date": r["machine"]["date"], "error": r["error"]}}
            else:
                old[r["entities"]] = r
        return {**data, "results": sorted(old.values(), key=lambda r: r["entities"])}
    return data


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100,1000,10000,100000,1000000", help="comma-separated entity counts")
    p.add_argument("--calls", type=int, default=100, help="measured sequential calls per operation")
    p.add_argument("--block", type=int, default=20, help="calls of one operation in a row")
    p.add_argument("--warmup", type=int, default=5, help="warm-up rounds of every operation")
    p.add_argument("--op-budget-s", type=float, default=90.0, help="stop calling an operation after this long")
    p.add_argument("--idle-s", type=float, default=10.0, help="pause before the idle memory reading")
    p.add_argument("--qps-s", type=float, default=30.0, help="seconds at 10 calls per second")
    p.add_argument("--burst-calls", type=int, default=300)
    p.add_argument("--burst-width", type=int, default=20, help="calls in flight during the burst")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-bench"), help="cache of preloaded dirs")
    p.add_argument("--embed", choices=("auto", "minilm", "hashing"), default="auto", help="preload vectors")
    p.add_argument("--max-embed-s", type=float, default=600.0, help="auto: hashing when MiniLM would take longer")
    p.add_argument("--largest-minilm", type=int, default=100_000, help="above this, hashed vectors")
    p.add_argument(
        "--bulk-above", type=int, default=100_000, help="above this, the bench's bulk loader (hashed vectors)"
    )
    p.add_argument(
        "--warm-first",
        action="store_true",
        help="bulk sizes: calls on the loader's running database first, then the cold restart on a copy",
    )
    p.add_argument("--max-db-gb", type=float, default=8.0, help="stop a size whose FalkorDB RSS passes this")
    p.add_argument("--store-open-timeout-s", type=float, default=3600.0, help="how long the server waits for a load")
    p.add_argument("--give-up-at", help="UTC HH:MM: record sizes unfinished by then with how far they got")
    p.add_argument("--seed", type=int, default=20261127)
    p.add_argument("--no-save", action="store_true", help="print only; do not write bench/results")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args(argv)
    if args.smoke:
        args.sizes, args.calls, args.block, args.warmup, args.embed = str(SMOKE_ENTITIES), 2, 2, 0, "hashing"
        args.idle_s, args.qps_s, args.burst_calls, args.burst_width = 0.3, 0.5, 6, 3
        args.workdir, args.no_save = smoke_workdir("entity-scale"), True
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.workdir = args.workdir.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "preload-relations":
        sub = argparse.ArgumentParser()
        sub.add_argument("cmd")
        sub.add_argument("--data-dir", type=Path, required=True)
        sub.add_argument("--n", type=int, required=True)
        sub.add_argument("--embed", choices=("minilm", "hashing"), required=True)
        ns = sub.parse_args(argv)
        print(json.dumps(asyncio.run(_preload_relations(ns.data_dir, ns.n, ns.embed))))
        return 0
    args = parse_args(argv)
    data = asyncio.run(run(args))
    if not args.no_save:
        data = merged(data)
    markdown = render(data)
    print(markdown)
    if not args.no_save:
        measured = [r for r in data["results"] if r["entities"] in args.sizes]
        sizes = ",".join(str(n) for n in args.sizes)
        md, js = write_results(
            BENCHMARK,
            markdown,
            {**data, "machine": measured[0]["machine"] if measured else machine_info()},
            figures={"sizes": sizes, **key_figures(measured)},
        )
        print(f"results: {md.relative_to(REPO)}, {js.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
