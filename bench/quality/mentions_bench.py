"""Entity mentions in recall's queries: the classifier's rules (polyg/core/text/mentions.py)
next to the spaCy pipeline's names (the rules `remember` reads a parse with,
polyg/core/memory/extract_rules.py), on the intent set's queries and on held-out ones
(bench/data/mention_queries_heldout.yaml). Scored as bench/quality/intent_bench.py scores mentions:
case-insensitive, a substring either way. Reports recall, precision and milliseconds a query.

Usage: .venv/bin/python bench/quality/mentions_bench.py [--show-misses] [--smoke]
Printed only (a comparison that decides which reader the classifier uses, not a tracked figure).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from polyg.core.memory import extract_rules  # noqa: E402
from polyg.core.text.mentions import find_mentions  # noqa: E402
from polyg.nlp.pipeline import pipeline  # noqa: E402

SETS = {
    "intent_dev": REPO.parent / "shared" / "eval" / "intent_dev.yaml",
    "held-out": REPO / "bench" / "data" / "mention_queries_heldout.yaml",
}


def same_name(a: str, b: str) -> bool:
    a, b = a.lower().strip(), b.lower().strip()
    return a in b or b in a


def by_rules(query: str) -> list[str]:
    return [m.text for m in find_mentions(query, ())]


def by_parse(query: str) -> list[str]:
    """The names remember's rules find in the query's parse (code identifiers included)."""
    doc = pipeline().parse(query)
    memory = extract_rules._Memory(datetime(2026, 1, 14, tzinfo=UTC), None, {}, [])
    out: list[str] = []
    for sentence in doc.sents:
        out += [c.text for c in extract_rules.code_mentions(sentence.text) if not c.text.isalpha()]
        out += [name for name, _ in extract_rules._mentions(sentence, memory)]
    return list(dict.fromkeys(out))


def load(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    if isinstance(data, dict):
        data = next(v for v in data.values() if isinstance(v, list))
    return [item for item in data if "q" in item and "entities" in item]


def measure(items: list[dict[str, Any]], reader: Callable[[str], list[str]]) -> tuple[float, float, float, list[str]]:
    expected = found = correct = named = 0
    misses: list[str] = []
    started = time.perf_counter()
    for item in items:
        mentions = reader(item["q"])
        named += len(mentions)
        expected += len(item["entities"])
        found += sum(any(same_name(m, e) for m in mentions) for e in item["entities"])
        correct += sum(any(same_name(m, e) for e in item["entities"]) for m in mentions)
        if sorted(m.lower() for m in mentions) != sorted(e.lower() for e in item["entities"]):
            misses.append(f"    {item['q']!r}: gold {item['entities']}, found {mentions}")
    ms = (time.perf_counter() - started) / max(len(items), 1) * 1000
    return found / max(expected, 1), correct / max(named, 1), ms, misses


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="five queries of each set")
    args = parser.parse_args(list(argv) if argv is not None else None)
    pipeline().load()  # loaded at server start: not part of a query's time
    by_parse("Warm the parser up.")
    print("| set | reader | recall | precision | ms a query |\n|---|---|---:|---:|---:|")
    misses: list[str] = []
    for set_name, path in SETS.items():
        if not path.exists():
            print(f"(no {set_name} set at {path}: skipped)", file=sys.stderr)
            continue
        items = load(path)[: 5 if args.smoke else None]
        for reader_name, reader in (("rules", by_rules), ("parse", by_parse)):
            recall, precision, ms, wrong = measure(items, reader)
            print(f"| {set_name} ({len(items)}) | {reader_name} | {recall:.3f} | {precision:.3f} | {ms:.1f} |")
            misses += [f"- {set_name}, {reader_name}:", *wrong]
    if args.show_misses:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
