"""graphrag toolset benchmark (spec 004): polyg over MCP stdio, embedded FalkorDB, MiniLM.

The store holds the kg benchmark's generated entities (`common.ensure_preloaded`, cached under
--workdir), to which this script adds a graph: every entity links to up to 2 earlier ones chosen
in proportion to their degree (preferential attachment, so hubs form), with spec 004's seven
types and random weights; and one entity in `--extract-share` gets an observation stating
relationships to other entities by name ("Depends on X and uses Y. Z is used by it."), for
extraction. Then, through one server process:

- `graph_enhanced_search` depth 2 (default weights, limit 10) on queries of 1-3 words from the
  generated vocabulary: p50/p95;
- `get_entity_neighbors` depth 2 (both directions, limit 50) on random entities: p50/p95;
- `extract_all_relationships` over every entity (the first run: all are due), entities/s and
  relationships created; then a second run, which finds nothing due.

    .venv/bin/python bench/graphrag_bench.py [--size 10000] [--calls 200] [--smoke]

`--smoke` runs a small store and a few calls, writes no result file, and fails (exit 1) only
if a call fails. Results: bench/results/graphrag-<size>.md and .json, key figures in history.csv. Targets (issue 14):
search depth 2 p50 <= 25 ms and neighbours depth 2 p50 <= 8 ms at 10k entities.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from common import AREAS, WORDS, PolygServer, entity_id, fmt_ms, summarize

from polyg.core.weighted_links import SPEC_TYPES

STORED = SPEC_TYPES  # spec 004's seven types -> the stored relationship types
RELATIONS = tuple(STORED)
TARGET_SEARCH_P50_MS = 25.0
TARGET_NEIGHBOURS_P50_MS = 8.0


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
    from polyg.core.app import Polyg
    from polyg.embed import create_embedder

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


async def timed_calls(server: PolygServer, name: str, calls: list[dict[str, Any]]) -> list[float]:
    times = []
    for args in calls:
        t = time.perf_counter()
        await server.call(name, args)
        times.append(time.perf_counter() - t)
    return times


async def measure(data_dir: Path, n: int, calls: int, log_path: Path, env: dict[str, str]) -> dict[str, Any]:
    rng = random.Random(3)
    async with PolygServer(data_dir, log_path=log_path, env=env, extra_args=["--toolsets", "graphrag"]) as server:
        warm = queries(5, seed=99)
        for q in warm:  # model, caches and centrality warmed once
            await server.call("graph_enhanced_search", {"query": q, "depth": 2})
        search = await timed_calls(server, "graph_enhanced_search", [{"query": q, "depth": 2} for q in queries(calls)])
        neighbours = await timed_calls(
            server,
            "get_entity_neighbors",
            [{"entity_id": entity_id(rng.randrange(n)), "depth": 2} for _ in range(calls)],
        )
        t = time.perf_counter()
        first = await server.call("extract_all_relationships", {})
        extract_s = time.perf_counter() - t
        stats = first.structured_content["statistics"]
        t = time.perf_counter()
        second = await server.call("extract_all_relationships", {})
        second_s = time.perf_counter() - t
        health = (await server.call("get_graph_statistics", {})).structured_content["statistics"]
    return {
        "graph_enhanced_search_d2": summarize(search),
        "get_entity_neighbors_d2": summarize(neighbours),
        "extract_all": {
            "seconds": round(extract_s, 3),
            "entities": stats["total_processed"],
            "entities_per_s": round(stats["total_processed"] / extract_s, 1) if extract_s > 0 else None,
            "relationships_found": stats["total_relationships"],
            "relationships_created": stats["relationships_created"],
            "unresolved": stats["unresolved"],
            "second_run_entities": second.structured_content["statistics"]["total_processed"],
            "second_run_s": round(second_s, 3),
        },
        "graph": {k: health[k] for k in ("entities", "relationships", "communities", "orphan_entities")},
    }


def row(name: str, stats: dict[str, float], target_ms: float) -> str:
    return f"| {name} | {fmt_ms(stats['p50_ms'])} | {fmt_ms(stats['p95_ms'])} | <= {target_ms:g} ms |"


def render(data: dict[str, Any]) -> str:
    r = data["results"]
    s, nb, ex = r["graph_enhanced_search_d2"], r["get_entity_neighbors_d2"], r["extract_all"]
    n = data["config"]["size"]
    lines = [
        f"# graphrag benchmark, {n} entities",
        "",
        f"{common.describe_machine(data['machine'])}",
        "",
        "MCP stdio (Python SDK client), embedded FalkorDB, MiniLM; one call in flight.",
        "",
        "| measure | p50 | p95 | target (10k) |",
        "|---|---|---|---|",
        row("graph_enhanced_search depth 2", s, TARGET_SEARCH_P50_MS),
        row("get_entity_neighbors depth 2", nb, TARGET_NEIGHBOURS_P50_MS),
        "",
        f"extract_all_relationships: {ex['entities']} entities in {ex['seconds']} s "
        f"({ex['entities_per_s']} entities/s), {ex['relationships_found']} relationships found, "
        f"{ex['relationships_created']} created, {ex['unresolved']} names unresolved; a second run took "
        f"{ex['second_run_entities']} entities in {ex['second_run_s']} s.",
        "",
        f"Graph: {json.dumps(r['graph'])}; setup: {json.dumps(data['setup'])}.",
        "",
    ]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir: Path = args.workdir
    n = args.size
    pristine, meta = await asyncio.to_thread(common.ensure_preloaded, workdir, n, embed=args.embed, log=log)
    run_dir = common.fresh_copy(pristine, workdir / f"graphrag-{n}" / "run")
    log(f"adding relationships and extraction sentences to {n} entities ...")
    setup = await add_graph(run_dir, n, args.extract_share)
    common.stop_db(run_dir)
    log(f"setup: {setup}")
    env = common.clean_env(workdir)
    log_path = workdir / f"graphrag-{n}" / "server.log"
    results = await measure(run_dir, n, args.calls, log_path, env)
    return {
        "config": {"size": n, "calls": args.calls, "extract_share": args.extract_share, "preload": meta},
        "machine": common.machine_info(),
        "setup": setup,
        "results": results,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--extract-share", type=float, default=0.1)
    p.add_argument("--embed", default="auto", help="preload vectors: auto, minilm or random")
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "polyg-bench")
    p.add_argument("--smoke", action="store_true", help="300 entities, 10 calls, no result file")
    args = p.parse_args(argv)
    if args.smoke:
        args.size, args.calls = 300, 10
        args.workdir = Path(tempfile.mkdtemp(prefix="polyg-graphrag-smoke-"))
    return args


def key_figures(data: dict[str, Any]) -> dict[str, Any]:
    r = data["results"]
    return {
        "search_d2_p50_ms": r["graph_enhanced_search_d2"]["p50_ms"],
        "neighbours_d2_p50_ms": r["get_entity_neighbors_d2"]["p50_ms"],
        "extract_entities_per_s": r["extract_all"]["entities_per_s"],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data = asyncio.run(run(args))
    markdown = render(data)
    print(markdown)
    if not args.smoke:
        md, js = common.write_results("graphrag", markdown, data, size=str(args.size), figures=key_figures(data))
        log(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
