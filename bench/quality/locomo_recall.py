"""LoCoMo through `recall` (spec 003): the memory toolset's flagship against flat search.

For each conversation of `../shared/eval/locomo_dev.json` (read by path, never copied: CC BY-NC,
benchmark use only), a polyg server over MCP stdio is given every dialog turn with `remember`
(one call per turn: the turn's text, plus " [image: <caption>]" when it shares a photo; the
speaker as `context`; the session's date as `reference_time`). Every question of categories 1-4
is then asked with `recall` (max_results 20), and the dialog turns among the memories it cites
are scored as `../shared/eval/README.md` defines: recall@k is the share of a question's evidence
turns among the first k memories cited (averaged over questions), all-evidence@10 the share of
questions with every evidence turn among the first 10.

A piece of evidence cites the memories it came from (a memory cites itself; a fact, an event or
a causal link extracted from a memory cites that memory), so the cited memories are read in
evidence order, each once.

In the same run, on the same server, each conversation is also stored the way
bench/quality/locomo_eval.py stores it (one memory-compat entity per turn, observation
"[<session date>] <speaker>: <text>", in a sibling project) and every question is asked with
`search_nodes` (limit 20): flat hybrid search next to recall on the same data.

    .venv/bin/python bench/quality/locomo_recall.py            # load (cached in --workdir), ask, save
    .venv/bin/python bench/quality/locomo_recall.py --no-save --limit-questions 200
    .venv/bin/python bench/quality/locomo_recall.py --smoke    # four turns, hashing vectors: it runs

The remembered store is cached in `--workdir` and reused while the data and the code that
writes memories are unchanged (`--reload` forces a rebuild).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib import locomo_scoring
from bench.lib.database import stop_db
from bench.lib.datadirs import fresh_copy
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, machine_info
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.server import PolygServer
from bench.lib.smoke import SMOKE_HELP, offer_shared, shared_build, smoke_workdir
from bench.lib.stats import median, summarize
from bench.quality import locomo_eval

CATEGORIES = locomo_scoring.CATEGORIES
LOADER_VERSION = 1  # bump when the way turns are remembered changes
MAX_RESULTS = 20
FLAT_SUFFIX = "_flat"
# What decides the remembered store: a change here rebuilds the cached one.
STORE_CODE = (
    "polyg/core/memory/extract_memory.py",
    "polyg/core/memory/write.py",
    "polyg/core/text/mentions.py",
    "polyg/core/memory/temporal.py",
    "polyg/core/memory/causal.py",
    "polyg/store/queries/temporal.py",
    "polyg/store/queries/causal.py",
    "polyg/embed/minilm.py",
    "polyg/core/graph/embeddable.py",
    "polyg/store/schema.py",
)
TARGETS = {"recall@10": 80.0, "multi-hop all_evidence@10": 40.0}
ANSWER_TARGET = 30.0


def log(msg: str) -> None:
    print(f"[locomo-recall] {msg}", file=sys.stderr, flush=True)


# --- data ----------------------------------------------------------------------------------


def session_time(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an ISO instant (UTC: the data names no zone)."""
    at = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return at.isoformat().replace("+00:00", "Z")


def memories_of(sample: dict[str, Any]) -> list[dict[str, str]]:
    """Each dialog turn as remember's arguments, in session order, with its dia_id."""
    conv = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
    out = []
    for number in numbers:
        turns = conv.get(f"session_{number}") or []
        date = conv[f"session_{number}_date_time"]
        when = session_time(date)
        for turn in turns:
            content = turn["text"]
            if turn.get("blip_caption"):
                content += f" [image: {turn['blip_caption']}]"
            out.append(
                {"dia_id": turn["dia_id"], "content": content, "context": turn["speaker"], "at": when, "date": date}
            )
    return out


# --- store ---------------------------------------------------------------------------------


def fingerprint(data: Path) -> str:
    h = hashlib.sha256(f"loader {LOADER_VERSION}\n".encode())
    h.update(data.read_bytes())
    for rel in STORE_CODE:
        path = REPO / rel
        if path.exists():
            h.update(path.read_bytes())
    import inspect

    from polyg.tools.memory import recall as memory_recall

    h.update(inspect.getsource(memory_recall.remember).encode())
    return h.hexdigest()


