"""Retrieval toolset (spec 001) benchmark: ingestion throughput and graph_retrieve latency.

Corpus: the Python standard library's own documentation, on every machine with Python: the
pydoc topics (`pydoc_data.topics`) and the docstrings of the standard library's modules and
their public classes and functions, one article each.

1. Ingestion through the core (`IngestService`): chunks/s, and the share of the time spent
   embedding (MiniLM int8).
2. `graph_retrieve` over MCP stdio (`polyg serve --toolsets retrieval`): p50 / p95 of queries
   made from the topic names, each followed by a stdio ping (the SDK's floor, same run); before
   it, in process on the same store, the time of each step per query: the plain search floor
   (query embedding + chunk KNN), the hybrid search, its full-text part, the expansion, shaping.
3. `--scale N`: the same at N chunks (100k for the scale run). Embedding 100k chunks takes the
   model ~45 minutes of CPU here, so the store of step 1 is grown with variants of its documents
   (same text, another title, author and source) written through the core's ingestion, whose
   chunk vectors are the real ones read back from the store, each nudged by a little Gaussian
   noise (`ReplayEmbedder`). What is timed is unchanged by that: the query is embedded by the
   model as always, the KNN searches an index of N vectors with the corpus' own neighbourhoods,
   full text searches N chunks whose words are as frequent as in a larger corpus on the same
   subjects, and expansion reads the same graph shape.
4. `--locomo`: quality on the LoCoMo dev split as documents (`../shared/eval/locomo_dev.json`,
   read by path; CC BY-NC, benchmark use only): one article per session, its two speakers as
   authors, its turns as paragraphs "[date] speaker: text" chunked in order. For each question
   of categories 1-4, the share of its evidence turns inside the returned chunks (a turn counts
   when its line is inside a chunk's text) at limit 5 and 10, and how often an evidence turn's
   speaker is among the returned authors: plain chunk search (the chunks only) next to
   graph_retrieve (the chunks and, through NEXT_CHUNK, the chunks before and after them), same
   run, same store.

    python bench/latency/retrieval_bench.py [--docs N] [--queries N] [--chunk-size N] [--scale N] [--workdir DIR]
                                    [--smoke] [--locomo]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import inspect
import json
import math
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib.datadirs import fresh_copy
from bench.lib.env import clean_env
from bench.lib.machine import LoadSampler, machine_info
from bench.lib.measure import timed
from bench.lib.paths import REPO
from bench.lib.results import write_results
from bench.lib.server import PolygServer, server_ms
from bench.lib.smoke import enter_smoke_mode
from bench.lib.stats import fmt_ms, median, summarize
from polyg.config import load_settings
from polyg.core.ingest.parsers import Document
from polyg.core.ingest.service import IngestService
from polyg.core.text.chunking import DEFAULT_OVERLAP, DEFAULT_SIZE, ChunkSpec
from polyg.runtime.app import Polyg

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
        report = await IngestService(services.ctx, chunk_spec(chunk_size)).ingest("default", docs)
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


def chunk_spec(chunk_size: int) -> ChunkSpec:
    return ChunkSpec(chunk_size, min(DEFAULT_OVERLAP, chunk_size // 4))


class ReplayEmbedder:
    """Vectors of texts the model embedded once (read back from the real corpus' store), each
    call's copy nudged by Gaussian noise (cosine ~0.98 to the original): the scale run's
    variants then sit around their originals the way paraphrases would, instead of piling up
    as identical points in the vector index."""

    def __init__(self, vectors: dict[str, list[float]], noise: float = 0.01, seed: int = 7) -> None:
        import numpy as np

        self._np = np
        self._vectors = {text: np.asarray(v, dtype=np.float32) for text, v in vectors.items()}
        self._rng = np.random.default_rng(seed)
        self.noise = noise
        self.dimension = len(next(iter(vectors.values())))

    def embed_batch_sync(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            v = self._vectors[text] + self._rng.normal(0.0, self.noise, self.dimension).astype(self._np.float32)
            out.append((v / self._np.linalg.norm(v)).tolist())
        return out


async def scale_up(
    data_dir: Path, docs: list[Document], chunk_size: int, target: int, embedder: str = "minilm"
) -> dict[str, Any]:
    """Grow the real corpus' store (a copy) to `target` chunks: variants of its documents (same
    text, another title, author and source) written through the core's ingestion, with the
    real vectors of their chunks replayed (`ReplayEmbedder`) instead of embedding them again."""
    settings = load_settings(
        None, data_dir=data_dir, store=None, log_dir=data_dir / "logs", embedding_provider=embedder
    )
    core = Polyg(settings)
    services = await core.ready()
    model = services.ctx.embedder
    try:
        rows = await services.ctx.read("default", "MATCH (c:Chunk) RETURN c.text, c.embedding")
        have = len(rows)
        services.ctx.embedder = ReplayEmbedder({text: list(vector) for text, vector in rows})  # type: ignore[assignment]
        started = time.perf_counter()
        written, copy = have, 1
        while written < target:
            variants = [
                Document(
                    f"{doc.title} (variant {copy})", (f"Author {copy % 50}",), doc.text, f"{doc.source}#variant{copy}"
                )
                for doc in docs
            ]
            report = await IngestService(services.ctx, chunk_spec(chunk_size)).ingest("default", variants)
            written += report.chunks
            copy += 1
            print(f"scale: {written} chunks", flush=True)
        seconds = time.perf_counter() - started
        count = await services.ctx.read("default", "MATCH (c:Chunk) RETURN count(c)")
    finally:
        services.ctx.embedder = model
        await core.close()
    return {
        "chunks": int(count[0][0]),
        "real_chunks": have,
        "variants_per_document": copy - 1,
        "write_s": round(seconds, 1),
    }


async def profile(data_dir: Path, queries: list[str], limit: int) -> dict[str, Any]:
    """In-process, per query: graph_retrieve's core call, then the plain search floor (query
    embedding, then the chunk KNN alone) and each other step alone (the full-text lookups,
    expansion, shaping)."""
    from polyg.core.search.service import CHUNK_SEARCH, CHUNK_TARGETS, query_terms
    from polyg.store.falkor import VectorParam
    from polyg.store.queries import articles as q
    from polyg.tools.retrieval import shape

    core = Polyg(load_settings(None, data_dir=data_dir, store=None, log_dir=data_dir / "logs"))
    steps: dict[str, list[float]] = {}

    def took(step: str, since: float) -> float:
        now = time.perf_counter()
        steps.setdefault(step, []).append(now - since)
        return now

    try:
        services = await core.ready()
        retrieval = services.retrieval
        await _warm(lambda: retrieval.retrieve("default", queries[0], limit))
        target = CHUNK_TARGETS[0]
        k = max(CHUNK_SEARCH.candidates, limit)
        model = getattr(services.ctx.embedder, "inner", services.ctx.embedder)
        for query in queries:
            # First the whole core call, on a query not embedded before (the server's case);
            # then each step alone, the embedding by the model itself (not its cache).
            t = time.perf_counter()
            found = await retrieval.retrieve("default", query, limit)
            t = took("retrieve", t)
            vector = await asyncio.to_thread(model.embed_query_sync, query)
            t = took("embed", t)
            await services.search._knn("default", target, VectorParam(vector), k)
            t = took("knn", t)
            await services.search._text("default", query_terms(query, CHUNK_SEARCH), k, CHUNK_TARGETS, CHUNK_SEARCH)
            t = took("text", t)
            await q.expand_chunks(services.ctx, "default", [item.chunk_id for item in found])
            t = took("expand", t)
            json.dumps({"results": [shape(item) for item in found]})
            took("shape", t)
    finally:
        await core.close()
    floor = [e + k for e, k in zip(steps["embed"], steps["knn"], strict=True)]
    out = {step: round(median(values) * 1000, 2) for step, values in steps.items()}
    out["floor_embed_knn"] = round(median(floor) * 1000, 2)
    return out


def spread_words(docs: list[Document], count: int = 12) -> list[str]:
    """Words of the corpus from the most widespread to the rarest, at geometric steps of their
    document-frequency rank: the counts they cost span the store's whole range."""
    import re

    from polyg.core.search.service import STOPWORDS

    held: dict[str, int] = {}
    for doc in docs:
        for word in set(re.findall(r"[a-z]{4,}", doc.text.lower())) - STOPWORDS:
            held[word] = held.get(word, 0) + 1
    ranked = sorted(held, key=lambda w: (-held[w], w))
    picks = sorted({min(len(ranked) - 1, round(1.9**step) - 1) for step in range(count + 8)})
    return [ranked[i] for i in picks][:count]


