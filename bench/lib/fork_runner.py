"""Forks polyg commands, and bench scripts' smoke runs, from one process that imported them once.

Most of a short script's or a test server's CPU was Python starting: importing the MCP SDK and
polyg took about 1.3 s in each, and a server that parses loaded the English pipeline (1.4 s) for
a few sentences. This process imports them and loads the pipeline once, then forks:

- polyg commands (`polyg serve`, `polyg import`, ...): the launcher this process writes, named
  by `bench.lib.env.polyg_executable()` in what it forks and by the tests' `polyg_command()`,
  runs bench/lib/forked_polyg.py, which hands its stdin, stdout, stderr, arguments and
  environment to this process over a Unix socket; the fork runs `polyg <arguments>` with them,
  and forked_polyg.py exits as it exits. What a script starts otherwise (`python -m polyg`, its
  preload children, databases) is started as before;
- for the bench smoke test, one child per script, which runs it as `python bench/<script>
  --smoke` would (`__main__`, its argv, its directory first on sys.path, its exit code), its
  output in its log file.

Protocol with its starter, one line each, tab-separated: stdout `ready <launcher>` once the
launcher can be used; stdin `run <script> <log>` starts a script; stdout `exit <script>
<returncode>` when it ends (negative: the signal that ended it, as subprocess says). End of
stdin: the scripts still running are killed, the polyg commands told to stop (SIGTERM), and
this process exits when they have.

Usage: python -m bench.lib.fork_runner   (from the repository root)
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from bench.lib.env import FORKED_POLYG_ENV
from bench.lib.forked_polyg import SOCKET_ENV

BENCH = Path(__file__).resolve().parents[1]
# What the scripts and the polyg servers share, imported once here (no thread is started).
PRELOAD = (
    "mcp",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "httpx",
    "polyg.cli",
    "polyg.runtime.app",
    "polyg.stdio",
    "polyg.http",
    "bench.lib.server",
    "bench.lib.runner",
    "bench.lib.machine",
    "bench.lib.datadirs",
    "bench.lib.inprocess",
)


class Runner:
    def __init__(self, scratch: Path) -> None:
        self.events = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(str(scratch / "runner.sock"))
        self.listener.listen(64)
        self.events.register(self.listener, selectors.EVENT_READ, "accept")
        self.events.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
        self.scripts: dict[int, tuple[str, int]] = {}  # pidfd -> (script, pid)
        self.polygs: dict[int, tuple[socket.socket, int]] = {}  # pidfd -> (its forked_polyg's socket, pid)
        self.pending = b""
        self.stdin_open = True

    def loop(self) -> None:
        while self.stdin_open or self.scripts or self.polygs:
            for key, _ in self.events.select():
                if key.data == "stdin":
                    self._commands()
                elif key.data == "accept":
                    self._polyg(self.listener.accept()[0])
                elif isinstance(key.data, socket.socket):  # a forked_polyg ended first: its polyg goes too
                    self.events.unregister(key.fd)
                    for conn, pid in self.polygs.values():
                        if conn is key.data:
                            os.kill(pid, signal.SIGKILL)
                elif key.fileobj in self.scripts:
                    script, pid = self.scripts.pop(key.data)
                    print(f"exit\t{script}\t{self._reap(key.data, pid, script)}", flush=True)
                else:
                    conn, pid = self.polygs.pop(key.data)
                    code = self._reap(key.data, pid, "polyg")
                    if conn.fileno() in self.events.get_map():
                        self.events.unregister(conn)
                    with contextlib.suppress(OSError):  # its forked_polyg is gone
                        conn.sendall(f"{code}\n".encode())
                    conn.close()

    def _commands(self) -> None:
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:  # the test is done, or gave up on the scripts still running
            self.stdin_open = False
            self.events.unregister(sys.stdin.fileno())
            for _, pid in self.scripts.values():
                os.kill(pid, signal.SIGKILL)
            for _, pid in self.polygs.values():  # a server then stops its database
                os.kill(pid, signal.SIGTERM)
            return
        self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            _, script, log = line.decode().split("\t")
            pid = self._fork(functools.partial(_run_script, script, Path(log)))
            self._watch(self.scripts, pid, (script, pid))

    def _polyg(self, conn: socket.socket) -> None:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while message and not message.endswith(b"\n"):
            more = conn.recv(1 << 20)
            message += more
            if not more:
                break
        if len(fds) != 3 or not message.endswith(b"\n"):  # its forked_polyg died first
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        request = json.loads(message)
        pid = self._fork(functools.partial(_run_polyg, fds, request), conn)
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):  # its forked_polyg died meanwhile: seen as its end below
            conn.sendall(f"{pid}\n".encode())
        self._watch(self.polygs, pid, (conn, pid))
        self.events.register(conn, selectors.EVENT_READ, conn)

    def _watch(self, table: dict[int, tuple[object, int]], pid: int, entry: tuple[object, int]) -> None:
        pidfd = os.pidfd_open(pid)
        table[pidfd] = entry
        self.events.register(pidfd, selectors.EVENT_READ, pidfd)

    def _reap(self, pidfd: int, pid: int, what: str) -> int:
        self.events.unregister(pidfd)
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        # The CPU of the fork and of what it waited for (not the databases it detached).
        print(f"{what} {pid}: {usage.ru_utime + usage.ru_stime:.1f} s CPU", file=sys.stderr, flush=True)
        return os.waitstatus_to_exitcode(status)

    def _fork(self, child: Callable[[], None], *also_close: socket.socket) -> int:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            return pid
        # The child keeps none of this process's descriptors but the three it is given.
        self.events.close()
        self.listener.close()
        for fd in [*self.scripts, *self.polygs]:
            os.close(fd)
        for conn in [*(conn for conn, _ in self.polygs.values()), *also_close]:
            conn.close()
        child()  # a SystemExit or an exception from it ends the child as it would end that program
        sys.exit(0)


def _run_script(script: str, log: Path) -> None:
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    path = BENCH / script
    sys.argv = [str(path), "--smoke"]
    sys.path[0] = str(path.parent)
    runpy.run_path(str(path), run_name="__main__")


def _run_polyg(fds: list[int], request: dict[str, object]) -> None:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    argv, ignored = request["argv"], request["ignored"]
    assert isinstance(argv, list) and isinstance(ignored, list)
    for signum in ignored:
        signal.signal(signum, signal.SIG_IGN)
    sys.argv = ["polyg", *argv]
    from polyg.cli import main

    main()


def main() -> int:
    for name in PRELOAD:
        importlib.import_module(name)
    from polyg.nlp.pipeline import pipeline

    pipeline().load()
    if threading.active_count() != 1:  # a fork copies no thread: a child would miss it
        raise RuntimeError(f"a preload started a thread: {threading.enumerate()}")
    scratch = Path(tempfile.mkdtemp(prefix="smoke-runner-"))
    launcher = scratch / "polyg"
    launcher.write_text(
        f'#!/bin/sh\n{SOCKET_ENV}="{scratch / "runner.sock"}" '
        f'exec "{sys.executable}" -S "{BENCH / "lib" / "forked_polyg.py"}" "$@"\n'
    )
    launcher.chmod(0o755)
    os.environ[FORKED_POLYG_ENV] = str(launcher)  # read by `bench.lib.env.polyg_executable()`
    runner = Runner(scratch)
    print(f"ready\t{launcher}", flush=True)  # the launcher may be used from now on
    gc.freeze()  # the children then leave the imported objects' pages shared (no collector writes)
    runner.loop()  # a child never returns from it: it leaves by SystemExit, past what follows
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
