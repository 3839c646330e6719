"""The `polyg` command of a script run by bench/lib/smoke_runner.py: the runner forks the polyg.

It hands this process's stdin, stdout and stderr, its arguments, environment and directory to
the runner, which forks a polyg from its own process (the MCP SDK, polyg and the English
pipeline imported and loaded there once) and runs `polyg <arguments>` in it; this process then
waits for that polyg and exits as it exited. A signal this process is sent (the client's
terminate) is passed on to the polyg; when this process dies, the runner kills the polyg.

Only the standard library, and run with `python -S`: this start costs a few milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

SOCKET_ENV = "BENCH_SMOKE_RUNNER_SOCKET"


def main() -> int:
    runner = socket.socket(socket.AF_UNIX)
    runner.connect(os.environ[SOCKET_ENV])
    request = {"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(runner, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    answers = runner.makefile("rb")
    pid = int(answers.readline())
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda received, _: os.kill(pid, received))
    line = answers.readline()  # its exit code, as subprocess gives it; nothing if the runner died
    code = int(line) if line.strip() else 1
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
