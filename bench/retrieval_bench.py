"""Retrieval toolset (spec 001) benchmark: ingestion throughput and graph_retrieve latency.

Corpus: the Python standard library's own documentation, on every machine with Python: the
pydoc topics (`pydoc_data.topics`) and the docstrings of the standard library's modules and
their public classes and functions, one article each.

1. Ingestion through the core (`IngestService`): chunks/s, and the share of the time spent
   embedding (MiniLM int8).
2. `graph_retrieve` over MCP stdio (`polyg serve --toolsets retrieval`): p50 / p95 of queries
   made from the topic names.

3. `--locomo`: quality on the LoCoMo dev split as documents (`../shared/eval/locomo_dev.json`,
   read by path; CC BY-NC, benchmark use only): one article per session, its two speakers as
   authors, its turns as paragraphs "[date] speaker: text" chunked in order. For each question
   of categories 1-4, the share of its evidence turns inside the returned chunks (a turn counts
   when its line is inside a chunk's text) at limit 5 and 10, and how often an evidence turn's
   speaker is among the returned authors: plain chunk search (the chunks only) next to
   graph_retrieve (the chunks and, through NEXT_CHUNK, the chunks before and after them), same
   run, same store.

    python bench/retrieval_bench.py [--docs N] [--queries N] [--chunk-size N] [--smoke] [--locomo]

Not done yet: the 100k-chunk scale run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import PolygServer, clean_env, machine_info, summarize, write_results
from polyg.config import load_settings
from polyg.core.app import Polyg
from polyg.core.chunking import DEFAULT_OVERLAP, DEFAULT_SIZE, ChunkSpec
from polyg.core.ingest import IngestService
from polyg.core.parsers import Document

SKIP_MODULES = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "__main__"})


def stdlib_documents(limit: int) -> list[Document]:
    from pydoc_data.topics import topics

    docs = [Document(name, ("Python",), text, f"pydoc-topic:{name}") for name, text in sorted(topics.items())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(sys.stdlib_module_names):
            if len(docs) >= limit:
                break
            if name in SKIP_MODULES or name.startswith("_"):
                continue
            try:
                module = importlib.import_module(name)
            except Exception:
                continue
            for title, value in _documented(name, module):
                doc = inspect.getdoc(value)
                if doc and len(doc) > 80:
                    docs.append(Document(title, ("Python",), doc, f"pydoc:{title}"))
    return docs[:limit]


def _documented(name: str, module: Any) -> list[tuple[str, Any]]:
    """The module, its public classes and functions, and the public methods of its classes."""
    found: list[tuple[str, Any]] = [(name, module)]
    for attr, value in sorted(vars(module).items()):
        if attr.startswith("_") or getattr(value, "__module__", None) != name:
            continue
        found.append((f"{name}.{attr}", value))
        if inspect.isclass(value):
            found += [
                (f"{name}.{attr}.{member}", method)
                for member, method in sorted(vars(value).items())
                if not member.startswith("_") and callable(method)
            ]
    return found


async def ingest(data_dir: Path, docs: list[Document], embedder: str, chunk_size: int) -> dict[str, Any]:
    settings = load_settings(
        None, data_dir=data_dir, store=None, log_dir=data_dir / "logs", embedding_provider=embedder
    )
    core = Polyg(settings)
    try:
        services = await core.ready()
        started = time.perf_counter()
        spec = ChunkSpec(chunk_size, min(DEFAULT_OVERLAP, chunk_size // 4))
        report = await IngestService(services.ctx, spec).ingest("default", docs)
        total = time.perf_counter() - started
    finally:
        await core.close()
    return {
        "documents": len(docs),
        "chunks": report.chunks,
        "chunk_size": chunk_size,
        "seconds": round(total, 2),
        "chunks_per_s": round(report.chunks / total, 1),
        "embed_share": round(report.embed_s / total, 3),
    }


async def query_latency(data_dir: Path, queries: list[str], workdir: Path, embedder: str) -> dict[str, float]:
    env = clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": embedder})
    async with PolygServer(
        data_dir, log_path=workdir / "server.log", env=env, extra_args=["--toolsets", "retrieval"]
    ) as s:
        # The database rebuilds its indexes when it loads (2003 meanwhile): warm up until they are back.
        deadline = time.monotonic() + 600
        while True:
            try:
                await s.call("graph_retrieve", {"query": queries[0]})
                break
            except RuntimeError as exc:
                if "being rebuilt" not in str(exc) or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
        seconds = []
        for query in queries:
            started = time.perf_counter()
            await s.call("graph_retrieve", {"query": query, "limit": 5})
            seconds.append(time.perf_counter() - started)
    return summarize(seconds)


LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "locomo_dev.json"
KS = (5, 10)


def locomo_documents(sample: dict[str, Any]) -> tuple[list[Document], dict[str, tuple[str, str]]]:
    """Articles of one conversation, and dia_id -> (its line, its speaker)."""
    conversation = sample["conversation"]
    speakers = (conversation["speaker_a"], conversation["speaker_b"])
    docs, turns = [], {}
    number = 1
    while f"session_{number}" in conversation:
        date = conversation.get(f"session_{number}_date_time", "")
        lines = []
        for turn in conversation[f"session_{number}"]:
            line = f"[{date}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                line += f" [image: {turn['blip_caption']}]"
            lines.append(line)
            turns[turn["dia_id"]] = (" ".join(line.split()), turn["speaker"])
        title = f"{sample['sample_id']} session {number} ({date})"
        docs.append(Document(title, speakers, "\n\n".join(lines), f"locomo:{sample['sample_id']}:{number}"))
        number += 1
    return docs, turns


def turns_in(texts: list[str], turns: dict[str, tuple[str, str]]) -> set[str]:
    joined = [" ".join(t.split()) for t in texts]
    return {dia for dia, (line, _) in turns.items() if any(line in text for text in joined)}


async def locomo(data_dir: Path, data: Path) -> dict[str, Any]:
    from polyg.core.retrieval import RetrievalService

    samples = json.loads(await asyncio.to_thread(data.read_text, encoding="utf-8"))
    core = Polyg(load_settings(None, data_dir=data_dir, store=None, log_dir=data_dir / "logs"))
    scores: dict[str, list[float]] = {}
    speaker_hits: list[float] = []
    dropped = 0
    try:
        services = await core.ready()
        retrieval = RetrievalService(services.ctx, services.search)
        for sample in samples:
            project = "locomo_" + sample["sample_id"].replace("-", "_")
            docs, turns = locomo_documents(sample)
            await IngestService(services.ctx).ingest(project, docs)
            for qa in sample["qa"]:
                if qa.get("category") not in (1, 2, 3, 4):
                    continue
                evidence = {e.strip() for item in qa.get("evidence", []) for e in str(item).split(";")}
                known = {e for e in evidence if e in turns}
                dropped += len(evidence - known)
                if not known:
                    continue
                found = await retrieval.retrieve(project, qa["question"], max(KS))
                for k in KS:
                    top = found[:k]
                    plain = turns_in([r.text for r in top], turns)
                    graph = turns_in([t for r in top for t in (r.text, r.before or "", r.after or "")], turns)
                    scores.setdefault(f"plain@{k}", []).append(len(known & plain) / len(known))
                    scores.setdefault(f"graph@{k}", []).append(len(known & graph) / len(known))
                authors = {a for r in found[:5] for a in r.authors}
                speaker_hits.append(float(any(turns[e][1] in authors for e in known)))
    finally:
        await core.close()
    out: dict[str, Any] = {name: round(100 * sum(v) / len(v), 1) for name, v in scores.items()}
    out["speaker_among_authors@5"] = round(100 * sum(speaker_hits) / len(speaker_hits), 1)
    out["questions"] = len(speaker_hits)
    out["evidence_ids_dropped"] = dropped
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_SIZE, help="tokens per chunk (smaller: more chunks)")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--locomo", action="store_true", help="run the LoCoMo quality run only")
    parser.add_argument("--locomo-data", type=Path, default=LOCOMO, help="locomo_dev.json (default ../shared/eval/)")
    args = parser.parse_args()
    if args.locomo:
        with tempfile.TemporaryDirectory(prefix="polyg-retrieval-locomo-") as tmp:
            quality = await locomo(Path(tmp) / "data", args.locomo_data)
        print("locomo", quality, flush=True)
        rows = "\n".join(f"| {k} | {v} |" for k, v in quality.items())
        write_results(
            "retrieval-locomo",
            f"# retrieval on LoCoMo dev as documents\n\n| metric | value |\n|---|---:|\n{rows}\n",
            {"machine": machine_info(), "locomo": quality},
            size="dev",
            figures={k: v for k, v in quality.items() if "@" in k},
        )
        return
    # Smoke: a few documents and hashing vectors (seconds, not minutes); nothing saved.
    embedder = "hashing" if args.smoke else "minilm"
    if args.smoke:
        args.docs, args.queries = 12, 5
    docs = stdlib_documents(args.docs)
    queries = [f"How does {doc.title.replace('-', ' ')} work?" for doc in docs][: args.queries]
    with tempfile.TemporaryDirectory(prefix="polyg-retrieval-bench-") as tmp:
        workdir = Path(tmp)
        ingestion = await ingest(workdir / "data", docs, embedder, args.chunk_size)
        print("ingestion", ingestion, flush=True)
        latency = await query_latency(workdir / "data", queries, workdir, embedder)
        print("graph_retrieve", latency, flush=True)
    if args.smoke:
        return
    data = {"machine": machine_info(), "ingestion": ingestion, "graph_retrieve_s": latency}
    markdown = (
        f"# retrieval bench\n\n{ingestion['documents']} documents, {ingestion['chunks']} chunks: "
        f"{ingestion['chunks_per_s']} chunks/s, embedding {ingestion['embed_share']:.0%} of the time.\n\n"
        f"graph_retrieve over MCP stdio ({len(queries)} queries): p50 {latency['p50_ms']:.1f} ms, "
        f"p95 {latency['p95_ms']:.1f} ms.\n"
    )
    figures = {
        "chunks_per_s": ingestion["chunks_per_s"],
        "embed_share": ingestion["embed_share"],
        "p50_ms": round(latency["p50_ms"], 2),
        "p95_ms": round(latency["p95_ms"], 2),
    }
    write_results("retrieval", markdown, data, size=str(ingestion["chunks"]), figures=figures)


if __name__ == "__main__":
    asyncio.run(main())
