"""Traversal in the core (no MCP): k-best path search, neighbourhoods and centrality on a
generated graph, and the path-search alternatives measured side by side.

    .venv/bin/python bench/latency/traversal_bench.py [--nodes 10000] [--pairs 50] [--no-save] [--smoke]

The graph grows by preferential attachment (each new entity links to 2 earlier ones, chosen in
proportion to their degree, so hubs form as in real graphs), with spec 000's three described
relationship types and random relevance strengths and weights, written through the core's batch
writers (`NodeService`, `EdgeService`) as the toolsets write it. Path searches run between random
pairs joined by a random walk of 2-4 hops, length <= 4, 5 paths:

- `paths (service)`: `TraversalService.paths`, the whole call: both ends looked up, the paths
  enumerated by one variable-length pattern `(a)-[*1..4]-(b)`, scored, the best 5 described;
- `enumerate (query)`: that pattern's query alone;
- `half paths (2 queries)`: the alternative of meeting in the middle: the 2-hop paths from each
  end, read into Python to be joined there (the queries alone, without the join);
- `SPpaths`: `algo.SPpaths` with pathCount 5, maxLen 4, both directions: the 5 shortest paths by
  hop count, unscored (it minimises a sum of an edge property, which spec 000's strength is not).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.machine import describe_machine, machine_info
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, enter_smoke_mode
from bench.lib.stats import fmt_ms, summarize
from polyg.config import load_settings
from polyg.core import limits
from polyg.core.graph.edges import EdgeDraft
from polyg.core.graph.nodes import NodeDraft
from polyg.core.model import Outcome
from polyg.core.search.centrality import CentralityService
from polyg.core.traversal.service import TraversalService
from polyg.embed import create_embedder
from polyg.runtime.app import Polyg, Services

P = "bench"
TYPES = {"CHILD_OF": "strong", "INFLUENCED_BY": "weak", "COLLABORATED_WITH": "balanced"}
STRENGTHS = ("weak", "medium", "strong")


def generate(n: int, seed: int = 7) -> list[tuple[int, int, str, str, float]]:
    rng = random.Random(seed)
    ends: list[int] = [0, 1]
    edges = [(1, 0, "COLLABORATED_WITH", "medium", 0.5)]
    for i in range(2, n):
        for target in {rng.choice(ends) for _ in range(2)}:
            edges.append((i, target, rng.choice(list(TYPES)), rng.choice(STRENGTHS), round(rng.random(), 2)))
            ends += [i, target]
    return edges


async def load(s: Services, n: int) -> tuple[list[str], list[tuple[int, int, str, str, float]]]:
    """The graph written through the core's batch writers, as the toolsets write it: the
    entities' ids (by index) and the edges (by entity index)."""
    for rel, directionality in TYPES.items():
        await s.reltypes.create(P, rel, directionality=directionality)
    ids: list[str] = []
    for start in range(0, n, limits.MAX_BATCH):
        drafts = [NodeDraft(f"e{i}", "thing") for i in range(start, min(n, start + limits.MAX_BATCH))]
        ids += [written(o) for o in await s.nodes.create(P, drafts)]
    edges = generate(n)
    for start in range(0, len(edges), limits.MAX_BATCH):
        drafts = [
            EdgeDraft(ids[a], ids[b], rel, properties={"relevance_strength": strength, "weight": weight})
            for a, b, rel, strength, weight in edges[start : start + limits.MAX_BATCH]
        ]
        for outcome in await s.edges.create(P, drafts):
            written(outcome)
    # The new entities' vectors are made in the background: done before anything is timed.
    if not await s.ctx.vectors.settle(P, 600):
        raise RuntimeError("the vectorizer did not store the preloaded entities' vectors")
    return ids, edges


def written(outcome: Outcome) -> str:
    if outcome.status == "error" or outcome.id is None:
        raise RuntimeError(f"preload item {outcome.index} failed: {outcome.error}")
    return outcome.id


def connected_pairs(ids: list[str], edges: list[tuple[int, int, str, str, float]], count: int) -> list[tuple[str, str]]:
    """Random pairs joined by a walk of 2-4 hops (random pairs are rarely within 4 hops)."""
    rng = random.Random(11)
    near: dict[int, list[int]] = {}
    for a, b, *_ in edges:
        near.setdefault(a, []).append(b)
        near.setdefault(b, []).append(a)
    pairs = []
    while len(pairs) < count:
        start = here = rng.randrange(len(ids))
        for _ in range(rng.randint(2, 4)):
            here = rng.choice(near[here])
        if here != start:
            pairs.append((ids[start], ids[here]))
    return pairs