async def term_counts(data_dir: Path, words: list[str], embedder: str, repeat: int = 5) -> dict[str, Any]:
    """The `chunks` preset leaves a word held by more than `max_term_matches` chunks to the
    vector side, but a search still counts each word's chunks (its idf): what that count costs
    as words get common, and whether the count each word gets in the search's one query (every
    word, a subquery each) is its own count, asked alone."""
    from polyg.core.search.service import CHUNK_SEARCH, CHUNK_TARGETS
    from polyg.store.queries import indexes as indexes_q
    from polyg.store.queries import search as sq

    settings = load_settings(
        None, data_dir=data_dir, store=None, log_dir=data_dir / "logs", embedding_provider=embedder
    )
    core = Polyg(settings)
    try:
        services = await core.ready()
        target = CHUNK_TARGETS[0]
        label = str(target.label)
        # Until FalkorDB has rebuilt its indexes after the start, full-text queries find nothing.
        while True:
            if all(status == "OPERATIONAL" for _, status in await indexes_q.index_states(services.ctx, "default")):
                break
            await asyncio.sleep(0.2)
        total = (await services.ctx.read("default", f"MATCH (c:{label}) RETURN count(c)"))[0][0]
        bound = min(math.floor(CHUNK_SEARCH.max_term_share * total), CHUNK_SEARCH.max_term_matches or total)
        alone: dict[str, int] = {}
        alone_ms: dict[str, float] = {}
        for word in words:
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                rows = await services.ctx.read(
                    "default",
                    f"CALL db.idx.fulltext.queryNodes('{label}', $t) YIELD node RETURN count(node)",
                    {"t": word},
                )
                times.append(time.perf_counter() - t)
            alone[word], alone_ms[word] = int(rows[0][0]), round(median(times) * 1000, 2)
        together: list[float] = []
        for _ in range(repeat):
            t = time.perf_counter()
            rows = await sq.term_hits(services.ctx, "default", [target.query], words, 10, {label: bound})
            together.append(time.perf_counter() - t)
        in_search = {term: (int(df), len(ids)) for _, term, df, ids in rows}
    finally:
        await core.close()
    per_word = [
        {
            "word": w,
            "chunks": alone[w],
            "count_ms": alone_ms[w],
            "df_in_search": in_search[w][0],
            "ids_fetched": in_search[w][1],
        }
        for w in sorted(words, key=lambda w: alone[w])
    ]
    return {
        "chunks": total,
        "bound": bound,
        "words": per_word,
        "all_words_query_ms": round(median(together) * 1000, 2),
        "counts_agree": all(r["chunks"] == r["df_in_search"] for r in per_word),
        "common_words_not_fetched": all(r["ids_fetched"] == 0 for r in per_word if r["chunks"] > bound),
    }


