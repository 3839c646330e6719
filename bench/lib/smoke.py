"""Smoke mode: tiny sizes in a scratch directory, so a test can check that a script still runs."""

from __future__ import annotations

import shutil
from pathlib import Path

SMOKE_HELP = "tiny sizes, seconds: checks that the script still runs (nothing saved)"

_smoke = False


def smoke_workdir(name: str) -> Path:
    """A fresh scratch directory for a smoke run, removed at exit; servers started from now
    on use the hashing embedder."""
    import atexit
    import tempfile

    global _smoke
    _smoke = True
    path = Path(tempfile.mkdtemp(prefix=f"polyg-smoke-{name}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def in_smoke_run() -> bool:
    """True once `smoke_workdir` was called: servers started from then on use the hashing embedder."""
    return _smoke


def smoke_store(name: str, entities: int = 200) -> Path:
    """A tiny store for a smoke run, loaded by the bulk loader (its database stopped after)."""
    from bench.lib import bulk_load

    data_dir = smoke_workdir(name) / "store"
    bulk_load.main(["--data-dir", str(data_dir), "--entities", str(entities)])
    return data_dir
