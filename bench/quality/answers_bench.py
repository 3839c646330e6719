"""Answer quality of `remember` + `recall` over the real MCP client (stdio), on answer sets in
the spec's curated format (../shared/eval/answers_dev.yaml describes it).

Each scenario's memories are told to `remember` in order (its own project, each with its
reference_time and context), then each question is asked with `recall` at its own reference
time, and the answer text is scored by the question's rules (contains_any / contains_all /
not_contains, case-insensitive). Reported: passed / total, overall and per kind.

Usage: .venv/bin/python bench/quality/answers_bench.py [SET.yaml ...] [--show-all] [--no-save]
Default sets: ../shared/eval/answers_dev.yaml and bench/data/answers_dev.yaml (the repo's
extension; a scenario named in both is run once). Results: printed, and bench/results/answers.md
(answers-<set>.md for other sets, e.g. answers-heldout2.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.env import clean_env
from bench.lib.machine import machine_info
from bench.lib.paths import REPO
from bench.lib.results import append_history
from bench.lib.server import PolygServer

SHARED_SET = REPO / ".." / "shared" / "eval" / "answers_dev.yaml"
REPO_SET = REPO / "bench" / "data" / "answers_dev.yaml"
RESULTS = REPO / "bench" / "results" / "answers.md"


def run_label(sets: list[Path]) -> str:
    """The run's name in the results: "dev" for the default sets, else the sets' own names
    ("heldout2" for answers_heldout2.yaml), so a held-out run neither replaces the dev result
    nor is read as one in history.csv."""
    if sets in ([SHARED_SET.resolve(), REPO_SET], [REPO_SET]):
        return "dev"
    return "+".join(p.stem.removeprefix("answers_") for p in sets)


def results_path(label: str) -> Path:
    return RESULTS if label == "dev" else RESULTS.with_name(f"answers-{label}.md")


def load_scenarios(paths: list[Path]) -> list[dict[str, Any]]:
    """The scenarios of every set, each name once (the first set that has it wins)."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for path in paths:
        if not path.exists():
            print(f"(no answer set at {path}: skipped)", file=sys.stderr)
            continue
        for scenario in yaml.safe_load(path.read_text())["scenarios"]:
            if scenario["name"] not in seen:
                seen.add(scenario["name"])
                out.append(scenario)
    return out


def passes(question: dict[str, Any], answer: str) -> bool:
    text = answer.lower()
    if "contains_any" in question and not any(s.lower() in text for s in question["contains_any"]):
        return False
    if "contains_all" in question and not all(s.lower() in text for s in question["contains_all"]):
        return False
    return not any(s.lower() in text for s in question.get("not_contains", []))


def structured(result: Any) -> dict[str, Any]:
    body = getattr(result, "structured_content", None)
    if isinstance(body, dict):
        return body
    return dict(json.loads(result.content[0].text))


async def run(scenarios: list[dict[str, Any]], embedder: str | None = None) -> list[dict[str, Any]]:
    """Each scenario remembered and asked on one server (its default embedder unless `embedder`)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="answers-bench-") as tmp:
        work = Path(tmp)
        env = clean_env(work, {"POLYG_EMBEDDING_PROVIDER": embedder} if embedder else None)
        async with PolygServer(
            work / "data", log_path=work / "server.log", env=env, extra_args=["--toolsets", "memory"]
        ) as server:
            for scenario in scenarios:
                project = f"answers-{scenario['name']}"[:60]
                for memory in scenario["memories"]:
                    args: dict[str, Any] = {"project_id": project, "content": memory["text"]}
                    if memory.get("at"):
                        args["reference_time"] = memory["at"]
                    if memory.get("context"):
                        args["context"] = memory["context"]
                    await server.call("remember", args)
                for question in scenario["questions"]:
                    args = {"project_id": project, "query": question["q"]}
                    if question.get("at"):
                        args["reference_time"] = question["at"]
                    out = structured(await server.call("recall", args))
                    answer = str(out.get("answer", ""))
                    rows.append(
                        {
                            "scenario": scenario["name"],
                            "kind": question.get("kind", "other"),
                            "q": question["q"],
                            "answer": answer,
                            "confidence": out.get("confidence"),
                            "passed": passes(question, answer),
                        }
                    )
    return rows


def _shown(path: Path) -> str:
    """A set's path as the repository names it (no machine path)."""
    path = path.resolve()
    for base, shown in ((REPO, ""), (REPO.parent / "shared", "../shared/")):
        if path.is_relative_to(base.resolve()):
            return shown + str(path.relative_to(base.resolve()))
    return path.name


def report(rows: list[dict[str, Any]], sets: list[Path], seconds: float, show_all: bool) -> str:
    kinds: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        kinds[row["kind"]].append(row["passed"])
    passed = sum(r["passed"] for r in rows)
    lines = [
        "# Answer quality: remember + recall over MCP (bench/quality/answers_bench.py)",
        "",
        f"Sets: {', '.join(_shown(p) for p in sets)}",
        f"Scenarios: {len({r['scenario'] for r in rows})}, questions: {len(rows)}, run time {seconds:.0f} s.",
        "",
        f"**Overall: {passed} / {len(rows)} ({100 * passed / max(len(rows), 1):.1f}%)**",
        "",
        "| kind | passed | total | rate |",
        "|---|---|---|---|",
    ]
    for kind in sorted(kinds):
        results = kinds[kind]
        lines.append(f"| {kind} | {sum(results)} | {len(results)} | {100 * sum(results) / len(results):.0f}% |")
    shown = rows if show_all else [r for r in rows if not r["passed"]]
    lines += ["", "## All answers" if show_all else "## Failures", ""]
    for row in shown:
        mark = "PASS" if row["passed"] else "FAIL"
        lines.append(f"- {mark} [{row['scenario']} / {row['kind']}] {row['q']}")
        lines.append(f"  -> {row['answer']!r} (confidence {row['confidence']})")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="*", type=Path, help="answer sets (default: the shared dev set and the repo's)")
    parser.add_argument("--show-all", action="store_true", help="list every answer, not only the failures")
    parser.add_argument("--no-save", action="store_true", help=f"do not write {RESULTS.relative_to(REPO)}")
    parser.add_argument("--smoke", action="store_true", help="one scenario of the repo's set, nothing saved")
    options = parser.parse_args()
    sets = options.sets or ([REPO_SET] if options.smoke else [SHARED_SET.resolve(), REPO_SET])
    scenarios = load_scenarios(sets)[:1] if options.smoke else load_scenarios(sets)
    started = time.perf_counter()
    # A smoke run checks the script, not the model: the hashing embedder loads at once.
    rows = asyncio.run(run(scenarios, embedder="hashing" if options.smoke else None))
    text = report(rows, sets, time.perf_counter() - started, options.show_all)
    print(text)
    if not (options.no_save or options.smoke):
        label = run_label(sets)
        results_path(label).parent.mkdir(parents=True, exist_ok=True)
        results_path(label).write_text(text)
        kinds: dict[str, list[bool]] = defaultdict(list)
        for row in rows:
            kinds[row["kind"]].append(row["passed"])
        figures = {"passed": sum(r["passed"] for r in rows), "questions": len(rows)}
        figures |= {f"{kind}_passed": sum(v) for kind, v in sorted(kinds.items())}
        append_history("answers", label, figures, machine_info())


if __name__ == "__main__":
    main()
