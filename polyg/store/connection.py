"""How `FalkorStore` reaches FalkorDB: one server through one connection pool, or a cluster.

A FalkorDB cluster (the Redis Cluster protocol) never splits a graph: every key, and so every
project's graph `polyg:<project>`, lives in one hash slot served by one shard. redis-py's
cluster client routes each GRAPH.* command by that key, follows MOVED and ASK redirects and
re-reads the topology after a failover; nothing here routes by itself. What the two variants
do differently is only what has no key: listing graphs (every primary holds some) and telling
the caller which node a project lives on.

Both variants give `FalkorStore` a `client` with `execute_command`, which is all falkordb's
`AsyncGraph` uses, and `read(run)`, which runs a read-only query on the client it should go to
(a server's replica, see polyg.store.replicas; the cluster client picks replicas itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import redis.asyncio as aioredis
import redis.exceptions as rexc
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.cluster import LoadBalancingStrategy

from polyg.errors import StoreError, StoreTimeout
from polyg.store.addresses import host_port
from polyg.store.replicas import Replica, ReplicaReads, online_replicas
from polyg.store.results import RO_QUERY

log = logging.getLogger(__name__)

T = TypeVar("T")

# Reads that decide a write must see what the primary holds: a replica may not yet have what
# this very process wrote a moment ago (a project's schema read back right after it was made
# failed to create its indexes, 1 fresh project in 20, reading from a replica on loopback).
_PRIMARY_READS: ContextVar[bool] = ContextVar("polyg_primary_reads", default=False)


@contextlib.contextmanager
def reads_from_primary() -> Iterator[None]:
    """Within it (and in tasks started within it), read-only queries go to the primary even
    with `read_from_replicas`: the schema's checks, and every read of a tool call that writes."""
    token = _PRIMARY_READS.set(True)
    try:
        yield
    finally:
        _PRIMARY_READS.reset(token)


LIST_GRAPHS = "GRAPH.LIST"
GRAPH_TYPE = "graphdata"  # what TYPE answers for a FalkorDB graph key


def connection_options(*, password: str | None, pool_size: int, timeout_s: float) -> dict[str, Any]:
    return {
        "max_connections": pool_size,
        # redis-py's default 5 s would cut long loads and large batch writes short.
        "socket_timeout": timeout_s,
        "socket_connect_timeout": min(timeout_s, 10.0),
        "decode_responses": True,
        "password": password,
        # A connection idle this long is pinged (and reopened if need be) before it is used:
        # after the database restarts, pooled connections are dead (see FalkorStore._run too).
        "health_check_interval": 1,
    }


