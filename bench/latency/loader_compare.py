"""The entity-scale preload's loaders side by side, in one run on fresh data dirs (not a tool call:
the store the entity-scale table measures tool calls against):

- 'tools': the preload the benchmark used up to 100k (`bench.lib.preload`: entity rows through
  the core's `write_entities` in batches of 256, vectors by the vectorizer into indexed nodes;
  then relationships through the core's `write_relations`, `entity_scale.py preload-relations`);
- 'bulk, indexes before' and 'bulk, indexes after' (`bench.lib.bulk_load`): rows with their
  vectors in one statement, in batches of 5,000; every index created first, or the full-text
  and vector indexes created after the rows.

Each runs in a child process (as the benchmark runs them), one after the other. Rows/s: entity
rows written per second; vectors/s: entities per second until every vector is stored and
searchable (its index built).

Usage: .venv/bin/python bench/latency/loader_compare.py [--entities 100000] [--workdir DIR]
Results: bench/results/loader-compare-<n>.md/.json, a row in history.csv.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg

from bench.lib.database import stop_db
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, smoke_workdir

BENCHMARK = "loader-compare"
PYTHON_M = (sys.executable, "-m")
HASHED = ("--embed", "hashing")
SCALE = Path(__file__).resolve().parent / "entity_scale.py"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# A bound on one loader's child, not a measurement: 100k rows took under 10 minutes here.
CHILD_TIMEOUT_S = 6 * 3600.0


def child(cmd: list[str], workdir: Path, log_file: Path, data_dir: Path) -> dict[str, Any]:
    """Run one loader step; whatever happens to it (a failure, a timeout, this script
    interrupted), the database it started in `data_dir` is stopped before this returns: the
    embedded store's server daemonizes and would outlive both processes."""
    try:
        with log_file.open("w") as err:
            proc = subprocess.run(
                cmd,
                env=clean_env(workdir),
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                check=False,
                cwd=REPO,
                timeout=CHILD_TIMEOUT_S,
            )
    finally:
        if stop_db(data_dir):
            log(f"stopped the database {' '.join(cmd[1:3])} left running in {data_dir}")
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{log_file.read_text()[-2000:]}")
    info: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return info


def fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path / "data"


def tools_loader(n: int, workdir: Path) -> dict[str, Any]:
    data = fresh(workdir / "tools")
    t = time.perf_counter()
    entities = child(
        [*PYTHON_M, "bench.lib.preload", "preload", "--data-dir", str(data), "--entities", str(n), *HASHED],
        workdir,
        workdir / "tools.log",
        data,
    )
    rel = child(
        [sys.executable, str(SCALE), "preload-relations", "--data-dir", str(data), "--n", str(n), "--embed", "hashing"],
        workdir,
        workdir / "tools-relations.log",
        data,
    )
    return {
        "loader": "tools",
        "entity_rows_s": entities["write_s"],
        "vectors_s": entities["embed_s"],  # after the rows: until the vectorizer stored the last
        "vectors_until_s": round(entities["write_s"] + entities["embed_s"], 1),
        "relations": rel["relations"],
        "relations_s": rel["write_s"],
        "wall_s": round(time.perf_counter() - t, 1),
        "raw": {"entities": entities, "relations": rel},
    }


def bulk_loader(n: int, workdir: Path, indexes: str) -> dict[str, Any]:
    data = fresh(workdir / f"bulk-{indexes}")
    t = time.perf_counter()
    info = child(
        [*PYTHON_M, "bench.lib.bulk_load", "--data-dir", str(data), "--entities", str(n), "--indexes", indexes],
        workdir,
        workdir / f"bulk-{indexes}.log",
        data,
    )
    return {
        "loader": f"bulk, indexes {indexes}",
        "entity_rows_s": info["write_s"],
        "vectors_until_s": info["embed_s"],  # rows, index statements and the index build
        "index_s": round(info["index_statements_s"] + info["index_build_s"], 1),
        "relations": info["relations"],
        "relations_s": info["relations_s"],
        "wall_s": round(time.perf_counter() - t, 1),
        "raw": info,
    }


def rate(n: float, seconds: float | None) -> str:
    return f"{n / seconds:,.0f}" if seconds else "-"


def render(data: dict[str, Any]) -> str:
    n = data["entities"]
    lines = [
        f"# Entity-scale preload: loaders compared at {n:,} entities",
        "",
        "One run, fresh data dirs, each loader in a child process in turn, hashed vectors (384-d), embedded "
        "FalkorDB; 2 relationships per entity. Not a tool call: the store the entity-scale table measures "
        "tool calls against (bench/results/entity-scale.md). Shared, noisy 2-core machine (load at the end).",
        "",
        "| loader | entity rows s | rows/s | vectors searchable after s | vectors/s | index build s | "
        "relationships s | rel/s | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in data["loaders"]:
        lines.append(
            f"| {r['loader']} | {r['entity_rows_s']} | {rate(n, r['entity_rows_s'])} | {r['vectors_until_s']} | "
            f"{rate(n, r['vectors_until_s'])} | {r.get('index_s', '-')} | {r['relations_s']} | "
            f"{rate(r['relations'], r['relations_s'])} | {r['wall_s']} |"
        )
    ml = data.get("machine_load", {}).get("load1", {})
    lines += [
        "",
        "'vectors searchable after': from the first row written until every entity's vector is stored and "
        "in its vector index ('tools': the vectorizer's last write; 'bulk, indexes after': the rows, then "
        "the index build over them). Rows and vectors of 'bulk' are written together.",
        "",
        f"Run {data['machine']['date']}: {describe_machine(data['machine'])}; load average during the run, median "
        f"{ml.get('median', '-')} (max {ml.get('max', '-')}).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--entities", type=int, default=100_000)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-loader-compare"))
    p.add_argument("--loaders", default="bulk-after,bulk-before,tools")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args(argv)
    # A SIGTERM (a harness stopping the run) unwinds like an error, through each child's cleanup.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.smoke:
        args.entities, args.workdir, args.no_save = 300, smoke_workdir("loader-compare"), True
        args.loaders = "bulk-after,bulk-before,tools"
    args.workdir = args.workdir.resolve()
    args.workdir.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"benchmark": BENCHMARK, "entities": args.entities, "machine": machine_info(), "loaders": []}
    with LoadSampler() as load:
        for name in args.loaders.split(","):
            log(f"{name} at {args.entities} ...")
            if name == "tools":
                out = tools_loader(args.entities, args.workdir)
            else:
                out = bulk_loader(args.entities, args.workdir, name.removeprefix("bulk-"))
            log(f"{name}: {json.dumps({k: v for k, v in out.items() if k != 'raw'})}")
            data["loaders"].append(out)
    data["machine_load"] = load.summary()
    markdown = render(data)
    print(markdown)
    if not args.no_save:
        figures = {}
        for r in data["loaders"]:
            key = r["loader"].replace(", indexes ", "_").replace(" ", "_")
            figures[f"{key}_rows_per_s"] = round(args.entities / r["entity_rows_s"], 1)
            figures[f"{key}_vectors_per_s"] = round(args.entities / r["vectors_until_s"], 1)
        write_results(BENCHMARK, markdown, data, size=str(args.entities), figures=figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
