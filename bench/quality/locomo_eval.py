"""LoCoMo retrieval benchmark for polyg's hybrid search (`services.search.entities`).

For each conversation of `../shared/eval/locomo_dev.json` (read by path, never copied into the
repository: the data is CC BY-NC, benchmark use only) a fresh project holds one entity per
dialog turn: name = dia_id, entityType "turn", one observation
"[<session date>] <speaker>: <text>" (+ " [image: <blip_caption>]" when the turn shares a
photo). Every question of categories 1-4 is then searched with limit 20 and scored as
`../shared/eval/README.md` defines: a dialog turn is a unit, recall@k is the share of a
question's evidence turns in the top k (averaged over questions), all-evidence@k the share of
questions with every evidence turn in the top k.

The store is embedded FalkorDB with the default MiniLM embedder, driven in-process through
polyg's core (`Polyg(settings)`), not over MCP: this measures ranking quality, and latency of
the search call itself (embedding the query included, MCP transport excluded).

    .venv/bin/python bench/quality/locomo_eval.py                          # DEFAULT config, writes results
    .venv/bin/python bench/quality/locomo_eval.py --baseline-git HEAD --configs all   # before/after + ablations
    .venv/bin/python bench/quality/locomo_eval.py --variant k20:rrf_k=20,text_weight=0.8 --no-save
    .venv/bin/python bench/quality/locomo_eval.py --search-module other_search.py     # another implementation

`--configs all` runs `default` and presets that each undo one choice of DEFAULT (see
`presets()`), so the report shows what every choice is worth on this data.

The loaded store is cached in `--workdir` (default /tmp/polyg-locomo) and reused while the
data file and the code that writes entities are unchanged (`--reload` forces a rebuild).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import importlib.util
import inspect
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib import locomo_scoring
from bench.lib.database import stop_db
from bench.lib.locomo_scoring import questions_of
from bench.lib.machine import LoadSampler, machine_info
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, smoke_workdir
from bench.lib.stats import summarize

DATA = REPO.parent / "shared" / "eval" / "locomo_dev.json"
CATEGORIES = locomo_scoring.CATEGORIES
KS = locomo_scoring.KS
BATCH = 200  # entities per create_entities call (the tool limit is 1000)
LOADER_VERSION = 1  # bump when the way turns become entities changes
# Code whose changes alter what is stored (entity text, embeddings, indexes) triggers a reload.
STORE_CODE = (
    "polyg/core/graph/entities.py",
    "polyg/core/graph/vectors.py",
    "polyg/core/graph/vectorizer.py",
    "polyg/embed/minilm.py",
    "polyg/embed/quantize.py",
    "polyg/store/schema.py",
)

# From ../shared/eval/README.md, measured on this split with the same unit text.
REFERENCE = {
    "BM25 (bm25s defaults)": {"recall@5": 48.6, "recall@10": 54.9, "recall@20": 62.8, "all_evidence@10": 50.5},
    "dense, all-MiniLM-L6-v2": {"recall@5": 43.6, "recall@10": 53.4, "recall@20": 63.8, "all_evidence@10": 48.2},
    "BM25 + dense, RRF (k=60)": {"recall@5": 52.1, "recall@10": 60.3, "recall@20": 69.1, "all_evidence@10": 55.4},
}
REFERENCE_NOTE = "README: multi-hop is where every simple method is weak (recall@10 ~31, all-evidence@10 ~13)."


# --- data ----------------------------------------------------------------------------------


def turns_of(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation's dialog turns as create_entities items, in session order."""
    conv = sample["conversation"]
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)) and conv[key]
    )
    items = []
    for number, key in sessions:
        date = conv.get(f"session_{number}_date_time", "")
        for turn in conv[key]:
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            items.append({"name": turn["dia_id"], "entityType": "turn", "observations": [text]})
    return items


def project_id(sample_id: str) -> str:
    return "locomo_" + re.sub(r"[^A-Za-z0-9_.-]", "_", sample_id)


# --- store ---------------------------------------------------------------------------------