class ServerConnection:
    """One FalkorDB server (TCP or the embedded store's Unix socket), one blocking pool."""

    is_cluster = False

    def __init__(
        self,
        *,
        host: str | None = None,
        port: int = 6379,
        password: str | None = None,
        unix_socket: str | None = None,
        pool_size: int = 16,
        timeout_s: float = 30.0,
    ) -> None:
        self.where = unix_socket or f"{host}:{port}"
        self.host, self.port, self.password = host, port, password
        common = connection_options(password=password, pool_size=pool_size, timeout_s=timeout_s)
        common["timeout"] = timeout_s  # how long a call waits for a free pooled connection
        if unix_socket:
            pool = aioredis.BlockingConnectionPool(
                connection_class=aioredis.UnixDomainSocketConnection, path=unix_socket, **common
            )
        else:
            pool = aioredis.BlockingConnectionPool(host=host, port=port, **common)
        self._pool = pool
        self.client: Any = aioredis.Redis(connection_pool=pool)
        self._options = dict(common)  # the replicas' pools: the same password, size and timeouts
        self._replicas: ReplicaReads | None = None

    def where_for(self, graph: str) -> str:
        return self.where

    async def use_replicas(self, addresses: Sequence[tuple[str, int]] = ()) -> list[str]:
        """Send reads to `addresses`, else to the replicas the server reports online now; the
        replicas used (none: reads stay on the server)."""
        if not addresses:
            addresses = online_replicas(await self.client.info("replication"))
        replicas = []
        for host, port in addresses:
            pool = aioredis.BlockingConnectionPool(host=host, port=port, **self._options)
            replicas.append(Replica(f"{host}:{port}", aioredis.Redis(connection_pool=pool), pool))
        if self._replicas is not None:
            await self._replicas.close()
        self._replicas = ReplicaReads(self.client, replicas) if replicas else None
        return [r.where for r in replicas]

    async def read(self, run: Callable[[Any], Awaitable[T]]) -> T:
        if self._replicas is None or _PRIMARY_READS.get():
            return await run(self.client)
        return await self._replicas.read(run)

    async def ping(self) -> None:
        await self.client.ping()

    async def cluster_enabled(self) -> bool:
        """Whether this server is a cluster node (its INFO says `cluster_enabled:1`)."""
        info = await self.client.info("cluster")
        return bool(info.get("cluster_enabled"))

    async def list_graphs(self) -> list[str]:
        graphs: list[str] = await self.client.execute_command(LIST_GRAPHS)
        return graphs

    async def graph_config(self, *args: str) -> Any:
        return await self.client.execute_command("GRAPH.CONFIG", *args)

    async def write_and_wait(self, command: Sequence[Any], replicas: int, timeout_ms: int) -> tuple[Any, int]:
        """`command`, then WAIT on the same connection (WAIT counts the replicas that have every
        write made on its own connection): (the command's reply, replicas that confirmed it)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.execute_command(*command)
        pipe.execute_command("WAIT", replicas, timeout_ms)
        reply, acked = await pipe.execute(raise_on_error=False)
        if isinstance(reply, Exception):
            raise reply
        return reply, int(acked)

    async def reset(self) -> None:
        """Drop idle connections: after a connection error they are most likely dead too."""
        with contextlib.suppress(Exception):
            await self._pool.disconnect(inuse_connections=False)

    async def forget_topology(self) -> None:
        """Nothing to forget: one server."""

    async def close(self) -> None:
        if self._replicas is not None:
            await self._replicas.close()
        await self._pool.aclose()


# A command refused while its slot migrates (it never ran) is sent again this many times, with
# redis-py's exponential backoff (jittered, so that calls bounced together do not return
# together): about 2 s in all, longer than a slot's move under load here.
MIGRATION_RETRIES = 10
MIGRATION_BACKOFF = ExponentialWithJitterBackoff(cap=0.5, base=0.02)


def never_applied(exc: BaseException, *, read_only: bool) -> bool:
    """Whether a cluster command that failed with `exc` certainly changed nothing, so that
    sending it again cannot apply it twice (FalkorDB runs a graph query atomically on its key).

    - "TTL exhausted": every reply the client got was a redirect (MOVED, ASK, TRYAGAIN), so no
      node ran the command;
    - "Encountered an empty key when opened key": FalkorDB accepted the command, then found the
      key gone (MIGRATE took it) when it ran it: no graph, nothing written;
    - asyncio's TypeError "'NoneType' object is not callable": the command was being written to
      a connection already closed, it never reached the node;
    - a connection cut off: only for a read-only query (a write may have been applied before
      the reply was lost)."""
    if isinstance(exc, TypeError):
        return "'NoneType' object is not callable" in str(exc)
    if isinstance(exc, rexc.ClusterError) and "TTL exhausted" in str(exc):
        return True
    if isinstance(exc, rexc.ResponseError) and "Encountered an empty key when opened key" in str(exc):
        return True
    cut_off = isinstance(exc, rexc.ConnectionError) and not isinstance(exc, rexc.AuthenticationError)
    return read_only and cut_off


class GraphCluster(RedisCluster):
    """redis-py's cluster client, told that GRAPH.RO_QUERY is a read, and made to queue calls
    beyond its connections rather than fail them.

    It sends to replicas only the commands in its own list of reads, which knows no module
    command; given a load balancing strategy (replicas only, round robin), a read-only graph
    query goes to one of its slot's replicas, everything else to the slot's primary. A reply
    of MOVED from a replica (one that is no longer one) is followed to the primary."""

    def __init__(self, *args: Any, max_in_flight: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Its per-node pool fails a command (MaxConnectionsError) when all its connections are
        # busy, where the server mode's blocking pool waits: at most this many commands are in
        # flight at once, the others wait their turn (10 HTTP clients on one project's shard
        # met the error without it).
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._migration_retry = Retry(
            MIGRATION_BACKOFF,
            MIGRATION_RETRIES,
            supported_errors=(rexc.ClusterError, rexc.ResponseError, rexc.ConnectionError, TypeError),  # type: ignore[arg-type]
        )

    async def get_nodes_from_slot(self, command: str, *args: Any) -> list[ClusterNode]:
        to_replica = self.load_balancing_strategy is not None and not _PRIMARY_READS.get()
        if to_replica and command.upper() == RO_QUERY and args:
            return [self.nodes_manager.get_node_from_slot(self.keyslot(args[0]), True, self.load_balancing_strategy)]
        nodes: list[ClusterNode] = await super().get_nodes_from_slot(command, *args)
        return nodes

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        """redis-py follows MOVED, ASK and TRYAGAIN itself. What it gives up on during a slot
        migration is sent again here, when it certainly never ran (`never_applied`), through
        redis-py's own `Retry`: the caller sees a success, not the migration.

        Why "TTL exhausted" happens: the client answers ASK with ASKING and the command, but on
        two different pooled connections of the target when it has several free (its node
        pool hands them out first in, first out); the target, which does not own the slot yet,
        then answers MOVED back to the source, which answers ASK again, until the redirect
        budget is spent. It ends when the migration does."""
        read_only = bool(args) and str(args[0]).upper() == RO_QUERY

        async def attempt() -> Any:
            async with self._in_flight:
                return await super(GraphCluster, self).execute_command(*args, **kwargs)

        async def pause(_: Exception) -> None:
            """The backoff is `Retry`'s own."""

        return await self._migration_retry.call_with_retry(
            attempt, pause, is_retryable=lambda exc: never_applied(exc, read_only=read_only)
        )


