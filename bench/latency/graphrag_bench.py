"""graphrag toolset benchmark (spec 004): polyg over MCP stdio, embedded FalkorDB, MiniLM.

Two graphs, each in its own server process:

- generated: the kg benchmark's entities (`ensure_preloaded`, cached under --workdir), to
  which this script adds a graph: every entity links to up to 2 earlier ones chosen in
  proportion to their degree (preferential attachment, so hubs form), with spec 004's seven
  types and random weights; and one entity in `--extract-share` gets an observation stating
  relationships to other entities by name ("Depends on X and uses Y. Z is used by it."), for
  extraction;
- Blue Note: the discography in `../shared/data/bluenote/` (musicians, tracks, releases, years
  and who played with whom; `bench/tools/bluenote_graph.py`), written through the core batch writers
  with its vectors, built once and cached under --workdir.

On each, `--calls` rounds of: the stdio ping, `search_nodes` (limit 10), `graph_enhanced_search`
depth 2 (default weights, limit 10) and `get_entity_neighbors` depth 2 (both directions, limit
50) on a random entity; queries are 1-3 words of the graph's vocabulary. p50/p95 and each p50's
ratio to the ping's and to search_nodes' of the same run.

Floors (the project rule: a call within 2x of its floor, measured in the same rounds, is done):

- graph_enhanced_search: the `search_nodes` call with the same query, the round before. Every
  graph-enhanced search begins with that hybrid search (query embedding, vector KNN, full text,
  fusion) to find its seeds, so no answer of it can come sooner; what it adds is the graph.
- get_entity_neighbors: the stdio ping plus `bare_neighbours_d2`, the bare depth-2 traversal
  from the same entity, in FalkorDB through polyg's store class on the server's own database
  (its socket, while the server runs): one query a layer (both ways as two directed matches),
  the first from the entity's id, the second from the nodes the first reached and only if they
  are fewer than `limit` (50): the heaviest relationships, as many as the nodes still wanted
  plus those already reached (which the second layer leads back to), only the columns the
  answer shows (id, name, type, relation, weight, causal); plus the Python client's check of the
  results against the tool's output schema (`client_check`, timed again on 20 of them;
  memory_bench counts it in query_timeline's floor the same way). Any answer must cross stdio
  once, read these rows (the nearest `limit` nodes, heaviest first) and, for this client, pass
  its schema check; the floor does nothing else: no paths, no edge objects, no JSON encoding.

Beside the floor, where get_entity_neighbors' stdio time goes: its time in polyg (the results'
`polyg/serverMs`), the client's check, the ping and the bare traversal, each part's own p50
(`neighbours_parts`).

Then `extract_all_relationships` over
every entity (the first run: all are due; `--extract-page` entities a call, until none is due),
entities/s, and a second run, which finds nothing due.

At 100k entities MiniLM would take over an hour to embed the preload on this kind of machine:
`--embed auto` (the default) then preloads hashed vectors, and the server embeds queries with
the hashing embedder too; the result says so ("hashed vectors": latency, not relevance).

    .venv/bin/python bench/latency/graphrag_bench.py [--size 10000] [--calls 200] [--graphs generated,bluenote]
    nice -n 10 .venv/bin/python bench/latency/graphrag_bench.py --size 100000 --graphs generated --embed hashing
    .venv/bin/python bench/latency/graphrag_bench.py --smoke

`--smoke` runs a small generated store and a few calls, writes no result file, and fails
(exit 1) only if a call fails. Results: bench/results/graphrag-<size>.md and .json (the Blue
Note graph's: graphrag-bluenote), key figures in history.csv. Targets (issue 14): search depth
2 p50 <= 25 ms and neighbours depth 2 p50 <= 8 ms at 10k entities.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.database import stop_db
from bench.lib.datadirs import ensure_preloaded, fresh_copy
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.server import PolygServer, client_check, server_ms
from bench.lib.smoke import SMOKE_ENTITIES, smoke_workdir
from bench.lib.stats import fmt_ms, summarize
from bench.lib.synthetic import AREAS, WORDS, entity_id
from bench.tools.bluenote_graph import find_csv
from polyg.core.graph.weighted_links import SPEC_TYPES

STORED = SPEC_TYPES  # spec 004's seven types -> the stored relationship types
RELATIONS = tuple(STORED)
TARGET_SEARCH_P50_MS = 25.0
TARGET_NEIGHBOURS_P50_MS = 8.0
BLUENOTE = "Blue Note"


def log(msg: str) -> None:
    print(f"[graphrag-bench] {msg}", file=sys.stderr, flush=True)


def graph_edges(n: int, seed: int = 7) -> list[tuple[int, int, str, float]]:
    rng = random.Random(seed)
    ends = [0, 1]
    edges = [(1, 0, "relates_to", 0.5)]
    for i in range(2, n):
        for target in {rng.choice(ends) for _ in range(2)}:
            edges.append((i, target, rng.choice(RELATIONS), round(rng.uniform(0.1, 1.0), 2)))
            ends += [i, target]
    return edges


async def add_graph(data_dir: Path, n: int, extract_share: float) -> dict[str, Any]:
    """Relationships and extraction sentences, written straight to the store (no schema or
    vector work: the entities and their vectors are the preload's)."""
    from polyg.config import load_settings
    from polyg.embed import create_embedder
    from polyg.runtime.app import Polyg

    settings = load_settings(None, data_dir=data_dir, log_dir=data_dir / "logs", store=None)
    core = Polyg(settings, embedder=create_embedder("hashing"))
    s = await core.ready()
    project = s.project(None)
    try:
        names = dict(await s.store.ro_query(project, "MATCH (e:Entity) RETURN e.id, e.name"))
        edges = graph_edges(n)
        for relation, stored in STORED.items():
            rows = [
                [entity_id(a), entity_id(b), f"rel_g{k:08x}_{stored}", w]
                for k, (a, b, r, w) in enumerate(edges)
                if r == relation
            ]
            for start in range(0, len(rows), 5000):
                await s.store.query(
                    project,
                    f"UNWIND $rows AS row MATCH (a:Entity {{id: row[0]}}), (b:Entity {{id: row[1]}}) "
                    f"CREATE (a)-[:{stored} {{id: row[2], weight: row[3], is_causal: $causal}}]->(b)",
                    {"rows": rows[start : start + 5000], "causal": stored == "CAUSES"},
                )
        rng = random.Random(13)
        sentences = []
        for i in range(n):
            if rng.random() < extract_share:
                a, b, c = (names[entity_id(rng.randrange(n))] for _ in range(3))
                text = f"Depends on {a} and uses {b}. {c} is used by it. It does not use {a}."
                sentences.append([entity_id(i), f"obs_gx{i:08x}", text])
        for start in range(0, len(sentences), 2000):
            await s.store.query(
                project,
                "UNWIND $rows AS row MATCH (e:Entity {id: row[0]}) "
                "CREATE (e)-[:HAS_OBSERVATION]->(:Observation {id: row[1], text: row[2], created_at: $at})",
                {"rows": sentences[start : start + 2000], "at": "2026-01-01T00:00:00Z"},
            )
        return {"project": project, "relationships": len(edges), "extraction_sentences": len(sentences)}
    finally:
        await core.close()


def queries(count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    vocabulary = WORDS + AREAS
    return [" ".join(rng.sample(vocabulary, rng.randint(1, 3))) for _ in range(count)]


def bluenote_queries(names: list[str], count: int, seed: int = 5) -> list[str]:
    """1-3 words from the discography's names (musicians, titles), as someone would type them."""
    rng = random.Random(seed)
    words = sorted({w for n in names for w in n.replace(",", " ").split() if len(w) > 3 and w.isalpha()})
    return [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(count)]


async def ids_and_names(data_dir: Path) -> tuple[str, list[str], list[str]]:
    """The store's project, entity ids and names (the server is not running)."""
    from polyg.config import load_settings
    from polyg.embed import create_embedder
    from polyg.runtime.app import Polyg

    settings = load_settings(None, data_dir=data_dir, log_dir=data_dir / "logs", store=None)
    core = Polyg(settings, embedder=create_embedder("hashing"))
    try:
        s = await core.ready()
        project = s.project(None)
        rows = await s.ctx.read(project, "MATCH (e:Entity) RETURN e.id, e.name ORDER BY e.id")
        return project, [r[0] for r in rows], [r[1] or "" for r in rows]
    finally:
        await core.close()


# The bare depth-2 traversal of get_entity_neighbors' floor, a layer a query, both ways as two
# directed matches (FalkorDB's faster form, as the tool reads them): the heaviest relationships,
# only the columns the answer shows, at most $limit each way: enough for the nodes still wanted
# plus those already reached (a filter on them in the query, `NOT id(o) IN $seen`, makes
# FalkorDB's plan many times slower). The first layer starts from the entity's polyg id, the
# second from the nodes the first reached.
FLOOR_COLUMNS = "id(o), o.id, o.name, o.type, type(r), r.weight, r.is_causal"
FLOOR_FIRST = (
    "MATCH (x:Entity {{id: $id}}) MATCH (x){hop}(o) WHERE NOT type(r) IN $own AND o <> x "
    f"RETURN {FLOOR_COLUMNS}, id(x) ORDER BY coalesce(r.weight, 1.0) DESC LIMIT $limit"
)
FLOOR_NEXT = (
    "UNWIND $from AS fid MATCH (x) WHERE id(x) = fid MATCH (x){hop}(o) WHERE NOT type(r) IN $own "
    f"RETURN {FLOOR_COLUMNS} ORDER BY coalesce(r.weight, 1.0) DESC LIMIT $limit"
)


def _both_ways(query: str) -> str:
    return " UNION ALL ".join(query.format(hop=hop) for hop in ("-[r]->", "<-[r]-"))


async def bare_neighbours(store: Any, project: str, entity: str, limit: int) -> int:
    """get_entity_neighbors' database floor (depth 2, both ways, `limit`): the first layer's
    heaviest relationships from the entity (by its polyg id), then, only if that reached fewer
    than `limit` nodes, the second layer's heaviest (`limit` + 1 each way: enough for the nodes
    still wanted and those it leads back to). Returns the nodes reached."""
    from polyg.store.queries.traversal import OWN_TYPES

    params: dict[str, Any] = {"id": entity, "own": OWN_TYPES, "limit": limit}
    seen: list[int] = []
    rows = await store.ro_query(project, _both_ways(FLOOR_FIRST), params)
    if rows:
        seen.append(int(rows[0][-1]))
    for layer in range(2):
        ordered = sorted(rows, key=lambda row: -(row[5] if isinstance(row[5], int | float) else 1.0))
        fresh = [n for n in dict.fromkeys(int(row[0]) for row in ordered) if n not in seen][: limit - len(seen) + 1]
        seen += fresh
        if layer == 1 or not fresh or len(seen) > limit:
            break
        params = {"from": fresh, "own": OWN_TYPES, "limit": limit + 1}
        rows = await store.ro_query(project, _both_ways(FLOOR_NEXT), params)
    return max(len(seen) - 1, 0)


async def timed(server: PolygServer, name: str, args: dict[str, Any] | None) -> float:
    return (await timed_call(server, name, args))[0]


async def timed_call(server: PolygServer, name: str, args: dict[str, Any] | None) -> tuple[float, Any]:
    """Seconds the call (or, without `args`, the ping) took over stdio, and its result."""
    t = time.perf_counter()
    if args is None:
        await server.ping()
        return time.perf_counter() - t, None
    result = await server.call(name, args)
    return time.perf_counter() - t, result


OPS = ("ping", "search_nodes", "graph_enhanced_search_d2", "get_entity_neighbors_d2", "bare_neighbours_d2")
NEIGHBOURS_LIMIT = 50  # get_entity_neighbors' default, which the bench calls with
KEPT_RESULTS = 20  # get_entity_neighbors results whose output-schema check is timed again


async def extract_all(server: PolygServer, page: int | None) -> tuple[dict[str, int], float]:
    """extract_all_relationships until nothing is due, `page` entities a call (None: one call
    for all), and the seconds it took: the statistics summed over the calls."""
    totals: dict[str, int] = {}
    t = time.perf_counter()
    while True:
        result = await server.call("extract_all_relationships", {} if page is None else {"limit": page})
        stats = result.structured_content["statistics"]
        for key, value in stats.items():
            totals[key] = totals.get(key, 0) + value if key != "remaining" else value
        if page is None or not stats["remaining"] or not stats["total_processed"]:
            return totals, time.perf_counter() - t


async def measure(
    data_dir: Path,
    project: str,
    ids: list[str],
    words: list[str],
    calls: int,
    log_path: Path,
    env: dict[str, str],
    extract_page: int | None = None,
) -> dict[str, Any]:
    """Round after round, one call of each operation, so that a change in the machine's load
    falls on all of them alike: the stdio ping (the floor of any call), search_nodes (the
    search graph_enhanced_search starts from), graph_enhanced_search and get_entity_neighbors."""
    rng = random.Random(3)
    times: dict[str, list[float]] = {op: [] for op in OPS}
    inside: list[float] = []  # get_entity_neighbors' time in polyg (its result's polyg/serverMs)
    kept: list[Any] = []
    from polyg.store.embedded import socket_path_for
    from polyg.store.falkor import FalkorStore

    extra = ["--toolsets", "graphrag,memory-compat"]
    async with PolygServer(data_dir, log_path=log_path, env=env, extra_args=extra) as server:
        for q in words[:5]:  # model, caches and centrality warmed once
            await server.call("graph_enhanced_search", {"query": q, "depth": 2})
            await server.call("search_nodes", {"query": q})
        # The floor's queries go to the server's own database, through polyg's store class.
        store = FalkorStore(unix_socket=socket_path_for((data_dir / "db").resolve()))
        await bare_neighbours(store, project, ids[0], NEIGHBOURS_LIMIT)
        with LoadSampler() as sampler:
            for q in words[5 : 5 + calls]:
                times["ping"].append(await timed(server, "ping", None))
                times["search_nodes"].append(await timed(server, "search_nodes", {"query": q, "limit": 10}))
                times["graph_enhanced_search_d2"].append(
                    await timed(server, "graph_enhanced_search", {"query": q, "depth": 2, "limit": 10})
                )
                entity = ids[rng.randrange(len(ids))]
                took, result = await timed_call(server, "get_entity_neighbors", {"entity_id": entity, "depth": 2})
                times["get_entity_neighbors_d2"].append(took)
                if (ms := server_ms(result)) is not None:
                    inside.append(ms / 1000)
                if len(kept) < KEPT_RESULTS:
                    kept.append(result.structured_content)
                t = time.perf_counter()
                await bare_neighbours(store, project, entity, NEIGHBOURS_LIMIT)
                times["bare_neighbours_d2"].append(time.perf_counter() - t)
        await store.close()
        listed = {tool.name: tool.output_schema for tool in (await server.client.list_tools()).tools}
        stats, extract_s = await extract_all(server, extract_page)
        second, second_s = await extract_all(server, extract_page)
        health = (await server.call("get_graph_statistics", {})).structured_content["statistics"]
    summary = {op: summarize(values) for op, values in times.items()}
    ping = summary["ping"]["p50_ms"]
    check = client_check(listed["get_entity_neighbors"], kept)["p50_ms"]
    floors = {
        "graph_enhanced_search_d2": {"what": "search_nodes, same query", "p50_ms": summary["search_nodes"]["p50_ms"]},
        "get_entity_neighbors_d2": {
            "what": "ping + bare depth-2 traversal + client check",
            "p50_ms": round(ping + summary["bare_neighbours_d2"]["p50_ms"] + check, 2),
        },
    }
    for op, floor in floors.items():
        floor["ratio"] = round(summary[op]["p50_ms"] / floor["p50_ms"], 2)
    parts = {
        "stdio": summary["get_entity_neighbors_d2"]["p50_ms"],
        "in_polyg": summarize(inside)["p50_ms"],
        "client_check": check,
        "ping": ping,
        "bare_traversal": summary["bare_neighbours_d2"]["p50_ms"],
    }
    return {
        **summary,
        "floors": floors,
        "neighbours_parts": {k: round(v, 2) for k, v in parts.items()},
        "ratios": {
            op: {
                "to_ping": round(summary[op]["p50_ms"] / ping, 2),
                "to_search_nodes": round(summary[op]["p50_ms"] / summary["search_nodes"]["p50_ms"], 2),
            }
            for op in OPS[1:]
        },
        "extract_all": {
            "seconds": round(extract_s, 3),
            "entities": stats["total_processed"],
            "entities_per_s": round(stats["total_processed"] / extract_s, 1) if extract_s > 0 else None,
            "relationships_found": stats["total_relationships"],
            "relationships_created": stats["relationships_created"],
            "unresolved": stats["unresolved"],
            "page": extract_page,
            "second_run_entities": second["total_processed"],
            "second_run_s": round(second_s, 3),
        },
        "graph": {k: health[k] for k in ("entities", "relationships", "communities", "orphan_entities")},
        "machine_load": sampler.summary(),
    }


def row(name: str, r: dict[str, Any], target_ms: float | None) -> str:
    stats = r[name]
    ratio = r["ratios"].get(name, {})
    target = f"<= {target_ms:g} ms" if target_ms else ""
    return (
        f"| {name} | {fmt_ms(stats['p50_ms'])} | {fmt_ms(stats['p95_ms'])} | {ratio.get('to_ping', 1.0):g} | "
        f"{ratio.get('to_search_nodes', '')} | {target} |"
    )


def render_graph(title: str, r: dict[str, Any]) -> list[str]:
    ex = r["extract_all"]
    return [
        f"## {title}",
        "",
        f"Graph: {json.dumps(r['graph'])}; load while measuring: {json.dumps(r['machine_load'])}.",
        "",
        "| measure | p50 ms | p95 ms | p50 / ping | p50 / search_nodes | target (10k) |",
        "|---|---|---|---|---|---|",
        row("ping", r, None),
        row("search_nodes", r, None),
        row("graph_enhanced_search_d2", r, TARGET_SEARCH_P50_MS),
        row("get_entity_neighbors_d2", r, TARGET_NEIGHBOURS_P50_MS),
        row("bare_neighbours_d2", r, None),
        "",
        "| call | p50 ms | floor | floor p50 ms | p50 / floor |",
        "|---|---|---|---|---|",
        *(
            f"| {op} | {fmt_ms(r[op]['p50_ms'])} | {f['what']} | {fmt_ms(f['p50_ms'])} | {f['ratio']:g} |"
            for op, f in r["floors"].items()
        ),
        "",
        *_parts_line(r),
        f"extract_all_relationships (limit {ex.get('page') or 'none'} a call, until none is due): "
        f"{ex['entities']} entities in {ex['seconds']} s "
        f"({ex['entities_per_s']} entities/s), {ex['relationships_found']} relationships found, "
        f"{ex['relationships_created']} created, {ex['unresolved']} names unresolved; a second run took "
        f"{ex['second_run_entities']} entities in {ex['second_run_s']} s.",
        "",
    ]


def _parts_line(r: dict[str, Any]) -> list[str]:
    """Where get_entity_neighbors' stdio time goes (each part's own p50)."""
    parts = r.get("neighbours_parts")
    if not parts:
        return []
    return [
        f"get_entity_neighbors_d2 over stdio {fmt_ms(parts['stdio'])} ms: in polyg (the handler, its "
        f"`polyg/serverMs`) {fmt_ms(parts['in_polyg'])}, the Python client's output-schema check of the "
        f"result {fmt_ms(parts['client_check'])}, the ping {fmt_ms(parts['ping'])}; the bare traversal "
        f"{fmt_ms(parts['bare_traversal'])}.",
        "",
    ]


def vectors_label(data: dict[str, Any], graph: str) -> str:
    setup = data["setup"].get("bluenote" if graph == BLUENOTE else "generated", {})
    if setup.get("vectors") == "hashing":
        return "**hashed vectors** (the hashing embedder for entities and queries: latency, not relevance)"
    return "MiniLM"


def render(data: dict[str, Any], graph: str) -> str:
    lines = [
        f"# graphrag benchmark: {graph}",
        "",
        f"{describe_machine(data['machine'])}",
        "",
        f"MCP stdio (Python SDK client), embedded FalkorDB, {vectors_label(data, graph)}; one call in "
        "flight; each round "
        "calls ping, search_nodes (limit 10), graph_enhanced_search (depth 2, limit 10) and "
        "get_entity_neighbors (depth 2, limit 50) once, so the ratios compare calls made under the same load.",
        "",
        *render_graph(graph, data["results"][graph]),
        f"Setup: {json.dumps(data['setup'])}.",
        "",
    ]
    return "\n".join(lines)


def ensure_bluenote(workdir: Path, embed: str) -> tuple[Path, dict[str, Any]]:
    """A pristine data dir holding the Blue Note graph (bench/tools/bluenote_graph.py, in a child
    process), built once and cached in workdir."""
    pristine = workdir / "graphrag-bluenote" / "pristine"
    meta_path = pristine.parent / "pristine.meta.json"
    if meta_path.exists():
        return pristine, json.loads(meta_path.read_text())
    if pristine.exists():
        stop_db(pristine)
        shutil.rmtree(pristine)
    pristine.parent.mkdir(parents=True, exist_ok=True)
    log(f"loading the Blue Note graph into {pristine} ...")
    t = time.perf_counter()
    cmd = [sys.executable, str(REPO / "bench" / "tools" / "bluenote_graph.py"), "--data-dir", str(pristine)]
    cmd += ["--embed", "hashing" if embed == "hashing" else "minilm"]
    with (pristine.parent / "build.log").open("w") as err:
        proc = subprocess.run(cmd, env=clean_env(workdir), stdout=subprocess.PIPE, stderr=err, text=True)
    stop_db(pristine)
    if proc.returncode != 0:
        raise RuntimeError(f"the Blue Note load failed ({proc.returncode}); see {pristine.parent / 'build.log'}")
    meta: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    meta["wall_s"] = round(time.perf_counter() - t, 1)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    log(f"Blue Note graph loaded in {meta['wall_s']} s: {json.dumps(meta)}")
    return pristine, meta


async def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir: Path = args.workdir
    n = args.size
    results: dict[str, Any] = {}
    setup: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    if "generated" in args.graphs:
        pristine, meta["generated"] = await asyncio.to_thread(ensure_preloaded, workdir, n, embed=args.embed, log=log)
        run_dir = fresh_copy(pristine, workdir / f"graphrag-{n}" / "run")
        log(f"adding relationships and extraction sentences to {n} entities ...")
        setup["generated"] = await add_graph(run_dir, n, args.extract_share)
        stop_db(run_dir)
        ids = [entity_id(i) for i in range(n)]
        log_path = workdir / f"graphrag-{n}" / "server.log"
        words = queries(args.calls + 5)
        # The server embeds queries as the preload embedded the entities (hashed vectors past
        # --max-embed-s of projected MiniLM time, or with --embed hashing).
        mode = meta["generated"].get("embed_mode", "minilm")
        served = clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": mode})
        setup["generated"]["vectors"] = mode
        results[f"generated, {n} entities"] = await measure(
            run_dir, setup["generated"]["project"], ids, words, args.calls, log_path, served, args.extract_page
        )
    if "bluenote" in args.graphs:
        if args.bluenote_csv is None:
            raise SystemExit("bn-data.csv not found: give its path with --bluenote-csv")
        pristine, meta["bluenote"] = await asyncio.to_thread(ensure_bluenote, workdir, args.embed)
        run_dir = fresh_copy(pristine, workdir / "graphrag-bluenote" / "run")
        project, ids, names = await ids_and_names(run_dir)
        stop_db(run_dir)
        setup["bluenote"] = {k: meta["bluenote"].get(k) for k in ("entities", "relationships", "wall_s")}
        mode = "hashing" if args.embed == "hashing" else "minilm"
        setup["bluenote"]["vectors"] = mode
        log_path = workdir / "graphrag-bluenote" / "server.log"
        words = bluenote_queries(names, args.calls + 5)
        served = clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": mode})
        results[BLUENOTE] = await measure(run_dir, project, ids, words, args.calls, log_path, served, args.extract_page)
    return {
        "config": {"size": n, "calls": args.calls, "extract_share": args.extract_share, "preload": meta},
        "machine": machine_info(),
        "setup": setup,
        "results": results,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--graphs", default="generated,bluenote", help="generated, bluenote or both")
    p.add_argument("--bluenote-csv", type=Path, default=find_csv())
    p.add_argument("--extract-share", type=float, default=0.1)
    p.add_argument(
        "--embed",
        default="auto",
        choices=("auto", "minilm", "hashing"),
        help="preload vectors: MiniLM, the hashing embedder (the server then embeds queries with it "
        "too), or auto (hashing when MiniLM is projected past 600 s)",
    )
    p.add_argument(
        "--extract-page",
        type=int,
        default=1000,
        help="entities per extract_all_relationships call (its limit), called until none is due",
    )
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "polyg-bench")
    p.add_argument(
        "--smoke", action="store_true", help=f"{SMOKE_ENTITIES} entities, 3 calls, hashed vectors, no result file"
    )
    args = p.parse_args(argv)
    args.graphs = [g for g in args.graphs.split(",") if g]
    if args.smoke:
        # Hashed vectors: `auto` chose MiniLM at this size, and its load and embedding were most
        # of the smoke run's time; the run checks the script, not the model.
        args.size, args.calls, args.graphs, args.embed = SMOKE_ENTITIES, 3, ["generated"], "hashing"
        args.workdir = smoke_workdir("graphrag")
    return args


def key_figures(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "search_d2_p50_ms": r["graph_enhanced_search_d2"]["p50_ms"],
        "search_d2_per_ping": r["ratios"]["graph_enhanced_search_d2"]["to_ping"],
        "search_d2_per_search_nodes": r["ratios"]["graph_enhanced_search_d2"]["to_search_nodes"],
        "neighbours_d2_p50_ms": r["get_entity_neighbors_d2"]["p50_ms"],
        "neighbours_d2_per_ping": r["ratios"]["get_entity_neighbors_d2"]["to_ping"],
        "neighbours_d2_per_floor": r["floors"]["get_entity_neighbors_d2"]["ratio"],
        "extract_entities_per_s": r["extract_all"]["entities_per_s"],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data = asyncio.run(run(args))
    # One result per graph: bench/results/graphrag-<size>.md for the generated one,
    # graphrag-bluenote.md for the Blue Note graph.
    for graph, r in data["results"].items():
        markdown = render(data, graph)
        print(markdown)
        if not args.smoke:
            size = "bluenote" if graph == BLUENOTE else str(args.size)
            one = {**data, "results": {graph: r}}
            md, js = write_results("graphrag", markdown, one, size=size, figures=key_figures(r))
            log(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
