"""Read-only queries sent to the replicas of one FalkorDB server (not a cluster).

A standalone server's replicas copy it asynchronously and refuse writes; each can answer
GRAPH.RO_QUERY. With `read_from_replicas: true` the server connection hands every read to one
of them, round robin, and keeps writes (and the WAIT after them) on the primary. A replica that
cannot answer (unreachable, still loading its copy, or refusing reads while it resynchronises)
is passed over for a while and the read goes to the primary instead: a read changes nothing, so
sending it again is safe, and the caller sees the primary's answer rather than an error.

Which replicas: the addresses given (`store_replicas`), else the ones the primary reports as
online in `INFO replication` when polyg opens the store.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import redis.asyncio as aioredis
import redis.exceptions as rexc

log = logging.getLogger(__name__)

T = TypeVar("T")

# How long a replica that failed a read is passed over: long enough that a replica that is down
# does not cost each read a failed connection, short enough that one back is used again soon.
PASS_OVER_S = 5.0


def is_replica_unable(exc: BaseException) -> bool:
    """Whether `exc` says the replica could not answer (not that the query was wrong): the
    read is then sent to the primary. MASTERDOWN: a replica told not to serve stale data while
    its link to the primary is down; LOADING: still loading its copy."""
    if isinstance(exc, rexc.AuthenticationError):
        return False
    if isinstance(exc, (rexc.ConnectionError, rexc.TimeoutError, TimeoutError, OSError)):
        return True  # BusyLoadingError is a ConnectionError
    return isinstance(exc, rexc.ResponseError) and str(exc).startswith(("MASTERDOWN", "LOADING"))


def online_replicas(info: dict[str, Any]) -> list[tuple[str, int]]:
    """The (host, port) of every replica `INFO replication` lists as online (`slaveN` fields,
    which redis-py parses into dicts)."""
    found = []
    for key, value in info.items():
        if key.startswith("slave") and key[5:].isdigit() and isinstance(value, dict):
            if value.get("state") == "online" and value.get("ip") and value.get("port"):
                found.append((str(value["ip"]), int(value["port"])))
    return sorted(found)


@dataclass
class Replica:
    where: str
    client: Any
    pool: aioredis.BlockingConnectionPool
    passed_over_until: float = field(default=0.0)


class ReplicaReads:
    """Round robin over the replicas, the primary when none can answer."""

    def __init__(self, primary: Any, replicas: Sequence[Replica]) -> None:
        self.primary = primary
        self.replicas = list(replicas)
        self._turn = itertools.count()

    @property
    def where(self) -> list[str]:
        return [r.where for r in self.replicas]

    def _next(self) -> Replica | None:
        now = time.monotonic()
        for _ in range(len(self.replicas)):
            replica = self.replicas[next(self._turn) % len(self.replicas)]
            if replica.passed_over_until <= now:
                return replica
        return None

    async def read(self, run: Callable[[Any], Awaitable[T]]) -> T:
        """`run(client)` on a replica's client, or on the primary's when no replica answers."""
        replica = self._next()
        if replica is None:
            return await run(self.primary)
        try:
            return await run(replica.client)
        except Exception as exc:
            if not is_replica_unable(exc):
                raise
            replica.passed_over_until = time.monotonic() + PASS_OVER_S
            log.warning(
                "a replica could not answer a read: sent to the primary",
                extra={"replica": replica.where, "error": str(exc)[:200]},
            )
            with contextlib.suppress(Exception):  # its pooled connections are most likely dead
                await replica.pool.disconnect(inuse_connections=False)
        return await run(self.primary)

    async def close(self) -> None:
        for replica in self.replicas:
            with contextlib.suppress(Exception):
                await replica.pool.aclose()
