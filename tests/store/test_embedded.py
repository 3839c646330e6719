"""EmbeddedFalkor against real redis-server processes: sharing, reference counting, durability."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from polyg.errors import StoreError, StoreTimeout
from polyg.store import embedded
from polyg.store.embedded import EmbeddedFalkor
from tests.falkor_server import graph_query

REPO = Path(__file__).resolve().parents[2]


def database_client(ef: EmbeddedFalkor, **options: Any) -> redis.Redis:
    """A client that waits for slow answers and never sends a command twice. redis-py's defaults
    (a 5 s socket timeout, then up to 10 retries) failed a test on a loaded machine once, and a
    write sent again after its answer came late may be applied twice."""
    return redis.Redis(unix_socket_path=ef.socket_path, socket_timeout=120, retry=Retry(NoBackoff(), 0), **options)


def query(ef: EmbeddedFalkor, cypher: str) -> list[Any]:
    client = database_client(ef, decode_responses=True)
    try:
        return graph_query(client, cypher)
    finally:
        client.close()


def node_ids(ef: EmbeddedFalkor) -> list[Any]:
    return sorted(row[0] for row in query(ef, "MATCH (n:N) RETURN n.id")[1])


def gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether pid exits (or is a zombie) within timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "db"
    yield path
    # A failed test must not leave a daemonized server behind.
    pidfile = path / "falkordb.pid"
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def read_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def send_line(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def reap(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_data_survives_stop_and_start(data_dir: Path) -> None:
    ef = EmbeddedFalkor(data_dir)
    assert ef.start() == str(data_dir / "falkordb.sock")
    ef.wait_until_loaded(30)
    pid = ef.server_pid()
    assert pid is not None
    assert (data_dir.stat().st_mode & 0o777) == 0o700
    query(ef, "CREATE (:N {v: 1})")
    ef.stop()
    assert gone(pid, timeout=0)  # stop() returns after the server has exited
    assert not ef.is_alive()
    assert not os.path.exists(ef.socket_path)

    with EmbeddedFalkor(data_dir) as again:
        again.wait_until_loaded(30)
        assert query(again, "MATCH (n:N) RETURN n.v")[1] == [[1]]
        assert (data_dir / "aof").is_dir()


def aof_sizes(data_dir: Path) -> dict[str, int]:
    """Sizes of the AOF's RDB base and of its log of commands (the incremental file)."""
    sizes = {"base": 0, "log": 0}
    for path in (data_dir / "aof").iterdir():
        if path.name.endswith(".base.rdb"):
            sizes["base"] += path.stat().st_size
        elif path.name.endswith(".incr.aof"):
            sizes["log"] += path.stat().st_size
    return sizes


@pytest.mark.parametrize("threshold", [1, 1 << 40])
def test_a_clean_stop_compacts_a_grown_log(data_dir: Path, threshold: int) -> None:
    with EmbeddedFalkor(data_dir, compact_min_bytes=threshold) as ef:
        ef.wait_until_loaded(30)
        query(ef, "CREATE INDEX FOR (n:N) ON (n.v)")
        query(ef, "UNWIND range(1, 2000) AS i CREATE (:N {v: i, text: 'some words to make the log grow'})")
    sizes = aof_sizes(data_dir)
    if threshold == 1:
        assert sizes["log"] == 0 and sizes["base"] > 0  # everything folded into the base
    else:
        assert sizes["log"] > 0  # below the threshold: left as it was
    with EmbeddedFalkor(data_dir) as again:
        again.wait_until_loaded(30)
        assert query(again, "MATCH (n:N) RETURN count(n)")[1] == [[2000]]
        assert query(again, "MATCH (n:N {v: 1999}) RETURN n.v")[1] == [[1999]]


