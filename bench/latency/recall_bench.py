"""recall / remember latency (spec 003's flagship tools), offline, over MCP stdio and HTTP.

For each size (memories), a store is preloaded through polyg's own remember path
(`MemoryWriter.remember`, in-process in a child process, cached under --workdir): generated
memories of a software team (deploys, crashes with their causes, who works on what, meetings),
each with a speaker as context and a reference time, so the graphs hold what remember extracts
from them (entities, events, facts, causal links). Then, on a copy:

- stdio, one request in flight: `recall` (a question of one of the four intents, about a thing
  the store holds), `remember` (a new memory each call), and the SDK's ping in the same session
  (ratios); operations in rotating blocks; p50, p95, p99;
- the floors, in the same run (after the stdio server stops, in process on the same data, with
  the server's embedder; p50 of each step, added to the stdio ping's p50):
  - remember: ping + the parse of the memory by the English pipeline (what extraction reads; in
    a thread, as the server runs it) + the embedding of a memory's stored text (the model at
    normal priority) + one write through the same store: a CREATE of the memory's event node with its text,
    time and vector and its INVOLVES links to the entities it names (their ids looked up
    beforehand, untimed). A remember that a recall can find at once must at least embed its
    text and store it with its links: nothing less answers it (no duplicate check, no chain,
    no extraction);
  - recall: ping + the embedding of the question (the model, past polyg's cache of vectors:
    the bench's questions repeat) + one KNN (k=10) over the memories' event
    vector index: the least work that finds any memory for a question;
- HTTP (`polyg serve --transport http`): 10 clients at once, each its own MCP session, asking
  `recall` back to back: throughput (calls/s) and latency percentiles.

Usage: .venv/bin/python bench/latency/recall_bench.py [--sizes 1000,10000] [--calls 200] [--no-save]
       .venv/bin/python bench/latency/recall_bench.py --smoke     # 10 memories, hashing vectors: it runs
Results: bench/results/recall-<size>.md and .json (the floors under `floors`), and a row per
size in history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.database import stop_db
from bench.lib.datadirs import cached_build, fresh_copy
from bench.lib.env import clean_env, polyg_executable
from bench.lib.inprocess import DEFAULT_PROJECT, core_on, knn
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.results import write_results
from bench.lib.server import PolygServer, served_copy, server_ms
from bench.lib.smoke import SMOKE_HELP, smoke_workdir
from bench.lib.stats import fmt_ms, summarize

PRELOAD_VERSION = 1  # bump when the generated memories change
OPS = ("ping", "recall", "remember")
TARGETS_P50_MS = {"recall": 30.0, "remember": 20.0}  # at 10k memories, offline
HTTP_CLIENTS = 10
HTTP_PINGS = 50  # the HTTP floor: one session's pings, nothing else running
WARMUP = 3  # unmeasured rounds of each operation first: caches, the model's arenas
FLOOR_WARMUP = 5  # unmeasured rounds of the floors' steps first
VECTORS = {"minilm": "MiniLM", "hashing": "**hashed vectors**: latency, not relevance"}
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
PEOPLE = "Alice Bruno Chen Dana Emil Farah Goran Hana Ivan Jun Kira Luis Mona Nils Omar Pia".split()
SERVICES = "auth billing search ingest mailer scheduler gateway payments reports ledger".split()
CAUSES = (
    "the certificate expired",
    "the disk filled up",
    "a config flag was dropped",
    "the connection pool ran out",
    "a migration locked the table",
    "the cache was cold",
)
TOPICS = "pricing onboarding latency retries tracing backups hiring roadmap".split()


def log(msg: str) -> None:
    print(f"[recall-bench] {msg}", file=sys.stderr, flush=True)


# --- generated memories --------------------------------------------------------------------


def memory(i: int) -> dict[str, str]:
    """The i-th generated memory: content, a speaker, a reference time (a few per hour)."""
    rng = random.Random(i)
    who, other = rng.sample(PEOPLE, 2)
    service = f"{rng.choice(SERVICES)}-{i % 97}"
    at = START + timedelta(minutes=20 * i)
    kind = i % 5
    if kind == 0:
        content = f"We deployed {service} v{i % 13}.{i % 7} this morning."
    elif kind == 1:
        content = f"The {service} service crashed because {rng.choice(CAUSES)} (incident {i})."
    elif kind == 2:
        content = f"{who} works on {service}."
    elif kind == 3:
        content = f"{other} and I discussed {rng.choice(TOPICS)} for {service} yesterday, note {i}."
    else:
        content = f"The {service} alerts led to a rollback of release {i}."
    return {"content": content, "context": who, "reference_time": at.isoformat().replace("+00:00", "Z")}


def question(n: int, rng: random.Random) -> str:
    i = rng.randrange(n)
    service = f"{random.Random(i).choice(SERVICES)}-{i % 97}"
    return rng.choice(
        (
            f"Why did the {service} service crash?",
            f"What does {rng.choice(PEOPLE)} work on?",
            f"What happened with {service} last week?",
            f"What do we know about {rng.choice(TOPICS)}?",
        )
    )


# --- preload ------------------------------------------------------------------------------


def ensure_memories(workdir: Path, n: int, embed: str) -> tuple[Path, dict[str, Any]]:
    pristine = workdir / f"recall-{n}" / "pristine"
    meta = cached_build(
        pristine,
        [sys.executable, str(Path(__file__).resolve()), "preload", str(pristine), str(n), embed],
        fits=lambda m: (
            m.get("version") == PRELOAD_VERSION and m.get("memories") == n and m.get("embed_mode", "minilm") == embed
        ),
        workdir=workdir,
        log=log,
        in_smoke=lambda: asyncio.run(preload(pristine, n, embed)),
    )
    return pristine, meta


async def preload(data_dir: Path, n: int, embed: str) -> dict[str, Any]:
    """Child process: remember n memories through polyg's core (no MCP; `remember_many`, which
    makes the model's vectors ahead of the writes), then wait for vectors (`embed`: minilm, or
    hashing for a latency-only run)."""
    from bench.lib.remember_many import Memory, remember_many
    from polyg.config import load_settings
    from polyg.runtime.app import Polyg

    settings = load_settings(
        None,
        data_dir=data_dir,
        log_dir=data_dir.parent / "preload-logs",
        log_level="WARNING",
        embedding_provider=embed,
    )
    core = Polyg(settings)
    services = await core.ready()
    project = settings.project
    counts = {"memories": n, "entities": 0, "events": 0, "facts": 0, "causal_links": 0}
    t = time.perf_counter()
    try:
        step = 1000  # the writer's batches, a progress line after each
        for first in range(0, n, step):
            batch = []
            for i in range(first, min(n, first + step)):
                m = memory(i)
                batch.append(
                    Memory(m["content"], m["context"], services.memory.temporal.reference(m["reference_time"]))
                )
            for done in await remember_many(services.memory_writer, project, batch):
                counts["entities"] += len(done.entities_created)
                counts["events"] += len(done.events_logged)
                counts["facts"] += len(done.facts_added)
                counts["causal_links"] += len(done.causal_links_added)
            print(f"{first + len(batch)} memories, {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        remember_s = time.perf_counter() - t
        await services.ctx.vectors.settle(project, 3600)
    finally:
        await core.close()
    return {"version": PRELOAD_VERSION, **counts, "remember_s": round(remember_s, 1), "embed_mode": embed}


# --- measure ------------------------------------------------------------------------------


async def stdio_calls(server: PolygServer, n: int, calls: int, block: int, seed: int, warmup: int) -> dict[str, Any]:
    rng = random.Random(seed)
    fresh = iter(range(n + 10_000_000, n + 20_000_000))
    samples: dict[str, list[float]] = {op: [] for op in OPS}
    server_side: dict[str, list[float]] = {op: [] for op in OPS if op != "ping"}

    async def one(op: str) -> float:
        if op == "ping":
            t = time.perf_counter()
            await server.ping()
            return time.perf_counter() - t
        args = {"query": question(n, rng)} if op == "recall" else memory(next(fresh))
        t = time.perf_counter()
        result = await server.call(op, args)
        elapsed = time.perf_counter() - t
        inside = server_ms(result)
        if inside is not None:
            server_side[op].append(inside / 1000)
        return elapsed

    for op in OPS:  # warm-up: caches, the model's arenas
        for _ in range(warmup):
            await one(op)
    while any(len(v) < calls for v in samples.values()):
        for op in OPS:
            for _ in range(min(block, calls - len(samples[op]))):
                samples[op].append(await one(op))
    return {
        "stats": {op: summarize(v) for op, v in samples.items()},
        "server_ms": {op: summarize(v) for op, v in server_side.items() if v},
        "memory": server.memory(),
    }


def floors(data_dir: Path, n: int, calls: int, seed: int, embedder: str | None, warmup: int) -> dict[str, Any]:
    """p50 of each step of the floors (module docstring), in process on the benchmark's data
    (the server stopped), with the server's embedder."""
    return asyncio.run(_floors(data_dir, n, calls, seed, embedder, warmup))


