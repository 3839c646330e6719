"""Startup benchmark: how soon a freshly spawned `polyg serve` (stdio) answers `initialize`
and a first `tools/list`, for several `--toolsets` choices, against older commits in the same run.

Each trial spawns `python -m polyg serve --data-dir DIR [--toolsets ...]` with the initialize
request already written to its stdin, and times spawn -> the first stdout line (the initialize
answer), then sends `notifications/initialized` and `tools/list` and times spawn -> that answer;
then it closes stdin and waits for the process (and its embedded FalkorDB) to stop. Nothing
else runs meanwhile. Also recorded: the CPU time the server process had used when it answered
`initialize` (every thread; less sensitive to a loaded machine than the wall clock). Bytecode
is cached, as in an installed package: one unmeasured start per tree and choice writes it.
The floor is an interpreter that echoes one line (`python -c`), timed the same way.

A baseline (`--baseline REV[,REV...]`) is the `polyg` package of that commit, unpacked with
`git archive` into the work directory and run with the same virtualenv (PYTHONPATH): trials of
every tree and toolset choice are interleaved round by round, so load on a shared machine falls
on all of them alike. Compare the same-run ratios, not absolute times. A commit from before
`--toolsets all` existed serves all its toolsets by default: its "all" row is that.

The sha256 of each `tools/list` answer is recorded: two trees that list the same tools answer
byte for byte the same.

Usage: .venv/bin/python bench/latency/startup_bench.py [--runs 7] [--baseline 92471b6] [--toolsets kg,default,all]
Results: bench/results/startup.md and .json, and a row in history.csv.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.database import stop_db
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, describe_machine, machine_info
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, smoke_workdir
from bench.lib.stats import median

CHOICES = {"kg": ["--toolsets", "kg"], "default": [], "all": ["--toolsets", "all"]}
PROTOCOL = "2025-06-18"
EXIT_TIMEOUT_S = 120.0
FLOOR = "floor (python echo)"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def request(rid: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        message["id"] = rid
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


INITIALIZE = request(
    1,
    "initialize",
    {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "startup-bench", "version": "1"}},
)
LIST_TOOLS = request(None, "notifications/initialized") + request(2, "tools/list", {})


def baseline_tree(rev: str, workdir: Path) -> Path:
    """The `polyg` package of commit `rev`, unpacked once into the work directory."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", f"{rev}^{{commit}}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tree = workdir / f"startup-tree-{sha}"
    if not (tree / "polyg" / "__init__.py").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, "polyg"], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def toolset_args(tree: Path, choice: str) -> list[str]:
    """The serve options for a toolset choice; a tree that predates `all` serves all by default."""
    if choice == "all" and '"all"' not in (tree / "polyg" / "config.py").read_text():
        return []
    return CHOICES[choice]


