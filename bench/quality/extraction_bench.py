"""remember's extraction against a gold set (bench/data/extraction_gold.yaml): precision, recall
and F1 of entity mentions, entity types, facts (subject, predicate, object, validity), event
times and causal links, for this checkout's extractor and, in the same run, for the rules of
another git revision (default `main`, checked out in a temporary worktree and run in a
subprocess with that checkout on its import path).

- entities: names compared case-insensitively; types: of the gold entities found, the share
  whose type is right (service and product are one class), and the typed F1;
- facts: (subject, predicate, object, valid_from, valid_to) equal, names case-insensitively,
  validity to the day ("not stated" must be not stated); also F1 without validity;
- events: the times of the events a memory logs (to the minute; a date alone is its midnight);
- causal links: a found link matches a gold one when both its cause and its effect share at
  least half their content words with the gold's (phrase edges differ between readers);
- resolution to existing entities: on the memories told with `known` names (entities the graph
  holds), each gold entity that shares a word with a known name is one decision: a known one
  must come out as the graph spells it (case aside) with no other name for it beside it ("Alice"
  beside "Alice Chen"), a new one as itself and not as the known name it resembles.

Usage: .venv/bin/python bench/quality/extraction_bench.py [--baseline main | --baseline none] [--show-misses]
Results: printed, and bench/results/extraction.md. Also measures a 20,000-character memory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GOLD = REPO / "bench" / "data" / "extraction_gold.yaml"
RESULTS = REPO / "bench" / "results" / "extraction.md"

# Run against any checkout: prints one JSON line per item with what its extractor found.
PREDICT = r"""
import inspect, json, sys
from datetime import datetime
import yaml
from polyg.core.memory.extract_memory import extract
gold = yaml.safe_load(open(sys.argv[1]))
ref = datetime.fromisoformat(gold["reference_time"].replace("Z", "+00:00"))
takes_speaker = "speaker" in inspect.signature(extract).parameters
for item in gold["items"]:
    kwargs = {"speaker": item.get("ctx")} if takes_speaker else {}
    # The graph's names a memory's words find (what remember passes), for resolution.
    out = extract(item["t"], ref, tuple(item.get("known") or ()), **kwargs)
    print(json.dumps({
        "entities": [[e.name, e.type] for e in out.entities],
        "facts": [[f.subject, f.predicate, f.object,
                   getattr(f, "valid_from", None) and f.valid_from.date().isoformat(),
                   getattr(f, "valid_to", None) and f.valid_to.date().isoformat()] for f in out.facts],
        "events": [e.occurred_at.isoformat() for e in out.events],
        "causes": [[c.cause, c.effect] for c in out.causes],
    }))
"""

TYPE_CLASSES = {
    "person": "person",
    "organisation": "organisation",
    "organization": "organisation",
    "place": "place",
    "service": "service",
    "product": "service",
    "team": "team",
    "project": "project",
    "event": "event",
    "code": "code",
}
_STOP = frozenset("the a an of to in on at by for and or its their his her our my was were is are be".split())


def load_gold(smoke: bool, path: Path = GOLD) -> dict[str, Any]:
    import yaml

    gold = yaml.safe_load(path.read_text())
    if smoke:
        gold["items"] = gold["items"][:12]
    return gold


def predict(repo: Path, gold_path: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = subprocess.run(
        [sys.executable, "-c", PREDICT, str(gold_path)], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the extractor at {repo} failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def baseline_worktree(revision: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="polyg-extraction-baseline-"))
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), revision], check=True, capture_output=True
    )
    return path


def remove_worktree(path: Path) -> None:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False, capture_output=True
    )


# --- scoring --------------------------------------------------------------------------------


class Score:
    def __init__(self) -> None:
        self.tp = self.fp = self.fn = 0

    def add(self, tp: int, fp: int, fn: int) -> None:
        self.tp += tp
        self.fp += fp
        self.fn += fn

    def prf(self) -> tuple[float, float, float]:
        p = self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0
        r = self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return p, r, f


def _fact(text: str) -> tuple[str, ...]:
    parts = [p.strip() for p in text.split("|")]
    parts += [""] * (5 - len(parts))
    return (parts[0].lower(), parts[1], parts[2].lower(), parts[3], parts[4])


def _event_time(value: str) -> str:
    text = str(value)
    if "T" not in text and " " not in text:
        return text[:10]
    at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if at.tzinfo is not None:
        at = at.astimezone(UTC)
    return at.date().isoformat() if (at.hour, at.minute) == (0, 0) else at.strftime("%Y-%m-%dT%H:%M")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


def _overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return 1.0 if a.strip().lower() == b.strip().lower() else 0.0
    return len(wa & wb) / max(len(wa), len(wb))


def _match_counts(gold: list[Any], found: list[Any]) -> tuple[int, int, int]:
    remaining = list(found)
    tp = 0
    for g in gold:
        if g in remaining:
            remaining.remove(g)
            tp += 1
    return tp, len(remaining), len(gold) - tp


def _resolution(item: dict[str, Any], gold_names: list[str], found: list[str]) -> tuple[int, int]:
    """(right, decisions) of one memory's resolution to the known names (see the docstring)."""
    known = [k.lower() for k in item.get("known") or []]
    if not known:
        return 0, 0
    right = seen = 0
    for name in gold_names:
        words = _words(name)
        alike = [k for k in known if k != name and words & _words(k)]
        if name in known:
            seen += 1
            variants = [p for p in found if p != name and _words(p) and _words(p) < words]
            right += name in found and not variants
        elif alike:
            seen += 1
            right += name in found and not any(k in found for k in alike)
    return right, seen


