"""Bench-only bulk loader: the entity-scale store (`bench.lib.synthetic`'s entities with their
hashed vectors, and `synthetic.links` relationships) written in big batches, for sizes the
tool-shaped preload (`bench.lib.preload`, then the vectorizer) takes hours over.

The store it leaves is the one polyg writes (tests/test_bulk_load.py checks it node for node,
index for index, against entities and relationships written through polyg's core):
- entity rows through polyg's one create statement (`create_entities_cypher`), with the vectors
  the vectorizer would compute (head vector, composed entity vector, `vec_rev = rev`) set in the
  same statement; observation vectors through polyg's `set_vectors`;
- relationships through polyg's `create_relationships` statement (ids unique by construction,
  so no existence check), their types registered through polyg's registry;
- indexes by polyg's own schema code (`SchemaGuard`): the range indexes first (the writes look
  entities up by id), the full-text and vector indexes after the rows (`--indexes after`):
  FalkorDB then builds each over the existing nodes in one pass instead of inserting into the
  HNSW graph a batch at a time. `--indexes before` creates every index first, as polyg would.

Runs as a child process (the preload's memory never counts against the benchmark's):

    python -m bench.lib.bulk_load --data-dir DIR --entities N [--links 2] [--indexes after]

prints its JSON info last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.lib.procs import dir_size_mb
from bench.lib.synthetic import entity_id, generated_entity, links, observation_id, relation_id

VERSION = 1  # bump when what is written changes, so cached data dirs are rebuilt
# Set per entity created, in the create statement: what `polyg.store.queries.vectors.store_vectors`
# sets for a composed label (the vector computed from the revision the node was created with).
ENTITY_VECTORS = "SET n.vec_rev = n.rev, n.embedding = vecf32(r.emb), n.head_embedding = vecf32(r.head) "


def say(msg: str) -> None:
    print(f"[bulk {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class DirectRunner:
    """polyg's query functions run on the store itself: the core's runner ensures the project's
    whole schema (vector and full-text indexes too) before a write, which `--indexes after` defers."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def read(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Any]:
        return list(await self.store.ro_query(project, cypher, params))

    async def write(self, project: str, cypher: str, params: dict[str, Any] | None = None) -> list[Any]:
        return list(await self.store.query(project, cypher, params))


