"""Statistics of measured durations, and their formatting for a results table."""

from __future__ import annotations

from collections.abc import Sequence


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


def fmt_ms(value: float) -> str:
    if value != value:  # NaN
        return "-"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def fmt_mb(kb: int | float) -> str:
    return f"{kb / 1024:.0f}"
