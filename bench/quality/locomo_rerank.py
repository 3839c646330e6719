"""Replay recall's memory ranking on LoCoMo offline, to score ranking rules in seconds.

`dump` opens a store bench/quality/locomo_recall.py remembered (its `--workdir`, in-process, as
bench/quality/locomo_misses.py does: stop any server on it first), asks every question with the `recall`
tool's own handler, and records for each question what recall's memory ranking was given: the
query it searched, the names it focused on, the time window, the search's hits (a deep pool:
`--pool` candidates, each with its fused score, cosine, text vote, and the memories, speaker and
entities of its event) and the evidence of the other graphs that recall merged with them. It
also records every stored memory of each conversation (speaker, time, order, vector), so that
neighbours and meaning links can be recomputed without the database.

`score` replays ranking rules over the dump (polyg's own `rank_memories`, given the same
inputs the live search gives it) and scores the turns as bench/lib/locomo_scoring.py does: in
sample, and with leave-one-conversation-out cross-validation for the few weights it fits
(fit on four conversations, score the fifth).

    .venv/bin/python bench/quality/locomo_rerank.py dump --workdir /tmp/polyg-locomo-recall --out /tmp/pool.json
    .venv/bin/python bench/quality/locomo_rerank.py score --pool-file /tmp/pool.json
    .venv/bin/python bench/quality/locomo_rerank.py --smoke     # four turns, hashing vectors: it runs
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib import locomo_scoring
from bench.lib.smoke import SMOKE_HELP, smoke_workdir
from bench.quality import locomo_eval, locomo_recall

CATEGORIES = locomo_scoring.CATEGORIES
MULTI_HOP = CATEGORIES[1]


def log(msg: str) -> None:
    print(f"[locomo-rerank] {msg}", file=sys.stderr, flush=True)


# --- dump ----------------------------------------------------------------------------------


class Recorder:
    """Wraps MemorySearch.search: records its inputs (with a deeper pool of hits) for the
    question being asked."""

    def __init__(self, pool: int) -> None:
        self.pool = pool
        self.current: dict[str, Any] = {}

    def install(self) -> None:
        from polyg.core.recall import memories, ranking

        original = memories.MemorySearch.search
        recorder = self

        async def search(self: Any, query: str, *, limit: int, focus: Any = (), window: Any = None, found: Any = None):  # type: ignore[no-untyped-def]
            deep = await self.graphs.semantic.search_service.search(self.project, query, "events", recorder.pool)
            events = {e.id: e for e in await self.graphs.temporal.events(self.project, [h.node_id for h in deep])}
            recorder.current.update(
                query=query,
                focus=list(focus),
                window=None if window is None else [_iso(window.start), _iso(window.end)],
                hits=[
                    {
                        "id": h.node_id,
                        "fused": h.fused,
                        "vector": h.vector,
                        "text": h.text,
                        "memories": list(ranking.candidate(h, events[h.node_id]).memories)
                        if h.node_id in events
                        else [],
                        "context": events[h.node_id].context if h.node_id in events else None,
                        "entities": events[h.node_id].entities if h.node_id in events else [],
                        "at": events[h.node_id].occurred_at if h.node_id in events else None,
                    }
                    for h in deep
                ],
            )
            return await original(self, query, limit=limit, focus=focus, window=window, found=found)

        memories.MemorySearch.search = search  # type: ignore[method-assign]


def _iso(at: Any) -> str | None:
    return None if at is None else at.isoformat()


async def dump(args: argparse.Namespace) -> None:
    from polyg.config import load_settings
    from polyg.runtime.app import Polyg
    from polyg.tools.memory import recall as memory_recall

    recorder = Recorder(args.pool)
    recorder.install()
    samples = json.loads(args.data.read_text())
    load_info = json.loads((args.workdir / "meta.json").read_text())["load"]
    overrides = {"embedding_provider": "hashing"} if args.smoke else {}
    settings = load_settings(
        None, data_dir=args.workdir / "data", log_dir=args.workdir / "logs", log_level="WARNING", **overrides
    )
    core = Polyg(settings)
    out: dict[str, Any] = {"projects": {}, "questions": []}
    try:
        services = await core.ready()
        for sample in samples:
            project = locomo_eval.project_id(sample["sample_id"])
            dia_ids = load_info[project]["dia_ids"]
            rows = await services.memory.temporal.ctx.read(
                project,
                "MATCH (e:Event) WHERE e.origin = 'memory' RETURN e.id, e.context, e.occurred_us, e.created_at, "
                "e.embedding ORDER BY e.occurred_us, e.created_at, e.id",
                {},
            )
            out["projects"][project] = {
                "dia_ids": dia_ids,
                "memories": [
                    {"id": r[0], "context": r[1], "us": r[2], "vector": [round(float(x), 5) for x in r[4] or []]}
                    for r in rows
                ],
            }
            turns = {d for ds in dia_ids.values() for d in ds}
            for q in locomo_scoring.questions_of(sample, turns, __import__("collections").Counter()):
                recorder.current = {}
                params = memory_recall.Recall(query=q["question"], max_results=args.max_results, project_id=project)
                result = await memory_recall.recall(services, params)
                live = locomo_recall.cited_turns(result["evidence"], dia_ids)
                out["questions"].append(
                    {
                        **q,
                        "project": project,
                        **recorder.current,
                        "evidence_items": [
                            {"id": e["id"], "kind": e["kind"], "score": e["score"], "memories": e["memories"]}
                            for e in result["evidence"]
                        ],
                        "live": live,
                    }
                )
            log(f"{project}: {len(out['questions'])} questions so far")
    finally:
        await core.close()
    args.out.write_text(json.dumps(out))
    log(f"wrote {args.out}")


# --- replay --------------------------------------------------------------------------------


class Replay:
    """The dump, with each conversation's memories in order and their vectors as a matrix."""

    def __init__(self, data: dict[str, Any]) -> None:
        import numpy as np

        self.questions: list[dict[str, Any]] = data["questions"]
        self.projects: dict[str, dict[str, Any]] = {}
        for project, p in data["projects"].items():
            mems = p["memories"]
            vectors = np.asarray([m["vector"] for m in mems], dtype=np.float32)
            self.projects[project] = {
                "memories": mems,
                "index": {m["id"]: i for i, m in enumerate(mems)},
                "vectors": vectors,
                "dia_ids": p["dia_ids"],
            }