async def _floors(data_dir: Path, n: int, calls: int, seed: int, embedder: str | None, warmup: int) -> dict[str, Any]:
    from polyg.core.memory.write import memory_text
    from polyg.names import new_id, now_iso
    from polyg.nlp.pipeline import pipeline
    from polyg.store.falkor import VectorParam

    project = DEFAULT_PROJECT
    rng = random.Random(seed)
    fresh = iter(range(n + 30_000_000, n + 40_000_000))
    steps: dict[str, list[float]] = {"parse": [], "embed_memory": [], "write": [], "embed_query": [], "knn": []}
    english = pipeline()
    await asyncio.to_thread(english.load)
    async with core_on(data_dir, embedder) as services:
        # The model itself, past the cache (the bench's questions repeat), at normal priority:
        # remember asks for its vectors ahead in a low-priority thread, whose wait on a busy
        # machine is not the model's.
        model = getattr(services.ctx.embedder, "inner", services.ctx.embedder)
        for i in range(calls + warmup):
            m = memory(next(fresh))
            text = memory_text(m["content"], m["context"])
            named = await services.memory.temporal.mentioned_entities(project, text)
            t_start = time.perf_counter()
            await asyncio.to_thread(english.parse, m["content"])
            t = time.perf_counter()
            vector = await asyncio.to_thread(model.embed_query_sync, text)
            t_embed = time.perf_counter()
            await services.ctx.write(
                project,
                "CREATE (ev:Event {id: $id, description: $text, occurred_at: $at, created_at: $now, "
                "origin: 'memory', context: $context, embedding: vecf32($v)}) "
                "WITH ev UNWIND $involves AS eid MATCH (e:Entity {id: eid}) CREATE (ev)-[:INVOLVES]->(e)",
                {
                    "id": new_id("evt"),
                    "text": text,
                    "at": m["reference_time"],
                    "now": now_iso(),
                    "context": m["context"],
                    "v": VectorParam(vector),
                    "involves": sorted(set(named.values())),
                },
            )
            t_write = time.perf_counter()
            query = question(n, rng)
            qvec = await asyncio.to_thread(model.embed_query_sync, query)
            t_query = time.perf_counter()
            await knn(services, "Event", qvec)
            t_knn = time.perf_counter()
            if i >= warmup:
                steps["parse"].append(t - t_start)
                steps["embed_memory"].append(t_embed - t)
                steps["write"].append(t_write - t_embed)
                steps["embed_query"].append(t_query - t_write)
                steps["knn"].append(t_knn - t_query)
    return {name: summarize(v) for name, v in steps.items()}


