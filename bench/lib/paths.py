"""Where the repository, the benchmarks and their results are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH_DIR = REPO / "bench"
RESULTS_DIR = BENCH_DIR / "results"
