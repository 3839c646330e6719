"""Runs bench scripts' smoke runs, each in a process forked from this one, for the bench smoke test.

Most of a script's smoke run, on its own, was the start of its Python process: importing the MCP
SDK and polyg took about 1.3 s of CPU in each of some 30 scripts, for a run of 1-10 s. This
process imports them once, then forks one child per script: the child runs the script as
`python bench/<script> --smoke` would (`__main__`, its argv, its directory first on sys.path, its
exit code), its output in its log file. What the script starts itself (servers, preload children)
is started as before.

Protocol, one line each, tab-separated: stdin `run <script> <log>` starts a script; stdout
`exit <script> <returncode>` when it ends (negative: the signal that ended it, as subprocess
says). End of stdin: the children still running are killed and reported, then this process exits.

Usage: python -m bench.lib.smoke_runner   (from the repository root)
"""

from __future__ import annotations

import gc
import importlib
import os
import runpy
import selectors
import signal
import sys
import threading
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
# What the scripts share, imported once here (all of it in pure Python: no thread is started).
PRELOAD = (
    "mcp",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "httpx",
    "polyg.runtime.app",
    "polyg.config",
    "bench.lib.server",
    "bench.lib.runner",
    "bench.lib.machine",
    "bench.lib.datadirs",
    "bench.lib.inprocess",
)


def main() -> int:
    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a fork copies no thread: a child would miss it
        raise RuntimeError(f"an import started a thread: {threading.enumerate()}")
    gc.freeze()  # the children then leave the imported objects' pages shared (no collector writes)
    running: dict[int, tuple[str, int]] = {}  # pidfd -> (script, pid)
    events = selectors.DefaultSelector()
    events.register(sys.stdin.fileno(), selectors.EVENT_READ)
    pending = b""
    stdin_open = True
    while stdin_open or running:
        for key, _ in events.select():
            if key.fd == sys.stdin.fileno():
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    stdin_open = False
                    events.unregister(key.fd)
                    for _, pid in running.values():
                        os.kill(pid, signal.SIGKILL)
                    continue
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    _, script, log = line.decode().split("\t")
                    pid = _fork(script, Path(log))
                    pidfd = os.pidfd_open(pid)
                    running[pidfd] = (script, pid)
                    events.register(pidfd, selectors.EVENT_READ)
            else:
                script, pid = running.pop(key.fd)
                events.unregister(key.fd)
                os.close(key.fd)
                _, status, usage = os.wait4(pid, 0)
                print(f"exit\t{script}\t{os.waitstatus_to_exitcode(status)}", flush=True)
                # The CPU of the script and of what it waited for (not its detached databases).
                print(f"{script}: {usage.ru_utime + usage.ru_stime:.1f} s CPU", file=sys.stderr, flush=True)
    return 0


def _fork(script: str, log: Path) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    # The child: from here on it is `python bench/<script> --smoke`. An exception or a
    # SystemExit from the script ends this process as it would have ended that one.
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    path = BENCH / script
    sys.argv = [str(path), "--smoke"]
    sys.path[0] = str(path.parent)
    runpy.run_path(str(path), run_name="__main__")
    sys.exit(0)


if __name__ == "__main__":
    sys.exit(main())
