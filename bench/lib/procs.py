"""Processes and their memory, read from /proc (children, descendants, RSS and peak RSS)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


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


def dir_size_mb(path: Path) -> float:
    total = 0
    for p in Path(path).rglob("*"):
        with contextlib.suppress(OSError):
            if p.is_file():
                total += p.stat().st_size
    return round(total / 1024 / 1024, 1)
