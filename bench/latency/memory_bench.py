"""memory toolset benchmark (spec 003's latency table for the direct tools), over MCP stdio.

For each size (entities; events, facts and causal links in proportion: n/2 events, n/4 facts,
n/4 causal links in chains of five events), on the embedded store with the default MiniLM
embedder:

- entity lookup: get_entity by exact name (with its relationships);
- timeline query: query_timeline over a random one-day window (about 85 events, limit 50);
- causal chain: get_causal_chain upstream, depth 3, from the last event of a chain (by id);
- semantic search: search_semantic, k=10, a short phrase;
- the SDK floor (ping) in the same session, for ratios; and per tool the handler time polyg
  reports in `_meta` (without the MCP transport).

The Python client checks every result against the tool's output schema (`jsonschema`), inside
the measured call; that check is timed again on kept results of each tool ("client check"), as
it grows with the result (a 50-item timeline).

Each tool's p50 is printed beside its floor, measured in the same run: what no implementation
could answer faster over this transport. The floor's database work (and query embedding) is
timed in the benchmark's process through polyg's core attached to the server's own database,
with the server's embedder, on arguments drawn the same way: after each block of a tool's
calls, as many floor probes, so both see the same load. The floor is the sum of each part's
median:

- every floor ends with the client's own schema check of the tool's results (above): the MCP
  client checks a result before returning it, so a call cannot end before the check of what it
  carries;
- get_entity: the stdio ping + one read of the entity by its indexed name with what the tool
  shows of it (its relationships, its 10 latest events, its first 100 observations) in fewer
  columns, without the ordering of relationships or the validity check of facts get_entity
  adds: no answer needs less than finding the node and what it shows, and one round trip is
  the least that takes; + the client check.
- query_timeline: the ping + one read of the window (the events in it through their range
  index, the first limit+1 in time order with the names of the entities they involve, and the
  facts that began in it, each fact type through its range index) + the client's own schema
  check of that many items (above): the MCP client checks the result before returning it, so
  a call cannot end before the check of the rows it carries.
- search_semantic: the ping + the query's embedding + one k=10 KNN over the entity index + one
  k=20 KNN over the events' index + one full-text read of the phrase over the entities (the 10
  best): the tool finds entities, concepts and events by meaning and words (a hybrid search, as
  the issue defines it), so no answer of it skips any of these reads; + the client check.

Each operation runs in rotating blocks (noise spreads over all of them); p50, p95 and p99 per
operation, and peak RSS of the server and of its database.

The data: entities are preloaded straight into the store by bench/lib/preload.py (cached under
--workdir); events, facts and causal links are then written in a child process
(`preload-memory`) through polyg's bulk path (`bench.lib.memory_bulk.MemoryBulk`: the data
model add_event, add_fact and add_causal_link write, T_BEFORE chain included, in batched
writes), and the vectorizer makes the events' vectors with the entities' kind of vectors
(MiniLM, or hashing where the entity preload judged MiniLM too slow: 100k; the result says
which). That directory is cached too.

Usage: .venv/bin/python bench/latency/memory_bench.py [--sizes 1000,10000] [--calls 200] [--no-save]
       .venv/bin/python bench/latency/memory_bench.py --smoke     # 40 entities, hashing vectors: it runs
Results: bench/results/memory-<size>.md and .json, and a row per size in history.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.datadirs import cached_build, ensure_preloaded
from bench.lib.inprocess import DEFAULT_PROJECT, core_on, knn
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.results import write_results
from bench.lib.server import PolygServer, client_check, served_copy, server_ms
from bench.lib.smoke import SMOKE_ENTITIES, SMOKE_HELP, smoke_workdir
from bench.lib.stats import fmt_mb, fmt_ms, summarize
from bench.lib.synthetic import AREAS, WORDS, generated_entity

KEPT_RESULTS = 20  # results of each tool whose schema check is timed again
MEMORY_VERSION = 2  # bump when the generated events, facts or links change
EVENT_START = datetime(2025, 1, 1, tzinfo=UTC)
EVENT_STEP = timedelta(minutes=17)
CHAIN = 5  # events per causal chain: four links each
PREDICATES = ("status", "owned_by", "depends_on", "deployed_to")
STATUSES = ("planned", "active", "degraded", "retired")
OPS = ("ping", "get_entity", "query_timeline", "get_causal_chain", "search_semantic")
# spec 003's targets (p50) and polyg's own at 10k entities (ten times better)
SPEC_P50_MS = {"get_entity": 30, "query_timeline": 50, "get_causal_chain": 80, "search_semantic": 100}
POLYG_P50_MS = {"get_entity": 3, "query_timeline": 5, "get_causal_chain": 8, "search_semantic": 10}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def counts(n: int) -> dict[str, int]:
    events = max(CHAIN, n // 2)
    links = min(n // 4, (events // CHAIN) * (CHAIN - 1))
    return {"entities": n, "events": events, "facts": n // 4, "causal_links": links}


def event_at(i: int) -> datetime:
    return EVENT_START + i * EVENT_STEP


def chain_ends(n: int) -> list[int]:
    """Indexes of the events that end a complete chain of causal links."""
    links = counts(n)["causal_links"]
    return [c * CHAIN + CHAIN - 1 for c in range(links // (CHAIN - 1))]


# --- preloading events, facts and causal links ---------------------------------------------------


async def _preload_memory(data_dir: Path, n: int, embed: str) -> dict[str, Any]:
    """Events, facts and causal links through polyg's bulk path (`MemoryBulk`: the data model
    add_event, add_fact and add_causal_link write, in batched writes), then the vectorizer's
    vectors (`embed`: minilm or hashing, as the entity preload made them)."""
    from bench.lib.memory_bulk import BulkEvent, BulkFact, BulkLink, MemoryBulk
    from polyg.config import load_settings
    from polyg.runtime.app import Polyg
    from polyg.store.embedded import EmbeddedFalkor

    size = counts(n)
    core = Polyg(load_settings(None, data_dir=data_dir, log_level="WARNING", embedding_provider=embed))
    services = await core.ready()
    project = DEFAULT_PROJECT
    graphs = services.memory
    t = time.perf_counter()
    events = [
        BulkEvent(
            str(i),
            f"{generated_entity(i % n)['name']} {random.Random(i).choice(WORDS)} check {i}",
            event_at(i),
            (generated_entity(i % n)["name"],),
        )
        for i in range(size["events"])
    ]
    facts = []
    for j in range(size["facts"]):
        r = random.Random(10_000_000 + j)
        predicate = PREDICATES[j % len(PREDICATES)]
        obj = r.choice(STATUSES) if predicate == "status" else generated_entity(r.randrange(n))["name"]
        facts.append(BulkFact(generated_entity(j % n)["name"], predicate, obj, EVENT_START + timedelta(days=j % 300)))
    links = [
        BulkLink(str(c * CHAIN + k), str(c * CHAIN + k + 1), confidence=0.9)
        for c in range(size["causal_links"] // (CHAIN - 1))
        for k in range(CHAIN - 1)
    ]
    total = len(events) * 3 + len(facts) + len(links)  # an event is a node, a link to its entity, a chain link
    done = [0, 0.0]

    def progress(k: int) -> None:
        done[0] += k
        if time.perf_counter() - done[1] > 10:
            done[1] = time.perf_counter()
            log(f"bulk: {done[0]}/~{total} items ({time.perf_counter() - t:.0f} s)")

    try:
        # The status values are entities, as add_fact would create them.
        await graphs.entities.ensure(project, list(STATUSES), None)
        report = await MemoryBulk(graphs.temporal).load(project, events, facts, links, progress=progress)
        write_s = time.perf_counter() - t
        log(f"bulk: {report.written} nodes and relationships in {write_s:.0f} s; vectors ...")
        t_vec = time.perf_counter()
        vectors, waiting = services.ctx.vectors, services.ctx.vectors.pending(project)
        while not await vectors.settle(project, 10.0):
            if time.perf_counter() - t_vec > 3600:
                raise RuntimeError("the vectorizer did not store the events' vectors within an hour")
            log(f"vectors: {waiting - vectors.pending(project)}/{waiting} ({time.perf_counter() - t_vec:.0f} s)")
        vectors_s = time.perf_counter() - t_vec
        log(f"vectors ({embed}) in {vectors_s:.0f} s")
        stats = await graphs.views.statistics(project)
        # Restarts then load a snapshot (as the entity preload's do), not a replay of every write.
        if not await asyncio.to_thread(EmbeddedFalkor(data_dir / "db").compact, 600):
            raise RuntimeError("compacting the preloaded store's AOF failed")
    finally:
        await core.close()
    return {
        "version": MEMORY_VERSION,
        "entities": n,
        **{k: v for k, v in size.items() if k != "entities"},
        "causal_links_made": report.causal_links_added,
        "embed_mode": embed,
        "path": "bulk",
        "write_s": round(write_s, 1),
        "items_per_s": round((len(events) + len(facts) + len(links)) / write_s, 1),
        "vectors_s": round(vectors_s, 1),
        "stats": {"temporal": stats.temporal, "causal": stats.causal},
    }


def ensure_memory_preloaded(workdir: Path, n: int, embed: str) -> tuple[Path, dict[str, Any]]:
    """A pristine data dir with the kg preload plus events, facts and causal links (cached)."""
    kg_pristine, kg_meta = ensure_preloaded(workdir, n, embed=embed, log=log)
    pristine = workdir / f"memory-{n}" / "pristine"
    mode = str(kg_meta.get("embed_mode", "minilm"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "preload-memory", "--data-dir", str(pristine)]
    cmd += ["--n", str(n), "--embed", mode]
    meta = cached_build(
        pristine,
        cmd,
        fits=lambda m: m.get("version") == MEMORY_VERSION and m.get("entities") == n,
        workdir=workdir,
        base=kg_pristine,
        log=log,
        in_smoke=lambda: asyncio.run(_preload_memory(pristine, n, mode)),
    )
    return pristine, meta


# --- measuring ---------------------------------------------------------------------------------


def arguments(op: str, n: int, rng: random.Random) -> dict[str, Any]:
    if op == "get_entity":
        return {"name": generated_entity(rng.randrange(n))["name"], "limit": 20}
    if op == "query_timeline":
        span = counts(n)["events"] * EVENT_STEP
        start = EVENT_START + timedelta(seconds=rng.uniform(0, max(0.0, span.total_seconds() - 86400)))
        return {"from": start.isoformat(), "to": (start + timedelta(days=1)).isoformat(), "limit": 50}
    if op == "search_semantic":
        return {"query": f"{rng.choice(WORDS)} {rng.choice(AREAS)} {rng.choice(WORDS)}", "limit": 10}
    raise ValueError(op)


async def measure(server: PolygServer, floors: Floors, n: int, calls: int, block: int, seed: int) -> dict[str, Any]:
    rng, floor_rng = random.Random(seed), random.Random(seed + 1)
    ends = chain_ends(n)
    # The end events' ids, looked up once (the chain is then asked for by id, as a client does
    # after finding the event).
    ids: list[str] = []
    for i in ends[: min(len(ends), 50)]:
        timeline = await server.call(
            "query_timeline", {"from": event_at(i).isoformat(), "to": event_at(i).isoformat(), "limit": 5}
        )
        items = timeline.structured_content["items"]
        ids += [it["event"]["id"] for it in items if "event" in it and it["event"]["description"].endswith(f" {i}")]
    samples: dict[str, list[float]] = {op: [] for op in OPS}
    inside: dict[str, list[float]] = {op: [] for op in OPS if op != "ping"}
    shapes: dict[str, Any] = {}
    kept: dict[str, list[Any]] = {op: [] for op in OPS if op != "ping"}
    for op in OPS:  # warm-up
        await one(server, op, n, rng, ids, shapes, {}, {})
        if op in FLOORED:
            await floors.probe(op, floor_rng, keep=False)
    while any(len(v) < calls for v in samples.values()):
        for op in OPS:
            wanted = min(block, calls - len(samples[op]))
            for _ in range(wanted):
                samples[op].append(await one(server, op, n, rng, ids, shapes, inside, kept))
            for _ in range(wanted if op in FLOORED else 0):  # its floor, right after, as many
                await floors.probe(op, floor_rng)
    listed = {tool.name: tool.output_schema for tool in (await server.client.list_tools()).tools}
    return {
        "stats": {op: summarize(v) for op, v in samples.items()},
        "server_ms": {op: summarize([ms / 1000 for ms in v]) for op, v in inside.items() if v},
        "client_check": {op: client_check(listed[op], results) for op, results in kept.items() if results},
        "result_sizes": shapes,
        "floor_parts": floors.summary(),
        "memory": server.memory(),
    }


async def one(
    server: PolygServer,
    op: str,
    n: int,
    rng: random.Random,
    ids: list[str],
    shapes: dict[str, Any],
    inside: dict[str, list[float]],
    kept: dict[str, list[Any]],
) -> float:
    t = time.perf_counter()
    if op == "ping":
        await server.ping()
        return time.perf_counter() - t
    if op == "get_causal_chain":
        args: dict[str, Any] = {"event": rng.choice(ids), "direction": "upstream", "depth": 3}
    else:
        args = arguments(op, n, rng)
    t = time.perf_counter()
    result = await server.call(op, args)
    elapsed = time.perf_counter() - t
    if (ms := server_ms(result)) is not None and op in inside:
        inside[op].append(ms)
    body = result.structured_content
    if op in kept and len(kept[op]) < KEPT_RESULTS:
        kept[op].append(body)
    size = {
        "get_entity": lambda: len(body["relationships"]),
        "query_timeline": lambda: len(body["items"]),
        "get_causal_chain": lambda: len(body["nodes"]),
        "search_semantic": lambda: len(body["results"]),
    }[op]()
    shapes.setdefault(op, []).append(size)
    return elapsed


async def bench_size(args: argparse.Namespace, n: int) -> dict[str, Any]:
    workdir: Path = args.workdir
    pristine, preload = await asyncio.to_thread(ensure_memory_preloaded, workdir, n, args.embed)
    with LoadSampler() as sampler:
        mode = str(preload.get("embed_mode", "minilm"))  # the server embeds queries as the preload did
        async with served_copy(pristine, workdir / f"memory-{n}", workdir, embedder=mode) as served:
            embedder = served.env.get("POLYG_EMBEDDING_PROVIDER")  # the server's, for the floor too
            async with Floors.attached(served.run_dir, n, embedder) as floors:
                result = await measure(served.server, floors, n, args.calls, args.block, args.seed)
    ready_s = served.ready_s
    result["floors"] = floor_totals(result)
    for op, st in result["stats"].items():
        floor = result["floors"].get(op)
        beside = f"  floor {floor['total_p50_ms']:7.2f} ({st['p50_ms'] / floor['total_p50_ms']:.1f}x)" if floor else ""
        log(f"n={n} {op:18s} p50 {st['p50_ms']:7.2f}  p95 {st['p95_ms']:7.2f}  p99 {st['p99_ms']:7.2f} ms{beside}")
    sizes = {op: round(sum(v) / len(v), 1) for op, v in result.pop("result_sizes").items()}
    return {
        "entities": n,
        "preload": preload,
        "ready_s": round(ready_s, 2),
        "mean_result_size": sizes,
        "machine_load": sampler.summary(),
        **result,
    }


# The one indexed read of an entity (by name) with what get_entity shows of it: its
# relationships, its latest events and its first observations, in fewer columns and with none
# of the ordering of relationships or the validity check of facts the tool adds.
ENTITY_FLOOR = (
    "MATCH (e:Entity {name: $key}) "
    "OPTIONAL MATCH (e)-[r]-(o:Entity) WITH e, collect([r.id, type(r), o.id, o.name]) AS rels "
    "OPTIONAL MATCH (e)<-[:INVOLVES]-(ev:Event) "
    "WITH e, rels, collect([ev.id, ev.description, ev.occurred_at])[0..10] AS evs "
    "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(ob:Observation) "
    "RETURN e {.id, .name, .type, .summary}, rels, evs, collect([ob.id, ob.text])[0..100]"
)
# The events that occurred in the window through their range index, the first $limit in time
# order with the names of the entities they involve, and the facts that began in it, each fact
# type through its own range index: the rows query_timeline shows.
EVENTS_FLOOR = (
    "MATCH (ev:Event) WHERE ev.occurred_us >= $lo AND ev.occurred_us < $hi "
    "WITH ev ORDER BY ev.occurred_us LIMIT $limit "
    "RETURN [ev.id, ev.description, ev.occurred_at, [(ev)-[:INVOLVES]->(x:Entity) | x.name]] AS row"
)
FACTS_FLOOR = (
    "MATCH (s)-[r:{type}]->(o) WHERE r.valid_from_us >= $lo AND r.valid_from_us < $hi "
    "WITH s, r, o ORDER BY r.valid_from_us LIMIT $limit RETURN [r.id, s.name, o.name, r.valid_from] AS row"
)


# search_semantic's words: one full-text read of the phrase over the entities' index, the 10 best.
FULL_TEXT_FLOOR = (
    "CALL db.idx.fulltext.queryNodes('Entity', $text) YIELD node, score "
    "RETURN node.id, score ORDER BY score DESC LIMIT 10"
)

FLOORED = ("get_entity", "query_timeline", "search_semantic")


class Floors:
    """Times each tool's floor queries through a core attached to the server's own database
    (the embedded store lets a second process attach), so that they run in the same rotation
    as the tool calls, under the same load. The query is embedded by the server's embedder."""

    def __init__(self, services: Any, n: int, window_query: str) -> None:
        self.services = services
        self.n = n
        self.window_query = window_query
        self.times: dict[str, list[float]] = {
            part: [] for part in ("entity_read", "window_read", "embed", "knn", "event_knn", "full_text")
        }

    @classmethod
    @contextlib.asynccontextmanager
    async def attached(cls, data_dir: Path, n: int, embedder: str | None) -> AsyncIterator[Floors]:
        from polyg.store.names import RelType
        from polyg.store.queries import temporal

        async with core_on(data_dir, embedder) as services:
            types = [RelType(t) for t in await temporal.fact_types(services.ctx, DEFAULT_PROJECT)]
            yield cls(services, n, " UNION ALL ".join([EVENTS_FLOOR] + [FACTS_FLOOR.format(type=t) for t in types]))

    async def probe(self, op: str, rng: random.Random, keep: bool = True) -> None:
        from polyg.core.text.time import epoch_us

        ctx, project = self.services.ctx, DEFAULT_PROJECT
        args = arguments(op, self.n, rng)
        t = time.perf_counter()
        parts: dict[str, float] = {}
        if op == "get_entity":
            await ctx.read(project, ENTITY_FLOOR, {"key": args["name"]})
            parts["entity_read"] = time.perf_counter() - t
        elif op == "query_timeline":
            window = {
                "lo": epoch_us(datetime.fromisoformat(args["from"])),
                "hi": epoch_us(datetime.fromisoformat(args["to"])),
                "limit": args["limit"] + 1,
            }
            await ctx.read(project, self.window_query, window)
            parts["window_read"] = time.perf_counter() - t
        else:
            vector = await ctx.embed_query(args["query"])
            t_embed = time.perf_counter()
            await knn(self.services, "Entity", vector)
            t_knn = time.perf_counter()
            await knn(self.services, "Event", vector, k=20)
            t_events = time.perf_counter()
            await ctx.read(project, FULL_TEXT_FLOOR, {"text": args["query"]})
            parts = {
                "embed": t_embed - t,
                "knn": t_knn - t_embed,
                "event_knn": t_events - t_knn,
                "full_text": time.perf_counter() - t_events,
            }
        if keep:
            for part, seconds in parts.items():
                self.times[part].append(seconds)

    def summary(self) -> dict[str, Any]:
        return {part: summarize(v) for part, v in self.times.items() if v}