async def load(server: PolygServer, projects: list[tuple[str, list[dict[str, str]], Any]]) -> dict[str, Any]:
    """remember every turn (one call each), and the same turns as flat entities next to them."""
    info: dict[str, Any] = {}
    for project, memories, _ in projects:
        ids: dict[str, list[str]] = {}
        durations: list[float] = []
        duplicates = 0
        t0 = time.perf_counter()
        for m in memories:
            t = time.perf_counter()
            result = await server.call(
                "remember",
                {"content": m["content"], "context": m["context"], "reference_time": m["at"], "project_id": project},
            )
            durations.append(time.perf_counter() - t)
            body = result.structured_content
            duplicates += bool(body["duplicate"])
            ids.setdefault(body["memory_id"], []).append(m["dia_id"])
        remember_s = time.perf_counter() - t0
        flat = [{"name": m["dia_id"], "entityType": "turn", "observations": [flat_text(m)]} for m in memories]
        for start in range(0, len(flat), locomo_eval.BATCH):
            await server.call(
                "create_entities",
                {"entities": flat[start : start + locomo_eval.BATCH], "project_id": project + FLAT_SUFFIX},
            )
        info[project] = {
            "turns": len(memories),
            "memories": len(ids),
            "duplicates": duplicates,
            "remember_s": round(remember_s, 1),
            "remember_ms": {k: round(v, 1) for k, v in summarize(durations).items() if k.endswith("_ms")},
            "dia_ids": ids,
        }
        log(f"remembered {project}: {len(memories)} turns in {remember_s:.0f} s ({duplicates} duplicates)")
    return info


def flat_text(m: dict[str, str]) -> str:
    """The unit text of bench/quality/locomo_eval.py and the README: "[<session date>] <speaker>: <text>"."""
    return f"[{m['date']}] {m['context']}: {m['content']}"


async def until_indexed(server: PolygServer, tool: str, args: dict[str, Any], timeout_s: float = 900.0) -> None:
    """Call `tool` until the database has rebuilt its indexes (after a restart it refuses
    searches meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await server.call(tool, args)
            return
        except RuntimeError as exc:
            if "being rebuilt" not in str(exc) or time.monotonic() > deadline:
                raise
        await asyncio.sleep(1.0)


# --- evaluation ----------------------------------------------------------------------------


def cited_turns(evidence: list[dict[str, Any]], dia_ids: dict[str, list[str]]) -> list[str]:
    """The dialog turns of the memories recall cites, in evidence order, each once."""
    out: list[str] = []
    for item in evidence:
        for memory in [item["id"], *item.get("memories", [])]:
            for dia in dia_ids.get(memory, []):
                if dia not in out:
                    out.append(dia)
    return out


def summary(rows: list[dict[str, Any]], latencies: list[float]) -> dict[str, Any]:
    return locomo_eval.summary(rows, latencies, ("p50_ms", "p95_ms", "p99_ms", "mean_ms"))


ANSWER_METRICS = ("answer", "top3_memories")


def answer_row(q: dict[str, Any], answer: str, top_texts: list[str]) -> dict[str, Any]:
    """One question's judge-free answer scores (None: its gold answer is too long to score)."""
    gold = q["answer"]
    if not locomo_scoring.scorable(gold):
        return {"category": q["category"], "scored": False}
    return {
        "category": q["category"],
        "scored": True,
        "chars": len(answer),
        "answer": float(locomo_scoring.contains_answer(gold, answer)),
        "top3_memories": float(locomo_scoring.contains_answer(gold, "\n".join(top_texts))),
    }