def test_the_log_is_compacted_once_its_growth_over_restarts_passes_the_threshold(data_dir: Path) -> None:
    def session(threshold: int) -> None:
        with EmbeddedFalkor(data_dir, compact_min_bytes=threshold) as ef:
            ef.wait_until_loaded(30)
            query(ef, "UNWIND range(1, 1000) AS i CREATE (:N {v: i, text: 'some words to make the log grow'})")

    session(1 << 40)
    first = aof_sizes(data_dir)["log"]
    assert first > 0
    threshold = first * 5 // 2  # crossed by three sessions, not by two
    session(threshold)
    assert aof_sizes(data_dir)["log"] > first  # grown, below the threshold: kept
    session(threshold)
    assert aof_sizes(data_dir)["log"] == 0
    with EmbeddedFalkor(data_dir) as ef:
        ef.wait_until_loaded(30)
        assert query(ef, "MATCH (n:N) RETURN count(n)")[1] == [[3000]]


def test_compact_folds_the_log_of_a_running_server(data_dir: Path) -> None:
    with EmbeddedFalkor(data_dir, compact_min_bytes=1 << 40) as ef:
        ef.wait_until_loaded(30)
        query(ef, "UNWIND range(1, 500) AS i CREATE (:N {v: i})")
        assert ef.compact(wait_s=30, min_bytes=1 << 40) is True  # grown by less: nothing to do
        assert aof_sizes(data_dir)["log"] > 0
        assert ef.compact(wait_s=30) is True
        assert aof_sizes(data_dir)["log"] == 0
        assert query(ef, "MATCH (n:N) RETURN count(n)")[1] == [[500]]


def test_one_server_shared_by_two_objects(data_dir: Path) -> None:
    first, second = EmbeddedFalkor(data_dir), EmbeddedFalkor(data_dir)
    first.start()
    second.start()
    pid = first.server_pid()
    assert pid is not None and second.server_pid() == pid
    first.stop()
    assert second.is_alive() and second.server_pid() == pid
    first.stop()  # a second stop() is a no-op, not another detach
    assert second.is_alive()
    second.stop()
    assert gone(pid, timeout=0)


def test_long_directory_gets_a_socket_in_a_private_directory_in_tmp(tmp_path: Path) -> None:
    data_dir = tmp_path / ("d" * 110)
    with EmbeddedFalkor(data_dir) as ef:
        folder = Path(ef.socket_path).parent
        assert folder == Path(f"/tmp/polyg-{os.getuid()}") and ef.socket_path.endswith(".sock")
        info = folder.lstat()
        # /tmp is shared: nobody else may put a socket (their own server) at our name.
        assert info.st_uid == os.getuid() and (info.st_mode & 0o777) == 0o700
        assert EmbeddedFalkor(data_dir).socket_path == ef.socket_path
        assert ef.is_alive()
    assert not os.path.exists(ef.socket_path)


def test_a_socket_directory_others_could_use_is_closed_or_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sockets"
    monkeypatch.setattr(embedded, "short_socket_dir", lambda: str(folder))
    data_dir = tmp_path / ("d" * 110)
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with EmbeddedFalkor(data_dir) as ef:
        assert Path(ef.socket_path).parent == folder
        assert (folder.stat().st_mode & 0o777) == 0o700  # ours: closed to others first
    if os.getuid() == 0:  # only root can give a directory away to test the other case
        os.chown(folder, 65534, 65534)
        with pytest.raises(StoreError, match="not a directory owned by this user"):
            EmbeddedFalkor(data_dir).start()


