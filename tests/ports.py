"""Loopback ports for test servers that stay safe when several pytest workers (pytest-xdist) and
several test runs share one machine.

A port the kernel picks with bind(0) is then released and bound again later by the server; in
between, another worker's bind(0), or any outgoing connection, may be handed the same port (both
draw from the ephemeral range). So the ports here come from below the ephemeral range (no
kernel-assigned port lands there), from a block of its own per xdist worker, starting at an
offset drawn from the process id (two runs side by side start far apart), and each is checked
free by binding it; a process never hands out one port twice. Callers still confirm they reached
their own server (FalkorServer checks the pid the server reports), since another run may take a
port between the check and the bind.
"""

from __future__ import annotations

import os
import socket
import threading

# Below Linux's default ephemeral range (32768-60999), above the well-known and registered
# ports most services use.
_LOW, _HIGH = 15000, 32000
_BLOCKS = 8
_BLOCK = (_HIGH - _LOW) // _BLOCKS

_lock = threading.Lock()
_given: set[int] = set()
_next: int | None = None


def _worker_block() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... under xdist
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else _BLOCKS - 1
    return _LOW + (index % _BLOCKS) * _BLOCK


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port free now, in this worker's block, never returned before in this process."""
    global _next
    with _lock:
        block = _worker_block()
        if _next is None:
            _next = os.getpid() % _BLOCK
        for _ in range(_BLOCK):
            port = block + _next
            _next = (_next + 1) % _BLOCK
            if port not in _given and _is_free(port):
                _given.add(port)
                return port
    raise RuntimeError(f"no free port left in {block}-{block + _BLOCK - 1}")