def score(gold: dict[str, Any], predictions: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    ent, typed, facts, facts_bare, events, causes = Score(), Score(), Score(), Score(), Score(), Score()
    types_right = types_seen = 0
    resolved_right = resolved_seen = 0
    misses: list[str] = []
    for item, pred in zip(gold["items"], predictions, strict=True):
        g_ent = {
            k.lower(): TYPE_CLASSES.get(str(v).lower(), str(v).lower()) for k, v in (item.get("ent") or {}).items()
        }
        p_ent = {
            n.lower(): TYPE_CLASSES.get(str(t).lower(), str(t).lower()) if t else None for n, t in pred["entities"]
        }
        ent.add(*_match_counts(list(g_ent), list(p_ent)))
        typed.add(*_match_counts(list(g_ent.items()), list(p_ent.items())))
        for name, kind in g_ent.items():
            if name in p_ent:
                types_seen += 1
                types_right += p_ent[name] == kind
        right, seen = _resolution(item, list(g_ent), list(p_ent))
        resolved_right += right
        resolved_seen += seen
        g_facts = [_fact(f) for f in item.get("facts") or []]
        p_facts = [(s.lower(), p, o.lower(), vf or "", vt or "") for s, p, o, vf, vt in pred["facts"]]
        facts.add(*_match_counts(g_facts, p_facts))
        facts_bare.add(*_match_counts([f[:3] for f in g_facts], [f[:3] for f in p_facts]))
        g_events = [_event_time(e) for e in item.get("events") or []]
        p_events = [_event_time(e) for e in pred["events"]]
        events.add(*_match_counts(g_events, p_events))
        g_causes = [tuple(x.strip() for x in c.split("=>")) for c in item.get("causes") or []]
        p_causes = list(pred["causes"])
        tp = 0
        for gc, ge in g_causes:
            hit = next((p for p in p_causes if _overlap(gc, p[0]) >= 0.5 and _overlap(ge, p[1]) >= 0.5), None)
            if hit is not None:
                p_causes.remove(hit)
                tp += 1
        causes.add(tp, len(p_causes), len(g_causes) - tp)
        wrong = (
            set(g_ent) != set(p_ent)
            or sorted(g_facts) != sorted(p_facts)
            or sorted(g_events) != sorted(p_events)
            or tp != len(g_causes)
            or p_causes
        )
        if wrong:
            misses.append(
                f"- {item['t']!r} ctx={item.get('ctx')}\n    gold: ent={g_ent} facts={g_facts} events={g_events} "
                f"causes={g_causes}\n    found: ent={p_ent} facts={p_facts} events={p_events} causes={pred['causes']}"
            )
    out = {
        "entities": ent.prf(),
        "types (accuracy of found)": (types_right / types_seen if types_seen else 1.0,) * 3,
        "typed entities": typed.prf(),
        "facts (with validity)": facts.prf(),
        "facts (s, p, o only)": facts_bare.prf(),
        "event times": events.prf(),
        "causal links": causes.prf(),
        "resolution to existing (accuracy)": (resolved_right / resolved_seen if resolved_seen else 1.0,) * 3,
    }
    return out, misses


def long_memory_seconds(smoke: bool) -> tuple[int, float, int]:
    """How long the extraction of a 20,000-character memory takes (prose, a table, code and a
    URL list mixed), parse included, the pipeline loaded and warm."""
    sys.path.insert(0, str(REPO))
    from polyg.core.memory.extract_memory import extract
    from polyg.nlp.pipeline import pipeline

    pipeline().load()  # loaded at server start: not part of a remember's time
    extract("Yesterday at 14:30 Sam restarted the database cluster.", datetime(2026, 1, 14, 12, tzinfo=UTC))

    block = (
        "On Monday at 09:30 Ana restarted the billing API because the cache was cold. "
        "The Search team depends on Elasticsearch and Redis. Since March 2025 Tom works on the data pipeline. "
        "| col | val |\n| a | 1 |\n"
        "def f(x): return x * 2\n"
        "See https://example.org/a/b?c=d for the runbook. 日本語のテキストです。 🎉\n"
    )
    text = (block * (20_000 // len(block) + 1))[: 2_000 if smoke else 20_000]
    started = time.perf_counter()
    found = extract(text, datetime(2026, 1, 14, 12, tzinfo=UTC))
    return len(text), time.perf_counter() - started, len(found.entities)


def table(rows: dict[str, dict[str, Any]]) -> str:
    names = list(rows)
    lines = ["| measure | " + " | ".join(f"{n} P / R / F1" for n in names) + " |", "|---|" + "---|" * len(names)]
    for measure in next(iter(rows.values())):
        cells = []
        for n in names:
            p, r, f = rows[n][measure]
            cells.append(
                f"{f:.3f}"
                if measure.endswith("accuracy)") or measure.startswith("types (")
                else f"{p:.3f} / {r:.3f} / **{f:.3f}**"
            )
        lines.append(f"| {measure} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def record_history(gold: Path, rows: dict[str, tuple[dict[str, Any], list[str]]]) -> None:
    """One row per run in bench/results/history.csv: each measure's F1 (accuracy for types and
    resolution) of this checkout, and of the baseline when one ran, on the set named by `size`."""
    sys.path.insert(0, str(REPO))  # the repository: bench.lib
    from bench.lib.machine import machine_info
    from bench.lib.results import append_history

    figures: dict[str, Any] = {}
    for name, (scores, _) in rows.items():
        prefix = "" if name == "this checkout" else "baseline_"
        for measure, (_, _, f1) in scores.items():
            figures[f"{prefix}{measure}"] = round(f1, 3)
    append_history("extraction", gold.stem.removeprefix("extraction_"), figures, machine_info())


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="main", help="git revision whose rules run beside (none: skip)")
    parser.add_argument("--smoke", action="store_true", help="a few items, no baseline")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--gold", type=Path, default=GOLD, help="the gold set (default: %(default)s)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    gold = load_gold(args.smoke, args.gold)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        import yaml

        yaml.safe_dump(gold, handle)
        gold_path = Path(handle.name)
    try:
        started = time.perf_counter()
        rows = {"this checkout": score(gold, predict(REPO, gold_path))}
        ours_s = time.perf_counter() - started
        if args.baseline != "none" and not args.smoke:
            worktree = baseline_worktree(args.baseline)
            try:
                rows[f"rules at {args.baseline}"] = score(gold, predict(worktree, gold_path))
            finally:
                remove_worktree(worktree)
    finally:
        gold_path.unlink(missing_ok=True)
    chars, seconds, entities = long_memory_seconds(args.smoke)
    report = [
        f"# Extraction against {args.gold.name} ({len(gold['items'])} memories)",
        "",
        table({name: scores for name, (scores, _) in rows.items()}),
        "",
        f"This checkout's run (process start, model load and {len(gold['items'])} extractions): {ours_s:.1f} s.",
        f"A {chars:,}-character memory (prose, tables, code, URLs, emoji): extracted in {seconds:.2f} s "
        f"({entities} entities).",
    ]
    print("\n".join(report))
    if args.show_misses:
        for name, (_, misses) in rows.items():
            print(f"\n## misses: {name} ({len(misses)})\n" + "\n".join(misses))
    if not args.smoke:
        record_history(args.gold, rows)
    if not args.smoke and args.gold == GOLD:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        # Notes kept below the table (from "Same run") survive a new run.
        kept = RESULTS.read_text().split("\nSame run", 1) if RESULTS.exists() else [""]
        notes = "\nSame run" + kept[1] if len(kept) == 2 else ""
        RESULTS.write_text("\n".join(report) + "\n" + notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