def store_fingerprint(data_path: Path) -> str:
    h = hashlib.sha256()
    h.update(f"loader {LOADER_VERSION}\n".encode())
    h.update(data_path.read_bytes())
    for rel in STORE_CODE:
        if (REPO / rel).exists():
            h.update((REPO / rel).read_bytes())
    from polyg.core.memory.named import NamedGraph  # only the write path, not the whole module

    for fn in (NamedGraph.create_entities, NamedGraph.write_entities):
        h.update(inspect.getsource(fn).encode())
    return h.hexdigest()


async def load(services: Any, samples: list[dict[str, Any]], log: Any) -> dict[str, Any]:
    info: dict[str, Any] = {}
    for sample in samples:
        project = project_id(sample["sample_id"])
        items = turns_of(sample)
        t = time.perf_counter()
        created = 0
        for start in range(0, len(items), BATCH):
            created += len(await services.named.create_entities(project, items[start : start + BATCH]))
        # Vectors are stored just after the text (polyg.core.graph.vectorizer): wait for all of them,
        # or the searches would run before them.
        if not await services.ctx.vectors.settle(project, 3600):
            raise RuntimeError(f"vectors of {project} were not stored")
        info[project] = {"turns": len(items), "created": created, "load_s": round(time.perf_counter() - t, 1)}
        log(f"loaded {project}: {created}/{len(items)} turns in {info[project]['load_s']} s")
    return info


async def wait_for_indexes(services: Any, projects: list[str], timeout_s: float = 600.0) -> float:
    """Wait until every project's indexes are OPERATIONAL. After a restart FalkorDB rebuilds
    them in the background: meanwhile vector queries fail and full-text queries find nothing."""
    t = time.perf_counter()
    for project in projects:
        while True:
            rows = await services.ctx.read(project, "CALL db.indexes() YIELD status RETURN status")
            if all(status == "OPERATIONAL" for (status,) in rows):
                break
            if time.perf_counter() - t > timeout_s:
                raise TimeoutError(f"indexes of {project} still building after {timeout_s:.0f} s: {rows}")
            await asyncio.sleep(0.5)
    return time.perf_counter() - t


# --- evaluation ----------------------------------------------------------------------------