def test_a_refused_shutdown_is_followed_by_signals_at_once(data_dir: Path) -> None:
    """MCP clients give a server about 2 s to exit: after a refused SHUTDOWN the stop must not
    wait out its timeout (here an hour) before signalling the server."""
    ef = EmbeddedFalkor(data_dir, stop_timeout=3600)
    ef.start()
    ef.wait_until_loaded(30)
    pid = ef.server_pid()
    assert pid is not None
    client = database_client(ef)
    try:
        # SHUTDOWN then saves an RDB snapshot, whose final name is taken by a directory.
        client.config_set("save", "3600 1")
        (data_dir / "polyg.rdb").mkdir()
        with pytest.raises(redis.ResponseError, match="SHUTDOWN"):
            client.shutdown()
        query(ef, "CREATE (:N {id: 1})")  # acknowledged just before the stop
    finally:
        client.close()
    stopping = threading.Thread(target=ef.stop, daemon=True)
    stopping.start()
    stopping.join(60)  # a bound far below the stop timeout: a guard against the old wait
    assert not stopping.is_alive(), "stop() waited out its timeout after a refused SHUTDOWN"
    assert gone(pid, timeout=0)
    (data_dir / "polyg.rdb").rmdir()
    with EmbeddedFalkor(data_dir) as again:
        again.wait_until_loaded(30)
        assert node_ids(again) == [1]


