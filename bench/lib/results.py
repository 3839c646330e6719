"""bench/results/<benchmark>[-<size>].md/.json and the append-only bench/results/history.csv."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.lib.machine import machine_info, machine_label
from bench.lib.paths import RESULTS_DIR

HISTORY = RESULTS_DIR / "history.csv"
HISTORY_FIELDS = ("date", "commit", "machine", "benchmark", "size", "figures")


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
