"""The `knowledge` toolset (spec 000) on the Blue Note discography, through the MCP client.

    .venv/bin/python bench/knowledge_bench.py --data PATH/bn-data.csv --nodes 10000
    .venv/bin/python bench/knowledge_bench.py --smoke    # 400 nodes; made-up tracks if no data

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
trip is ~1.3 ms of each). Nothing here is a pass/fail gate; results go to bench/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    PolygServer,
    clean_env,
    describe_machine,
    fmt_ms,
    machine_info,
    summarize,
    write_results,
)

PROJECT = "bluenote"
BATCH = 100
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


async def measure(server: PolygServer, d: Discography, ids: dict[str, str], repeat: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    out = await call(server, "manage_templates", {"operation": "create", "templates": [PAGE]})
    if out["results"][0]["status"] != "success":
        raise RuntimeError(f"template refused: {out['results'][0]}")
    times: dict[str, list[float]] = {"paths": [], "explore": [], "document_uncached": [], "document_cached": []}
    found: list[int] = []
    chosen = pairs(d, repeat, rng)
    for a, b in chosen:
        t = time.perf_counter()
        result = await call(
            server,
            "find_relationship_paths",
            {
                "node_pairs": [{"source_node_id": ids[f"Person:{a}"], "target_node_id": ids[f"Person:{b}"]}],
                "max_path_length": 4,
                "max_paths_per_pair": 5,
                "min_path_strength": 0.0,
            },
        )
        times["paths"].append(time.perf_counter() - t)
        found.append(result["path_results"][0]["summary"]["total_paths_found"])
    musicians = [m for m in d.musicians if any(m in pair for pair in d.shared)] or d.musicians
    for _ in range(repeat):
        term = rng.choice(musicians)
        t = time.perf_counter()
        await call(server, "explore_neighborhoods", {"search_terms": [term], "neighborhood_depth": 2})
        times["explore"].append(time.perf_counter() - t)
    for _ in range(repeat):
        node = ids[f"Person:{rng.choice(musicians)}"]
        t = time.perf_counter()
        fresh = await call(server, "generate_documents", {"node_identifiers": [node], "force_regenerate": True})
        times["document_uncached"].append(time.perf_counter() - t)
        t = time.perf_counter()
        cached = await call(server, "generate_documents", {"node_identifiers": [node]})
        times["document_cached"].append(time.perf_counter() - t)
        if (
            not cached["documents"][0]["from_cache"]
            or cached["documents"][0]["content"] != fresh["documents"][0]["content"]
        ):
            raise RuntimeError("the second document was not served from the cache")
    return {
        "times": {k: summarize(v) for k, v in times.items()},
        "pairs": len(chosen),
        "paths_found_median": sorted(found)[len(found) // 2] if found else 0,
        "sample_document": fresh["documents"][0]["content"][:600],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    d = read(Path(args.data), args.nodes)
    with tempfile.TemporaryDirectory(prefix="polyg-knowledge-") as tmp:
        root = Path(tmp)
        env = clean_env(root, {"POLYG_EMBEDDING_PROVIDER": args.embed})
        async with PolygServer(
            root / "data", log_path=root / "server.log", env=env, extra_args=["--toolsets", "knowledge"]
        ) as server:
            loaded = await load(server, d)
            measured = await measure(server, d, loaded.pop("ids"), args.repeat, args.seed)
    return {
        "nodes": d.node_count,
        "musicians": len(d.musicians),
        "tracks": len(d.tracks),
        "releases": len(d.releases),
        "years": len(d.years),
        **loaded,
        **measured,
    }


def report(args: argparse.Namespace, machine: dict[str, Any], r: dict[str, Any]) -> str:
    rows = [
        f"| {name} | {fmt_ms(st['p50_ms'])} | {fmt_ms(st['p95_ms'])} | {st['n']} |" for name, st in r["times"].items()
    ]
    return "\n".join(
        [
            f"# knowledge toolset on Blue Note: {r['nodes']} nodes ({r['musicians']} musicians, {r['tracks']} tracks, "
            f"{r['releases']} releases, {r['years']} years), {r['track_edges']} track relationships, "
            f"{r['collaborations']} collaborations",
            "",
            describe_machine(machine),
            f"Embedder: {args.embed}. Command: `bench/knowledge_bench.py --nodes {args.nodes} --repeat {args.repeat}`",
            "",
            "| call | p50 ms | p95 ms | n |",
            "|---|---|---|---|",
            *rows,
            "",
            f"find_relationship_paths: {r['pairs']} musician pairs 2-3 collaboration hops apart, "
            f"median {r['paths_found_median']} paths scored per pair.",
            f"manage_nodes: {r['plain_nodes_per_s']:.0f} nodes/s without relationships; tracks in batches of 100 with "
            f"their relationships {r['track_nodes_per_s']:.0f} nodes/s "
            f"(batch p50 {fmt_ms(r['track_batches']['p50_ms'])} ms); "
            f"manage_relationships {r['collaborations_per_s']:.0f} relationships/s. Whole load {r['load_s']:.1f} s.",
            "",
            "Sample page:",
            "",
            "```",
            r["sample_document"],
            "```",
            "",
        ]
    )


# Where the discography is looked for when --data is not given (the repository's checkout beside
# the shared data directory).
DATA_CANDIDATES = [Path(__file__).resolve().parents[n] / "shared/data/bluenote/bn-data.csv" for n in (1, 2, 3)]


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
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embed", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--smoke", action="store_true", help="a few hundred nodes, a few calls, no results file")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.repeat, args.embed = min(args.nodes, 400), min(args.repeat, 5), "hashing"
    if args.data is None:
        args.data = next((str(p) for p in DATA_CANDIDATES if p.exists()), None)
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="polyg-bn-") as tmp:
        if args.data is None:
            if not args.smoke:
                parser.error("bn-data.csv not found: give its path with --data")
            args.data = str(sample_csv(Path(tmp)))
        result = asyncio.run(run(args))
    markdown = report(args, machine, result)
    print(markdown)
    if not args.smoke:
        write_results("knowledge", markdown, {"machine": machine, "args": vars(args), **result}, size=str(args.nodes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
