"""Intent classifier accuracy on a labelled query set (spec 003's intent table).

    .venv/bin/python bench/quality/intent_bench.py                       # ../shared/eval/intent_dev.yaml
    .venv/bin/python bench/quality/intent_bench.py --set other.yaml --errors
    .venv/bin/python bench/quality/intent_bench.py --smoke               # a few built-in queries, nothing saved

Reports per-intent precision, recall and F1, macro-F1, exact intent-set accuracy, causal
direction accuracy (on queries labelled causal), timeframe accuracy (a time reference found or
not), entity-mention recall and precision (case-insensitive, substring either way, as the set's
header says) and the calibration of the confidence (exact-match rate per confidence bucket).
Offline: the rule-based classifier, no LLM.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.machine import machine_info
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP
from polyg.core.recall.classifier import rule_classify

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SET = REPO.parent / "shared" / "eval" / "intent_dev.yaml"
SMOKE_SET = [
    {
        "q": "Why did the build break after Monday's merge?",
        "intents": ["causal", "temporal"],
        "causal_direction": "upstream",
        "timeframe": True,
        "entities": [],
    },
    {
        "q": "Who owns the ledger service?",
        "intents": ["entity"],
        "causal_direction": None,
        "timeframe": False,
        "entities": ["ledger service"],
    },
    {
        "q": "Anything on onboarding?",
        "intents": ["semantic"],
        "causal_direction": None,
        "timeframe": False,
        "entities": [],
    },
]
INTENTS = ("semantic", "temporal", "causal", "entity")
REFERENCE = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)
TARGET_MACRO_F1 = 0.90


def same_name(a: str, b: str) -> bool:
    x, y = a.lower().strip(), b.lower().strip()
    return bool(x) and bool(y) and (x in y or y in x)


def evaluate(items: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {i: {"tp": 0, "fp": 0, "fn": 0} for i in INTENTS}
    exact = direction_ok = direction_n = time_ok = 0
    ent_expected = ent_found = ent_predicted = ent_correct = 0
    buckets: dict[float, list[int]] = {}
    errors: list[dict[str, Any]] = []
    rule_classify("What happened in March 2023?", REFERENCE)  # loads the date parser: not per-query time
    started = time.perf_counter()
    for item in items:
        out = rule_classify(item["q"], REFERENCE)
        got, want = set(out.intents), set(item["intents"])
        for intent in INTENTS:
            key = (
                "tp"
                if intent in got and intent in want
                else "fp"
                if intent in got
                else "fn"
                if intent in want
                else None
            )
            if key:
                counts[intent][key] += 1
        ok = got == want
        exact += ok
        buckets.setdefault(out.confidence, []).append(int(ok))
        if "causal" in want:
            direction_n += 1
            direction_ok += out.causal_direction == item["causal_direction"]
        time_ok += (out.timeframe is not None) == bool(item["timeframe"])
        mentions = [e.mention for e in out.entities]
        ent_expected += len(item["entities"])
        ent_found += sum(any(same_name(m, e) for m in mentions) for e in item["entities"])
        ent_predicted += len(mentions)
        ent_correct += sum(any(same_name(m, e) for e in item["entities"]) for m in mentions)
        wrong_dir = "causal" in want and out.causal_direction != item["causal_direction"]
        wrong_time = (out.timeframe is not None) != bool(item["timeframe"])
        wrong_ents = sorted(m.lower() for m in mentions) != sorted(e.lower() for e in item["entities"])
        if not ok or wrong_dir or wrong_time or wrong_ents:
            errors.append(
                {
                    "q": item["q"],
                    "want": sorted(want),
                    "got": sorted(got),
                    "direction": [item["causal_direction"], out.causal_direction],
                    "timeframe": [item["timeframe"], out.timeframe.model_dump() if out.timeframe else None],
                    "entities": [item["entities"], mentions],
                }
            )
    elapsed = time.perf_counter() - started
    per_intent = {}
    for intent, c in counts.items():
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
        r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        per_intent[intent] = {"precision": p, "recall": r, "f1": f, "support": c["tp"] + c["fn"]}
    n = len(items)
    return {
        "queries": n,
        "per_intent": per_intent,
        "macro_f1": sum(v["f1"] for v in per_intent.values()) / len(INTENTS),
        "exact_intents": exact / n,
        "causal_direction_accuracy": direction_ok / direction_n if direction_n else None,
        "timeframe_accuracy": time_ok / n,
        "entity_mention_recall": ent_found / ent_expected if ent_expected else None,
        "entity_mention_precision": ent_correct / ent_predicted if ent_predicted else None,
        "calibration": {str(k): {"n": len(v), "exact": sum(v) / len(v)} for k, v in sorted(buckets.items())},
        "ms_per_query": elapsed * 1000 / n,
        "errors": errors,
    }


def markdown(r: dict[str, Any], source: str) -> str:
    lines = [
        f"# Intent classifier (rules, offline) on {source}",
        "",
        f"{r['queries']} queries; reference time {REFERENCE.isoformat()}; {r['ms_per_query']:.2f} ms a query",
        "",
        "| intent | precision | recall | F1 | support |",
        "|---|---:|---:|---:|---:|",
    ]
    for intent, v in r["per_intent"].items():
        lines.append(f"| {intent} | {v['precision']:.3f} | {v['recall']:.3f} | {v['f1']:.3f} | {v['support']} |")
    verdict = "PASS" if r["macro_f1"] >= TARGET_MACRO_F1 else "MISS"
    lines += [
        "",
        f"- macro-F1: **{r['macro_f1']:.3f}** (target >= {TARGET_MACRO_F1}: {verdict})",
        f"- exact intent set: {r['exact_intents']:.3f}",
        f"- causal direction accuracy (causal queries): {r['causal_direction_accuracy']:.3f}",
        f"- timeframe accuracy: {r['timeframe_accuracy']:.3f}",
        f"- entity-mention recall: {r['entity_mention_recall']:.3f}, precision: {r['entity_mention_precision']:.3f}",
        "",
        "Calibration (confidence -> share of queries whose intent set is exactly right):",
        "",
        "| confidence | queries | exact |",
        "|---:|---:|---:|",
    ]
    lines += [f"| {k} | {v['n']} | {v['exact']:.2f} |" for k, v in r["calibration"].items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--errors", action="store_true", help="print every query with a wrong field")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    items = SMOKE_SET if args.smoke else yaml.safe_load(args.set.read_text())["queries"]
    source = "smoke set" if args.smoke else args.set.name
    result = evaluate(items)
    report = markdown(result, source)
    print(report)
    if args.errors:
        for e in result["errors"]:
            print(e)
    if not (args.no_save or args.smoke):
        figures = {
            "macro_f1": result["macro_f1"],
            "exact": result["exact_intents"],
            "direction_acc": result["causal_direction_accuracy"],
            "timeframe_acc": result["timeframe_accuracy"],
            "entity_recall": result["entity_mention_recall"],
        }
        size = args.set.stem.removeprefix("intent_")
        data = {"set": args.set.name, "machine": machine_info(), **result}
        md, js = write_results("intent", report, data, size=size, figures=figures)
        print(f"written: {md} {js}")


if __name__ == "__main__":
    main()