def load_search_class(path: Path) -> Any:
    """`SearchService` from another file (e.g. `git show HEAD:polyg/core/search/service.py`), to compare."""
    spec = importlib.util.spec_from_file_location("alt_search", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


async def evaluate(search: Any, projects: list[tuple[str, list[dict[str, Any]], dict[str, str]]]) -> dict[str, Any]:
    """Search every question; recall@k, all-evidence@10 (overall, per category) and latency."""
    per_q: list[dict[str, Any]] = []
    latencies: list[float] = []
    for project, questions, names in projects:
        for q in questions[:3]:  # warm-up: first calls pay for caches and the model's arenas
            await search.entities(project, q["question"], max(KS))
        for q in questions:
            t = time.perf_counter()
            hits = await search.entities(project, q["question"], max(KS))
            latencies.append(time.perf_counter() - t)
            ranked = [names.get(entity_id, "?") for entity_id, _ in hits]
            per_q.append({"category": q["category"], **locomo_scoring.score(ranked, q["evidence"])})

    return summary(per_q, latencies)


def summary(
    per_q: list[dict[str, Any]],
    latencies: list[float],
    latency_keys: tuple[str, ...] = ("p50_ms", "p95_ms", "mean_ms", "max_ms"),
) -> dict[str, Any]:
    """recall@k and all-evidence@10 over the questions' rows (overall, per category), and latency."""

    mean = locomo_scoring.mean
    result: dict[str, Any] = {"questions": len(per_q), **{m: mean(per_q, m) for m in locomo_scoring.METRICS}}
    result["by_category"] = locomo_scoring.by_category(per_q)
    lat = summarize(latencies)
    result["latency_ms"] = {key: round(lat[key], 1) for key in latency_keys}
    return result


def presets(search_module: Any) -> dict[str, Any]:
    """Named configurations to compare; `default` is what polyg ships. The others undo one
    choice of DEFAULT each (or isolate one signal), so the report shows what each is worth."""
    cfg_cls, default = search_module.SearchConfig, search_module.DEFAULT
    fields = {f.name for f in dataclasses.fields(cfg_cls)}
    variants: dict[str, dict[str, Any]] = {
        # One signal alone; vector_only without any cut is plain KNN, as the README's "dense".
        "vector_only": {
            "text_weight": 0.0,
            "fuzzy_weight": 0.0,
            "vector_margin": None,
            "min_similarity": -1.0,
            "solid_similarity": None,
        },
        "text_only": {"vector_weight": 0.0},
        "rrf_k60": {"rrf_k": 60},
        "no_vector_cut": {"vector_margin": None, "min_similarity": -1.0},
        "margin_0.15": {"vector_margin": 0.15},
        "no_similarity_floor": {"min_similarity": -1.0},
        "term_candidates_50": {"term_candidates": 50},
        "keep_stopwords": {"drop_stopwords": False},
        "no_typos": {"fuzzy_weight": 0.0},
        "no_two_edit_typos": {"fuzzy2_weight": 0.0},
        "no_stems": {"stem_weight": 0.0},
        "no_agent_nouns": {"agent_nouns": False},
        "stem_weight_0.5": {"stem_weight": 0.5},
        "no_solid_similarity": {"solid_similarity": None},
    }
    out: dict[str, Any] = {"default": default}
    for name, changes in variants.items():
        usable = {k: v for k, v in changes.items() if k in fields}
        if usable:
            out[name] = dataclasses.replace(default, **usable)
    return out


def parse_overrides(pairs: list[str], cfg_cls: Any) -> dict[str, Any]:
    types = {f.name: f.type for f in dataclasses.fields(cfg_cls)}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in types:
            raise SystemExit(f"--set {key}: SearchConfig has no such field ({', '.join(types)})")
        if value.lower() == "none":
            out[key] = None
        elif value.lower() in ("true", "false"):
            out[key] = value.lower() == "true"
        elif "int" in str(types[key]) and "float" not in str(types[key]):
            out[key] = int(value)
        elif "float" in str(types[key]):
            out[key] = float(value)
        else:
            out[key] = value
    return out


# --- report --------------------------------------------------------------------------------


def markdown(run: dict[str, Any]) -> str:
    cols = ["recall@5", "recall@10", "recall@20", "all_evidence@10"]
    cats = list(CATEGORIES.values())
    lines = [
        f"# LoCoMo retrieval: polyg hybrid search ({run['machine']['date']})",
        "",
        f"Data: `{run['data']}`, {run['conversations']} conversations, {run['turns']} turns, "
        f"{run['questions']} questions of categories 1-4 (limit 20 per search). Embedded FalkorDB, "
        f"MiniLM embedder, in-process (no MCP). polyg {run['machine']['polyg_commit']}"
        + (" + uncommitted changes" if run["machine"]["polyg_tracked_changes"] else "")
        + ".",
        "",
        "Evidence ids: " + ", ".join(f"{k} {v}" for k, v in sorted(run["evidence_fixes"].items())) + ".",
        "",
        "| config | " + " | ".join(cols) + " | " + " | ".join(f"r@10 {c}" for c in cats) + " | p50 ms | p95 ms |",
        "|---|" + "---:|" * (len(cols) + len(cats) + 2),
    ]
    for name, res in run["results"].items():
        by_cat = res["by_category"]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{res[c]:.1f}" for c in cols)
            + " | "
            + " | ".join(f"{by_cat[c]['recall@10']:.1f}" if c in by_cat else "" for c in cats)
            + f" | {res['latency_ms']['p50_ms']:.1f} | {res['latency_ms']['p95_ms']:.1f} |"
        )
    for name, ref in REFERENCE.items():
        lines.append(
            f"| *ref: {name}* | " + " | ".join(f"*{ref[c]:.1f}*" for c in cols) + " |" + " |" * (len(cats) + 2)
        )
    lines += ["", REFERENCE_NOTE, "", "Per category (recall@10 / all-evidence@10, questions):", ""]
    lines += locomo_scoring.category_table(run["results"], cats, "config")
    lines += ["", "Configurations:", ""]
    for name, cfg in run["configs"].items():
        lines.append(f"- `{name}`: {cfg}")
    load = run.get("machine_load", {})
    if load:
        lines += ["", f"Machine load while measuring: {load} (nproc {run['machine']['nproc']})."]
    return "\n".join(lines) + "\n"


# --- main ----------------------------------------------------------------------------------

