"""The `polyg` command of the tests: forked from one process per test worker (bench/lib/fork_runner.py).

A `polyg serve` started as its own process spends about 1.3 s of CPU importing the MCP SDK and
polyg before it does anything, and the suite starts about a hundred. The runner imports them,
and loads the English pipeline, once per worker; each `polyg` command is then a fork of it,
reached through a launcher that hands it its stdio, arguments, environment and signals and exits
as it exits. What a test sees is the same: the MCP client speaks to it over the pipes it made,
signals and exit codes pass through, its embedded database is its own child.

A test about the process itself (what it imports, how Python starts it) uses `REAL_POLYG`; the
whole suite runs on real processes with POLYG_TESTS_NO_FORK=1.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
REAL_POLYG = [sys.executable, "-m", "polyg"]
NO_FORK_ENV = "POLYG_TESTS_NO_FORK"
READY_S = 120.0  # a bound for the runner's imports on a loaded machine, not a timing

_launcher: str | None = None


def forked_polyg() -> list[str] | None:
    """The launcher of this worker's runner, started at the first call; None with forking off."""
    global _launcher
    if os.environ.get(NO_FORK_ENV):
        return None
    if _launcher is None:
        _launcher = _start_runner()
    return [_launcher]


def runner_process(env: dict[str, str], errors: IO[str], **popen: Any) -> subprocess.Popen[str]:
    """A bench/lib/fork_runner.py process: its protocol on stdin and stdout, its log to `errors`."""
    return subprocess.Popen(
        [sys.executable, "-m", "bench.lib.fork_runner"],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        **popen,
    )


def _start_runner() -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLYG_", "FALKORDB_"))}
    # Its log (the CPU of each fork, and anything that goes wrong in it) is kept only if it fails.
    log = Path(tempfile.mkstemp(prefix="polyg-tests-fork-runner-", suffix=".log")[1])
    with log.open("w") as errors:
        runner = runner_process(env, errors)
    assert runner.stdin is not None and runner.stdout is not None
    line = runner.stdout.readline()  # `ready <launcher>`, or nothing if it failed to start
    if not line.startswith("ready\t"):
        runner.kill()
        raise RuntimeError(f"the tests' fork runner did not start:\n{log.read_text()[-3000:]}")
    atexit.register(_stop_runner, runner, log)
    return line.rstrip("\n").split("\t", 1)[1]


def _stop_runner(runner: subprocess.Popen[str], log: Path) -> None:
    assert runner.stdin is not None
    runner.stdin.close()  # it stops what it still runs, then exits
    try:
        code = runner.wait(timeout=60)
    except subprocess.TimeoutExpired:
        runner.kill()
        code = runner.wait()
    if code == 0:
        log.unlink(missing_ok=True)
