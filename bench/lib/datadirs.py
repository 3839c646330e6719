"""Pristine data dirs built once by a child process and cached, and fresh copies of them to run on."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.lib.database import read_db_pid, stop_db
from bench.lib.env import clean_env
from bench.lib.paths import REPO
from bench.lib.smoke import in_smoke_run, shared_build

PRELOAD_VERSION = 2  # bump when the generated data changes, so cached data dirs are rebuilt


def preload_meta_path(pristine: Path) -> Path:
    return pristine.parent / f"{pristine.name}.meta.json"


def ensure_preloaded(
    workdir: Path,
    n: int,
    *,
    embed: str = "auto",
    max_embed_s: float = 600.0,
    log: Callable[[str], None] = print,
) -> tuple[Path, dict[str, Any]]:
    """A pristine data dir holding n generated entities, built once and cached in workdir.

    Built by `python -m bench.lib.preload preload` in a child process (so the model and the write
    buffers never inflate the benchmark's own memory). In a smoke run, once for every smoke run
    of the test that preloads as many entities alike (`shared_build`): they only copy it.
    """
    if in_smoke_run():
        workdir = shared_build(
            f"kg-preload-{n}-{embed}", lambda d: _preloaded(d, n, embed=embed, max_embed_s=max_embed_s, log=log)
        )
    return _preloaded(workdir, n, embed=embed, max_embed_s=max_embed_s, log=log)


def _preloaded(
    workdir: Path, n: int, *, embed: str, max_embed_s: float, log: Callable[[str], None]
) -> tuple[Path, dict[str, Any]]:
    from bench.lib.preload import BATCH, preload  # it imports this module

    pristine = workdir / f"kg-{n}" / "pristine"
    cmd = [sys.executable, "-m", "bench.lib.preload", "preload", "--data-dir", str(pristine)]
    cmd += ["--entities", str(n), "--embed", embed, "--max-embed-s", str(max_embed_s)]
    meta = cached_build(
        pristine,
        cmd,
        fits=lambda m: m.get("version") == PRELOAD_VERSION and m.get("entities") == n,
        workdir=workdir,
        log=log,
        in_smoke=lambda: asyncio.run(preload(pristine, n, embed, max_embed_s, BATCH)),
    )
    return pristine, meta


_COPY_SKIP = shutil.ignore_patterns("*.pid", "*.sock", "*.lock", "logs")


def fresh_copy(pristine: Path, dest: Path) -> Path:
    """Copy a pristine data dir (server stopped) to dest, replacing it; runs mutate only copies."""
    if read_db_pid(pristine) is not None:
        raise RuntimeError(f"{pristine} has a running server; refusing to copy it")
    if dest.exists():
        stop_db(dest)
        shutil.rmtree(dest)
    shutil.copytree(pristine, dest, ignore=_COPY_SKIP)
    return dest


def cached_build(
    pristine: Path,
    cmd: Sequence[str],
    *,
    fits: Callable[[dict[str, Any]], bool],
    workdir: Path,
    base: Path | None = None,
    log: Callable[[str], None] = print,
    resume: bool = False,
    in_smoke: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The info of the pristine data dir `cmd` builds (a child process printing its JSON info
    last), built once and cached with its info beside it; rebuilt when the cached info does not
    `fits`. `base`: a pristine dir to start from (copied first). `resume`: a pristine dir left
    unfinished is kept for `cmd` to go on with (it resumes), not deleted. `in_smoke`: what the
    child runs, called in this process instead in a smoke run (the child keeps the model and
    the write buffers out of the benchmark's memory, which a smoke run does not measure)."""
    meta_path = preload_meta_path(pristine)
    if meta_path.exists():
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        if fits(meta):
            return meta
    if pristine.exists() and not resume:
        stop_db(pristine)
        shutil.rmtree(pristine)
    pristine.parent.mkdir(parents=True, exist_ok=True)
    if base is not None:
        fresh_copy(base, pristine)
    log(f"building {pristine} ...")
    t = time.perf_counter()
    log_file = pristine.parent / "preload.log"
    if in_smoke is not None and in_smoke_run():
        meta = in_smoke()
    else:
        with log_file.open("w") as err:  # progress lines, readable while it runs
            proc = subprocess.run(
                list(cmd), env=clean_env(workdir), stdout=subprocess.PIPE, stderr=err, text=True, check=False, cwd=REPO
            )
        if proc.returncode != 0:
            stop_db(pristine)
            raise RuntimeError(f"building {pristine} failed ({proc.returncode}):\n{log_file.read_text()[-4000:]}")
        meta = json.loads(proc.stdout.strip().splitlines()[-1])
    meta["wall_s"] = round(time.perf_counter() - t, 1)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    log(f"built {pristine} in {meta['wall_s']} s: {json.dumps(meta)}")
    return meta
