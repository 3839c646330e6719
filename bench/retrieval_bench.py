"""Retrieval toolset (spec 001) benchmark: ingestion throughput and graph_retrieve latency.

Corpus: the Python standard library's own documentation, on every machine with Python: the
pydoc topics (`pydoc_data.topics`) and the docstrings of the standard library's modules and
their public classes and functions, one article each.

1. Ingestion through the core (`IngestService`): chunks/s, and the share of the time spent
   embedding (MiniLM int8).
2. `graph_retrieve` over MCP stdio (`polyg serve --toolsets retrieval`): p50 / p95 of queries
   made from the topic names.

    python bench/retrieval_bench.py [--docs N] [--queries N] [--smoke]

Not done yet: the 100k-chunk scale run and the LoCoMo-as-documents quality run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
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
            for attr, value in [(name, module), *sorted(vars(module).items())]:
                doc = inspect.getdoc(value) if (value is module or not attr.startswith("_")) else None
                if doc and len(doc) > 80 and getattr(value, "__module__", name) in (name, None):
                    title = name if value is module else f"{name}.{attr}"
                    docs.append(Document(title, ("Python",), doc, f"pydoc:{title}"))
    return docs[:limit]


async def ingest(data_dir: Path, docs: list[Document]) -> dict[str, Any]:
    core = Polyg(load_settings(None, data_dir=data_dir, store=None, log_dir=data_dir / "logs"))
    try:
        services = await core.ready()
        started = time.perf_counter()
        report = await IngestService(services.ctx).ingest("default", docs)
        total = time.perf_counter() - started
    finally:
        await core.close()
    return {
        "documents": len(docs),
        "chunks": report.chunks,
        "seconds": round(total, 2),
        "chunks_per_s": round(report.chunks / total, 1),
        "embed_share": round(report.embed_s / total, 3),
    }


async def query_latency(data_dir: Path, queries: list[str], workdir: Path) -> dict[str, float]:
    env = clean_env(workdir)
    async with PolygServer(
        data_dir, log_path=workdir / "server.log", env=env, extra_args=["--toolsets", "retrieval"]
    ) as s:
        await s.call("graph_retrieve", {"query": queries[0]})  # model and indexes warm
        seconds = []
        for query in queries:
            started = time.perf_counter()
            await s.call("graph_retrieve", {"query": query, "limit": 5})
            seconds.append(time.perf_counter() - started)
    return summarize(seconds)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.docs, args.queries = 60, 20
    docs = stdlib_documents(args.docs)
    queries = [f"How does {doc.title.replace('-', ' ')} work?" for doc in docs][: args.queries]
    with tempfile.TemporaryDirectory(prefix="polyg-retrieval-bench-") as tmp:
        workdir = Path(tmp)
        ingestion = await ingest(workdir / "data", docs)
        print("ingestion", ingestion, flush=True)
        latency = await query_latency(workdir / "data", queries, workdir)
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
    write_results(f"retrieval-{ingestion['chunks']}", markdown, data)


if __name__ == "__main__":
    asyncio.run(main())