def with_floors(stdio: dict[str, Any], steps: dict[str, Any]) -> dict[str, Any]:
    """The floors' totals (p50s of their steps plus the stdio ping's) and each tool's ratio."""
    ping = stdio["stats"]["ping"]["p50_ms"]
    parts = {"remember": ("parse", "embed_memory", "write"), "recall": ("embed_query", "knn")}
    out: dict[str, Any] = {"steps": steps}
    for op, names in parts.items():
        total = ping + sum(steps[name]["p50_ms"] for name in names)
        out[op] = {"p50_ms": round(total, 2), "x_floor": round(stdio["stats"][op]["p50_ms"] / total, 2)}
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def http_clients(
    data_dir: Path,
    workdir: Path,
    n: int,
    calls_each: int,
    seed: int,
    embedder: str | None,
    clients: int = HTTP_CLIENTS,
    ping_count: int = HTTP_PINGS,
) -> dict[str, Any]:
    """`clients` MCP sessions at once against one `polyg serve --transport http`."""
    import httpx
    from mcp import Client

    port = free_port()
    cmd = [
        polyg_executable(),
        "serve",
        "--data-dir",
        str(data_dir),
        "--transport",
        "http",
        "--port",
        str(port),
        "--toolsets",
        "memory",
    ]
    errlog = (workdir / "http-server.log").open("w")
    proc = await asyncio.to_thread(
        subprocess.Popen,
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=errlog,
        stderr=errlog,
        env=clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": embedder} if embedder else None),
    )
    try:
        deadline = time.monotonic() + 600
        async with httpx.AsyncClient() as http:
            while True:
                try:
                    if (await http.get(f"http://127.0.0.1:{port}/health")).json().get("status") == "ok":
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP server did not start; see http-server.log")
                await asyncio.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        latencies: list[float] = []
        pings: list[float] = []

        async def client(k: int) -> None:
            rng = random.Random(seed + k)
            async with Client(url, mode="legacy") as session:
                await session.call_tool("recall", {"query": question(n, rng)})  # warm-up
                for _ in range(calls_each):
                    t = time.perf_counter()
                    result = await session.call_tool("recall", {"query": question(n, rng)})
                    latencies.append(time.perf_counter() - t)
                    if result.is_error:
                        raise RuntimeError(f"recall failed over HTTP: {result.content}")

        # The floor: one session's ping, nothing else running (the legacy ping, as McpCalls.ping).
        async with Client(url, mode="legacy") as probe:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for _ in range(ping_count):
                    t = time.perf_counter()
                    await probe.send_ping()
                    pings.append(time.perf_counter() - t)
        t = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(clients)))
        wall = time.perf_counter() - t
    finally:
        proc.terminate()
        try:
            await asyncio.to_thread(proc.wait, 60)
        except subprocess.TimeoutExpired:
            proc.kill()
        errlog.close()
        stop_db(data_dir)
    return {
        "clients": clients,
        "calls": len(latencies),
        "throughput_per_s": round(len(latencies) / wall, 1),
        "stats": summarize(latencies),
        "ping": summarize(pings),
    }