class ClusterConnection:
    """A FalkorDB cluster, reached through any of its `seeds` (host, port)."""

    is_cluster = True

    def __init__(
        self,
        seeds: Sequence[tuple[str, int]],
        *,
        password: str | None = None,
        pool_size: int = 16,
        timeout_s: float = 30.0,
        read_from_replicas: bool = False,
    ) -> None:
        self.seeds = list(seeds)
        self.where = "cluster " + ",".join(f"{h}:{p}" for h, p in self.seeds)
        self.read_from_replicas = read_from_replicas
        self.client: Any = GraphCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in self.seeds],
            # A shard that is down must not stop the projects on the others.
            require_full_coverage=False,
            # Also what makes the client send READONLY on its connections to replicas.
            load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if read_from_replicas else None,
            # No retry of a failed command: a write that timed out may have been applied, and
            # sent again it would be applied twice. A connection error marks the topology
            # stale, so the next call reads it afresh (and finds a promoted replica).
            # Redirects (MOVED, ASK) are followed regardless.
            retry=Retry(NoBackoff(), 0),
            # On MOVED, only the slot it names is updated. redis-py's default also closes every
            # connection of the client each fifth MOVED to re-read the topology: with them the
            # connections of calls still waiting for their reply, which then fail with
            # "Connection closed by server" though a write among them may have been applied
            # (measured: a slot moved 8 times under one writer and three readers, 5 writes of
            # 656 failed so, 2 of those 5 applied). A failover is still learnt from the
            # connection errors that mark the topology stale.
            reinitialize_steps=0,
            max_in_flight=pool_size,
            **connection_options(password=password, pool_size=pool_size, timeout_s=timeout_s),
        )

    async def read(self, run: Callable[[Any], Awaitable[T]]) -> T:
        """The cluster client sends a read-only query to a replica itself when asked to."""
        return await run(self.client)

    def where_for(self, graph: str) -> str:
        """The node serving `graph` as far as the client knows, to name in an error."""
        with contextlib.suppress(Exception):
            node = self.client.get_node_from_key(graph)
            if node is not None:
                return f"cluster node {node.name} (the shard of {graph})"
        return self.where

    async def ping(self) -> None:
        """Read the topology, then PING every seed and every primary: one that does not answer
        is named (a seed given by mistake, or a shard that is down at start)."""
        try:
            await self.client.initialize()
        except (rexc.RedisClusterException, rexc.RedisError, OSError) as exc:
            if isinstance(exc, rexc.AuthenticationError) or "WRONGPASS" in str(exc) or "NOAUTH" in str(exc):
                raise
            raise StoreTimeout(f"Cannot reach any FalkorDB cluster node of {self.where}: {exc}") from exc
        seeds = {f"{h}:{p}" for h, p in self.seeds}
        names = sorted(seeds | {node.name for node in self.client.get_primaries()})
        for name in names:
            host, _, port = name.rpartition(":")
            probe = aioredis.Redis(
                host=host,
                port=int(port),
                password=self.client.connection_kwargs.get("password"),
                socket_connect_timeout=2.0,
                socket_timeout=2.0,
                retry=Retry(NoBackoff(), 0),
            )
            try:
                await probe.ping()
            except rexc.BusyLoadingError:
                raise
            except (rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
                role = "seed" if name in seeds else "primary"
                raise StoreTimeout(
                    f"Cannot reach FalkorDB cluster node {name} ({role} of {self.where}): {exc}"
                ) from exc
            finally:
                await probe.aclose()

    async def cluster_enabled(self) -> bool:
        return True

    async def list_graphs(self) -> list[str]:
        """The graph keys of every primary, by SCAN (the client visits each primary). Not
        GRAPH.LIST: a node's list of graphs can still name one that a slot migration has moved
        to another node."""
        return [key async for key in self.client.scan_iter(match="*", count=1000, _type=GRAPH_TYPE)]

    async def graph_config(self, *args: str) -> Any:
        """GRAPH.CONFIG is each node's own: SET goes to every node (a replica promoted later
        keeps the setting); GET asks every node and answers with the smallest value, so a node
        restarted without the setting (0: none) is seen."""
        replies = await self.client.execute_command("GRAPH.CONFIG", *args, target_nodes=self.client.get_nodes())
        if not isinstance(replies, dict):
            return replies
        answers = list(replies.values())
        if args and args[0].upper() == "GET":
            numeric = [a for a in answers if isinstance(a, list) and len(a) > 1 and str(a[1]).lstrip("-").isdigit()]
            if numeric:
                return min(numeric, key=lambda a: int(a[1]))
        return answers[0]

    async def write_and_wait(self, command: Sequence[Any], replicas: int, timeout_ms: int) -> tuple[Any, int]:
        """As `ServerConnection.write_and_wait`: the pipeline sends the write and the WAIT to the
        graph's primary on one connection."""
        node = self.client.get_node_from_key(command[1])
        pipe = self.client.pipeline()
        pipe.execute_command(*command)
        pipe.execute_command("WAIT", replicas, timeout_ms, target_nodes=node)
        reply, acked = await pipe.execute(raise_on_error=False)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(acked, Exception):
            raise acked
        return reply, int(acked)

    async def reset(self) -> None:
        """Nothing to do: the client re-reads the topology after a connection error itself."""

    async def forget_topology(self) -> None:
        """Make the next call read the topology afresh. A node that answers READONLY to a write
        was a primary and is a replica now (a failover the client has not heard of yet: it
        learns of those from MOVED and connection errors only)."""
        with contextlib.suppress(Exception):
            await self.client.aclose()  # closes the connections and marks the topology stale

    async def close(self) -> None:
        await self.client.aclose()


Connection = ServerConnection | ClusterConnection


def cluster_seeds(url: str) -> list[tuple[str, int]]:
    """`falkor+cluster://[:password@]host:port[,host:port...]` -> [(host, port), ...]."""
    _, sep, rest = url.partition("://")
    rest = rest.rpartition("@")[2].split("/", 1)[0].split("?", 1)[0]
    seeds: list[tuple[str, int]] = []
    for part in rest.split(","):
        seed = host_port(part)
        if not sep or seed is None:
            raise StoreError(
                f"Invalid cluster node {part.strip()!r}: expected falkor+cluster://host:port[,host:port...]",
                code=1003,
            )
        seeds.append(seed)
    return seeds