def answer_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The share of scored questions whose answer (and whose top 3 memories) hold the gold answer,
    overall and per category."""
    scored = [r for r in rows if r["scored"]]
    return {
        "questions": len(scored),
        # A longer answer holds more words: the metric is read beside the answers' length.
        "answer_chars_p50": median([r["chars"] for r in scored]) if scored else float("nan"),
        **{m: locomo_scoring.mean(scored, m) for m in ANSWER_METRICS},
        "by_category": locomo_scoring.by_category(scored, ANSWER_METRICS),
    }


async def ask(
    server: PolygServer,
    projects: list[tuple[str, list[dict[str, str]], list[dict[str, Any]]]],
    load_info: dict[str, Any],
    misses: list[dict[str, Any]],
    answers: list[dict[str, Any]],
    *,
    flat: bool = True,
) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {"recall": [], "search_nodes": []}
    latencies: dict[str, list[float]] = {"recall": [], "search_nodes": []}
    answer_rows: list[dict[str, Any]] = []
    for project, memories, questions in projects:
        dia_ids = load_info[project]["dia_ids"]
        turns = {m["dia_id"]: m for m in memories}
        for q in questions:
            t = time.perf_counter()
            result = await server.call(
                "recall", {"query": q["question"], "max_results": MAX_RESULTS, "project_id": project}
            )
            latencies["recall"].append(time.perf_counter() - t)
            ranked = cited_turns(result.structured_content["evidence"], dia_ids)
            row = {"category": q["category"], **locomo_scoring.score(ranked, q["evidence"])}
            rows["recall"].append(row)
            answer = str(result.structured_content.get("answer", ""))
            top_texts = [flat_text(turns[dia]) for dia in ranked[:3]]
            answer_rows.append(scored := answer_row(q, answer, top_texts))
            answers.append(
                {
                    "project": project,
                    "category": CATEGORIES[q["category"]],
                    "question": q["question"],
                    "gold": q["answer"],
                    "said": answer,
                    **{f"{m}_holds_gold": scored.get(m) for m in ANSWER_METRICS},
                    "top3": top_texts,
                }
            )
            names: list[str] = []
            if flat:
                t = time.perf_counter()
                found = await server.call(
                    "search_nodes", {"query": q["question"], "limit": MAX_RESULTS, "project_id": project + FLAT_SUFFIX}
                )
                latencies["search_nodes"].append(time.perf_counter() - t)
                names = [e["name"] for e in found.structured_content["entities"]]
                flat_row = {"category": q["category"], **locomo_scoring.score(names, q["evidence"])}
                rows["search_nodes"].append(flat_row)
            if row["recall@10"] < 1.0:
                misses.append(
                    {
                        "project": project,
                        "question": q["question"],
                        "category": CATEGORIES[q["category"]],
                        "evidence": q["evidence"],
                        "recall_top10": ranked[:10],
                        "search_nodes_top10": names[:10],
                    }
                )
    out = {name: summary(rows[name], latencies[name]) for name in rows if rows[name]}
    out["recall"]["answers"] = answer_summary(answer_rows)
    return out


# --- report --------------------------------------------------------------------------------


def markdown(run: dict[str, Any]) -> str:
    cols = ["recall@5", "recall@10", "recall@20", "all_evidence@10"]
    cats = list(CATEGORIES.values())
    machine = run["machine"]
    lines = [
        f"# LoCoMo through recall ({machine['date']})",
        "",
        f"Data: `{run['data']}`, {run['conversations']} conversations, {run['turns']} turns remembered one "
        f"call each over MCP stdio, {run['questions']} questions of categories 1-4 asked with `recall` "
        f"(max_results {MAX_RESULTS}) and with `search_nodes` (limit {MAX_RESULTS}) on flat turn entities "
        f"in the same server. polyg {machine['polyg_commit']}"
        + (" + uncommitted changes" if machine["polyg_tracked_changes"] else "")
        + ".",
        "",
        "Evidence ids: " + ", ".join(f"{k} {v}" for k, v in sorted(run["evidence_fixes"].items())) + ".",
        "",
        "| tool | " + " | ".join(cols) + " | p50 ms | p95 ms |",
        "|---|" + "---:|" * (len(cols) + 2),
    ]
    for name, res in run["results"].items():
        lines.append(
            f"| {name} | "
            + " | ".join(f"{res[c]:.1f}" for c in cols)
            + f" | {res['latency_ms']['p50_ms']:.1f} | {res['latency_ms']['p95_ms']:.1f} |"
        )
    lines += ["", "Per category (recall@10 / all-evidence@10, questions):", ""]
    lines += locomo_scoring.category_table(run["results"], cats, "tool")
    lines += ["", "Targets on the dev split: " + ", ".join(f"{k} >= {v:.0f}" for k, v in TARGETS.items()) + "."]
    lines += answer_markdown(run["results"]["recall"]["answers"])
    remember = run["remember_ms"]
    lines += [
        "",
        f"remember over stdio while loading: p50 {remember['p50_ms']:.1f} ms, p95 {remember['p95_ms']:.1f} ms "
        f"({run['load_s']:.0f} s for all turns; {run['duplicates']} turns repeated an earlier memory word for word).",
    ]
    load = run.get("machine_load", {})
    if load:
        lines += ["", f"Machine load while asking: {load} (nproc {machine['nproc']})."]
    return "\n".join(lines) + "\n"


def answer_markdown(res: dict[str, Any]) -> list[str]:
    cats = [c for c in CATEGORIES.values() if c in res["by_category"]]
    lines = [
        "",
        f"## Answers, judge-free ({res['questions']} questions whose gold answer has at most "
        f"{locomo_scoring.MAX_ANSWER_WORDS} content words)",
        "",
        "Share of questions whose text holds every content word of the gold answer (dates as dates):",
        "",
        "| text | all | " + " | ".join(cats) + " |",
        "|---|---:|" + "---:|" * len(cats),
    ]
    for metric, label in (("answer", "recall's `answer`"), ("top3_memories", "first 3 cited memories")):
        lines.append(
            f"| {label} | {res[metric]:.1f} | "
            + " | ".join(f"{res['by_category'][c][metric]:.1f} ({res['by_category'][c]['questions']})" for c in cats)
            + " |"
        )
    lines += [
        "",
        f"Median answer length: {res['answer_chars_p50']:.0f} characters. "
        f"Targets: answer >= {ANSWER_TARGET:.0f} overall and on temporal questions.",
    ]
    return lines


# --- main ----------------------------------------------------------------------------------


def prepare(args: argparse.Namespace) -> tuple[list[Any], list[Any], Counter[str], str, bool]:
    samples = json.loads(args.data.read_text())
    stats: Counter[str] = Counter()
    projects = []
    for sample in samples:
        memories = memories_of(sample)
        questions = locomo_scoring.questions_of(sample, {m["dia_id"] for m in memories}, stats)
        if args.limit_questions:
            questions = questions[: args.limit_questions]
        projects.append((locomo_eval.project_id(sample["sample_id"]), memories, questions))
    workdir: Path = args.workdir
    meta = workdir / "meta.json"
    print_ = fingerprint(args.data)
    cached = (
        meta.exists() and (args.reuse or json.loads(meta.read_text()).get("fingerprint") == print_) and not args.reload
    )
    if not cached:
        stop_db(workdir / "data")
        shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    return samples, projects, stats, print_, cached


async def run(args: argparse.Namespace) -> dict[str, Any]:
    samples, projects, fixes, print_, cached = prepare(args)
    workdir: Path = args.workdir
    env = clean_env(workdir, {"POLYG_LOG_LEVEL": "WARNING"})
    log_path = workdir / "server.log"
    misses: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    async with PolygServer(
        workdir / "data", log_path=log_path, env=env, extra_args=["--toolsets", "memory,memory-compat"]
    ) as server:
        if cached:
            load_info = json.loads((workdir / "meta.json").read_text())["load"]
            log(f"reusing the remembered store in {workdir}")
        else:
            load_info = await load(server, projects)
            (workdir / "meta.json").write_text(json.dumps({"fingerprint": print_, "load": load_info}))
        for project, _, _ in projects:  # waits for the store, its indexes and its vectors
            await until_indexed(server, "search_nodes", {"query": "warm up", "project_id": project + FLAT_SUFFIX})
            await until_indexed(server, "recall", {"query": "warm up", "project_id": project})
        with LoadSampler() as sampler:
            t = time.perf_counter()
            results = await ask(server, projects, load_info, misses, answers, flat=not args.no_flat)
            log(f"asked in {time.perf_counter() - t:.0f} s")
    (workdir / "misses.json").write_text(json.dumps(misses, indent=1))
    (workdir / "answers.json").write_text(json.dumps(answers, indent=1))
    for name, r in results.items():
        log(
            f"{name}: r@5 {r['recall@5']} r@10 {r['recall@10']} r@20 {r['recall@20']} all@10 {r['all_evidence@10']} | "
            + " ".join(f"{c} {v['recall@10']}/{v['all_evidence@10']}" for c, v in r["by_category"].items())
            + f" | p50 {r['latency_ms']['p50_ms']} ms"
        )
    said = results["recall"]["answers"]
    log(
        f"answers: {said['answer']} (top 3 memories {said['top3_memories']}) of {said['questions']} | "
        + " ".join(f"{c} {v['answer']}/{v['top3_memories']}" for c, v in said["by_category"].items())
    )
    remember_p50 = [v["remember_ms"] for v in load_info.values()]
    data = args.data.resolve()
    return {
        "data": str(data.relative_to(REPO.parent)) if data.is_relative_to(REPO.parent) else data.name,
        "conversations": len(samples),
        "turns": sum(len(m) for _, m, _ in projects),
        "questions": sum(len(q) for _, _, q in projects),
        "evidence_fixes": dict(fixes),
        "results": results,
        "remember_ms": {k: round(sum(r[k] for r in remember_p50) / len(remember_p50), 1) for k in remember_p50[0]},
        "load_s": sum(v["remember_s"] for v in load_info.values()),
        "duplicates": sum(v["duplicates"] for v in load_info.values()),
        "machine_load": sampler.summary(),
        "machine": machine_info(),
    }


SMOKE_REMEMBERED = "locomo-remembered"


def remember_smoke_conversation(path: Path) -> None:
    """What this script's smoke run remembers (a four-turn conversation, over MCP, then asked):
    its store in `path`/store, its data in `path`/smoke.json."""
    main(["--workdir", str(path / "store"), "--data", str(locomo_eval.smoke_data(path)), "--no-save"])


def smoke_remembered(workdir: Path) -> tuple[Path, Path]:
    """For the smoke runs of the scripts that analyse a store this script remembered
    (bench/quality/locomo_misses.py, locomo_rerank.py): a copy of the smoke conversation's store in
    `workdir` (remembered once in a smoke test, by this script's smoke run or theirs), and its data."""
    remembered = shared_build(SMOKE_REMEMBERED, remember_smoke_conversation)
    return fresh_copy(remembered / "store", workdir), remembered / "smoke.json"


def offer_smoke_remembered(workdir: Path, data: Path) -> None:
    """This smoke run's store and data, given to `smoke_remembered`'s users in the same test."""

    def fill(path: Path) -> None:
        fresh_copy(workdir, path / "store")
        shutil.copy(data, path / "smoke.json")

    offer_shared(SMOKE_REMEMBERED, fill)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=locomo_eval.DATA)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-locomo-recall"))
    parser.add_argument("--limit-questions", type=int, default=0, help="at most this many questions per conversation")
    parser.add_argument("--reload", action="store_true", help="remember everything again")
    parser.add_argument(
        "--reuse", action="store_true", help="use the remembered store even if the code that wrote it changed"
    )
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--no-flat", action="store_true", help="ask recall only (not search_nodes); never saved")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        args.workdir, args.no_save = smoke_workdir("locomo-recall"), True
        args.data = locomo_eval.smoke_data(smoke_workdir("locomo-recall-data"))
    result = asyncio.run(run(args))
    if args.smoke:
        offer_smoke_remembered(args.workdir, args.data)
    text = markdown(result)
    print(text)
    if not args.no_save and not args.limit_questions and not args.no_flat:
        r = result["results"]
        figures = {
            **{f"recall_{m}": r["recall"][m] for m in ("recall@5", "recall@10", "recall@20", "all_evidence@10")},
            "recall_multi_hop_all@10": r["recall"]["by_category"]["multi-hop"]["all_evidence@10"],
            "search_nodes_recall@10": r["search_nodes"]["recall@10"],
            "recall_p50_ms": r["recall"]["latency_ms"]["p50_ms"],
            "answer_contains": r["recall"]["answers"]["answer"],
            "answer_contains_temporal": r["recall"]["answers"]["by_category"]["temporal"]["answer"],
            "top3_memories_contain": r["recall"]["answers"]["top3_memories"],
            "answer_chars_p50": r["recall"]["answers"]["answer_chars_p50"],
        }
        md, js = write_results(
            "locomo-recall", text, result, size=args.data.stem.removeprefix("locomo_"), figures=figures
        )
        log(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
