"""Every benchmark script runs end to end in its smoke mode (tiny sizes, seconds), so that the
scripts cannot rot between the runs that measure. Nothing here looks at a timing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.mcp_helpers import redis_servers_under

REPO = Path(__file__).resolve().parent.parent
# Every runnable script: the benchmarks (latency/, quality/) and the tools; bench/lib holds modules.
SCRIPTS = sorted(
    str(p.relative_to(REPO / "bench"))
    for folder in ("latency", "quality", "tools")
    for p in (REPO / "bench" / folder).glob("*.py")
    if p.name != "__init__.py"
)
assert SCRIPTS, "no bench scripts found"
TIMEOUT_S = 240


def test_bench_scripts_run_in_smoke_mode(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POLYG_", "FALKORDB_"))}
    env.update(TMPDIR=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONUNBUFFERED="1")
    results_before = _snapshot(REPO / "bench" / "results")
    # All at once: most of each run is waiting on a server or a model load.
    runs = {
        name: subprocess.Popen(
            [sys.executable, str(REPO / "bench" / name), "--smoke"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in SCRIPTS
    }
    failures = {}
    try:
        for name, proc in runs.items():
            out, _ = proc.communicate(timeout=TIMEOUT_S)
            if proc.returncode != 0:
                failures[name] = out[-3000:]
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        leftover = redis_servers_under(tmp_path)
        for pid in leftover:
            os.kill(pid, signal.SIGKILL)
    assert not failures, "\n\n".join(f"--- bench/{name}:\n{out}" for name, out in failures.items())
    assert not leftover, f"databases left running by smoke runs: {leftover}"
    # A smoke run measures nothing worth keeping: no result file, no history row.
    assert _snapshot(REPO / "bench" / "results") == results_before


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.glob("*")} if folder.exists() else {}
