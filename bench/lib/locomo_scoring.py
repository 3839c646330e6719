"""LoCoMo retrieval scoring as `../shared/eval/README.md` defines it, shared by every LoCoMo bench
(bench/quality/locomo_eval.py, bench/quality/graphrag_locomo.py, bench/quality/locomo_recall.py).

A dialog turn is a unit. recall@k: the share of a question's evidence turns among the first k
ranked turns, averaged over questions; all-evidence@10: the share of questions with every
evidence turn among the first 10. Only categories 1-4 are scored (5, adversarial, has no
evidence to find). Evidence ids are normalised first (a few are malformed in the data), and the
report says how many were fixed or dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
METRICS = (*(f"recall@{k}" for k in KS), "all_evidence@10")

EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


def normalise_evidence(raw: list[str], turns: set[str], stats: Counter[str]) -> list[str]:
    """Evidence ids as turn names: `"D8:6; D9:17"` is split, `D:11:26` and `D30:05` are
    rewritten to `D11:26` / `D30:5`; ids that match no turn (or no id shape, like `D`) are dropped."""
    out: list[str] = []
    for item in raw:
        parts = [p for p in re.split(r"[;,\s]+", item) if p]
        if len(parts) > 1:
            stats["split_strings"] += 1
        for part in parts:
            m = EVIDENCE_ID.fullmatch(part)
            if m is None:
                stats["dropped_malformed"] += 1
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if norm != part:
                stats["normalised"] += 1
            if norm not in turns:
                stats["dropped_missing_turn"] += 1
                continue
            if norm not in out:
                out.append(norm)
    return out


def questions_of(sample: dict[str, Any], turns: set[str], stats: Counter[str]) -> list[dict[str, Any]]:
    """The sample's scored questions (categories 1-4 with at least one evidence turn left)."""
    out = []
    for qa in sample["qa"]:
        if qa["category"] not in CATEGORIES:
            continue
        evidence = normalise_evidence(qa.get("evidence", []), turns, stats)
        if not evidence:
            stats["questions_without_evidence"] += 1
            continue
        out.append({"question": qa["question"], "category": qa["category"], "evidence": evidence})
    return out


def score(ranked: Sequence[str], evidence: Iterable[str], ks: Sequence[int] = KS) -> dict[str, float]:
    """One question's row: recall@k for each k in `ks` and all-evidence@10, each 0..1."""
    wanted = set(evidence)
    row = {f"recall@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in ks}
    row["all_evidence@10"] = float(wanted <= set(ranked[:10]))
    return row


def mean(rows: Sequence[dict[str, Any]], key: str) -> float:
    """The rows' average of `key` as a percentage (one decimal); nan for no rows."""
    return round(100.0 * sum(r[key] for r in rows) / len(rows), 1) if rows else float("nan")


def by_category(rows: Sequence[dict[str, Any]], metrics: Sequence[str] = METRICS) -> dict[str, dict[str, Any]]:
    """Each category's question count and metric averages (categories without questions left out)."""
    return {
        CATEGORIES[c]: {"questions": len(cat_rows), **{m: mean(cat_rows, m) for m in metrics}}
        for c in CATEGORIES
        if (cat_rows := [r for r in rows if r["category"] == c])
    }
