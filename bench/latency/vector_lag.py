"""How far entity vectors trail their text (polyg.core.graph.vectorizer), and the embedding speeds behind it.

Writes are acknowledged once their text is stored; a worker stores the vectors just after.
This measures, in-process on a fresh embedded store with the default MiniLM embedder:

- single writes: `create_entity` (one-sentence description), then `settle` (the wait a search
  right after it would have): ack p50 and lag p50/p95, `--writes` times;
- a burst: `--burst` entities from `create_entities` calls of 50 (two observations each, like
  the memory-compat benchmark), then the time until every vector is stored: entities/s;
- the embedder itself: a stored text (background priority) and a search query, p50.

    .venv/bin/python bench/latency/vector_lag.py [--writes 200] [--burst 1000] [--no-save]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests


from bench.lib.measure import timed, timing
from bench.lib.runner import bench_parser, run_benchmark
from bench.lib.stats import fmt_ms, summarize
from polyg.config import load_settings
from polyg.runtime.app import Polyg

P = "lag"
DESCRIPTION = "Parses the authentication tokens issued by the gateway and checks their expiry."


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="polyg-lag-") as tmp:
        # The smoke run checks the script, not the model: the hashing embedder loads at once.
        provider = "hashing" if args.smoke else "minilm"
        paths = {"data_dir": Path(tmp) / "data", "log_dir": Path(tmp) / "logs"}
        core = Polyg(load_settings(None, **paths, log_level="WARNING", embedding_provider=provider))
        try:
            s = await core.ready()
            # The model itself: the vector cache in front of it would answer the repeated texts.
            embedder = getattr(s.ctx.embedder, "inner", s.ctx.embedder)
            acks: list[float] = []
            lags: list[float] = []  # from the acknowledgement on
            for i in range(args.writes):
                with timing(acks):
                    await s.entities.create(
                        P, name=f"src/auth/parser_{i:06d}.py", type_="module", description=DESCRIPTION
                    )
                with timing(lags):
                    await s.ctx.vectors.settle(P, 60)
            burst_t = time.perf_counter()
            for start in range(0, args.burst, 50):
                await s.named.create_entities(
                    P,
                    [
                        {
                            "name": f"Person {k}",
                            "entityType": "person",
                            "observations": [f"Person {k} lives in city {k % 17}.", f"Person {k} plays chess."],
                        }
                        for k in range(start, min(start + 50, args.burst))
                    ],
                )
            written = time.perf_counter() - burst_t
            await s.ctx.vectors.settle(P, 3600)
            drained = time.perf_counter() - burst_t
            text_s, query_s = [], []
            for _ in range(args.embeds):
                text_s.append(await timed(lambda: asyncio.to_thread(embedder.embed_batch_sync, [DESCRIPTION])))
                query_s.append(await timed(lambda: asyncio.to_thread(embedder.embed_query_sync, "token expiry")))
        finally:
            await core.close()
    return {
        "writes": args.writes,
        "ack": summarize(acks),
        "lag": summarize(lags),
        "burst": {
            "entities": args.burst,
            "written_s": round(written, 2),
            "vectors_stored_s": round(drained, 2),
            "entities_per_s": round(args.burst / drained, 1),
        },
        "embed_stored_text": summarize(text_s),
        "embed_query": summarize(query_s),
        "variant": getattr(embedder, "variant", "-"),
    }


def render(r: dict[str, Any], info: dict[str, Any]) -> str:
    b = r["burst"]
    return "\n".join(
        [
            f"# Write-behind vectors, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
            "",
            f"polyg {info.get('polyg_commit', '?')}, {info.get('nproc')} CPUs, load average at start "
            f"{info.get('loadavg_at_start')}. In-process, fresh embedded store, default MiniLM embedder.",
            "",
            "| what | p50 ms | p95 ms |",
            "|---|---:|---:|",
            f"| create_entity acknowledged ({r['writes']} sequential) | {fmt_ms(r['ack']['p50_ms'])} | "
            f"{fmt_ms(r['ack']['p95_ms'])} |",
            f"| then its vectors stored (lag after the ack) | {fmt_ms(r['lag']['p50_ms'])} | "
            f"{fmt_ms(r['lag']['p95_ms'])} |",
            f"| embed one stored text ({r['variant']} model, background priority, {len(DESCRIPTION)} chars) | "
            f"{fmt_ms(r['embed_stored_text']['p50_ms'])} | {fmt_ms(r['embed_stored_text']['p95_ms'])} |",
            f"| embed one search query ({r['variant']} model) | {fmt_ms(r['embed_query']['p50_ms'])} | "
            f"{fmt_ms(r['embed_query']['p95_ms'])} |",
            "",
            f"Burst: {b['entities']} entities (2 observations each) written in {b['written_s']} s by "
            f"create_entities calls of 50; all their vectors stored {b['vectors_stored_s']} s after the first "
            f"call: {b['entities_per_s']} entities/s.",
            "",
        ]
    )


def figures(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "ack_p50_ms": result["ack"]["p50_ms"],
        "lag_p50_ms": result["lag"]["p50_ms"],
        "burst_entities_per_s": result["burst"]["entities_per_s"],
        "embed_query_p50_ms": result["embed_query"]["p50_ms"],
    }


def main() -> int:
    p = bench_parser(__doc__)
    p.add_argument("--writes", type=int, default=200)
    p.add_argument("--burst", type=int, default=1000)
    p.add_argument("--embeds", type=int, default=100, help="timed embeddings of a text and of a query")
    args = p.parse_args()
    smoke = {"writes": 3, "burst": 20, "embeds": 3}
    return run_benchmark("vector-lag", args, measure=run, render=render, figures=figures, smoke=smoke)


if __name__ == "__main__":
    raise SystemExit(main())
