"""The Blue Note discography (`../shared/data/bluenote/bn-data.csv`, read by path) as a polyg
graph of entities, written through the core batch writers (`NodeService`, `EdgeService`) as
the toolsets write, vectors included.

Every CSV row with a title is a `track` (summary: title, year, first three musicians); every
name in the musician columns a `musician`; every catalog number a `release`; every recording
year a `year`. Relationships, with spec 004 weights in 0..1:

- track `PERFORMED_BY` musician (1.0), track `RELEASED_ON` release (1.0), track `RECORDED_IN`
  year (0.5: a year links many tracks and says little about each);
- musician `COLLABORATED_WITH` musician for every pair who shared tracks, weight
  min(1, shared tracks / 10), the count in `shared_tracks`.

    .venv/bin/python bench/tools/bluenote_graph.py --data-dir DIR [--csv PATH] [--tracks N]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

CSV_CANDIDATES = [Path(__file__).resolve().parents[n] / "shared/data/bluenote/bn-data.csv" for n in (2, 3, 4)]
COLLAB_FULL = 10  # shared tracks at which a collaboration weighs 1.0


@dataclass
class Discography:
    musicians: list[str] = field(default_factory=list)
    releases: list[str] = field(default_factory=list)
    years: list[str] = field(default_factory=list)
    # (title, year or "", releases, musicians)
    tracks: list[tuple[str, str, list[str], list[str]]] = field(default_factory=list)
    shared: Counter[tuple[str, str]] = field(default_factory=Counter)


def find_csv() -> Path | None:
    return next((p for p in CSV_CANDIDATES if p.exists()), None)


def read(path: Path, max_tracks: int | None = None) -> Discography:
    d = Discography()
    musicians: dict[str, None] = {}
    releases: dict[str, None] = {}
    years: dict[str, None] = {}
    with path.open(newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        next(rows)
        for row in rows:
            title = row[0].strip()
            if not title:
                continue
            if max_tracks is not None and len(d.tracks) >= max_tracks:
                break
            year = row[3].strip()
            on = list(dict.fromkeys(r.strip() for r in row[2].split(";") if r.strip()))
            players = list(dict.fromkeys(m.strip() for m in row[6:] if m.strip()))
            musicians.update(dict.fromkeys(players))
            releases.update(dict.fromkeys(on))
            if year:
                years[year] = None
            d.tracks.append((title, year, on, players))
            for a, b in combinations(sorted(players), 2):
                d.shared[(a, b)] += 1
    d.musicians, d.releases, d.years = list(musicians), list(releases), sorted(years)
    return d


def track_summary(title: str, year: str, players: Sequence[str]) -> str:
    recorded = f", recorded {year}" if year else ""
    return f"{title}{recorded} with {', '.join(players[:3])}" if players else f"{title}{recorded}"


async def load(services: Any, project: str, d: Discography, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Writes the discography into `project` and waits for its vectors."""
    from polyg.core.graph.edges import EdgeDraft
    from polyg.core.graph.nodes import NodeDraft
    from polyg.core.limits import MAX_BATCH

    t0 = time.perf_counter()
    ids: dict[str, str] = {}

    async def nodes(kind: str, drafts: list[tuple[str, NodeDraft]]) -> None:
        for start in range(0, len(drafts), MAX_BATCH):
            part = drafts[start : start + MAX_BATCH]
            outcomes = await services.nodes.create(project, [draft for _, draft in part])
            for (key, _), outcome in zip(part, outcomes, strict=True):
                if outcome.id is None:
                    raise RuntimeError(f"{kind} {key}: {outcome.error}")
                ids[key] = outcome.id

    await nodes(
        "musician", [(f"m:{m}", NodeDraft(name=m, type="musician", summary=f"Musician {m}")) for m in d.musicians]
    )
    await nodes("release", [(f"r:{r}", NodeDraft(name=r, type="release", summary=f"Release {r}")) for r in d.releases])
    await nodes("year", [(f"y:{y}", NodeDraft(name=y, type="year", summary=f"Year {y}")) for y in d.years])
    await nodes(
        "track",
        [
            (f"t:{i}", NodeDraft(name=title, type="track", summary=track_summary(title, year, players)))
            for i, (title, year, _, players) in enumerate(d.tracks)
        ],
    )
    nodes_s = time.perf_counter() - t0
    edges: list[EdgeDraft] = []
    for i, (_, year, on, players) in enumerate(d.tracks):
        track = ids[f"t:{i}"]
        edges += [EdgeDraft(track, ids[f"m:{m}"], "PERFORMED_BY", properties={"weight": 1.0}) for m in players]
        edges += [EdgeDraft(track, ids[f"r:{r}"], "RELEASED_ON", properties={"weight": 1.0}) for r in on]
        if year:
            edges.append(EdgeDraft(track, ids[f"y:{year}"], "RECORDED_IN", properties={"weight": 0.5}))
    for (a, b), count in sorted(d.shared.items()):
        weight = round(min(1.0, count / COLLAB_FULL), 2)
        props = {"weight": weight, "shared_tracks": count}
        edges.append(EdgeDraft(ids[f"m:{a}"], ids[f"m:{b}"], "COLLABORATED_WITH", properties=props))
    failed = 0
    for start in range(0, len(edges), MAX_BATCH):
        outcomes = await services.edges.create(project, edges[start : start + MAX_BATCH])
        failed += sum(1 for o in outcomes if o.status == "error")
        if start // MAX_BATCH % 20 == 0:
            log(f"bluenote: {start + len(outcomes)}/{len(edges)} relationships")
    if failed:
        raise RuntimeError(f"{failed} relationships were refused")
    edges_s = time.perf_counter() - t0 - nodes_s
    log(f"bluenote: {len(ids)} entities, {len(edges)} relationships written; waiting for vectors ...")
    if not await services.ctx.vectors.settle(project, 7200):
        raise RuntimeError("the vectors were not stored")
    return {
        "musicians": len(d.musicians),
        "releases": len(d.releases),
        "years": len(d.years),
        "tracks": len(d.tracks),
        "entities": len(ids),
        "relationships": len(edges),
        "collaborations": len(d.shared),
        "nodes_s": round(nodes_s, 1),
        "edges_s": round(edges_s, 1),
        "vectors_s": round(time.perf_counter() - t0 - nodes_s - edges_s, 1),
    }


