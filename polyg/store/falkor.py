"""The one place that speaks Cypher to FalkorDB: parameterised queries, one graph per project.

The same class serves both modes: embedded (a private server on a Unix socket, started by
`polyg.store.embedded`) and server (`falkor://host:port`). Reads go through GRAPH.RO_QUERY.
redis errors are translated here into `StoreError`s with spec 001 codes.

Writes to one graph are sent one at a time (`_one_write_at_a_time`). FalkorDB numbers a graph's property
names as queries are planned, but logs and replicates writes in the order they commit, some as
effects that name properties by number alone. Two concurrent writes each bringing a new name
could commit in the other order than they were numbered, and replaying the log (the embedded
store's restart, a replica) then put values under the wrong names: `origin` read back as
`source_types`. FalkorDB runs one write per graph at a time anyway; waiting here costs a round
trip, not throughput. Several processes writing one graph at once stay exposed (FalkorDB's own
bug; see docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlparse

import redis.exceptions as rexc
from falkordb.asyncio.graph import AsyncGraph
from falkordb.helpers import stringify_param_value

from polyg.errors import (
    InvalidParams,
    QueryMemoryExceeded,
    QueryTimedOut,
    ReplicasBehind,
    StoreAuthError,
    StoreError,
    StoreTimeout,
)
from polyg.names import GRAPH_PREFIX, graph_key
from polyg.store import results
from polyg.store.connection import ClusterConnection, Connection, ServerConnection, cluster_seeds

log = logging.getLogger(__name__)

Row = list[Any]
PROBE_TIMEOUT_S = 2.0
# What one query may allocate in the database (GRAPH.CONFIG QUERY_MEM_CAPACITY). Unlimited by
# default, and a template variable is user Cypher: one query folding `range(1, 100000000)`
# held 4 GB of a database every project shares. polyg's own heaviest queries (a batch of a
# thousand vectors, an export page) take tens of megabytes.
QUERY_MEM_CAPACITY = 1 << 30


class VectorParam:
    """A float vector passed as a query parameter, in a compact text form.

    The FalkorDB client writes parameters into the query's `CYPHER name=value` header with
    `str()`; for a list of floats that is 17 significant digits each, formatted one call per
    float, and parsed back by the server: ~0.7 ms of the ~1.3 ms a KNN query took. Vectors
    are stored as float32, whose 24-bit mantissa 9 significant digits always reproduce.
    One `%` over the whole vector formats it in about half the time of a call per float."""

    __slots__ = ("text",)

    def __init__(self, values: Sequence[float]) -> None:
        self.text = "[" + _format_for(len(values)) % tuple(values) + "]"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"VectorParam({self.text[:40]}...)"


class TextListParam:
    """A constant list of strings passed as a query parameter, written in the `CYPHER` header's
    form once. The client would quote each string of the list again on every call, and every
    read of an entity by name passes polyg's own property keys."""

    __slots__ = ("text", "values")

    def __init__(self, values: Sequence[str]) -> None:
        self.values = tuple(values)
        self.text: str = stringify_param_value(list(self.values))

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"TextListParam({self.values!r})"


@functools.cache
def _format_for(length: int) -> str:
    return ",".join(["%.9g"] * length)


CLUSTER_SCHEMES = ("falkor+cluster", "falkordb+cluster", "redis+cluster")


def _url_password(url: str) -> str | None:
    """The password of `scheme://[user]:password@...` (a cluster URL names several hosts, which
    `urlparse` cannot read)."""
    rest = url.partition("://")[2]
    if "@" not in rest:
        return None
    userinfo = rest.rpartition("@")[0]
    return userinfo.partition(":")[2] or None


def parse_store_url(url: str) -> tuple[str, int, str | None]:
    """`falkor://[:password@]host[:port]` (also redis://) -> (host, port, password); for a
    cluster URL (`falkor+cluster://`), its first node."""
    if url.partition("://")[0] in CLUSTER_SCHEMES:
        seed_host, seed_port = cluster_seeds(url)[0]
        return seed_host, seed_port, _url_password(url)
    invalid = StoreError(f"Invalid store URL {redact_url(url)!r}: expected falkor://host:port", code=1003)
    parsed = urlparse(url)
    try:
        port = parsed.port
    except ValueError:  # a port that is not a number, or out of range
        raise invalid from None
    if parsed.scheme not in ("falkor", "falkordb", "redis") or not parsed.hostname:
        raise invalid
    return parsed.hostname, port or 6379, parsed.password


