"""Smoke mode: tiny sizes in a scratch directory, so a test can check that a script still runs.

What a smoke run changes in every polyg it starts (servers, and cores opened in the script's own
process) is here, in `SMOKE_ENV`: the hashing embedder (the model is the point of no smoke run),
and no English pipeline loaded ahead at start. A polyg that parses still loads the pipeline, at
its first parse; most of them never parse (a kg preload, a floor's reads), and the load ahead
was about a second of CPU in each of some 30 processes of the smoke test, for nothing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

SMOKE_HELP = "tiny sizes, seconds: checks that the script still runs (nothing saved)"

# The entities of the kg preload (bench/lib/datadirs.py's `ensure_preloaded`) in every smoke run
# that preloads them: one size, so that the smoke test builds that store once for all of them.
SMOKE_ENTITIES = 40
SMOKE_ENV = {"POLYG_EMBEDDING_PROVIDER": "hashing", "POLYG_PRELOAD_NLP": "false"}
# A directory the smoke runs of one test share (tests/e2e/test_bench_smoke.py sets it): what two
# scripts' smoke runs both make by the same code is made there once (`shared_build`).
SHARED_DIR_ENV = "BENCH_SMOKE_SHARED_DIR"

_smoke = False


def enter_smoke_mode() -> None:
    """From now on, servers started through `bench.lib.env.clean_env` (or given `smoke_env()`)
    use `SMOKE_ENV`, and so do cores opened in this process: their settings read the
    environment (an embedder the script names itself still wins)."""
    global _smoke
    _smoke = True
    os.environ["POLYG_PRELOAD_NLP"] = SMOKE_ENV["POLYG_PRELOAD_NLP"]


def smoke_workdir(name: str) -> Path:
    """A fresh scratch directory for a smoke run, removed at exit; enters smoke mode."""
    import atexit
    import tempfile

    enter_smoke_mode()
    path = Path(tempfile.mkdtemp(prefix=f"polyg-smoke-{name}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def in_smoke_run() -> bool:
    """True once smoke mode was entered (`enter_smoke_mode`, `smoke_workdir`)."""
    return _smoke


def smoke_env() -> dict[str, str]:
    """The environment a server started now takes on top of its own: `SMOKE_ENV` in a smoke run."""
    return dict(SMOKE_ENV) if _smoke else {}


def shared_build(name: str, build: Callable[[Path], None]) -> Path:
    """A directory `build` filled: once for all the smoke runs of a test that share
    `SHARED_DIR_ENV` (the others wait for it, then reuse it: never change it, work on a copy), or
    for this run alone when the variable is not set. A build that fails is made again by the next."""
    import fcntl

    enter_smoke_mode()
    shared = os.environ.get(SHARED_DIR_ENV)
    if not shared:
        path = smoke_workdir(name)
        build(path)
        return path
    path = Path(shared) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also on an error
        if not (path / ".built").exists():
            _build_at(path, build)
    return path


def offer_shared(name: str, fill: Callable[[Path], None]) -> None:
    """Give the other smoke runs of this test what `shared_build(name, ...)` makes, when this run
    has made it already by the same code (`fill` copies it in): unless another run is making it
    or made it (no wait here), or no directory is shared."""
    import fcntl

    shared = os.environ.get(SHARED_DIR_ENV)
    if not shared:
        return
    path = Path(shared) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / f"{name}.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another run is making it
        if not (path / ".built").exists():
            _build_at(path, fill)


def _build_at(path: Path, build: Callable[[Path], None]) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    build(path)
    (path / ".built").touch()  # last: a build stopped midway is made again


def smoke_store(name: str, entities: int = 200) -> Path:
    """A copy, this run's own, of a tiny store loaded by the bulk loader (its database stopped
    after), loaded once for every smoke run of a test that asks for one of this size."""
    from bench.lib import bulk_load
    from bench.lib.datadirs import fresh_copy

    def load(path: Path) -> None:
        bulk_load.main(["--data-dir", str(path / "store"), "--entities", str(entities)])

    loaded = shared_build(f"bulk-store-{entities}", load)
    return fresh_copy(loaded / "store", smoke_workdir(name) / "store")