def test_module_that_fails_to_load_reports_the_log(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, _ = embedded.embedded_binaries()
    bogus = data_dir.parent / "not-a-module.so"
    bogus.write_text("nope")
    monkeypatch.setattr(embedded, "embedded_binaries", lambda: (server, str(bogus)))
    with pytest.raises(StoreError) as err:
        EmbeddedFalkor(data_dir, start_timeout=20).start()
    assert err.value.code == 2004
    assert "falkordb.log" in err.value.message and "not-a-module.so" in err.value.message


def test_missing_binary_is_a_store_error(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded, "embedded_binaries", lambda: ("/nonexistent/redis-server", "/x.so"))
    with pytest.raises(StoreError, match="/nonexistent/redis-server"):
        EmbeddedFalkor(data_dir).start()


# Each worker waits for a line on stdin before start() and again before stop(), so both
# start at the same instant, are attached at the same time, and stop at the same instant.
WRITER = """
import sys
from pathlib import Path
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from polyg.store.embedded import EmbeddedFalkor
from tests.falkor_server import graph_query

data_dir, worker = sys.argv[1], sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()
with EmbeddedFalkor(Path(data_dir)) as ef:
    ef.wait_until_loaded(30)
    client = redis.Redis(unix_socket_path=ef.socket_path, socket_timeout=120, retry=Retry(NoBackoff(), 0))
    for i in range(200):
        client.execute_command("GRAPH.QUERY", "g", f"CREATE (:N {{id: '{worker}-{i}'}})")
    client.close()
    print(ef.server_pid(), flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("attempt", range(3))
def test_two_processes_starting_at_once_share_one_server(data_dir: Path, attempt: int) -> None:
    workers = [spawn(WRITER, str(data_dir), name) for name in ("a", "b")]
    try:
        assert [read_line(worker) for worker in workers] == ["ready", "ready"]
        for worker in workers:
            send_line(worker, "start")
        pids = {read_line(worker) for worker in workers}
        assert len(pids) == 1, "both processes must be using the same server"
        for worker in workers:
            send_line(worker, "stop")
        assert [worker.wait(timeout=60) for worker in workers] == [0, 0]
    finally:
        reap(workers)
    assert gone(int(pids.pop()))  # exactly one of them was the last user and shut it down

    with EmbeddedFalkor(data_dir) as ef:
        ef.wait_until_loaded(30)
        ids = node_ids(ef)
    assert len(ids) == 400 and len(set(ids)) == 400


# Writes until killed, printing each id once the server has acknowledged it.
ENDLESS_WRITER = """
import sys
from pathlib import Path
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from polyg.store.embedded import EmbeddedFalkor
from tests.falkor_server import graph_query

ef = EmbeddedFalkor(Path(sys.argv[1]))
ef.start()
ef.wait_until_loaded(30)
client = redis.Redis(unix_socket_path=ef.socket_path, socket_timeout=120, retry=Retry(NoBackoff(), 0))
for i in range(1_000_000):
    client.execute_command("GRAPH.QUERY", "g", f"CREATE (:N {{id: {i}}})")
    print(i, flush=True)
"""


def test_acknowledged_writes_survive_kill_9(data_dir: Path) -> None:
    writer = spawn(ENDLESS_WRITER, str(data_dir))
    try:
        acked = [int(read_line(writer)) for _ in range(100)]
        server_pid = EmbeddedFalkor(data_dir).server_pid()  # asks the server without attaching
    finally:
        reap([writer])  # kill -9 of the polyg process, mid-write
    assert server_pid is not None

    # The server outlives the killed process and the next start() attaches to it.
    ef = EmbeddedFalkor(data_dir)
    ef.start()
    try:
        assert ef.server_pid() == server_pid
        ids = node_ids(ef)
        assert set(acked) <= set(ids) and ids == list(range(len(ids)))

        # A kill -9 of the server itself, right after the last acknowledged write, loses nothing:
        # redis writes each command to the AOF before it replies (`appendfsync everysec` only
        # delays the fsync), and what a process wrote survives its death in the kernel's cache.
        query(ef, "CREATE (:Last {id: 1})")
        os.kill(server_pid, signal.SIGKILL)
        assert gone(server_pid)
        assert not ef.is_alive()

        ef.start()  # restarts the dead server on the same files, replaying the AOF
        ef.wait_until_loaded(30)
        new_pid = ef.server_pid()
        assert new_pid is not None and new_pid != server_pid
        assert node_ids(ef) == ids
        assert query(ef, "MATCH (n:Last) RETURN n.id")[1] == [[1]]
    finally:
        ef.stop()
    assert gone(new_pid, timeout=0)


def caught_up(ef: EmbeddedFalkor) -> None:
    """Wait until a server just resumed (SIGCONT) answers again. It first accepts the connections
    queued while it was stopped: until then a connect fails at once when they filled its listen
    backlog, or its reply comes after `server_pid`'s one-second timeout on a loaded machine
    (either read as "no server")."""
    ef.wait_until_loaded(60)


def test_a_server_that_does_not_answer_is_never_doubled(data_dir: Path) -> None:
    """A busy server (here: SIGSTOPped) accepts connections without answering; start() must
    attach to it, not start a second server on the same AOF."""
    with EmbeddedFalkor(data_dir) as first:
        pid = first.server_pid()
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            second = EmbeddedFalkor(data_dir)
            second.start()
            assert second.is_alive()
        finally:
            os.kill(pid, signal.SIGCONT)
        caught_up(second)
        assert second.server_pid() == pid
        second.stop()
        assert first.is_alive()
    assert gone(pid, timeout=0)


def fill_backlog(socket_path: str) -> list[socket.socket]:
    """Connections queued on a server that accepts none, until its listen backlog is full."""
    queued: list[socket.socket] = []
    while len(queued) < 100_000:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.setblocking(False)
        try:
            conn.connect(socket_path)
        except BlockingIOError:
            conn.close()
            return queued
        queued.append(conn)
    raise AssertionError("the listen backlog never filled")


def test_a_busy_server_whose_backlog_is_full_is_still_loading_not_down(data_dir: Path) -> None:
    """FalkorDB building its indexes over a large graph (about ten minutes at 1M entities here)
    accepts no connection; each poll of `wait_until_loaded` leaves one queued, and after some
    500 polls the backlog is full and a connect fails as if nobody listened. The server is
    alive: the wait goes on (here: times out), never 'stopped while loading', and start()
    attaches rather than starting a second server on the same AOF."""
    with EmbeddedFalkor(data_dir) as first:
        pid = first.server_pid()
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        queued: list[socket.socket] = []
        try:
            queued = fill_backlog(first.socket_path)
            assert first.is_alive()
            with pytest.raises(StoreTimeout, match="still loading"):
                first.wait_until_loaded(0.5)
            second = EmbeddedFalkor(data_dir, start_timeout=5)
            second.start()
        finally:
            for conn in queued:
                conn.close()
            os.kill(pid, signal.SIGCONT)
        caught_up(second)
        assert second.server_pid() == pid
        second.stop()
    assert gone(pid, timeout=0)