async def ranked_turns(replay: Replay, q: dict[str, Any], ranking: Any, limit: int = 20) -> list[str]:
    """The turns recall would cite with `ranking` over the recorded inputs."""
    from polyg.core.recall import memories as m
    from polyg.core.recall import ranking as r

    p = replay.projects[q["project"]]
    store = OfflineStore(p)
    hits = [
        r.Candidate(
            h["id"],
            h["fused"],
            h["vector"],
            h["text"],
            tuple(h["memories"]),
            h["context"],
            tuple(h["entities"]),
            h["at"],
        )
        for h in q.get("hits", [])[: ranking.candidates]
    ]
    window = _window(q.get("window"))
    scored = (await r.rank_memories(hits, store, ranking, focus=q.get("focus", []), window=window))[:limit]
    top = scored[0][1] if scored else 1.0
    items = [(m.TOP_SCORE * s / top, (mid,)) for mid, s in scored]
    items += [(e["score"], tuple(e["memories"])) for e in q["evidence_items"] if e["kind"] != "memory"]
    items.sort(key=lambda x: -x[0])
    out: list[str] = []
    for _, mems in items[:limit]:
        for memory in mems:
            for dia in p["dia_ids"].get(memory, []):
                if dia not in out:
                    out.append(dia)
    return out


def _window(w: list[str | None] | None) -> Any:
    if w is None:
        return None
    from polyg.core.text.time import Interval, parse_instant

    return Interval(parse_instant(w[0]) if w[0] else None, parse_instant(w[1]) if w[1] else None)


class OfflineStore:
    """What rank_memories reads from the database, from the dump."""

    def __init__(self, project: dict[str, Any]) -> None:
        self.p = project

    async def around(self, ids: list[str], window_us: int, reach: int) -> Sequence[list[Any]]:
        mems, index = self.p["memories"], self.p["index"]
        out = []
        for i in ids:
            at = index.get(i)
            if at is None:
                continue
            me = mems[at]
            before = [
                [mems[j]["id"], mems[j]["context"]]
                for j in range(at - 1, -1, -1)
                if abs(mems[j]["us"] - me["us"]) <= window_us
            ][:reach]
            after = [
                [mems[j]["id"], mems[j]["context"]]
                for j in range(at + 1, len(mems))
                if abs(mems[j]["us"] - me["us"]) <= window_us
            ][:reach]
            out.append([i, me["context"], before, after])
        return out

    async def similar(self, ids: list[str], k: int, same_context: bool) -> Sequence[list[Any]]:
        import numpy as np

        mems, index, vectors = self.p["memories"], self.p["index"], self.p["vectors"]
        out = []
        for i in ids:
            at = index.get(i)
            if at is None:
                continue
            sims = vectors @ vectors[at]
            kept = 0
            for j in np.argsort(-sims, kind="stable"):
                j = int(j)
                if j == at or (same_context and mems[j]["context"] != mems[at]["context"]):
                    continue
                out.append([i, mems[j]["id"], float(sims[j])])
                kept += 1
                if kept >= k:
                    break
        return out