def _read_line(stream: IO[bytes]) -> bytes:
    line = stream.readline()
    if not line:
        raise RuntimeError("the server closed stdout before answering")
    return line


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) the process has used so far: less sensitive to
    other work on the machine than the wall-clock time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def trial(tree: Path, choice: str, data_dir: Path, env: dict[str, str], errlog: IO[bytes]) -> dict[str, Any]:
    """One fresh server: seconds from spawn to the initialize answer and to the tools/list answer."""
    command = [sys.executable, "-m", "polyg", "serve", "--data-dir", str(data_dir), *toolset_args(tree, choice)]
    env = {**env, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        first = _read_line(proc.stdout)
        init_s = time.perf_counter() - t0
        init_cpu_s = cpu_seconds(proc.pid)
        proc.stdin.write(LIST_TOOLS)
        proc.stdin.flush()
        listing = _read_line(proc.stdout)
        list_s = time.perf_counter() - t0
        proc.stdin.close()
        proc.wait(timeout=EXIT_TIMEOUT_S)
        exit_s = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stop_db(data_dir)
    if b'"result"' not in first:
        raise RuntimeError(f"initialize failed: {first[:300]!r}")
    tools = json.loads(listing)["result"]["tools"]
    return {
        "init_s": init_s,
        "init_cpu_s": init_cpu_s,
        "list_s": list_s,
        "exit_s": exit_s,
        "tools": len(tools),
        "tools_list_sha256": hashlib.sha256(listing).hexdigest()[:16],
    }


def floor_trial(env: dict[str, str]) -> dict[str, Any]:
    """An interpreter that answers one line: what any Python server pays before its own work."""
    echo = "import sys; sys.stdout.write(sys.stdin.readline()); sys.stdout.flush()"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", echo], input=INITIALIZE, env=env, capture_output=True, check=True)
    init_s = time.perf_counter() - t0
    assert proc.stdout == INITIALIZE
    return {"init_s": init_s}


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    trees = {"HEAD": REPO}
    for rev in args.baseline:
        trees[rev] = baseline_tree(rev, workdir)
    # Bytecode cached as an installed package has it (pip compiles it): without, every start
    # compiles polyg's sources again, which measures the size of the code, not its start.
    env = {k: v for k, v in clean_env(workdir).items() if k != "PYTHONDONTWRITEBYTECODE"}
    errlog_path = workdir / "startup-server.log"
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {name: {c: [] for c in args.toolsets} for name in trees}
    floor: list[dict[str, Any]] = []
    order = [(name, choice) for choice in args.toolsets for name in trees]
    with errlog_path.open("wb") as errlog:
        # Unmeasured: writes the bytecode caches, warms the file cache (a smoke run measures nothing).
        for name, choice in order if not args.smoke else []:
            trial(trees[name], choice, workdir / f"startup-data-{name}", env, errlog)
    with errlog_path.open("ab") as errlog, LoadSampler() as sampler:
        for r in range(args.runs):
            floor.append(floor_trial(env))
            # Rotated each round, so that no tree always runs right after another's shutdown.
            k = r % len(order)
            for name, choice in order[k:] + order[:k]:
                data_dir = workdir / f"startup-data-{name}"
                t = trial(trees[name], choice, data_dir, env, errlog)
                samples[name][choice].append(t)
                log(f"run {r + 1}/{args.runs} {name} {choice}: init {t['init_s']:.3f} s, list {t['list_s']:.3f} s")
    rows = []
    for name, by_choice in samples.items():
        for choice, trials in by_choice.items():
            rows.append(
                {
                    "tree": name,
                    "toolsets": choice,
                    "init_s_median": median([t["init_s"] for t in trials]),
                    "init_cpu_s_median": median([t["init_cpu_s"] for t in trials]),
                    "list_s_median": median([t["list_s"] for t in trials]),
                    "tools": trials[0]["tools"],
                    "tools_list_sha256": sorted({t["tools_list_sha256"] for t in trials}),
                    "trials": trials,
                }
            )
    return {
        "runs": args.runs,
        "trees": {name: "working tree" if name == "HEAD" else f"git archive of {name}" for name in trees},
        "floor_s_median": median([f["init_s"] for f in floor]),
        "rows": rows,
        "machine_load": sampler.summary(),
    }


def render(result: dict[str, Any], info: dict[str, Any]) -> str:
    head = {r["toolsets"]: r for r in result["rows"] if r["tree"] == "HEAD"}
    lines = [
        "# Startup: spawn -> initialize answered, -> tools/list answered (stdio)",
        "",
        describe_machine(info),
        f"Machine load while measuring: {result['machine_load']}.",
        "",
        f"Medians of {result['runs']} fresh servers per row, all rows interleaved in one run; "
        f"ratio = this row's initialize / HEAD's for the same toolsets. "
        f"Floor (an interpreter echoing one line): {result['floor_s_median']:.3f} s.",
        "",
        "| tree | toolsets | tools | initialize, s | CPU until initialize, s | tools/list, s "
        "| initialize ratio to HEAD | tools/list sha256 |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in result["rows"]:
        ratio = r["init_s_median"] / head[r["toolsets"]]["init_s_median"]
        lines.append(
            f"| {r['tree']} | {r['toolsets']} | {r['tools']} | {r['init_s_median']:.3f} | "
            f"{r['init_cpu_s_median']:.2f} | {r['list_s_median']:.3f} | {ratio:.2f} | "
            f"{', '.join(r['tools_list_sha256'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7, help="fresh servers per tree and toolset choice")
    p.add_argument("--baseline", default="92471b6", help="commits to compare with, comma-separated ('' for none)")
    p.add_argument("--toolsets", default="kg,default,all", help=f"choices among {', '.join(CHOICES)}")
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "polyg-bench")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args()
    args.baseline = [rev for rev in args.baseline.split(",") if rev]
    args.toolsets = [c for c in args.toolsets.split(",") if c]
    unknown = sorted(set(args.toolsets) - set(CHOICES))
    if unknown:
        p.error(f"unknown toolset choices {unknown}")
    if args.smoke:
        args.workdir, args.runs, args.baseline, args.toolsets, args.no_save = (
            smoke_workdir("startup"),
            1,
            [],
            ["kg"],
            True,
        )
    args.workdir.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    result = run(args, args.workdir)
    markdown = render(result, info)
    print(markdown)
    if not args.no_save:
        figures = {
            f"{r['tree']}_{r['toolsets']}_init_s": r["init_s_median"] for r in result["rows"] if r["tree"] == "HEAD"
        }
        md, _ = write_results("startup", markdown, {"machine": info, **result}, figures=figures)
        print(f"saved {md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
