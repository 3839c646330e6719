"""LoCoMo retrieval: `graph_enhanced_search` (spec 004) against `search_nodes` in the same run.

The store is the one `bench/quality/locomo_eval.py` builds (one entity per dialog turn, its text as an
observation, written through the core as `create_entities` writes it; the data is read by path,
never copied into the repository). Every question of categories 1-4 is searched by
`search_nodes`' core call (`services.search.entities`) and by graph-enhanced search at several
(vector_weight, graph_weight) settings, depth 2, limit 10, and scored as
`../shared/eval/README.md` defines (recall@k: share of a question's evidence turns in the top k;
all-evidence@10: share of questions with every evidence turn in the top 10).

The graph only matters if the turns are linked, so the same questions are run on three graphs:

- `as stored`: the turns as `create_entities` leaves them (the report counts their relationships);
- `extracted`: after `extract_all_relationships` (spec 004's patterns over the turns' text);
- `conversation`: plus the links a conversation has whoever stores it: each turn `FOLLOWS` the
  previous turn of its session, and each speaker is an entity every turn of theirs is
  `SPOKEN_BY` (weight 1.0).

    .venv/bin/python bench/quality/graphrag_locomo.py [--data ../shared/eval/locomo_dev.json] [--no-save]
    .venv/bin/python bench/quality/graphrag_locomo.py --smoke

The loaded store is cached in `--workdir` (a pristine copy, rebuilt when locomo_eval's
fingerprint of data and write code changes); each run works on a fresh copy of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib import locomo_scoring
from bench.lib.database import stop_db
from bench.lib.datadirs import fresh_copy
from bench.lib.machine import LoadSampler, machine_info
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, smoke_workdir
from bench.lib.stats import median
from bench.quality import locomo_eval as le

# (vector_weight, graph_weight) settings; (1, 0) ranks the context by search relevance alone.
WEIGHTS = ((1.0, 0.0), (0.8, 0.2), (0.6, 0.4), (0.4, 0.6), (0.2, 0.8))
DEPTH = 2
LIMIT = 10
GRAPHS = ("as stored", "extracted", "conversation")


def log(msg: str) -> None:
    print(f"[graphrag-locomo] {msg}", file=sys.stderr, flush=True)


def speakers_and_sessions(sample: dict[str, Any]) -> tuple[set[str], list[list[tuple[str, str]]]]:
    """The speakers, and each session's turns as (dia_id, speaker), in order."""
    conv = sample["conversation"]
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)) and conv[key]
    )
    ordered = [[(t["dia_id"], t["speaker"]) for t in conv[key]] for _, key in sessions]
    return {who for turns in ordered for _, who in turns}, ordered


async def add_conversation_links(services: Any, project: str, sample: dict[str, Any], ids: dict[str, str]) -> int:
    """Speakers as entities, `SPOKEN_BY` and `FOLLOWS` links, through the core batch writers."""
    from polyg.core.graph.edges import EdgeDraft
    from polyg.core.graph.nodes import NodeDraft
    from polyg.core.limits import MAX_BATCH

    speakers, sessions = speakers_and_sessions(sample)
    made = await services.nodes.create(project, [NodeDraft(name=s, type="person") for s in sorted(speakers)])
    by_speaker = {s: o.id for s, o in zip(sorted(speakers), made, strict=True)}
    drafts = []
    for turns in sessions:
        for i, (turn, who) in enumerate(turns):
            drafts.append(EdgeDraft(ids[turn], by_speaker[who], "SPOKEN_BY", properties={"weight": 1.0}))
            if i:
                drafts.append(EdgeDraft(ids[turn], ids[turns[i - 1][0]], "FOLLOWS", properties={"weight": 1.0}))
    created = 0
    for start in range(0, len(drafts), MAX_BATCH):
        outcomes = await services.edges.create(project, drafts[start : start + MAX_BATCH])
        created += sum(1 for o in outcomes if o.status == "created")
    return created