SMOKE_TURNS = [
    ("Ana", "I adopted a grey cat called Pixel last week."),
    ("Ben", "Nice! I spent the weekend hiking near the lake."),
    ("Ana", "My sister starts her new job as a nurse on Monday."),
    ("Ben", "I am learning to play the violin, slowly."),
]
SMOKE_QUESTIONS = [
    ("What is the name of Ana's cat?", 4, ["D1:1"], "Pixel"),
    ("Where did Ben go hiking?", 4, ["D1:2"], "near the lake"),
    ("What instrument is Ben learning?", 1, ["D1:4", "D1:2"], "violin"),
]


def smoke_data(workdir: Path) -> Path:
    """A four-turn conversation in LoCoMo's shape, for a run that only checks the script works."""
    turns = [{"speaker": who, "dia_id": f"D1:{i}", "text": text} for i, (who, text) in enumerate(SMOKE_TURNS, 1)]
    sample = {
        "sample_id": "smoke",
        "conversation": {"session_1_date_time": "1:00 pm on 8 May, 2023", "session_1": turns},
        "qa": [{"question": q, "category": c, "evidence": e, "answer": a} for q, c, e, a in SMOKE_QUESTIONS],
    }
    path = workdir / "smoke.json"
    path.write_text(json.dumps([sample]))
    return path


def log(msg: str) -> None:
    print(f"[locomo] {msg}", file=sys.stderr, flush=True)


@dataclasses.dataclass
class Prepared:
    samples: list[dict[str, Any]]
    projects: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]  # project, turns, questions
    evidence_fixes: Counter[str]
    fingerprint: str
    cached: bool


def prepare(args: argparse.Namespace) -> Prepared:
    """Read the data, and keep the cached store only if it was built from the same data and code."""
    samples = json.loads(args.data.read_text())
    stats: Counter[str] = Counter()
    projects = []
    for sample in samples:
        items = turns_of(sample)
        questions = questions_of(sample, {i["name"] for i in items}, stats)
        projects.append((project_id(sample["sample_id"]), items, questions))
    workdir: Path = args.workdir
    meta_path = workdir / "meta.json"
    fingerprint = store_fingerprint(args.data)
    cached = meta_path.exists() and json.loads(meta_path.read_text()).get("fingerprint") == fingerprint
    if not cached or args.reload:
        stop_db(workdir / "data")
        shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    return Prepared(samples, projects, stats, fingerprint, cached and not args.reload)


def choose_configs(args: argparse.Namespace, module: Any) -> dict[str, Any]:
    available = presets(module)
    configs: dict[str, Any] = {}
    for name in available if args.configs == "all" else args.configs.split(","):
        if name not in available:
            raise SystemExit(f"unknown config {name!r}; presets: {', '.join(available)}")
        configs[name] = available[name]
    if args.set:
        configs["custom"] = dataclasses.replace(module.DEFAULT, **parse_overrides(args.set, module.SearchConfig))
    for variant in args.variant:
        name, _, fields = variant.partition(":")
        pairs = [p for p in fields.split(",") if p]
        configs[name] = dataclasses.replace(module.DEFAULT, **parse_overrides(pairs, module.SearchConfig))
    if (args.set or args.variant) and args.configs == "default":
        configs.pop("default")
    return configs