def render_term_counts(r: dict[str, Any]) -> str:
    lines = [
        f"### Word counts at {r['chunks']:,} chunks (the `chunks` preset fetches a word's chunks up to {r['bound']:,})",
        "",
        f"All {len(r['words'])} words in the search's one query: {fmt_ms(r['all_words_query_ms'])} ms; "
        f"each word's count there equals its count asked alone: {r['counts_agree']}; words past the bound "
        f"fetch no chunks: {r['common_words_not_fetched']}.",
        "",
        "| word | chunks holding it | count alone ms | chunks fetched in the search's query |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {w['word']} | {w['chunks']:,} | {fmt_ms(w['count_ms'])} | {w['ids_fetched']} |" for w in r["words"]]
    return "\n".join(lines) + "\n"


async def _warm(call: Any) -> None:
    """The database rebuilds its indexes when it loads (2003 meanwhile): wait until they are back."""
    deadline = time.monotonic() + 900
    while True:
        try:
            await call()
            return
        except Exception as exc:
            if "being rebuilt" not in str(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def query_latency(data_dir: Path, queries: list[str], workdir: Path, embedder: str) -> dict[str, Any]:
    """graph_retrieve over MCP stdio, each call followed by a ping (the SDK's floor, same run)."""
    env = clean_env(workdir, {"POLYG_EMBEDDING_PROVIDER": embedder})
    async with PolygServer(
        data_dir, log_path=workdir / "server.log", env=env, extra_args=["--toolsets", "retrieval"]
    ) as s:
        await _warm(lambda: s.call("graph_retrieve", {"query": queries[0]}))
        seconds, pings, handler = [], [], []
        with LoadSampler() as load:
            for query in queries:
                started = time.perf_counter()
                result = await s.call("graph_retrieve", {"query": query, "limit": 5})
                seconds.append(time.perf_counter() - started)
                handler.append(server_ms(result))
                pings.append(await timed(s.ping))
    out: dict[str, Any] = {"graph_retrieve": summarize(seconds), "ping": summarize(pings), "load": load.summary()}
    in_polyg = [ms for ms in handler if ms is not None]
    if in_polyg:
        out["in_polyg_p50_ms"] = round(median(in_polyg), 2)
    return out


async def measure(data_dir: Path, queries: list[str], workdir: Path, embedder: str) -> dict[str, Any]:
    steps = await profile(data_dir, queries, 5)
    print("in process (ms, medians)", steps, flush=True)
    stdio = await query_latency(data_dir, queries, workdir, embedder)
    print("graph_retrieve over stdio", stdio, flush=True)
    return {"in_process_ms": steps, **stdio}


LOCOMO = REPO.parent / "shared" / "eval" / "locomo_dev.json"
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
    from polyg.core.search.retrieval import RetrievalService

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


def report(size: int, ingestion: dict[str, Any], measured: dict[str, Any], how: str) -> tuple[str, dict[str, Any]]:
    latency, ping, steps = measured["graph_retrieve"], measured["ping"], measured["in_process_ms"]
    load = measured["load"]["load1"]
    rows = "\n".join(f"| {step} | {ms} |" for step, ms in steps.items())
    markdown = (
        f"# retrieval bench: {size} chunks\n\n{how}\n\n"
        f"Ingestion of the real corpus ({ingestion['documents']} documents, {ingestion['chunks']} chunks of "
        f"{ingestion['chunk_size']} tokens): {ingestion['chunks_per_s']} chunks/s, embedding "
        f"{ingestion['embed_share']:.0%} of the time.\n\n"
        f"graph_retrieve over MCP stdio ({latency['n']} queries, limit 5): p50 {fmt_ms(latency['p50_ms'])} ms, "
        f"p95 {fmt_ms(latency['p95_ms'])} ms; stdio ping p50 {fmt_ms(ping['p50_ms'])} ms "
        f"(graph_retrieve p50 = {latency['p50_ms'] / ping['p50_ms']:.1f}x ping); load average "
        f"{load.get('median')} (max {load.get('max')}) on the machine's cores meanwhile.\n\n"
        "In process, medians per query (ms): `retrieve` is graph_retrieve's whole core call (query "
        "embedding included); `floor_embed_knn` the plain search floor (query embedding by the model + "
        "chunk KNN, each also alone); `text` the full-text part of the hybrid search alone (it runs "
        "while the query embeds), `expand` the graph expansion, `shape` the result's JSON.\n\n"
        f"| step | ms |\n|---|---:|\n{rows}\n"
    )
    figures = {
        "p50_ms": round(latency["p50_ms"], 2),
        "p95_ms": round(latency["p95_ms"], 2),
        "ping_p50_ms": round(ping["p50_ms"], 2),
        "floor_ms": steps["floor_embed_knn"],
        "retrieve_in_process_ms": steps["retrieve"],
        "load1": load.get("median"),
    }
    return markdown, figures


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_SIZE, help="tokens per chunk (smaller: more chunks)")
    parser.add_argument("--scale", type=int, default=0, help="then grow the store to this many chunks (see above)")
    parser.add_argument("--workdir", type=Path, help="keep the ingested corpus here and reuse it (default: a temp dir)")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--term-counts",
        action="store_true",
        help="instead of the latency runs: what counting each query word's chunks costs, and whether "
        "the search's counts are right, on each store (results: retrieval-words-<chunks>)",
    )
    parser.add_argument(
        "--embed",
        choices=("minilm", "hashing"),
        default="minilm",
        help="chunk vectors (hashing: fast stores for --term-counts, whose figures do not depend on them)",
    )
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
    embedder = "hashing" if args.smoke else args.embed
    if args.smoke:
        enter_smoke_mode()
        args.docs, args.queries, args.scale = 12, 5, 150
    docs = stdlib_documents(args.docs)
    queries = [f"How does {doc.title.replace('-', ' ')} work?" for doc in docs][: args.queries]
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="polyg-retrieval-")))
        vectors = "" if embedder == "minilm" else f"-{embedder}"
        real = workdir / f"real-{args.docs}-{args.chunk_size}{vectors}"
        if (real / "ingestion.json").exists():
            ingestion = json.loads((real / "ingestion.json").read_text())
        else:
            if real.exists():
                shutil.rmtree(real)
            ingestion = await ingest(real / "data", docs, embedder, args.chunk_size)
            (real / "ingestion.json").write_text(json.dumps(ingestion))
        print("ingestion", ingestion, flush=True)
        runs = [(ingestion["chunks"], real / "data", "Real vectors (MiniLM int8) of every chunk.", {})]
        if args.scale > ingestion["chunks"]:
            scaled = workdir / f"scale-{args.scale}{vectors}" / "data"
            if (scaled.parent / "scale.json").exists():
                grown = json.loads((scaled.parent / "scale.json").read_text())
            else:
                grown = await scale_up(fresh_copy(real / "data", scaled), docs, args.chunk_size, args.scale, embedder)
                (scaled.parent / "scale.json").write_text(json.dumps(grown))
            print("scaled", grown, flush=True)
            how = (
                f"{grown['real_chunks']} real chunks and {grown['variants_per_document']} variants of each of "
                "their documents (same text, another title, author and source), written through the core's "
                "ingestion with the real chunk vectors replayed, each nudged by Gaussian noise (cosine ~0.98): "
                "the vector index holds the corpus' real neighbourhoods, and each word's document frequency "
                "grows as in a larger corpus on the same subjects."
            )
            runs.append((grown["chunks"], scaled, how, {"scale": grown}))
        if args.smoke:  # the grown store only: the same measure as the real one's, one server start fewer
            runs = runs[-1:]
        for size, data_dir, how, extra in runs:
            if args.term_counts:
                counted = await term_counts(data_dir, spread_words(docs), embedder)
                markdown = render_term_counts(counted)
                print(markdown, flush=True)
                if not args.smoke:
                    data = {"machine": machine_info(), "embedder": embedder, "how": how, **counted}
                    write_results(
                        "retrieval-words",
                        f"# retrieval: counting query words\n\n{how}\n\n{markdown}",
                        data,
                        size=str(size),
                    )
                continue
            measured = await measure(data_dir, queries, workdir, embedder)
            if args.smoke:
                continue
            markdown, figures = report(size, ingestion, measured, how)
            data = {"machine": machine_info(), "ingestion": ingestion, **extra, **measured}
            write_results("retrieval", markdown, data, size=str(size), figures=figures)


if __name__ == "__main__":
    asyncio.run(main())