async def build(data_dir: Path, csv_path: Path, max_tracks: int | None, embed: str) -> dict[str, Any]:
    from polyg.config import load_settings
    from polyg.runtime.app import Polyg

    settings = load_settings(
        None, data_dir=data_dir, log_dir=data_dir / "logs", embedding_provider=embed, log_level="WARNING"
    )
    core = Polyg(settings)
    try:
        services = await core.ready()
        project = services.project(None)
        info = await load(services, project, read(csv_path, max_tracks), lambda m: print(m, file=sys.stderr))
        return {"project": project, **info}
    finally:
        await core.close()


SMOKE_ROWS = [
    ["Track", "Alternate take", "Catalog", "Recorded", "1st BN Release", "Status", "", "", ""],
    ["Blue Train", "FALSE", "BLP 1577", "1957", "1957", "ISSUED", "John Coltrane", "Lee Morgan", "Curtis Fuller"],
    ["Moment's Notice", "FALSE", "BLP 1577", "1957", "1957", "ISSUED", "John Coltrane", "Lee Morgan", ""],
    ["Locomotion", "FALSE", "BLP 1577; CDP 7243", "", "1957", "ISSUED", "John Coltrane", "Curtis Fuller", ""],
]


def smoke_csv(folder: Path) -> Path:
    """A few rows in the CSV's shape, for a smoke run that must not depend on the shared data."""
    path = folder / "bn-smoke.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(SMOKE_ROWS)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path)
    p.add_argument("--csv", type=Path, default=None)
    p.add_argument("--tracks", type=int, default=None, help="only the first N tracks")
    p.add_argument("--embed", default="minilm", help="minilm or hashing")
    p.add_argument("--smoke", action="store_true", help="a few made-up tracks, hashing embedder, a scratch dir")
    args = p.parse_args(argv)
    if args.smoke:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib
        from bench.lib.smoke import smoke_workdir

        args.data_dir, args.embed = smoke_workdir("bluenote") / "data", "hashing"
        args.csv = smoke_csv(args.data_dir.parent)
    if args.data_dir is None:
        p.error("--data-dir is required")
    path = args.csv or find_csv()
    if path is None:
        p.error("bn-data.csv not found: give its path with --csv")
    info = asyncio.run(build(args.data_dir, path, args.tracks, args.embed))
    # 3 musicians, 2 releases, 1 year, 3 tracks; 13 track links and 3 collaborations.
    if args.smoke and (info["entities"], info["relationships"]) != (9, 16):
        raise SystemExit(f"smoke: expected 9 entities and 16 relationships, not {info}")
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
