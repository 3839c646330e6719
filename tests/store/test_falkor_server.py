"""The FalkorServer test helper: a real FalkorDB on loopback TCP for server-mode tests."""

from __future__ import annotations

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.falkor_server import FalkorServer, graph_query


def test_answers_graph_queries() -> None:
    with FalkorServer() as server:
        assert server.url == f"falkor://127.0.0.1:{server.port}"
        client = server.client()
        try:
            graph_query(client, "CREATE (:N {v: 1})")
            assert graph_query(client, "MATCH (n:N) RETURN n.v")[1] == [[1]]
        finally:
            client.close()


def test_password_is_enforced() -> None:
    with FalkorServer(password="s3cret") as server:
        # No retries: redis-py retries AuthenticationError (a ConnectionError) with backoff.
        no_retry = Retry(NoBackoff(), 0)
        anonymous = redis.Redis(host=server.host, port=server.port, retry=no_retry)
        wrong = redis.Redis(host=server.host, port=server.port, password="nope", retry=no_retry)
        try:
            with pytest.raises(redis.AuthenticationError):
                graph_query(anonymous, "RETURN 1")
            with pytest.raises(redis.AuthenticationError):
                wrong.ping()
        finally:
            anonymous.close()
            wrong.close()
        client = server.client()
        try:
            assert client.ping()
        finally:
            client.close()


def test_kill_and_restart_keep_aof_data() -> None:
    with FalkorServer(password="pw") as server:
        client = server.client()
        try:
            graph_query(client, "UNWIND range(1, 50) AS i CREATE (:N {id: i})")
        finally:
            client.close()
        old_pid, port = server.pid, server.port
        server.kill()
        server.restart()
        assert server.pid != old_pid and server.port == port
        client = server.client()
        try:
            result = graph_query(client, "MATCH (n:N) RETURN count(n)")
            assert result[1] == [[50]]
        finally:
            client.close()
