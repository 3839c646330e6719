"""Every benchmark script runs end to end in its smoke mode (tiny sizes, seconds), so that the
scripts cannot rot between the runs that measure. Nothing here looks at a timing.

The scripts, and the polyg commands they start, run forked from one runner process that imported
what they share once (bench/lib/fork_runner.py): Python's start was most of their CPU. A script
that fails there is run once more as a process of its own, as `python bench/<script> --smoke`."""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import IO

import pytest

from bench.lib.smoke import SHARED_DIR_ENV
from tests.fork_runner import runner_process
from tests.mcp_helpers import redis_servers_under

REPO = Path(__file__).resolve().parents[2]
# Every runnable script: the benchmarks (latency/, quality/) and the tools; bench/lib holds modules.
FOUND = {
    str(p.relative_to(REPO / "bench"))
    for folder in ("latency", "quality", "tools")
    for p in (REPO / "bench" / folder).glob("*.py")
    if p.name != "__init__.py"
}
assert FOUND, "no bench scripts found"
# The longest smoke runs (wall time alone, measured), started first: the run is CPU-bound, and one
# of them started last ran on alone while the other slots sat idle. Only an order, not a timing.
# locomo_recall's run gives its remembered conversation to locomo_misses and locomo_rerank
# (bench/lib/smoke.py's shared_build): it starts early, they (not listed) later, and find it made.
LONGEST_FIRST = (
    "latency/recall_bench.py",
    "latency/entity_scale.py",
    "tools/ui_screenshots.py",
    "latency/cluster_bench.py",
    "quality/locomo_recall.py",
    "tools/fuzz.py",
    "latency/concurrency_modes.py",
    "latency/kg_bench.py",
    "quality/answers_bench.py",
    "latency/retrieval_bench.py",
    "quality/extraction_bench.py",
    "latency/graphrag_bench.py",
)
assert set(LONGEST_FIRST) <= FOUND, f"not a bench script: {set(LONGEST_FIRST) - FOUND}"
SCRIPTS = [*LONGEST_FIRST, *sorted(FOUND - set(LONGEST_FIRST))]
# A hang guard, not a timing: the run fails when no script has finished for this long. Scripts
# run side by side on a shared 2-core machine, so a fixed time per script measured from the
# start failed whichever script came first in the order (the cluster's) at a load average of 50.
STALL_S = 240
# A script that fails among all the others is run once more on its own: one whose code has rotted
# fails both times, while replica_loss's server once failed its first PING health check at a load
# average of 30 (it passes alone in 3-5 s). A script that passes only alone is reported.
ALONE_S = 600
# A bound on the runner's exit once told to stop (servers it stops), not a timing.
RUNNER_EXIT_S = 120
# Scripts running at once (see the test).
AT_ONCE = 4


# The suite's 300 s per test ended this one at a load average of 55 before every script was
# done (each passes alone in 5-110 s); the stall guard above is what catches a hang.
@pytest.mark.timeout(1800)
def test_bench_scripts_run_in_smoke_mode() -> None:
    # A short scratch directory: chromium (ui_screenshots.py) puts a socket in TMPDIR, and a
    # worker's tmp_path under pytest-xdist made its path too long (it never answered).
    tmp_path = Path(tempfile.mkdtemp(prefix="polyg-bs-"))
    try:
        _run_every_script(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _run_every_script(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLYG_", "FALKORDB_"))}
    env.update(TMPDIR=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONUNBUFFERED="1")
    # What two scripts' smoke runs both make by the same code is made once (bench/lib/smoke.py).
    env[SHARED_DIR_ENV] = str(tmp_path / "shared")
    results_before = _snapshot(REPO / "bench" / "results")
    logs = {name: tmp_path / (name.replace("/", "_") + ".log") for name in SCRIPTS}
    # Each script runs forked from one runner process that imported what they all import
    # (bench/lib/fork_runner.py): that import was most of a short script's CPU. A few at a
    # time: all of them at once (30 scripts, each with a server) starved the tests beside them
    # on the parallel workers of two cores. Output goes to a file each (a pipe nobody reads
    # while waiting on another script could fill and block it).
    runner_log = tmp_path / "runner.log"
    with runner_log.open("w") as errors:
        # Its own group: what it forked and started, for the kill below.
        runner = runner_process(env, errors, start_new_session=True)
    assert runner.stdin is not None and runner.stdout is not None
    finished: queue.Queue[tuple[str, int]] = queue.Queue()
    threading.Thread(target=_report_exits, args=(runner.stdout, finished), daemon=True).start()
    running: set[str] = set()
    waiting = list(SCRIPTS)

    def start_next() -> None:
        name = waiting.pop(0)
        running.add(name)
        runner.stdin.write(f"run\t{name}\t{logs[name]}\n")
        runner.stdin.flush()

    while waiting and len(running) < AT_ONCE:
        start_next()
    failures = {}
    runner_ended = False
    try:
        for _ in SCRIPTS:
            try:
                name, returncode = finished.get(timeout=STALL_S)
            except queue.Empty:
                break
            if not name:
                runner_ended = True
                break
            running.discard(name)
            if returncode != 0:
                failures[name] = logs[name].read_text()[-3000:]
            if waiting:
                start_next()
    finally:
        runner.stdin.close()  # the runner kills the scripts still running, stops their servers, exits
        try:
            runner.wait(timeout=RUNNER_EXIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
        for name in running:
            failures[name] = (
                f"still running after no script finished for {STALL_S} s:\n" + (logs[name].read_text()[-3000:])
            )
        for name in waiting:
            failures[name] = f"not started: no script finished for {STALL_S} s before its turn"
        leftover = redis_servers_under(tmp_path)
        for pid in leftover:
            os.kill(pid, signal.SIGKILL)
    assert not runner_ended, f"the smoke runner ended before the scripts:\n{runner_log.read_text()[-3000:]}"
    for name in list(failures):
        alone = subprocess.run(
            [sys.executable, str(REPO / "bench" / name), "--smoke"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=ALONE_S,
            check=False,
        )
        if alone.returncode == 0:
            warnings.warn(f"bench/{name} failed among the others and passed alone:\n{failures.pop(name)}", stacklevel=1)
        else:
            failures[name] += f"\n\n(and alone:)\n{(alone.stdout + alone.stderr)[-3000:]}"
    leftover += redis_servers_under(tmp_path)
    for pid in leftover:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not failures, "\n\n".join(f"--- bench/{name}:\n{out}" for name, out in failures.items())
    assert not leftover, f"databases left running by smoke runs: {leftover}"
    # A smoke run measures nothing worth keeping: no result file, no history row.
    assert _snapshot(REPO / "bench" / "results") == results_before


def _report_exits(lines: IO[str], finished: queue.Queue[tuple[str, int]]) -> None:
    for line in lines:
        if not line.startswith("exit\t"):  # its `ready` line
            continue
        _, name, returncode = line.rstrip("\n").split("\t")
        finished.put((name, int(returncode)))
    finished.put(("", 0))  # the runner ended


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.glob("*")} if folder.exists() else {}