def score(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    return locomo_scoring.score(ranked, evidence, ks=(5, 10))


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    mean = locomo_scoring.mean
    keys = ("recall@5", "recall@10", "all_evidence@10")
    multi = [r for r in rows if r["category"] == 1]
    return {
        "questions": len(rows),
        **{k: mean(rows, k) for k in keys},
        "multi_hop": {"questions": len(multi), **{k: mean(multi, k) for k in keys}},
        "p50_ms": round(median([r["ms"] for r in rows]), 1),
    }


async def evaluate(services: Any, projects: list[tuple[str, list[dict[str, Any]], dict[str, str]]]) -> dict[str, Any]:
    """Every method on every question of every conversation."""
    per: dict[str, list[dict[str, Any]]] = {"search_nodes": []}
    per.update({f"graph {v:g}/{g:g}": [] for v, g in WEIGHTS})
    context_sizes: list[int] = []
    for project, questions, names in projects:
        for q in questions:
            evidence = set(q["evidence"])
            t = time.perf_counter()
            hits = await services.search.entities(project, q["question"], LIMIT)
            ms = (time.perf_counter() - t) * 1000
            ranked = [names.get(i, "?") for i, _ in hits]
            per["search_nodes"].append({"category": q["category"], "ms": ms, **score(ranked, evidence)})
            for v, g in WEIGHTS:
                t = time.perf_counter()
                found = await services.graphrag.search.search(
                    project, q["question"], depth=DEPTH, limit=LIMIT, vector_weight=v, graph_weight=g
                )
                ms = (time.perf_counter() - t) * 1000
                context_sizes.append(found.context_nodes)
                ranked = [names.get(r.node.id or "", "?") for r in found.results]
                per[f"graph {v:g}/{g:g}"].append({"category": q["category"], "ms": ms, **score(ranked, evidence)})
    out = {name: summarise(rows) for name, rows in per.items()}
    out["context_nodes_p50"] = median(context_sizes) if context_sizes else 0
    return out


async def graph_shape(services: Any, project: str) -> dict[str, Any]:
    st = await services.graphrag.statistics(project)
    return {
        "entities": st.entities,
        "relationships": st.relationships,
        "types": {t.relation_type: t.count for t in st.relationship_types},
        "orphans": st.orphan_entities,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from polyg.config import load_settings
    from polyg.runtime.app import Polyg

    prep = le.prepare(argparse.Namespace(data=args.data, workdir=args.workdir / "pristine-store", reload=args.reload))
    pristine = args.workdir / "pristine-store" / "data"
    embedder = "hashing" if args.smoke else "minilm"
    if not prep.cached:
        core = Polyg(load_settings(None, data_dir=pristine, log_dir=args.workdir / "logs", embedding_provider=embedder))
        try:
            services = await core.ready()
            info = await le.load(services, prep.samples, log)
        finally:
            await core.close()
        stop_db(pristine)
        (args.workdir / "pristine-store" / "meta.json").write_text(
            json.dumps({"fingerprint": prep.fingerprint, "load": info})
        )
    data_dir = fresh_copy(pristine, args.workdir / "run")
    settings = load_settings(
        None, data_dir=data_dir, log_dir=args.workdir / "logs", embedding_provider=embedder, log_level="WARNING"
    )
    core = Polyg(settings)
    results: dict[str, Any] = {}
    shapes: dict[str, Any] = {}
    try:
        services = await core.ready()
        await le.wait_for_indexes(services, [p for p, _, _ in prep.projects])
        projects = []
        for project, _, questions in prep.projects:
            rows = await services.ctx.read(project, "MATCH (e:Entity) RETURN e.id, e.name")
            projects.append((project, questions, dict(rows)))
        with LoadSampler() as sampler:
            for graph in GRAPHS:
                if graph == "extracted":
                    for project, _, _ in projects:
                        await services.graphrag.extractor.due(project)
                elif graph == "conversation":
                    for sample, (project, _, names) in zip(prep.samples, projects, strict=True):
                        await add_conversation_links(services, project, sample, {n: i for i, n in names.items()})
                shapes[graph] = {p: await graph_shape(services, p) for p, _, _ in projects}
                t = time.perf_counter()
                results[graph] = r = await evaluate(services, projects)
                log(
                    f"{graph}: "
                    + "; ".join(
                        f"{name} r@10 {m['recall@10']} all@10 {m['all_evidence@10']} mh {m['multi_hop']['recall@10']}"
                        f"/{m['multi_hop']['all_evidence@10']}"
                        for name, m in r.items()
                        if isinstance(m, dict)
                    )
                    + f" ({time.perf_counter() - t:.0f} s)"
                )
    finally:
        await core.close()
        stop_db(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
    data = args.data.resolve()
    return {
        "data": str(data.relative_to(REPO.parent)) if data.is_relative_to(REPO.parent) else str(data),
        "conversations": len(prep.samples),
        "questions": sum(len(q) for _, _, q in prep.projects),
        "evidence_fixes": dict(prep.evidence_fixes),
        "settings": {"depth": DEPTH, "limit": LIMIT, "weights": WEIGHTS},
        "graphs": shapes,
        "results": results,
        "machine_load": sampler.summary(),
        "machine": machine_info(),
    }


def render(run: dict[str, Any]) -> str:
    lines = [
        f"# LoCoMo: graph_enhanced_search against search_nodes ({run['machine']['date']})",
        "",
        f"Data: `{run['data']}`, {run['conversations']} conversations, {run['questions']} questions of "
        f"categories 1-4; depth {DEPTH}, limit {LIMIT}; in-process (no MCP), MiniLM, embedded FalkorDB. "
        f"polyg {run['machine']['polyg_commit']}.",
        "",
        "| graph | method (vector/graph weight) | recall@5 | recall@10 | all-evidence@10 | multi-hop r@10 | "
        "multi-hop all@10 | p50 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for graph, res in run["results"].items():
        for name, m in res.items():
            if not isinstance(m, dict):
                continue
            mh = m["multi_hop"]
            lines.append(
                f"| {graph} | {name} | {m['recall@5']:.1f} | {m['recall@10']:.1f} | {m['all_evidence@10']:.1f} | "
                f"{mh['recall@10']:.1f} | {mh['all_evidence@10']:.1f} | {m['p50_ms']:.1f} |"
            )
    lines += ["", "Graphs (relationships between entities, per conversation):", ""]
    for graph, per in run["graphs"].items():
        cells = ", ".join(f"{p}: {s['relationships']} ({s['orphans']} orphans)" for p, s in per.items())
        lines.append(f"- {graph}: {cells}")
    lines += [
        "",
        "Context nodes per search, p50: "
        + ", ".join(f"{g} {r['context_nodes_p50']:g}" for g, r in run["results"].items())
        + ".",
        "",
        f"Machine load while measuring: {run['machine_load']}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=le.DATA)
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "polyg-graphrag-locomo")
    p.add_argument("--reload", action="store_true", help="rebuild the cached store")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = p.parse_args(argv)
    if args.smoke:
        args.workdir, args.no_save = smoke_workdir("graphrag-locomo"), True
        args.data = le.smoke_data(smoke_workdir("graphrag-locomo-data"))
    data = asyncio.run(run(args))
    text = render(data)
    print(text)
    if not args.no_save:
        best = data["results"]
        figures = {
            f"{g}:{name}:r@10": m["recall@10"]
            for g, res in best.items()
            for name, m in res.items()
            if isinstance(m, dict) and name in ("search_nodes", "graph 0.6/0.4")
        }
        md, js = write_results("graphrag-locomo", text, data, size="dev", figures=figures)
        log(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
