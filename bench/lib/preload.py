"""Fills a data dir with the synthetic entities (`bench.lib.synthetic`), in a process of its own.

`bench.lib.datadirs.ensure_preloaded` runs it as a child process (so the model and the write
buffers never inflate the benchmark's own memory), from the repository root:

    python -m bench.lib.preload preload --data-dir DIR --entities N [--embed auto|minilm|hashing]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.lib.datadirs import PRELOAD_VERSION
from bench.lib.procs import dir_size_mb
from bench.lib.synthetic import generated_entity, observation_id

BATCH = 256


async def preload(data_dir: Path, n: int, embed: str, max_embed_s: float, batch: int) -> dict[str, Any]:
    """Fill `data_dir` through polyg's core, as `create_entities` would (the entity rows, then
    their vectors from the core's vectorizer), with ids the benchmarks can address."""
    from polyg.config import load_settings
    from polyg.core.graph.vectors import head_text
    from polyg.runtime.app import Polyg
    from polyg.store.embedded import EmbeddedFalkor

    def say(msg: str) -> None:
        print(f"[preload {n}] {msg}", file=sys.stderr, flush=True)

    entities = [generated_entity(i) for i in range(n)]
    texts = len(entities) + sum(len(e["obs"]) for e in entities)
    info: dict[str, Any] = {"texts": texts}
    mode = embed
    if embed == "auto":
        # The MiniLM rate on this machine decides: hashed vectors when it would take too long.
        settings = load_settings(None, data_dir=data_dir, log_level="WARNING")
        probe_core = Polyg(settings)
        embedder = (await probe_core.ready()).ctx.embedder
        sample = [head_text(e["name"], e["type"], e["description"]) for e in entities[:512]]
        t = time.perf_counter()
        embedder.embed_batch_sync(sample)
        per_text = (time.perf_counter() - t) / max(1, len(sample))
        await probe_core.close()
        info["minilm_ms_per_text"] = round(per_text * 1000, 3)
        info["minilm_projected_s"] = round(per_text * texts, 1)
        mode = "minilm" if per_text * texts <= max_embed_s else "hashing"
        say(f"MiniLM: {per_text * 1000:.2f} ms/text, projected {per_text * texts:.0f} s: {mode}")
    settings = load_settings(None, data_dir=data_dir, log_level="WARNING", embedding_provider=mode)
    core = Polyg(settings)
    t0 = time.perf_counter()
    services = await core.ready()
    project = services.project(None)
    info["store_open_s"] = round(time.perf_counter() - t0, 2)

    try:
        t_write = time.perf_counter()
        for start in range(0, n, batch):
            rows = [
                {
                    "id": e["id"],
                    "name": e["name"],
                    "type": e["type"],
                    "summary": e["description"],
                    "obs": [{"id": observation_id(e["i"], k), "text": text} for k, text in enumerate(e["obs"])],
                }
                for e in entities[start : start + batch]
            ]
            await services.named.write_entities(project, rows, unique_names=False)
            if (start // batch) % 40 == 0:
                say(f"wrote {start + len(rows)}/{n} entities")
        info["write_s"] = round(time.perf_counter() - t_write, 1)
        t_embed = time.perf_counter()
        if not await services.ctx.vectors.settle(project, 24 * 3600):
            raise RuntimeError("the vectorizer did not store the preloaded entities' vectors")
        info["embed_mode"] = mode
        info["embed_s"] = round(time.perf_counter() - t_embed, 1)
        counts = await services.store.ro_query(
            project, "MATCH (e:Entity) WITH count(e) AS ne OPTIONAL MATCH (o:Observation) RETURN ne, count(o)"
        )
        info["entities"], info["observations"] = counts[0][0], counts[0][1]
        counted = f"{info['entities']} entities, {info['observations']} observations"
        say(f"{counted}; vectors ({mode}) in {info['embed_s']} s")

        # Restarts then load a snapshot, as a long-lived store's would after automatic rewrites.
        t_rw = time.perf_counter()
        if not await asyncio.to_thread(EmbeddedFalkor(data_dir / "db").compact, 600):
            raise RuntimeError("compacting the preloaded store's AOF failed")
        info["aof_rewrite_s"] = round(time.perf_counter() - t_rw, 1)
    finally:
        # Also on an error: the embedded store's server would outlive this process.
        await core.close()
    info["data_dir_mb"] = dir_size_mb(data_dir)
    info["version"] = PRELOAD_VERSION
    info["project"] = project
    return info


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    pre = sub.add_parser("preload", help="fill a data dir with generated entities (prints JSON info)")
    pre.add_argument("--data-dir", type=Path, required=True)
    pre.add_argument("--entities", type=int, required=True)
    pre.add_argument("--embed", choices=("auto", "minilm", "hashing"), default="auto")
    pre.add_argument("--max-embed-s", type=float, default=600.0)
    pre.add_argument("--batch", type=int, default=BATCH)
    args = parser.parse_args(argv)
    if args.cmd == "preload":
        info = asyncio.run(preload(args.data_dir, args.entities, args.embed, args.max_embed_s, args.batch))
        print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
