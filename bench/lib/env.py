"""How a benchmark starts polyg: its executable, and an environment of defaults only."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from bench.lib.smoke import smoke_env

# Set by bench/lib/fork_runner.py (which cannot be imported here: it imports this module).
FORKED_POLYG_ENV = "BENCH_FORKED_POLYG"

# How long a server over HTTP may take to answer /health, or a test cluster to form (the helpers
# in tests/ wait 60 s): a bound, not a measurement, and a loaded machine (the smoke test starts
# every script at once) took longer for both.
SERVER_START_S = 600.0


def polyg_executable() -> str:
    """The `polyg` command: the virtualenv's, or in the bench smoke test the one that has its
    runner fork the polyg (bench/lib/fork_runner.py)."""
    if forked := os.environ.get(FORKED_POLYG_ENV):
        return forked
    candidate = Path(sys.executable).parent / "polyg"
    return str(candidate) if candidate.exists() else (shutil.which("polyg") or "polyg")


def clean_env(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for polyg: defaults only (no POLYG_* from the caller, no user config file)."""
    xdg = workdir / "xdg-config"
    xdg.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYG_")}
    env["XDG_CONFIG_HOME"] = str(xdg)
    env.update(smoke_env())  # a smoke run checks the script, not the model (bench/lib/smoke.py)
    env.update(extra or {})
    return env