def floor_totals(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each tool's floor p50 (ms) and what it is made of: the same run's ping, the database
    work measured in process, and the client's schema check of the tool's results."""
    parts = result["floor_parts"]
    ping = result["stats"]["ping"]["p50_ms"]

    def check(op: str) -> float:
        return float(result["client_check"].get(op, {}).get("p50_ms", 0.0))

    made_of = {
        "get_entity": {
            "ping": ping,
            "entity read": parts["entity_read"]["p50_ms"],
            "client check": check("get_entity"),
        },
        "query_timeline": {
            "ping": ping,
            "window read": parts["window_read"]["p50_ms"],
            "client check": check("query_timeline"),
        },
        "search_semantic": {
            "ping": ping,
            "embed": parts["embed"]["p50_ms"],
            "KNN": parts["knn"]["p50_ms"],
            "event KNN": parts["event_knn"]["p50_ms"],
            "full text": parts["full_text"]["p50_ms"],
            "client check": check("search_semantic"),
        },
    }
    return {
        op: {"parts": {k: round(v, 3) for k, v in p.items()}, "total_p50_ms": round(sum(p.values()), 2)}
        for op, p in made_of.items()
    }


def vectors(results: list[dict[str, Any]]) -> str:
    """What made the vectors: MiniLM, or the hashing embedder (latency, not relevance)."""
    modes = {r["preload"].get("embed_mode", "minilm") for r in results}
    if modes == {"minilm"}:
        return "MiniLM"
    hashed = ", ".join(f"{r['entities']:,}" for r in results if r["preload"].get("embed_mode") == "hashing")
    return (
        f"**hashed vectors** at {hashed} entities (the hashing embedder for entities, events and "
        "queries: latency, not relevance)"
    )


def report(results: list[dict[str, Any]], machine: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "# memory toolset latency (spec 003, direct tools)",
        "",
        describe_machine(machine),
        f"Over MCP stdio, embedded store, {vectors(results)}; {args.calls} calls per operation in blocks of "
        f"{args.block}.",
        "",
        "| entities | operation | p50 ms | p95 ms | p99 ms | x ping | floor p50 ms | x floor | in polyg p50 ms | "
        "client check p50 ms | spec p50 | polyg p50 (10k) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ping = r["stats"]["ping"]["p50_ms"]
        for op in OPS:
            st = r["stats"][op]
            ratio = "" if op == "ping" else f"{st['p50_ms'] / ping:.1f}"
            floor = r.get("floors", {}).get(op)
            floor_ms = fmt_ms(floor["total_p50_ms"]) if floor else ""
            over = f"{st['p50_ms'] / floor['total_p50_ms']:.1f}" if floor else ""
            inside = r.get("server_ms", {}).get(op)
            check = r.get("client_check", {}).get(op)
            spec = f"< {SPEC_P50_MS[op]}" if op in SPEC_P50_MS else ""
            ours = f"<= {POLYG_P50_MS[op]}" if op in POLYG_P50_MS else ""
            lines.append(
                f"| {r['entities']:,} | {op} | {fmt_ms(st['p50_ms'])} | {fmt_ms(st['p95_ms'])} | "
                f"{fmt_ms(st['p99_ms'])} | {ratio} | {floor_ms} | {over} | "
                f"{fmt_ms(inside['p50_ms']) if inside else ''} | "
                f"{fmt_ms(check['p50_ms']) if check else ''} | {spec} | {ours} |"
            )
    lines += ["", "Floors (p50 ms, each part's own median):", ""]
    for r in results:
        for op, floor in r.get("floors", {}).items():
            parts = " + ".join(f"{k} {fmt_ms(v)}" for k, v in floor["parts"].items())
            lines.append(f"- {r['entities']:,} {op}: {parts} = {fmt_ms(floor['total_p50_ms'])}")
    lines += ["", "| entities | events | facts | causal links | server RSS peak MB | database RSS peak MB | load1 |"]
    lines.append("|---|---|---|---|---|---|---|")
    for r in results:
        mem = r["memory"]
        server = fmt_mb(mem.get("server", {}).get("peak_rss_kb", 0))
        db = fmt_mb(mem.get("db", {}).get("peak_rss_kb", 0))
        p = r["preload"]
        lines.append(
            f"| {r['entities']:,} | {p['events']:,} | {p['facts']:,} | {p['causal_links_made']:,} | {server} | {db} | "
            f"{r['machine_load'].get('load1', {}).get('median', '')} |"
        )
    return "\n".join(lines) + "\n"


def key_figures(result: dict[str, Any]) -> dict[str, Any]:
    """The history row of one size: p50 and p95 of each operation, ms."""
    figures: dict[str, Any] = {}
    for op in OPS:
        st = result["stats"][op]
        figures[f"{op}_p50_ms"] = round(st["p50_ms"], 2)
        figures[f"{op}_p95_ms"] = round(st["p95_ms"], 2)
    for op, floor in result.get("floors", {}).items():
        figures[f"{op}_floor_p50_ms"] = floor["total_p50_ms"]
    return figures


async def main_async(args: argparse.Namespace) -> None:
    machine = machine_info()
    results = [await bench_size(args, n) for n in args.sizes]
    markdown = report(results, machine, args)
    print(markdown)
    if not args.no_save:
        for result in results:
            md, js = write_results(
                "memory",
                report([result], machine, args),
                {"machine": machine, "results": [result]},
                size=str(result["entities"]),
                figures=key_figures(result),
            )
            log(f"wrote {md} and {js}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "preload-memory":
        parser = argparse.ArgumentParser()
        parser.add_argument("cmd")
        parser.add_argument("--data-dir", type=Path, required=True)
        parser.add_argument("--n", type=int, required=True)
        parser.add_argument("--embed", choices=("minilm", "hashing"), required=True)
        ns = parser.parse_args()
        print(json.dumps(asyncio.run(_preload_memory(ns.data_dir, ns.n, ns.embed))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="entity counts, comma-separated")
    parser.add_argument("--calls", type=int, default=200, help="measured calls per operation")
    parser.add_argument("--block", type=int, default=20, help="calls of one operation in a row")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embed", default="auto", choices=("auto", "minilm", "hashing"), help="preload vectors")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-bench"), help="cache of preloaded dirs")
    parser.add_argument("--no-save", action="store_true", help="print only; do not write bench/results")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if args.smoke:
        args.sizes, args.calls, args.block, args.embed = [SMOKE_ENTITIES], 5, 2, "hashing"
        args.workdir, args.no_save = smoke_workdir("memory"), True
    args.workdir.mkdir(parents=True, exist_ok=True)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