async def run(args: argparse.Namespace, prep: Prepared) -> dict[str, Any]:
    import polyg.core.search.service
    from polyg.config import load_settings
    from polyg.runtime.app import Polyg

    workdir: Path = args.workdir
    settings = load_settings(
        None,
        data_dir=workdir / "data",
        log_dir=workdir / "logs",
        embedding_provider="hashing" if args.smoke else "minilm",
        log_level="WARNING",
    )
    # (label, module, config): the baseline implementation first, then this tree's configs.
    runs: list[tuple[str, Any, Any]] = []
    if args.baseline:
        baseline = load_search_class(args.baseline)
        runs.append((f"baseline ({args.baseline_name})", baseline, baseline.DEFAULT))
    module = load_search_class(args.search_module) if args.search_module else polyg.core.search.service
    runs += [(f"{args.label}:{n}" if args.label else n, module, c) for n, c in choose_configs(args, module).items()]
    core = Polyg(settings)
    try:
        services = await core.ready()
        if prep.cached:
            load_info = json.loads((workdir / "meta.json").read_text())["load"]
            log(f"reusing the store in {workdir}")
        else:
            load_info = await load(services, prep.samples, log)
            meta = {"fingerprint": prep.fingerprint, "load": load_info}
            await asyncio.to_thread((workdir / "meta.json").write_text, json.dumps(meta, indent=2))
        waited = await wait_for_indexes(services, [project for project, _, _ in prep.projects])
        log(f"indexes operational after {waited:.1f} s")
        projects = []
        for project, _, questions in prep.projects:
            rows = await services.ctx.read(project, "MATCH (e:Entity) RETURN e.id, e.name")
            projects.append((project, questions, {i: n for i, n in rows}))
        results: dict[str, Any] = {}
        with LoadSampler() as sampler:
            for label, impl, cfg in runs:
                t = time.perf_counter()
                results[label] = r = await evaluate(impl.SearchService(services.ctx, cfg), projects)
                log(
                    f"{label}: r@5 {r['recall@5']} r@10 {r['recall@10']} r@20 {r['recall@20']} "
                    f"all@10 {r['all_evidence@10']} | "
                    + " ".join(f"{c} {v['recall@10']}" for c, v in r["by_category"].items())
                    + f" | p50 {r['latency_ms']['p50_ms']} ms p95 {r['latency_ms']['p95_ms']} ms "
                    f"({time.perf_counter() - t:.0f} s)"
                )
    finally:
        await core.close()
    data = args.data.resolve()
    return {
        "data": str(data.relative_to(REPO.parent)) if data.is_relative_to(REPO.parent) else str(data),
        "conversations": len(prep.samples),
        "turns": sum(len(items) for _, items, _ in prep.projects),
        "questions": sum(len(q) for _, _, q in prep.projects),
        "evidence_fixes": dict(prep.evidence_fixes),
        "search_module": str(args.search_module) if args.search_module else "polyg.core.search",
        "configs": {label: repr(cfg) for label, _, cfg in runs},
        "results": results,
        "load": load_info,
        "machine_load": sampler.summary(),
        "machine": machine_info(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-locomo"))
    parser.add_argument("--configs", default="default", help="comma-separated presets, or 'all'")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="a custom config")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:FIELD=VALUE,...",
        help="a named variant of DEFAULT (repeatable), e.g. k20:rrf_k=20,text_weight=0.8",
    )
    parser.add_argument("--search-module", type=Path, help="file defining SearchService/SearchConfig/DEFAULT")
    parser.add_argument("--baseline", type=Path, help="another search module whose DEFAULT is measured first")
    parser.add_argument("--baseline-git", metavar="REV", help="polyg/core/search/service.py at REV as the baseline")
    parser.add_argument("--label", default="", help="prefix of the config names in the report")
    parser.add_argument("--reload", action="store_true", help="rebuild the cached store")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        args.workdir, args.no_save = smoke_workdir("locomo"), True
        args.data = smoke_data(smoke_workdir("locomo-data"))
    args.baseline_name = ""
    if args.baseline_git:
        # The search module as committed at that revision, to measure a change against it.
        source = subprocess.run(
            ["git", "show", f"{args.baseline_git}:polyg/core/search/service.py"],
            cwd=REPO,
            check=True,
            capture_output=True,
        ).stdout
        tmp = Path(tempfile.mkdtemp(prefix="locomo-baseline-")) / "search.py"
        tmp.write_bytes(source)
        last = subprocess.run(
            ["git", "log", "-1", "--format=%h", args.baseline_git, "--", "polyg/core/search/service.py"],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        args.baseline, args.baseline_name = tmp, f"search.py of {last}"
    elif args.baseline:
        args.baseline_name = args.baseline.name
    result = asyncio.run(run(args, prepare(args)))
    text = markdown(result)
    print(text)
    if not args.no_save:
        runs = result["results"]  # the baseline, when there is one, comes first
        default = runs.get("default") or next(r for name, r in runs.items() if not name.startswith("baseline"))
        figures = {m: default[m] for m in ("recall@5", "recall@10", "recall@20", "all_evidence@10")}
        figures["p50_ms"] = default["latency_ms"]["p50_ms"]
        md, js = write_results("locomo", text, result, size=args.data.stem.removeprefix("locomo_"), figures=figures)
        print(f"wrote {md} and {js}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
