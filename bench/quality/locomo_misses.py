"""Why `recall` misses LoCoMo evidence: an analysis aid next to bench/quality/locomo_recall.py.

Opens a store bench/quality/locomo_recall.py remembered (its `--workdir`, in-process, no MCP: stop any
server on it first, or point at a copy), asks one category's questions with the `recall` tool's
own handler, scores them as the bench does (bench/lib/locomo_scoring.py), and prints, for the
questions it misses, each evidence turn (speaker, text, the rank recall gave it) next to the
first turns recall cited. The tallies at the end say where the missed evidence stands: cited
beyond the 10th place, next to a cited turn, said by the speaker the question names, or absent.

    .venv/bin/python bench/quality/locomo_misses.py --workdir /tmp/polyg-locomo-recall --category 1 --show 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib import locomo_scoring
from bench.lib.smoke import SMOKE_HELP, smoke_workdir
from bench.quality import locomo_eval, locomo_recall


def turn_index(samples: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """project -> dia_id -> the turn's speaker, text and position in the conversation."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for sample in samples:
        turns = locomo_recall.memories_of(sample)
        out[locomo_eval.project_id(sample["sample_id"])] = {
            m["dia_id"]: {"speaker": m["context"], "text": m["content"], "pos": i} for i, m in enumerate(turns)
        }
    return out


async def ask_all(args: argparse.Namespace, samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from polyg.config import load_settings
    from polyg.runtime.app import Polyg
    from polyg.tools.memory import recall as memory_recall

    load_info = json.loads((args.workdir / "meta.json").read_text())["load"]
    overrides = {"embedding_provider": "hashing"} if args.smoke else {}
    settings = load_settings(
        None, data_dir=args.workdir / "data", log_dir=args.workdir / "logs", log_level="WARNING", **overrides
    )
    core = Polyg(settings)
    out: list[dict[str, Any]] = []
    try:
        services = await core.ready()
        stats: Counter[str] = Counter()
        for sample in samples:
            project = locomo_eval.project_id(sample["sample_id"])
            dia_ids = load_info[project]["dia_ids"]
            turns = {d for ds in dia_ids.values() for d in ds}
            questions = [q for q in locomo_scoring.questions_of(sample, turns, stats) if q["category"] in args.category]
            for q in questions[: args.limit or None]:
                params = memory_recall.Recall(query=q["question"], max_results=20, project_id=project)
                result = await memory_recall.recall(services, params)
                ranked = locomo_recall.cited_turns(result["evidence"], dia_ids)
                out.append({**q, "project": project, "ranked": ranked, **locomo_scoring.score(ranked, q["evidence"])})
    finally:
        await core.close()
    return out


def speaker_named(question: str, speakers: set[str]) -> str | None:
    return next((s for s in speakers if s.lower() in question.lower()), None)


def report(rows: list[dict[str, Any]], turns: dict[str, dict[str, dict[str, Any]]], show: int) -> None:
    where: Counter[str] = Counter()
    shown = 0
    for row in rows:
        index = turns[row["project"]]
        speakers = {t["speaker"] for t in index.values()}
        named = speaker_named(row["question"], speakers)
        top10 = row["ranked"][:10]
        near = {index[d]["pos"] + o for d in top10 for o in (-1, 1)}
        missed = [e for e in row["evidence"] if e not in top10]
        for e in missed:
            where["missed evidence turns"] += 1
            if e in row["ranked"]:
                where["cited at 11-20"] += 1
            elif index[e]["pos"] in near:
                where["next to a top-10 turn"] += 1
            else:
                where["not cited, not adjacent"] += 1
            if named is not None:
                where["by the named speaker" if index[e]["speaker"] == named else "by the other speaker"] += 1
        if missed and shown < show:
            shown += 1
            print(f"\nQ [{locomo_scoring.CATEGORIES[row['category']]}] {row['question']}")
            for e in row["evidence"]:
                rank = row["ranked"].index(e) + 1 if e in row["ranked"] else "-"
                t = index[e]
                print(f"  evidence {e:7} rank {rank!s:>2}  {t['speaker']}: {t['text'][:110]}")
            for d in top10[:5]:
                t = index[d]
                print(f"  cited    {d:7}          {t['speaker']}: {t['text'][:110]}")
    summary = locomo_eval.summary(rows, [0.0])
    print("\n" + json.dumps({k: v for k, v in summary.items() if k != "latency_ms"}))
    print(json.dumps(dict(where)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=locomo_eval.DATA)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-locomo-recall"))
    parser.add_argument("--category", type=int, nargs="+", default=[1], help="LoCoMo categories to ask (1-4)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many questions per conversation")
    parser.add_argument("--show", type=int, default=10, help="print this many missed questions")
    parser.add_argument("--dump", type=Path, help="write each question's ranked turns here (JSON)")
    parser.add_argument("--set", nargs="*", default=[], help="MemoryRanking overrides, e.g. feedback_of=3")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:  # a four-turn conversation remembered by bench/quality/locomo_recall.py, analysed
        args.workdir, args.data = locomo_recall.smoke_remembered(smoke_workdir("locomo-misses"))
    if args.set:
        import dataclasses

        from polyg.core.recall import memories

        ranking = memories.DEFAULT_RANKING
        kinds = {f.name: type(getattr(ranking, f.name)) for f in dataclasses.fields(ranking)}
        changes: dict[str, Any] = {}
        for pair in args.set:
            key, value = pair.split("=", 1)
            changes[key] = value.lower() in ("1", "true", "yes") if kinds[key] is bool else kinds[key](value)
        memories.DEFAULT_RANKING = dataclasses.replace(ranking, **changes)
        print(f"ranking: {memories.DEFAULT_RANKING}")
    samples = json.loads(args.data.read_text())
    rows = asyncio.run(ask_all(args, samples))
    if args.dump:
        args.dump.write_text(json.dumps(rows))
    report(rows, turn_index(samples), args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