def entity_batch(embedder: Any, start: int, stop: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Entity rows (with their vectors, as the vectorizer computes them) and observation vector rows."""
    from polyg.core.graph.entity_writer import type_label
    from polyg.core.graph.vectors import compose, head_text
    from polyg.store.falkor import VectorParam

    entities = [generated_entity(i) for i in range(start, stop)]
    texts: list[str] = []
    for e in entities:
        texts.append(head_text(e["name"], e["type"], e["description"]))
        texts.extend(e["obs"])
    vectors = iter(embedder.embed_batch_sync(texts))
    rows, obs_rows = [], []
    for e in entities:
        head = next(vectors)
        obs = [(observation_id(e["i"], k), text, next(vectors)) for k, text in enumerate(e["obs"])]
        obs_rows += [{"id": oid, "emb": VectorParam(vec)} for oid, _, vec in obs]
        rows.append(
            {
                "id": e["id"],
                "name": e["name"],
                "type": e["type"],
                "summary": e["description"],
                "label": type_label(e["type"]),
                "obs": [{"id": oid, "text": text} for oid, text, _ in obs],
                "head": VectorParam(head),
                "emb": VectorParam(compose(head, [vec for _, _, vec in obs])),
            }
        )
    return rows, obs_rows


def relation_rows(pairs: list[tuple[int, int, str]], at: str) -> list[dict[str, Any]]:
    """What `NamedGraph.write_relations` writes for (i, j, kind): the type as stored, no label
    (the text is a valid type)."""
    from polyg.core.memory.named import stored_type
    from polyg.store.names import RelType

    rows = []
    for i, j, kind in pairs:
        stored = stored_type(kind)
        rows.append(
            {
                "id": relation_id(i, j, kind),
                "a": entity_id(i),
                "b": entity_id(j),
                "type": RelType(stored),
                "text": kind,
                "label": None if kind == stored else kind,
                "created_at": at,
            }
        )
    return rows


async def wait_indexes(runner: DirectRunner, project: str, timeout_s: float) -> float:
    """Seconds until every index of the project is operational (FalkorDB builds them in the background)."""
    from polyg.store.queries.indexes import index_states

    t = time.perf_counter()
    while True:
        rows = await index_states(runner, project)
        building = [label for label, status in rows if status != "OPERATIONAL"]
        if not building:
            return time.perf_counter() - t
        if time.perf_counter() - t > timeout_s:
            raise TimeoutError(f"indexes still building after {timeout_s:.0f} s: {building}")
        await asyncio.sleep(1.0)


async def bulk_load(
    data_dir: Path,
    n: int,
    *,
    links_per_entity: int = 2,
    batch: int = 5000,
    rel_batch: int = 20000,
    indexes: str = "after",
    compact: bool = True,
    index_timeout_s: float = 6 * 3600,
    resume: bool = False,
    wait_for_indexes: bool = True,
    leave_running: bool = False,
) -> dict[str, Any]:
    from polyg.config import load_settings
    from polyg.core.graph.entity_writer import OWN_KEYS
    from polyg.names import now_iso
    from polyg.runtime.app import Polyg
    from polyg.store import schema
    from polyg.store.embedded import EmbeddedFalkor
    from polyg.store.names import OBSERVATION, Label
    from polyg.store.queries import edges as edge_q
    from polyg.store.queries import vectors as vector_q
    from polyg.store.queries.nodes import create_entities_cypher

    settings = load_settings(None, data_dir=data_dir, log_level="WARNING", embedding_provider="hashing")
    core = Polyg(settings, sweep=False)
    info: dict[str, Any] = {"version": VERSION, "entities": n, "embed_mode": "hashing", "indexes": indexes}
    try:
        t0 = time.perf_counter()
        services = await core.ready()
        project = services.project(None)
        info["project"] = project
        info["store_open_s"] = round(time.perf_counter() - t0, 2)
        store, guard = services.store, services.ctx.schema
        runner = DirectRunner(store)
        embedder = services.ctx.embedder
        if indexes == "before":
            await guard.ensure(project)
        else:  # the lookups by id need theirs; polyg's own statements
            found = await schema.existing_indexes(store, project)
            for label, props in schema.RANGE_INDEXES.items():
                for prop in props:
                    if "RANGE" not in found.get((label, prop), set()):
                        await store.query(project, schema.range_index(label, prop))
        # `resume`: a load whose process was stopped (its database, a daemon, kept running)
        # goes on after the entities written (whole batches: each is one query).
        first = int((await store.ro_query(project, "MATCH (e:Entity) RETURN count(e)"))[0][0]) if resume else 0
        if first % batch:
            raise RuntimeError(f"{first} entities stored: not whole batches of {batch}; cannot resume")
        info["resumed_at"] = first
        if first:  # the stopped load may have written its last batch's rows but not their observations' vectors
            _, obs_rows = entity_batch(embedder, first - batch, first)
            await vector_q.set_vectors(runner, project, Label(OBSERVATION), obs_rows)

        now = now_iso()
        t_write = time.perf_counter()
        embed_s = 0.0

        def compute(start: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
            t_e = time.perf_counter()
            rows, obs_rows = entity_batch(embedder, start, min(n, start + batch))
            return rows, obs_rows, time.perf_counter() - t_e

        # The next batch's vectors are computed in a thread while this one is written: the
        # database and the interpreter work at once.
        starts = list(range(first, n, batch))
        ahead = asyncio.ensure_future(asyncio.to_thread(compute, starts[0])) if starts else None
        for k, start in enumerate(starts):
            assert ahead is not None
            rows, obs_rows, took = await ahead
            embed_s += took
            ahead = asyncio.ensure_future(asyncio.to_thread(compute, starts[k + 1])) if k + 1 < len(starts) else None
            cypher = create_entities_cypher([r["label"] for r in rows], after=ENTITY_VECTORS)
            await store.query(project, cypher, {"rows": rows, "now": now, "own": OWN_KEYS})
            await vector_q.set_vectors(runner, project, Label(OBSERVATION), obs_rows)
            done = start + len(rows)
            if (start // batch) % 10 == 0 or done == n:
                el = time.perf_counter() - t_write
                say(f"wrote {done}/{n} entities with their vectors ({el:.0f} s, {(done - first) / el:.0f}/s)")
        info["write_s"] = round(time.perf_counter() - t_write, 1)
        info["vectors_computed_s"] = round(embed_s, 1)
        info["entity_rows_per_s"] = round((n - first) / info["write_s"], 1) if info["write_s"] else None

        t_rel = time.perf_counter()
        written = 0
        pending: list[tuple[int, int, str]] = []
        kinds: set[str] = set()
        all_links = links(n, links_per_entity)
        while True:
            pending = [x for _, x in zip(range(rel_batch), all_links, strict=False)]
            if not pending:
                break
            rows = relation_rows(pending, now)
            kinds.update(r["type"] for r in rows)
            for rel_type in sorted({r["type"] for r in rows}):
                part = [r for r in rows if r["type"] == rel_type]
                await edge_q.create_relationships(runner, project, part, now=now, if_absent="always", returns=None)
                written += len(part)
            if (written // rel_batch) % 10 == 0:
                say(f"wrote {written}/{n * links_per_entity} relationships ({time.perf_counter() - t_rel:.0f} s)")
        info["relations"] = written
        info["relations_s"] = round(time.perf_counter() - t_rel, 1)
        info["relations_per_s"] = round(written / info["relations_s"], 1) if info["relations_s"] else None

        # The rest of polyg's schema by polyg's own statements: the types registered as a write
        # would, the relationship id indexes, every other index, and the entities' vector index
        # last. FalkorDB builds an index over existing nodes in the background, but a statement
        # creating another index waits for it: with the largest last, nothing waits. Then
        # polyg's own schema code (the schema record, migrations) finds every index there.
        t_idx = time.perf_counter()
        await services.named.edges.register(project, sorted(kinds))
        await schema.ensure_relationship_indexes(store, project, await schema.relationship_types(store, project))
        found = await schema.existing_indexes(store, project)
        for label, props in schema.FULLTEXT_INDEXES.items():
            missing = [p for p in props if "FULLTEXT" not in found.get((label, p), set())]
            if missing:
                await store.query(project, schema.fulltext_index(label, missing))
        dimension = guard.dimension
        for label in sorted(schema.VECTOR_INDEXES, key=lambda label: label == "Entity"):
            if "VECTOR" not in found.get((label, "embedding"), set()):
                await store.query(project, schema.vector_index(label, dimension))
        guard.forget(project)
        await guard.ensure(project)
        info["index_statements_s"] = round(time.perf_counter() - t_idx, 1)
        if wait_for_indexes:
            info["index_build_s"] = round(await wait_indexes(runner, project, index_timeout_s), 1)
        else:  # built again at every load anyway: the restart measures it
            info["index_build_s"] = None
        # Vectors are searchable once their index is built: rows and index together.
        if info["index_build_s"] is not None:
            vec_s = info["write_s"] + info["index_statements_s"] + info["index_build_s"]
            info["embed_s"] = round(vec_s, 1)
            info["vectors_per_s"] = round((n - first) / vec_s, 1) if vec_s else None
        counts = await store.ro_query(
            project, "MATCH (e:Entity) WITH count(e) AS ne OPTIONAL MATCH (o:Observation) RETURN ne, count(o)"
        )
        info["entities"], info["observations"] = counts[0][0], counts[0][1]
        say(f"done: {json.dumps(info)}")
        if compact:
            t_rw = time.perf_counter()
            if not await asyncio.to_thread(EmbeddedFalkor(data_dir / "db").compact, 3600):
                raise RuntimeError("compacting the store's AOF failed")
            info["aof_rewrite_s"] = round(time.perf_counter() - t_rw, 1)
    finally:
        if not leave_running:  # else the process exits attached: the daemonized database stays up
            await core.close()
    info["data_dir_mb"] = dir_size_mb(data_dir)
    if leave_running:
        # Without the core's close, which would stop the database as its last user: the
        # server (a daemon) stays up, and the next process attaches to it, loaded and indexed.
        print(json.dumps(info), flush=True)
        os._exit(0)
    return info


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--entities", type=int, required=True)
    p.add_argument("--links", type=int, default=2, help="relationships per entity")
    p.add_argument("--batch", type=int, default=5000)
    p.add_argument("--rel-batch", type=int, default=20000)
    p.add_argument("--indexes", choices=("before", "after"), default="after")
    p.add_argument("--no-compact", action="store_true")
    p.add_argument("--resume", action="store_true", help="go on after the entities already stored")
    p.add_argument(
        "--leave-running", action="store_true", help="exit with the database still running (measured warm next)"
    )
    p.add_argument(
        "--no-wait-indexes", action="store_true", help="store without waiting for the index build (a load rebuilds)"
    )
    args = p.parse_args(argv)
    info = asyncio.run(
        bulk_load(
            args.data_dir,
            args.entities,
            links_per_entity=args.links,
            batch=args.batch,
            rel_batch=args.rel_batch,
            indexes=args.indexes,
            compact=not args.no_compact,
            resume=args.resume,
            wait_for_indexes=not args.no_wait_indexes,
            leave_running=args.leave_running,
        )
    )
    print(json.dumps(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
