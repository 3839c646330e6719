"""`polyg ARGS` run inside the test process, as the subprocess ran it, for a fraction of its cost.

A `python -m polyg` process costs a Python start with the MCP SDK's imports (about 1 s of CPU)
before the command does anything, and, on an embedded store nobody else holds, a FalkorDB
started and stopped. `run_cli` calls the CLI's own click command (polyg/cli.py's typer app)
with the environment, streams and exit code the subprocess had:

- `os.environ` is replaced whole by the subprocess's environment (tests/mcp_helpers.py
  `server_env`: HOME and XDG dirs of the test, no POLYG_* of the developer), then restored;
- stdin is empty, stdout and stderr are captured apart (typer's CliRunner isolation);
- the exit code is the command's `SystemExit`; an exception the CLI lets through prints its
  traceback on stderr and exits 1, as the interpreter would;
- the root logger starts bare, as in a fresh interpreter (a warning logged with no logging set
  up reaches stderr through `logging.lastResort`); `ingest` and `query` install polyg's JSON
  logging, whose queued records are written out into the captured stderr (as the process's exit
  did) and whose handlers are closed afterwards;
- what the CLI may change process-wide (root handlers and level, the levels polyg's logging
  sets, SIGINT/SIGTERM handlers, which `serve` installs) is put back after every run.

`held_store` keeps a data directory's embedded FalkorDB running while a block (a module) runs:
every command attaches to it through the store's users lock instead of starting and stopping
its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from typer.main import get_command
from typer.testing import CliRunner

from polyg import logs
from polyg.cli import app
from polyg.store.embedded import EmbeddedFalkor

# Loggers whose level polyg's logging set-up changes (polyg.logs.setup_logging).
_LEVELS_SET_BY_POLYG = ("mcp", "httpx", "uvicorn.access")
_HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class Completed:
    """A finished command, under the names subprocess.CompletedProcess gives them."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_cli(args: Sequence[str], env: Mapping[str, str]) -> Completed:
    """Run `polyg ARGS` in this process with `env` as its whole environment."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run(list(args), env)
    # Called from an async test: each command runs its own asyncio.run, which cannot start
    # inside a running loop. It runs in a thread of its own; the loop waits for it, as it
    # waited for subprocess.run.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="polyg-cli") as pool:
        return pool.submit(_run, list(args), env).result()


def run_process(command: Sequence[str], env: Mapping[str, str], *, timeout: float = 240) -> Completed:
    """`command` in a process of its own (stdin empty): for the few tests whose point is the
    process boundary (the exit status a shell sees, stdout a pipe, what a fresh interpreter imports)."""
    done = subprocess.run(
        list(command),
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return Completed(list(command), done.returncode, done.stdout, done.stderr)


def _run(args: list[str], env: Mapping[str, str]) -> Completed:
    command = get_command(app)
    root = logging.getLogger()
    with _environment(env), _logging_put_back(root), _signals_put_back():
        root.handlers.clear()
        root.setLevel(logging.WARNING)
        with CliRunner().isolation() as (stdout, stderr, _):
            try:
                # standalone_mode (click's default) ends every run in SystemExit.
                command.main(args=args, prog_name="polyg")
                code = 0
            except SystemExit as exc:
                code = _exit_status(exc.code)
            except Exception:
                traceback.print_exc()
                code = 1
            finally:
                _stop_polyg_logging()
                sys.stdout.flush()
                sys.stderr.flush()
            out, err = stdout.getvalue(), stderr.getvalue()
    return Completed(args, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def _exit_status(code: object) -> int:
    """The status a process ending in `SystemExit(code)` exits with (a message, printed on
    stderr by the interpreter, is status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _logging_put_back(root: logging.Logger) -> Iterator[None]:
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in _LEVELS_SET_BY_POLYG}
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, saved in levels.items():
            logging.getLogger(name).setLevel(saved)


def _stop_polyg_logging() -> None:
    """What the process's exit did (polyg.logs registers flush_logs at exit): every queued
    record written out, here into the captured stderr; then its handlers (the stderr stream
    and the log file) closed, which the exit did too."""
    listener = logs._listener  # set by setup_logging; flush_logs forgets it
    logs.flush_logs()
    for handler in listener.handlers if listener is not None else ():
        handler.close()


@contextlib.contextmanager
def _signals_put_back() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread: nothing to put back
        return
    saved = {signum: signal.getsignal(signum) for signum in _HANDLED_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def held_store(data_dir: Path) -> Iterator[EmbeddedFalkor]:
    """`data_dir`'s embedded FalkorDB (the CLI's `--data-dir`), running while the block runs.

    Each command attaches to it instead of starting one, and leaves it running when it
    detaches, since this holder is still attached; the block can check that the server's pid
    never changed. At the end the holder is the last user and shuts it down: a command that
    stayed attached (a users lock never released) would leave it running, which the caller
    checks with tests/mcp_helpers.py `reap_embedded`."""
    store = EmbeddedFalkor(data_dir / "db")
    store.start()
    try:
        store.wait_until_loaded(store.start_timeout)
        yield store
    finally:
        store.stop()