async def bench_size(args: argparse.Namespace, n: int) -> dict[str, Any]:
    workdir: Path = args.workdir
    pristine, preload_meta = await asyncio.to_thread(ensure_memories, workdir, n, args.embed)
    base = workdir / f"recall-{n}"
    served_embedder = None if args.embed == "minilm" else args.embed
    with LoadSampler() as sampler:
        async with served_copy(pristine, base, workdir, embedder=served_embedder) as served:
            stdio = await stdio_calls(served.server, n, args.calls, args.block, args.seed, args.warmup)
        run_dir, ready_s = served.run_dir, served.ready_s
        embedder = served.env.get("POLYG_EMBEDDING_PROVIDER")  # the server's, for the floors too
        steps = await asyncio.to_thread(floors, run_dir, n, args.calls, args.seed, embedder, args.floor_warmup)
        await asyncio.to_thread(fresh_copy, pristine, run_dir)
        calls_each = max(1, args.calls // args.http_clients)
        http = await http_clients(
            run_dir, base, n, calls_each, args.seed, embedder, clients=args.http_clients, ping_count=args.http_pings
        )
    for op, st in stdio["stats"].items():
        log(f"n={n} {op:9s} p50 {st['p50_ms']:7.2f}  p95 {st['p95_ms']:7.2f}  p99 {st['p99_ms']:7.2f} ms")
    floor = with_floors(stdio, steps)
    for op in ("recall", "remember"):
        log(f"n={n} {op} floor p50 {floor[op]['p50_ms']:.2f} ms, the tool {floor[op]['x_floor']:.2f}x it")
    log(f"n={n} http x{http['clients']}: {http['throughput_per_s']} recalls/s, p50 {http['stats']['p50_ms']:.1f} ms")
    return {
        "memories": n,
        "preload": preload_meta,
        "ready_s": round(ready_s, 2),
        "machine_load": sampler.summary(),
        **stdio,
        "floors": floor,
        "http": http,
    }


def report(results: list[dict[str, Any]], machine: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "# recall / remember latency (spec 003)",
        "",
        describe_machine(machine),
        f"Offline (rules, {VECTORS[args.embed]}), embedded store. stdio: {args.calls} calls per operation in blocks of "
        f"{args.block}, one in flight. HTTP: {args.http_clients} clients at once, recall only.",
        "",
        "| memories | operation | p50 ms | p95 ms | p99 ms | x ping | floor p50 ms | x floor | in server p50 ms "
        "| target p50 (10k) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ping = r["stats"]["ping"]["p50_ms"]
        for op in OPS:
            st = r["stats"][op]
            inside = r["server_ms"].get(op, {}).get("p50_ms", float("nan"))
            target = f"<= {TARGETS_P50_MS[op]:.0f}" if op in TARGETS_P50_MS else ""
            ratio = "" if op == "ping" else f"{st['p50_ms'] / ping:.1f}"
            floor = r["floors"].get(op)
            floor_ms, x_floor = (fmt_ms(floor["p50_ms"]), f"{floor['x_floor']:.2f}") if floor else ("", "")
            lines.append(
                f"| {r['memories']:,} | {op} | {fmt_ms(st['p50_ms'])} | {fmt_ms(st['p95_ms'])} | "
                f"{fmt_ms(st['p99_ms'])} | {ratio} | {floor_ms} | {x_floor} | {fmt_ms(inside)} | {target} |"
            )
    lines += [
        "",
        "Floors: ping + the p50 of each step, in process on the same data after the server stopped.",
        "",
        "| memories | ping | remember: parse + embed memory + one write | recall: embed query + KNN (k=10) |",
        "|---|---|---|---|",
    ]
    for r in results:
        steps = r["floors"]["steps"]
        lines.append(
            f"| {r['memories']:,} | {fmt_ms(r['stats']['ping']['p50_ms'])} | "
            f"{fmt_ms(steps['parse']['p50_ms'])} + {fmt_ms(steps['embed_memory']['p50_ms'])} + "
            f"{fmt_ms(steps['write']['p50_ms'])} | "
            f"{fmt_ms(steps['embed_query']['p50_ms'])} + {fmt_ms(steps['knn']['p50_ms'])} |"
        )
    lines += [
        "",
        "| memories | HTTP clients | recalls/s | p50 ms | p95 ms | p99 ms | HTTP ping p50 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        h = r["http"]
        lines.append(
            f"| {r['memories']:,} | {h['clients']} | {h['throughput_per_s']} | {fmt_ms(h['stats']['p50_ms'])} | "
            f"{fmt_ms(h['stats']['p95_ms'])} | {fmt_ms(h['stats']['p99_ms'])} | {fmt_ms(h['ping']['p50_ms'])} |"
        )
    lines += [
        "",
        "| memories | entities | events | facts | causal links | preload s | load1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p = r["preload"]
        lines.append(
            f"| {r['memories']:,} | {p['entities']:,} | {p['events']:,} | {p['facts']:,} | {p['causal_links']:,} | "
            f"{p['wall_s']} | {r['machine_load'].get('load1', {}).get('median', '')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["preload"]:
        embed = argv[3] if len(argv) > 3 else "minilm"
        print(json.dumps(asyncio.run(preload(Path(argv[1]), int(argv[2]), embed))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-bench"))
    parser.add_argument(
        "--embed",
        default="minilm",
        choices=("minilm", "hashing"),
        help="vectors of the preload and the server: MiniLM, or the hashing embedder (latency only, labelled so)",
    )
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    args.warmup, args.floor_warmup, args.http_clients, args.http_pings = WARMUP, FLOOR_WARMUP, HTTP_CLIENTS, HTTP_PINGS
    if args.smoke:
        args.workdir, args.no_save = smoke_workdir("recall"), True
        args.sizes, args.calls, args.block, args.embed = "10", 4, 2, "hashing"
        # One warm-up round, two HTTP clients (still at once), a few pings: every phase runs.
        args.warmup, args.floor_warmup, args.http_clients, args.http_pings = 1, 1, 2, 3
    machine = machine_info()
    results = [asyncio.run(bench_size(args, int(size))) for size in args.sizes.split(",")]
    text = report(results, machine, args)
    print(text)
    if not args.no_save:
        for r in results:
            figures = {f"{op}_{k}": round(r["stats"][op][k], 2) for op in OPS for k in ("p50_ms", "p99_ms")}
            figures["http_recalls_per_s"] = r["http"]["throughput_per_s"]
            for op in ("recall", "remember"):
                figures[f"{op}_floor_p50_ms"] = r["floors"][op]["p50_ms"]
            md, js = write_results("recall", text, {**r, "machine": machine}, size=str(r["memories"]), figures=figures)
            log(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
