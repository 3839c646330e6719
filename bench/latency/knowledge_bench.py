"""The `knowledge` toolset (spec 000) on the Blue Note discography, through the MCP client.

    .venv/bin/python bench/latency/knowledge_bench.py --data PATH/bn-data.csv --nodes 10000
    .venv/bin/python bench/latency/knowledge_bench.py --smoke    # 400 nodes; made-up tracks if no data

The CSV (every Blue Note track 1939-2007 with its musicians) becomes musicians (Person), tracks,
releases (the first catalog entry) and recording years, loaded through `manage_nodes` in batches
of 100: years, releases and musicians first, then tracks, each with its relationships
(PERFORMED_BY each musician, RELEASED_ON, RECORDED_IN). Musicians who shared tracks get
COLLABORATED_WITH through `manage_relationships`, relevance by the number shared (1: weak,
2-4: medium, 5+: strong) and the count as `shared_tracks`. Tracks are read in file order until
the node budget (`--nodes`) is spent.

Then, each `--repeat` times: `find_relationship_paths` between two musicians 2-3 hops apart
(length <= 4, 5 paths), `explore_neighborhoods` (one term, depth 2), `generate_documents` of a
musician page (three variables: collaborators, releases by year, tracks) uncached
(`force_regenerate`) and from the cache. Times are client-side round trips (the MCP stdio round
trip is ~1.3 ms of each). After each call, its floor's database work is timed in this process
through the server's own store (bench/lib/knowledge_floors.py defines each floor: what it includes
and why nothing less could answer); the table gives each call's p50 against its floor (ping p50
+ that work's p50). Nothing here is a pass/fail gate; results go to bench/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.env import clean_env
from bench.lib.knowledge_floors import Floors
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.server import PolygServer
from bench.lib.smoke import enter_smoke_mode
from bench.lib.stats import fmt_ms, summarize

PROJECT = "bluenote"
BATCH = 100
PRELOAD_BATCH = 500
PATH_LENGTH = 4
PAGE = {
    "id": "musician-page",
    "name": "Musician page",
    "description": "A musician's collaborators and releases by year",
    "node_types": ["Person"],
    "structure": (
        "# {{name}}\n\n{{#has_collaborators}}## Played most with\n"
        "{{#collaborators}}* {{name}} ({{tracks}} tracks)\n{{/collaborators}}{{/has_collaborators}}\n"
        "{{#has_years}}## Recordings by year\n{{#years}}* {{year}}: {{tracks}} tracks\n{{/years}}{{/has_years}}\n"
        "{{#has_releases}}## On releases\n{{#releases}}* {{name}}\n{{/releases}}{{/has_releases}}"
    ),
    "variables": {
        "collaborators": (
            "MATCH (n)-[r:COLLABORATED_WITH]-(p:Person) RETURN p.name AS name, r.shared_tracks AS tracks "
            "ORDER BY tracks DESC, name LIMIT 10"
        ),
        "years": (
            "MATCH (n)<-[:PERFORMED_BY]-(t)-[:RECORDED_IN]->(y) RETURN y.name AS year, count(t) AS tracks ORDER BY year"
        ),
        "releases": (
            "MATCH (n)<-[:PERFORMED_BY]-(t)-[:RELEASED_ON]->(rel) "
            "RETURN DISTINCT rel.name AS name ORDER BY name LIMIT 20"
        ),
    },
}


@dataclass
class Discography:
    years: list[str] = field(default_factory=list)
    releases: list[str] = field(default_factory=list)
    musicians: list[str] = field(default_factory=list)
    # (title, recorded year, release, musicians)
    tracks: list[tuple[str, str, str, list[str]]] = field(default_factory=list)
    shared: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def node_count(self) -> int:
        return len(self.years) + len(self.releases) + len(self.musicians) + len(self.tracks)


def read(path: Path, budget: int) -> Discography:
    d = Discography()
    seen_years: set[str] = set()
    seen_releases: set[str] = set()
    seen_musicians: set[str] = set()
    with path.open(newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        next(rows)
        for row in rows:
            title, year = row[0].strip(), row[3].strip()
            release = row[2].split(";")[0].strip() or "Unreleased"
            players = list(dict.fromkeys(m.strip() for m in row[6:] if m.strip()))
            if not title or not year or not players:
                continue
            new = {year} - seen_years, {release} - seen_releases, set(players) - seen_musicians
            if d.node_count + 1 + sum(len(x) for x in new) > budget:
                break
            seen_years |= new[0]
            seen_releases |= new[1]
            seen_musicians |= new[2]
            d.years += sorted(new[0])
            d.releases += sorted(new[1])
            d.musicians += [m for m in players if m in new[2]]
            d.tracks.append((title, year, release, players))
            for a, b in combinations(sorted(players), 2):
                d.shared[(a, b)] += 1
    return d


def chunks(items: list[Any], size: int = BATCH) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def strength(shared: int) -> str:
    return "weak" if shared == 1 else "medium" if shared < 5 else "strong"


async def call(server: PolygServer, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await server.call(tool, {"project_id": PROJECT, **args})
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


async def create(server: PolygServer, items: list[dict[str, Any]]) -> list[str]:
    out = await call(server, "manage_nodes", {"operation": "create", "nodes": items})
    failed = [r for r in out["results"] if r["status"] != "success"]
    if failed:
        raise RuntimeError(f"manage_nodes failed: {failed[:3]}")
    return [r["node_id"] for r in out["results"]]


TYPES = [
    {"name": "PERFORMED_BY", "description": "a track's musicians", "directionality": "strong"},
    {"name": "RELEASED_ON", "description": "the release a track came out on", "directionality": "strong"},
    {"name": "RECORDED_IN", "description": "the year a track was recorded", "directionality": "strong"},
    {"name": "COLLABORATED_WITH", "description": "musicians who shared tracks", "directionality": "balanced"},
]


async def load(server: PolygServer, d: Discography) -> dict[str, Any]:
    await call(server, "manage_relationship_types", {"operation": "create", "relationship_types": TYPES})
    ids: dict[str, str] = {}
    started = time.perf_counter()
    for kind, names in (("Year", d.years), ("Release", d.releases), ("Person", d.musicians)):
        for batch in chunks(names):
            made = await create(server, [{"name": n, "summary": f"{kind} {n}", "node_type": kind} for n in batch])
            ids.update((f"{kind}:{n}", i) for n, i in zip(batch, made, strict=True))
    plain_s = time.perf_counter() - started
    track_times: list[float] = []
    track_ids: list[str] = []
    for batch in chunks(d.tracks):
        items = [
            {
                "name": title,
                "summary": f"{title}, recorded {year} with {', '.join(players[:3])}",
                "node_type": "Track",
                "relationships": [
                    {
                        "target_id": ids[f"Year:{year}"],
                        "relationship_type": "RECORDED_IN",
                        "relevance_strength": "medium",
                    },
                    {
                        "target_id": ids[f"Release:{release}"],
                        "relationship_type": "RELEASED_ON",
                        "relevance_strength": "strong",
                    },
                    *(
                        {
                            "target_id": ids[f"Person:{m}"],
                            "relationship_type": "PERFORMED_BY",
                            "relevance_strength": "strong",
                        }
                        for m in players
                    ),
                ],
            }
            for title, year, release, players in batch
        ]
        t = time.perf_counter()
        track_ids += await create(server, items)
        track_times.append(time.perf_counter() - t)
    edges = [
        {
            "source_id": ids[f"Person:{a}"],
            "target_id": ids[f"Person:{b}"],
            "relationship_type": "COLLABORATED_WITH",
            "relevance_strength": strength(n),
            "properties": {"shared_tracks": n},
        }
        for (a, b), n in sorted(d.shared.items())
    ]
    t = time.perf_counter()
    for batch in chunks(edges):
        out = await call(server, "manage_relationships", {"operation": "create", "relationships": batch})
        if any(r["status"] != "success" for r in out["results"]):
            raise RuntimeError("manage_relationships failed")
    collab_s = time.perf_counter() - t
    track_edges = sum(2 + len(p) for *_, p in d.tracks)
    return {
        "ids": ids,
        "plain_nodes_per_s": (len(d.years) + len(d.releases) + len(d.musicians)) / plain_s,
        "track_batches": summarize(track_times),
        "track_nodes_per_s": len(d.tracks) / sum(track_times),
        "track_edges": track_edges,
        "collaborations": len(edges),
        "collaborations_per_s": len(edges) / collab_s if collab_s else 0.0,
        "load_s": time.perf_counter() - started,
    }


def pairs(d: Discography, count: int, rng: random.Random) -> list[tuple[str, str]]:
    """Musician pairs two or three collaboration hops apart (not direct collaborators)."""
    near: dict[str, set[str]] = {}
    for a, b in d.shared:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    people = sorted(near)
    chosen: list[tuple[str, str]] = []
    for _ in range(count * 50):
        if len(chosen) >= count or not people:
            break
        a = rng.choice(people)
        hop2 = {c for b in near[a] for c in near[b]} - near[a] - {a}
        if hop2:
            chosen.append((a, rng.choice(sorted(hop2))))
    return chosen


@dataclass
class Workload:
    """What the calls are made on: node pairs for paths, search terms, nodes to document."""

    template: dict[str, Any]
    pairs: list[tuple[str, str]]
    terms: list[str]
    documents: list[str]


async def measure(server: PolygServer, work: Workload, repeat: int, floors: Floors) -> dict[str, Any]:
    """Each call `repeat` times, a stdio ping before each one and its floor's database work after
    it (knowledge_floors: ping + that work is the call's floor, in the same run)."""
    out = await call(server, "manage_templates", {"operation": "create", "templates": [work.template]})
    if out["results"][0]["status"] != "success":
        raise RuntimeError(f"template refused: {out['results'][0]}")
    times: dict[str, list[float]] = {
        "ping": [],
        "paths": [],
        "explore": [],
        "document_uncached": [],
        "document_cached": [],
    }

    async def timed(name: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        t = time.perf_counter()
        await server.ping()
        times["ping"].append(time.perf_counter() - t)
        t = time.perf_counter()
        result = await call(server, tool, args)
        times[name].append(time.perf_counter() - t)
        return result

    found: list[int] = []
    for a, b in work.pairs[:repeat]:
        pair = {"source_node_id": a, "target_node_id": b}
        options = {"max_path_length": PATH_LENGTH, "max_paths_per_pair": 5, "min_path_strength": 0.0}
        result = await timed("paths", "find_relationship_paths", {"node_pairs": [pair], **options})
        answer = result["path_results"][0]
        found.append(answer["summary"]["paths_returned"])
        shown = sorted({n["id"] for path in answer["paths"] for n in path["nodes"]})
        await floors.paths(answer["source_node_id"], answer["target_node_id"], PATH_LENGTH, shown)
    for term in work.terms[:repeat]:
        await timed("explore", "explore_neighborhoods", {"search_terms": [term], "neighborhood_depth": 2})
        await floors.explore(term)
    fresh: dict[str, Any] = {}
    for node in work.documents[:repeat]:
        fresh = await timed(
            "document_uncached", "generate_documents", {"node_identifiers": [node], "force_regenerate": True}
        )
        cached = await timed("document_cached", "generate_documents", {"node_identifiers": [node]})
        if (
            not cached["documents"][0]["from_cache"]
            or cached["documents"][0]["content"] != fresh["documents"][0]["content"]
        ):
            raise RuntimeError("the second document was not served from the cache")
        await floors.document_cached(cached["documents"][0]["node_id"])
    stats = {k: summarize(v) for k, v in times.items()}
    ping = stats["ping"]["p50_ms"]
    floor = floors.summary(ping)
    return {
        "times": stats,
        "ratio_to_ping": {k: round(v["p50_ms"] / ping, 1) for k, v in stats.items() if k != "ping"},
        "floors": floor,
        "ratio_to_floor": {k: round(stats[k]["p50_ms"] / v["floor_p50_ms"], 2) for k, v in floor.items()},
        "pairs": len(found),
        "paths_returned_median": sorted(found)[len(found) // 2] if found else 0,
        "sample_document": fresh["documents"][0]["content"][:600] if fresh else "",
    }


def bluenote_workload(d: Discography, ids: dict[str, str], repeat: int, seed: int) -> Workload:
    rng = random.Random(seed)
    chosen = pairs(d, repeat, rng)
    musicians = [m for m in d.musicians if any(m in pair for pair in d.shared)] or d.musicians
    return Workload(
        PAGE,
        [(ids[f"Person:{a}"], ids[f"Person:{b}"]) for a, b in chosen],
        [rng.choice(musicians) for _ in range(repeat)],
        [ids[f"Person:{rng.choice(musicians)}"] for _ in range(repeat)],
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="polyg-knowledge-") as tmp:
        root = Path(tmp)
        env = clean_env(root, {"POLYG_EMBEDDING_PROVIDER": args.embed})
        if args.graph == "powerlaw":
            graph = generate_powerlaw(args.nodes, args.seed)
            loaded = await preload_powerlaw(root / "data", graph, args.embed, PROJECT)
        else:
            d = read(Path(args.data), args.nodes)
        with LoadSampler() as load_sampler:
            async with PolygServer(
                root / "data", log_path=root / "server.log", env=env, extra_args=["--toolsets", "knowledge"]
            ) as server:
                if args.graph == "powerlaw":
                    loaded |= await write_batches(server, graph, PROJECT, batches=args.write_batches)
                    work = powerlaw_workload(graph, args.repeat, args.seed)
                    shape = describe_powerlaw(graph)
                else:
                    loaded = await load(server, d)
                    work = bluenote_workload(d, loaded.pop("ids"), args.repeat, args.seed)
                    shape = {
                        "nodes": d.node_count,
                        "musicians": len(d.musicians),
                        "tracks": len(d.tracks),
                        "releases": len(d.releases),
                        "years": len(d.years),
                    }
                async with Floors(root / "data", args.embed, PROJECT) as floors:
                    measured = await measure(server, work, args.repeat, floors)
    return {**shape, **loaded, **measured, "load_while_measuring": load_sampler.summary()}


def report(args: argparse.Namespace, machine: dict[str, Any], r: dict[str, Any]) -> str:
    floors = r["floors"]
    rows = [
        f"| {name} | {fmt_ms(st['p50_ms'])} | {fmt_ms(st['p95_ms'])} | "
        f"{'' if name == 'ping' else r['ratio_to_ping'][name]} | "
        f"{fmt_ms(floors[name]['floor_p50_ms']) if name in floors else ''} | "
        f"{fmt_ms(floors[name]['db']['p50_ms']) if name in floors else ''} | "
        f"{r['ratio_to_floor'].get(name, '')} | {st['n']} |"
        for name, st in r["times"].items()
    ]
    if args.graph == "powerlaw":
        title = (
            f"# knowledge toolset on a generated power-law graph: {r['nodes']} nodes, {r['relationships']} "
            f"relationships (max degree {r['max_degree']})"
        )
        writes = (
            f"Preloaded through the core's batch writers in {r['preload_s']:.0f} s "
            f"({r['preload_nodes_per_s']:.0f} nodes/s with their relationships). manage_nodes over MCP, "
            f"{r['write_batches']} batches of 100 nodes with {r['write_relationships_per_node']} relationships "
            f"each: {r['write_nodes_per_s']:.0f} nodes/s (batch p50 {fmt_ms(r['write_batch']['p50_ms'])} ms)."
        )
    else:
        title = (
            f"# knowledge toolset on Blue Note: {r['nodes']} nodes ({r['musicians']} musicians, {r['tracks']} "
            f"tracks, {r['releases']} releases, {r['years']} years), {r['track_edges']} track relationships, "
            f"{r['collaborations']} collaborations"
        )
        writes = (
            f"manage_nodes: {r['plain_nodes_per_s']:.0f} nodes/s without relationships; tracks in batches of 100 "
            f"with their relationships {r['track_nodes_per_s']:.0f} nodes/s "
            f"(batch p50 {fmt_ms(r['track_batches']['p50_ms'])} ms); "
            f"manage_relationships {r['collaborations_per_s']:.0f} relationships/s. Whole load {r['load_s']:.1f} s."
        )
    load = r["load_while_measuring"].get("load1", {})
    return "\n".join(
        [
            title,
            "",
            describe_machine(machine),
            f"Load average while measuring: median {load.get('median')}, max {load.get('max')}.",
            f"Embedder: {args.embed}. Command: `bench/latency/knowledge_bench.py --graph {args.graph} "
            f"--nodes {args.nodes} "
            f"--repeat {args.repeat}`",
            "",
            "| call | p50 ms | p95 ms | p50 / ping p50 | floor p50 ms | of which database | p50 / floor | n |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"find_relationship_paths: {r['pairs']} pairs 2-3 hops apart (length <= 4, 5 paths, minimum 0), "
            f"median {r['paths_returned_median']} paths returned. ping: the MCP stdio round trip before each call. "
            "floor: ping p50 + the p50 of the database work the call cannot do without, timed in the same run "
            "through the same store (bench/lib/knowledge_floors.py says what each includes).",
            writes,
            "",
            "Sample page:",
            "",
            "```",
            r["sample_document"],
            "```",
            "",
        ]
    )


def figures(r: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {f"{k}_p50_ms": round(v["p50_ms"], 2) for k, v in r["times"].items()}
    out.update({f"{k}_x_ping": v for k, v in r["ratio_to_ping"].items()})
    out.update({f"{k}_floor_p50_ms": v["floor_p50_ms"] for k, v in r["floors"].items()})
    out.update({f"{k}_x_floor": v for k, v in r["ratio_to_floor"].items()})
    nodes_per_s = r.get("write_nodes_per_s", r.get("track_nodes_per_s"))
    out["manage_nodes_with_relationships_nodes_per_s"] = round(nodes_per_s or 0.0)
    out["load1_median"] = r["load_while_measuring"].get("load1", {}).get("median")
    return out


# --- the generated power-law graph ------------------------------------------------------------

KINDS = ("Person", "Work", "Place", "Group")
POWERLAW_TYPES = [
    {"name": "INFLUENCED_BY", "description": "a node shaped by another", "directionality": "weak"},
    {"name": "CHILD_OF", "description": "a node within another", "directionality": "strong"},
    {"name": "COLLABORATED_WITH", "description": "worked together", "directionality": "balanced"},
    {"name": "LOCATED_IN", "description": "where a node is", "directionality": "strong"},
]
WORDS = (
    "amber basalt cedar delta ember fjord granite harbor iris juniper kestrel lagoon meadow nectar "
    "onyx prairie quartz raven sierra tundra umber violet willow xenon yarrow zephyr"
).split()
LINKS_PER_NODE = 2
POWERLAW_PAGE = {
    "id": "node-page",
    "name": "Node page",
    "description": "What a node links to, what links to it, and how",
    "node_types": list(KINDS),
    "structure": (
        "# {{name}}\n\n{{summary}}\n{{#has_links}}\n## Links\n{{#links}}* {{type}} {{name}}\n{{/links}}{{/has_links}}"
        "{{#has_cited}}\n## Linked from\n{{#cited}}* {{name}}\n{{/cited}}{{/has_cited}}"
        "{{#has_kinds}}\n## Relationships\n{{#kinds}}* {{type}}: {{count}}\n{{/kinds}}{{/has_kinds}}"
    ),
    "variables": {
        "links": "MATCH (n)-[r]->(m:Entity) RETURN type(r) AS type, m.name AS name ORDER BY name LIMIT 10",
        "cited": "MATCH (n)<-[r]-(m:Entity) RETURN m.name AS name ORDER BY name LIMIT 10",
        "kinds": "MATCH (n)-[r]-(:Entity) RETURN type(r) AS type, count(*) AS count ORDER BY count DESC, type",
    },
}


@dataclass
class PowerLaw:
    names: list[str]
    kinds: list[str]
    # (from, to, type, relevance strength) by node index; node i's links go to earlier nodes.
    links: list[tuple[int, int, str, str]]


def generate_powerlaw(n: int, seed: int) -> PowerLaw:
    """Preferential attachment: node i links to LINKS_PER_NODE earlier nodes, each picked as
    the end of a random earlier link (so in proportion to its degree), or uniformly one time in
    five; a few hubs gather thousands of links, most nodes have two or three."""
    rng = random.Random(seed)
    names = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {i:06d}" for i in range(n)]
    kinds = [KINDS[min(int(rng.paretovariate(1.5)) - 1, len(KINDS) - 1)] for _ in range(n)]
    ends: list[int] = [0]
    links: list[tuple[int, int, str, str]] = []
    for i in range(1, n):
        targets = {rng.choice(ends) if rng.random() < 0.8 else rng.randrange(i) for _ in range(LINKS_PER_NODE)}
        for j in sorted(targets):
            kind = rng.choice(POWERLAW_TYPES)["name"]
            links.append((i, j, kind, rng.choice(("weak", "medium", "medium", "strong"))))
            ends += [i, j]
    return PowerLaw(names, kinds, links)


def describe_powerlaw(g: PowerLaw) -> dict[str, Any]:
    degree = Counter(x for a, b, *_ in g.links for x in (a, b))
    return {"nodes": len(g.names), "relationships": len(g.links), "max_degree": max(degree.values(), default=0)}


async def preload_powerlaw(data_dir: Path, g: PowerLaw, embed: str, project: str) -> dict[str, Any]:
    """The graph written through the core's batch writers (NodeService.create: the nodes with
    their relationships, as manage_nodes writes them), in process, before the server starts."""
    from polyg.config import load_settings
    from polyg.core.graph.nodes import NodeDraft, NodeEdge
    from polyg.runtime.app import Polyg

    by_node: dict[int, list[NodeEdge]] = {}
    for a, b, kind, strength in g.links:
        by_node.setdefault(a, []).append(NodeEdge(g.names[b], kind, properties={"relevance_strength": strength}))
    core = Polyg(load_settings(None, data_dir=data_dir, log_level="WARNING", embedding_provider=embed))
    started = time.perf_counter()
    try:
        s = await core.ready()
        for t in POWERLAW_TYPES:
            await s.reltypes.create(
                project, t["name"], description=t["description"], directionality=t["directionality"]
            )
        for first in range(0, len(g.names), PRELOAD_BATCH):
            drafts = [
                NodeDraft(
                    g.names[i], g.kinds[i], f"A {g.kinds[i].lower()} named {g.names[i]}", edges=by_node.get(i, [])
                )
                for i in range(first, min(first + PRELOAD_BATCH, len(g.names)))
            ]
            failed = [o for o in await s.nodes.create(project, drafts) if o.status == "error"]
            if failed:
                raise RuntimeError(f"preload failed: {failed[:3]}")
            if first % (PRELOAD_BATCH * 20) == 0:
                print(f"[powerlaw] {first + len(drafts)}/{len(g.names)} nodes", file=sys.stderr, flush=True)
        write_s = time.perf_counter() - started
        if not await s.ctx.vectors.settle(project, 3600):
            raise RuntimeError("the vectorizer did not store the preloaded nodes' vectors")
    finally:
        await core.close()
    return {
        "preload_s": time.perf_counter() - started,
        "preload_write_s": write_s,
        "preload_nodes_per_s": len(g.names) / write_s,
    }


async def write_batches(server: PolygServer, g: PowerLaw, project: str, *, batches: int) -> dict[str, Any]:
    """manage_nodes over MCP: batches of 100 new nodes, each with relationships to existing
    nodes (by name) picked like the generator's."""
    rng = random.Random(len(g.names))
    times: list[float] = []
    ends = [x for a, b, *_ in g.links for x in (a, b)] or [0]
    for batch in range(batches):
        items = [
            {
                "name": f"Written {batch:03d}-{i:03d}",
                "summary": "A node written in a measured batch",
                "node_type": "Work",
                "relationships": [
                    {
                        "target_id": g.names[rng.choice(ends)],
                        "relationship_type": "INFLUENCED_BY",
                        "relevance_strength": "medium",
                    }
                    for _ in range(LINKS_PER_NODE)
                ],
            }
            for i in range(BATCH)
        ]
        t = time.perf_counter()
        out = await call(server, "manage_nodes", {"operation": "create", "nodes": items})
        times.append(time.perf_counter() - t)
        failed = [r for r in out["results"] if r["status"] != "success"]
        if failed:
            raise RuntimeError(f"manage_nodes failed: {failed[:3]}")
    return {
        "write_batches": batches,
        "write_relationships_per_node": LINKS_PER_NODE,
        "write_batch": summarize(times),
        "write_nodes_per_s": BATCH * batches / sum(times) if times else 0.0,
    }


def powerlaw_workload(g: PowerLaw, repeat: int, seed: int) -> Workload:
    """Pairs two or three hops apart (not linked), names to search for, nodes to document."""
    rng = random.Random(seed)
    near: dict[int, set[int]] = {}
    for a, b, *_ in g.links:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    chosen: list[tuple[str, str]] = []
    for _ in range(repeat * 50):
        if len(chosen) >= repeat:
            break
        a = rng.randrange(len(g.names))
        first = near.get(a, set())
        second = {c for b in sorted(first)[:50] for c in near[b]} - first - {a}
        if second:
            chosen.append((g.names[a], g.names[rng.choice(sorted(second))]))
    picks = [rng.randrange(len(g.names)) for _ in range(2 * repeat)]
    return Workload(
        POWERLAW_PAGE,
        chosen,
        [g.names[i] for i in picks[:repeat]],
        [g.names[i] for i in picks[repeat:]],
    )


# Where the discography is looked for when --data is not given (the repository's checkout beside
# the shared data directory).
DATA_CANDIDATES = [Path(__file__).resolve().parents[n] / "shared/data/bluenote/bn-data.csv" for n in (2, 3, 4)]


def sample_csv(folder: Path) -> Path:
    """A few made-up tracks in the discography's columns: a smoke run needs no data set."""
    players = [f"Player {i}" for i in range(12)]
    path = folder / "sample.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["Track", "Alternate take", "Catalog", "Recorded", "1st BN Release", "Status"])
        for i in range(60):
            band = [players[(i + j * 5) % len(players)] for j in range(3)]
            out.writerow([f"Tune {i}", "FALSE", f"Blue Note {i % 7}", str(1950 + i % 5), "", "ISSUED", *band])
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", help="path of bn-data.csv (default: the shared data directory's)")
    parser.add_argument("--graph", choices=("bluenote", "powerlaw"), default="bluenote")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--write-batches", type=int, default=10, help="powerlaw: manage_nodes batches measured")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embed", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--smoke", action="store_true", help="a few hundred nodes, a few calls, no results file")
    args = parser.parse_args()
    if args.smoke:
        enter_smoke_mode()
        args.nodes, args.repeat, args.embed = min(args.nodes, 400), min(args.repeat, 5), "hashing"
    if args.data is None:
        args.data = next((str(p) for p in DATA_CANDIDATES if p.exists()), None)
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="polyg-bn-") as tmp:
        if args.data is None and args.graph == "bluenote":
            if not args.smoke:
                parser.error("bn-data.csv not found: give its path with --data")
            args.data = str(sample_csv(Path(tmp)))
        result = asyncio.run(run(args))
    markdown = report(args, machine, result)
    print(markdown)
    if not args.smoke:
        size = str(args.nodes) if args.graph == "bluenote" else f"powerlaw-{args.nodes}"
        # The data set relative to the repository, not as this machine's path.
        recorded = {**vars(args), "data": os.path.relpath(args.data, REPO) if args.graph == "bluenote" else None}
        data = {"machine": machine, "args": recorded, **result}
        write_results("knowledge", markdown, data, size=size, figures=figures(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
