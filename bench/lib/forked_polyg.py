"""The `polyg` command of a process forked by bench/lib/fork_runner.py: the runner forks the polyg.

It hands this process's stdin, stdout and stderr, its arguments, environment and directory to
the runner, which forks a polyg from its own process (the MCP SDK, polyg and the English
pipeline imported and loaded there once) and runs `polyg <arguments>` in it; this process then
waits for that polyg and exits as it exited. A signal this process is sent (the client's
terminate) is passed on to the polyg; when this process dies, the runner kills the polyg. A
signal this process was started with ignored (a shell's `&` ignores SIGINT) starts ignored in
the polyg too, as in a `polyg` started in its place.

Only the standard library, and run with `python -S`: this start costs a few milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

SOCKET_ENV = "BENCH_FORK_RUNNER_SOCKET"
PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def main() -> int:
    env = dict(os.environ)
    runner = socket.socket(socket.AF_UNIX)
    runner.connect(env.pop(SOCKET_ENV))  # the runner's address, not part of the polyg's environment
    ignored = [int(s) for s in PASSED_ON if signal.getsignal(s) == signal.SIG_IGN]
    request = {"argv": sys.argv[1:], "env": env, "cwd": os.getcwd(), "ignored": ignored}
    socket.send_fds(runner, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    answers = runner.makefile("rb")
    pid = int(answers.readline())
    for signum in PASSED_ON:  # even one it ignores: the polyg decides what a signal does
        signal.signal(signum, lambda received, _: os.kill(pid, received))
    line = answers.readline()  # its exit code, as subprocess gives it; nothing if the runner died
    code = int(line) if line.strip() else 1
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