async def timed(fn: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    value = await fn()
    return time.perf_counter() - t, value


async def measure(s: Services, chosen: list[tuple[str, str]]) -> dict[str, Any]:
    traversal = TraversalService(s.ctx)
    internal = dict(await s.store.ro_query(P, "MATCH (e:Entity) RETURN e.id, id(e)"))
    names = ("paths (service)", "enumerate (query)", "half paths (2 queries)", "SPpaths", "neighbours d2")
    times: dict[str, list[float]] = {name: [] for name in names}
    found: dict[str, list[int]] = {name: [] for name in names[:4]}
    scorer = await traversal.strength_scorer(P)
    half = (
        "MATCH (a) WHERE id(a) = $a MATCH p = (a)-[*1..2]-(m) RETURN [x IN nodes(p) | id(x)], "
        "[r IN relationships(p) | [id(r), id(startNode(r)), type(r), r.relevance_strength, r.weight]]"
    )
    for a, b in chosen:
        t, result = await timed(lambda a=a, b=b: traversal.paths(P, a, b, max_len=4, k=5, scorer=scorer))
        times["paths (service)"].append(t)
        found["paths (service)"].append(result.total_found)
        t, rows = await timed(
            lambda a=a, b=b: s.store.ro_query(
                P,
                "MATCH (a) WHERE id(a) = $a MATCH (b) WHERE id(b) = $b MATCH p = (a)-[*1..4]-(b) "
                "RETURN [x IN nodes(p) | id(x)], [r IN relationships(p) | [id(r), id(startNode(r)), type(r), "
                "r.relevance_strength, r.weight]] LIMIT 50000",
                {"a": internal[a], "b": internal[b]},
            )
        )
        times["enumerate (query)"].append(t)
        found["enumerate (query)"].append(len(rows))
        t, halves = await timed(
            lambda a=a, b=b: asyncio.gather(
                s.store.ro_query(P, half, {"a": internal[a]}), s.store.ro_query(P, half, {"a": internal[b]})
            )
        )
        times["half paths (2 queries)"].append(t)
        found["half paths (2 queries)"].append(sum(len(h) for h in halves))
        t, rows = await timed(
            lambda a=a, b=b: s.store.ro_query(
                P,
                "MATCH (a) WHERE id(a) = $a MATCH (b) WHERE id(b) = $b CALL algo.SPpaths({sourceNode: a, "
                "targetNode: b, relTypes: $types, relDirection: 'both', pathCount: 5, maxLen: 4}) "
                "YIELD path RETURN [x IN nodes(path) | id(x)]",
                {"a": internal[a], "b": internal[b], "types": list(TYPES)},
            )
        )
        times["SPpaths"].append(t)
        found["SPpaths"].append(len(rows))
        t, _ = await timed(lambda a=a: traversal.neighbours(P, a, depth=2, limit=50))
        times["neighbours d2"].append(t)
    centrality = CentralityService(s.ctx)
    t_pagerank, _ = await timed(
        lambda: s.store.ro_query(P, "CALL algo.pageRank('Entity', null) YIELD node, score RETURN node.id, score")
    )
    t_cold, _ = await timed(lambda: centrality.get(P))
    t_warm, _ = await timed(lambda: centrality.get(P))
    return {
        "times": {k: summarize(v) for k, v in times.items()},
        "paths_found_median": {k: sorted(v)[len(v) // 2] for k, v in found.items()},
        "pagerank_query_ms": t_pagerank * 1000,
        "centrality_cold_ms": t_cold * 1000,
        "centrality_cached_ms": t_warm * 1000,
    }


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--no-save", action="store_true", help="print only; do not write bench/results")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        enter_smoke_mode()
        args.nodes, args.pairs, args.no_save = 60, 3, True
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="polyg-trav-") as tmp:
        root = Path(tmp)
        core = Polyg(
            load_settings(None, data_dir=root / "data", log_dir=root / "logs", store=None),
            embedder=create_embedder("hashing"),
        )
        try:
            s = await core.ready()
            ids, edges = await load(s, args.nodes)
            edge_count = len(edges)
            result = await measure(s, connected_pairs(ids, edges, args.pairs))
        finally:
            await core.close()
    rows = [
        f"| {name} | {fmt_ms(st['p50_ms'])} | {fmt_ms(st['p95_ms'])} | {result['paths_found_median'].get(name, '-')} |"
        for name, st in result["times"].items()
    ]
    markdown = "\n".join(
        [
            f"# Traversal: {args.nodes} entities, {edge_count} relationships, {args.pairs} pairs 2-4 hops apart",
            "",
            describe_machine(machine),
            "",
            "| what | p50 ms | p95 ms | median paths (service: scored simple paths; others: rows) |",
            "|---|---|---|---|",
            *rows,
            "",
            f"PageRank query alone {result['pagerank_query_ms']:.1f} ms; "
            f"centrality (PageRank + degree) cold {result['centrality_cold_ms']:.1f} ms, "
            f"cached {result['centrality_cached_ms']:.3f} ms.",
            "",
        ]
    )
    print(markdown)
    if not args.no_save:
        data = {"machine": machine, "nodes": args.nodes, "edges": edge_count, **result}
        write_results("traversal", markdown, data, size=str(args.nodes), figures=key_figures(result))
    return 0


def key_figures(result: dict[str, Any]) -> dict[str, Any]:
    """What history.csv keeps: p50 ms of each measured call, and centrality cold."""
    figures: dict[str, Any] = {f"{name}_p50_ms": st["p50_ms"] for name, st in result["times"].items()}
    figures["centrality_cold_ms"] = result["centrality_cold_ms"]
    return figures


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
