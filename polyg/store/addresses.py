"""`host:port` as the settings and store URLs give a node's address (no network library here:
the configuration imports it)."""

from __future__ import annotations


def host_port(text: str) -> tuple[str, int] | None:
    """`host[:port]` (port 6379 when not given) -> (host, port); None when it is not one."""
    host, colon, port = text.strip().rpartition(":")
    if not colon:
        host, port = port, "6379"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)