def evaluate(replay: Replay, ranking: Any, questions: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return summarise(asyncio.run(rows_of(replay, ranking, questions)))


async def rows_of(replay: Replay, ranking: Any, questions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for q in questions:
        turns = await ranked_turns(replay, q, ranking)
        rows.append({"category": q["category"], **locomo_scoring.score(turns, q["evidence"])})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_cat = locomo_scoring.by_category(rows)
    return {
        "recall@10": locomo_scoring.mean(rows, "recall@10"),
        "all@10": locomo_scoring.mean(rows, "all_evidence@10"),
        "mh_r@10": by_cat.get(MULTI_HOP, {}).get("recall@10"),
        "mh_all@10": by_cat.get(MULTI_HOP, {}).get("all_evidence@10"),
        "by_category": {c: (v["recall@10"], v["all_evidence@10"]) for c, v in by_cat.items()},
    }


def line(name: str, r: dict[str, Any]) -> str:
    return (
        f"{name:40} r@10 {r['recall@10']:5.1f} all@10 {r['all@10']:5.1f} mh {r['mh_r@10']:5.1f}/{r['mh_all@10']:5.1f} "
        + " ".join(f"{c[:5]} {v[0]:.1f}/{v[1]:.1f}" for c, v in r["by_category"].items())
    )


def live(replay: Replay) -> dict[str, Any]:
    rows = [{"category": q["category"], **locomo_scoring.score(q["live"], q["evidence"])} for q in replay.questions]
    return summarise(rows)


def objective(r: dict[str, Any]) -> float:
    """What a fit maximises: recall@10, plus multi-hop all-evidence@10 at a multi-hop
    question's share of the questions (both targets of the issue count)."""
    return float(r["recall@10"]) + float(r["mh_all@10"]) * 142 / 760


def fit(
    replay: Replay, base: Any, grid: dict[str, Sequence[Any]], questions: list[dict[str, Any]]
) -> tuple[Any, dict[str, Any]]:
    best: tuple[float, Any, dict[str, Any]] | None = None
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        ranking = dataclasses.replace(base, **dict(zip(keys, values, strict=True)))
        r = evaluate(replay, ranking, questions)
        if best is None or objective(r) > best[0]:
            best = (objective(r), ranking, r)
    assert best is not None
    return best[1], best[2]


def cross_validate(replay: Replay, base: Any, grid: dict[str, Sequence[Any]]) -> dict[str, Any]:
    """Leave one conversation out: fit `grid` on four, score the fifth; the held-out rows pooled."""
    rows = []
    for project in replay.projects:
        train = [q for q in replay.questions if q["project"] != project]
        test = [q for q in replay.questions if q["project"] == project]
        ranking, _ = fit(replay, base, grid, train)
        log(f"fold {project}: {[getattr(ranking, k) for k in grid]}")
        rows += asyncio.run(rows_of(replay, ranking, test))
    return summarise(rows)


def score(args: argparse.Namespace) -> None:
    from polyg.core.recall import memories

    replay = Replay(json.loads(args.pool_file.read_text()))
    print(line("live (recorded)", live(replay)))
    base = memories.DEFAULT_RANKING
    print(line("replay default", evaluate(replay, base, replay.questions)))
    for pair in args.set:
        key, value = pair.split("=", 1)
        base = dataclasses.replace(base, **{key: type(getattr(base, key))(value)})
    if args.set:
        print(line("replay " + " ".join(args.set), evaluate(replay, base, replay.questions)))
    if args.grid:
        grid: dict[str, Sequence[Any]] = {}
        for spec in args.grid:
            key, values = spec.split("=", 1)
            kind = type(getattr(base, key))
            grid[key] = [kind(v) for v in values.split(",")]
        ranking, r = fit(replay, base, grid, replay.questions)
        print(line("fitted in sample", r), {k: getattr(ranking, k) for k in grid})
        print(line("leave-one-conversation-out", cross_validate(replay, base, grid)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("dump")
    d.add_argument("--data", type=Path, default=locomo_eval.DATA)
    d.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-locomo-recall"))
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--pool", type=int, default=150, help="search hits recorded per question")
    d.add_argument("--max-results", type=int, default=locomo_recall.MAX_RESULTS)
    s = sub.add_parser("score")
    s.add_argument("--pool-file", type=Path, required=True)
    s.add_argument("--set", nargs="*", default=[], help="MemoryRanking overrides, e.g. neighbour_share=0.3")
    s.add_argument("--grid", nargs="*", default=[], help="fit these, e.g. source_boost=2,3,4")
    args = parser.parse_args(argv)
    if args.smoke:  # a four-turn conversation remembered by bench/quality/locomo_recall.py, dumped, scored
        workdir, data = locomo_recall.smoke_remembered(smoke_workdir("locomo-rerank"))
        pool = workdir / "pool.json"
        common_args = ["--smoke", "dump", "--workdir", str(workdir), "--data", str(data), "--out", str(pool)]
        args = parser.parse_args(common_args)
        asyncio.run(dump(args))
        args = parser.parse_args(["--smoke", "score", "--pool-file", str(pool)])
    elif args.command is None:
        parser.error("a command is required: dump or score")
    if args.command == "dump":
        asyncio.run(dump(args))
    else:
        score(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