def redact_url(url: str) -> str:
    """`url` as it may be shown or logged: credentials (`user:password@`) replaced by `***@`,
    query and fragment (where a password can be given too) dropped."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" in rest:  # up to the last '@': a password may hold '/', '?' or '#'
        rest = "***@" + rest.rpartition("@")[2]
    return f"{scheme}{sep}{re.split(r'[?#]', rest, maxsplit=1)[0]}"


def _pool_exhausted(exc: Exception) -> bool:
    """What redis-py's blocking pool raises when no pooled connection frees up within its wait."""
    return isinstance(exc, rexc.ConnectionError) and str(exc) == "No connection available."


class FalkorStore:
    """Parameterised Cypher over one connection variant (polyg.store.connection): a server
    (TCP or the embedded store's Unix socket) or a cluster."""

    def __init__(
        self,
        *,
        host: str | None = None,
        port: int = 6379,
        password: str | None = None,
        unix_socket: str | None = None,
        pool_size: int = 16,
        timeout_s: float = 30.0,
        cluster_seeds: Sequence[tuple[str, int]] | None = None,
        read_from_replicas: bool = False,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        replicas: Sequence[tuple[str, int]] = (),
    ) -> None:
        self._password, self._pool_size, self._timeout_s = password, pool_size, timeout_s
        self.read_from_replicas = read_from_replicas
        # A server's replicas to read from (none given: the ones it reports at open).
        self.replicas = list(replicas)
        # After each acknowledged write, WAIT for this many replicas (0: do not wait).
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self._conn: Connection
        if cluster_seeds:
            self._conn = self._cluster(cluster_seeds)
        else:
            self._conn = ServerConnection(
                host=host,
                port=port,
                password=password,
                unix_socket=unix_socket,
                pool_size=pool_size,
                timeout_s=timeout_s,
            )
        self._write_locks: dict[str, asyncio.Lock] = {}
        # Called (and awaited) when the server stops answering; the embedded mode uses it to
        # start its database again, so the calls after a database crash succeed.
        self.on_unreachable: Callable[[], Awaitable[None]] | None = None

    def _cluster(self, seeds: Sequence[tuple[str, int]]) -> ClusterConnection:
        return ClusterConnection(
            seeds,
            password=self._password,
            pool_size=self._pool_size,
            timeout_s=self._timeout_s,
            read_from_replicas=self.read_from_replicas,
        )

    @property
    def where(self) -> str:
        return self._conn.where

    @property
    def is_cluster(self) -> bool:
        return self._conn.is_cluster

    @classmethod
    def from_url(cls, url: str, *, password: str | None = None, **kwargs: Any) -> FalkorStore:
        if url.partition("://")[0] in CLUSTER_SCHEMES:
            return cls(cluster_seeds=cluster_seeds(url), password=password or _url_password(url), **kwargs)
        host, port, url_password = parse_store_url(url)
        return cls(host=host, port=port, password=password or url_password, **kwargs)

    def _graph(self, project: str) -> Any:
        return AsyncGraph(self._conn.client, graph_key(project))

    async def ping(self) -> None:
        await self._run(self._conn.ping())

    async def wait_until_loaded(self, timeout_s: float) -> None:
        """Wait while the server replays its AOF and rebuilds indexes (it answers LOADING).

        A `falkor://` URL that names a node of a cluster is taken as the cluster's seed: the
        server says so in its INFO."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                await self._conn.ping()
                if isinstance(self._conn, ServerConnection) and self._conn.host is not None:
                    if await self._conn.cluster_enabled():
                        await self._become_cluster(self._conn)
                if self.read_from_replicas and isinstance(self._conn, ServerConnection):
                    await self._read_from_replicas(self._conn)
                return
            except rexc.BusyLoadingError:
                if loop.time() > deadline:
                    raise StoreTimeout(f"FalkorDB at {self.where} still loading after {timeout_s:.0f} s.") from None
                await asyncio.sleep(0.05)
            except Exception as exc:
                raise self._translate(exc) from exc

    async def _read_from_replicas(self, server: ServerConnection) -> None:
        if server.host is None:
            log.warning("read_from_replicas: the embedded store has no replicas; reads go to it")
            return
        try:
            used = await server.use_replicas(self.replicas)
        except rexc.ResponseError as exc:  # INFO refused (an ACL, a renamed command)
            log.warning("read_from_replicas: the server's replicas cannot be listed (%s); reads go to it", exc)
            return
        if used:
            log.info("reads go to the server's replicas", extra={"store": server.where, "replicas": used})
        else:
            log.warning("read_from_replicas: the server reports no replica online; reads go to it")

    async def _become_cluster(self, server: ServerConnection) -> None:
        assert server.host is not None
        log.info("the FalkorDB server is a cluster node: cluster mode", extra={"store": server.where})
        cluster = self._cluster([(server.host, server.port)])
        await server.close()
        self._conn = cluster
        await cluster.ping()

    async def query(
        self,
        project: str,
        cypher: str,
        params: dict[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> list[Row]:
        return (await self._table(project, cypher, params, timeout_ms, read_only=False))[1]

    async def ro_query(
        self,
        project: str,
        cypher: str,
        params: dict[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> list[Row]:
        return (await self.ro_table(project, cypher, params, timeout_ms=timeout_ms))[1]

    async def ro_table(
        self,
        project: str,
        cypher: str,
        params: dict[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> tuple[list[str], list[Row]]:
        """`ro_query` with the names of the columns."""
        try:
            return await self._table(project, cypher, params, timeout_ms, read_only=True)
        except StoreError as exc:
            if "Invalid graph operation on empty key" in str(exc):
                return [], []  # a project nobody has written to yet reads as empty
            raise

    async def _table(
        self, project: str, cypher: str, params: dict[str, Any] | None, timeout_ms: int | None, *, read_only: bool
    ) -> tuple[list[str], list[Row]]:
        # The client's own query method would parse the reply a coroutine a cell (results.py).
        graph = self._graph(project)
        query = graph._build_params_header(params) + cypher
        command = results.command(graph.name, query, read_only=read_only, timeout_ms=timeout_ms)
        if read_only:
            reply = self._conn.read(lambda client: self._parsed(AsyncGraph(client, graph.name), command))
        else:
            reply = self._one_write_at_a_time(graph, command)
        table: tuple[list[str], list[Row]] = await self._run(reply, graph.name)
        return table

    async def _one_write_at_a_time(self, graph: Any, command: list[Any]) -> tuple[list[str], list[Row]]:
        """A write to `graph`, sent once the previous one is answered (see the module's
        docstring). Only the round trip holds the lock: reviving a database that stopped
        answering (`_run`) does not."""
        lock = self._write_locks.get(graph.name)
        if lock is None:
            lock = self._write_locks[graph.name] = asyncio.Lock()
        async with lock:
            return await self._parsed(graph, command)

    async def _parsed(self, graph: Any, command: list[Any]) -> tuple[list[str], list[Row]]:
        if command[0] == results.QUERY and self.wait_replicas:
            reply, acked = await self._conn.write_and_wait(command, self.wait_replicas, self.wait_timeout_ms)
            if acked < self.wait_replicas:
                raise ReplicasBehind(
                    f"The write was applied on {self._conn.where_for(graph.name)} but only {acked} of "
                    f"{self.wait_replicas} replicas confirmed it within {self.wait_timeout_ms} ms: "
                    "it may be lost if that node fails now."
                )
        else:
            reply = await graph.execute_command(*command)
        return await results.table(reply, graph)

    async def explain(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[str]:
        """The plan FalkorDB would run, one operation a line: compiles the query, runs nothing."""
        graph = self._graph(project)
        plan = await self._run(graph.explain(cypher, params), graph.name)
        return [str(line) for line in plan.plan]

    async def limit_query_memory(self, capacity: int = QUERY_MEM_CAPACITY) -> int:
        """Sets the database's per-query memory capacity when it has none (0: unlimited); a
        capacity its operator chose is kept. Returns the capacity in force (0: none). A server
        that refuses GRAPH.CONFIG (renamed command, ACL) keeps running without one: polyg's own
        checks of template queries still apply, so this is logged, not raised."""
        try:
            reply = await self._run(self.graph_config("GET", "QUERY_MEM_CAPACITY"))
            current = int(reply[1])
            if current == 0:
                await self._run(self.graph_config("SET", "QUERY_MEM_CAPACITY", str(capacity)))
                current = capacity
        except (StoreError, IndexError, TypeError, ValueError) as exc:
            log.warning("the database's per-query memory capacity could not be set: %s", exc)
            return 0
        return current

    def graph_config(self, *args: str) -> Awaitable[Any]:
        """GRAPH.CONFIG with `args` (GET name, SET name value): the database's settings (in a
        cluster, set on every node and read from one)."""
        return self._conn.graph_config(*args)

    async def list_projects(self) -> list[str]:
        """Every project, on every shard of a cluster."""
        graphs = await self._run(self._conn.list_graphs())
        return sorted(g[len(GRAPH_PREFIX) :] for g in graphs if g.startswith(GRAPH_PREFIX))

    async def delete_project(self, project: str) -> None:
        graph = self._graph(project)
        try:
            await self._run(graph.delete(), graph.name)
        except StoreError as exc:
            if "empty key" not in str(exc):
                raise

    async def close(self) -> None:
        await self._conn.close()

    async def _run(self, awaitable: Any, graph: str | None = None) -> Any:
        try:
            return await awaitable
        except InvalidParams:
            raise
        except Exception as exc:
            error = self._translate(exc, graph)
            busy = _pool_exhausted(exc)
            if isinstance(exc, rexc.ConnectionError) and not busy:
                # The pool's idle connections are most likely dead too (the server stopped or
                # restarted): drop them, so that later calls connect afresh instead of each
                # failing once on a dead connection.
                await self._conn.reset()
            if isinstance(exc, rexc.ReadOnlyError):
                await self._conn.forget_topology()
            if (
                isinstance(error, StoreTimeout)
                and not isinstance(error, QueryTimedOut)  # the database answered: it is up
                and not busy  # it answers the calls holding the connections
                and self.on_unreachable is not None
            ):
                # The failed call is not retried: a write may or may not have been applied.
                await self.on_unreachable()
            raise error from exc

    def _translate(self, exc: Exception, graph: str | None = None) -> StoreError:
        if isinstance(exc, StoreError):
            return exc
        where = self._conn.where_for(graph) if graph else self.where
        if isinstance(exc, rexc.AuthenticationError) or "NOAUTH" in str(exc) or "WRONGPASS" in str(exc):
            return StoreAuthError(f"Authentication to FalkorDB at {where} failed: {exc}")
        if _pool_exhausted(exc):
            # The database answers; calls come faster than it does, and this one never got a
            # connection to send on.
            return StoreTimeout(
                f"FalkorDB at {where} is busy: all {self._pool_size} of polyg's connections to it stayed in "
                f"use for {self._timeout_s:g} s (calls arrive faster than it answers them). Nothing was sent "
                "for this call: try again.",
                details={"retryable": True, "pool_size": self._pool_size},
            )
        if isinstance(exc, (rexc.ConnectionError, rexc.TimeoutError, TimeoutError, OSError)):
            return StoreTimeout(f"Cannot reach FalkorDB at {where}: {exc}")
        if self.is_cluster and isinstance(exc, rexc.ReadOnlyError):
            return StoreTimeout(f"FalkorDB at {where} is no longer the primary (a failover): try again. {exc}")
        if isinstance(exc, (rexc.ClusterDownError, rexc.SlotNotCoveredError, rexc.MaxConnectionsError)) or (
            isinstance(exc, rexc.RedisClusterException) and self.is_cluster
        ):
            # A shard without a live primary (failing over, or down): its projects wait for it.
            return StoreTimeout(f"FalkorDB cluster cannot serve this now at {where}: {exc}")
        if isinstance(exc, rexc.ResponseError) and "Query timed out" in str(exc):
            return QueryTimedOut(f"Query timed out: {exc}")
        if isinstance(exc, rexc.ResponseError) and "exceeded capacity" in str(exc):
            return QueryMemoryExceeded(f"FalkorDB error: {exc}")
        return StoreError(f"FalkorDB error: {exc}")
