"""The floors of knowledge_bench: the database work each measured call cannot do without.

Each floor is timed in the bench process through an in-process polyg core attached to the
server's own database (the embedded store is shared per data directory): the same `FalkorStore`
client, connection pool and row parsing the server uses, on the same data, call by call between
the server's calls. A call's floor is the stdio ping of the same run plus that database work:

- cached `generate_documents`: one indexed read, the node by its polyg id with its cached
  document (`CACHED_AT`), returning what the answer shows (id, name, content, generation time,
  template). Nothing less answers: the document must be read, and found from the id given.
- `find_relationship_paths` (length L): the reads a search for the k strongest paths needs.
  A path of at most L hops meets in the middle: its first ceil(L / 2) hops leave nodes within
  that many hops of the source, the others arrive at nodes within floor(L / 2) of the target.
  So: both ends by id (one indexed read), then one read per layer for both sides at once, each
  node's strongest relationships ranked and cut in the database (`best_hops`, the core's query,
  with the core's FANOUT per node and its FRONTIER of best-reached nodes per side and layer),
  then one read of the answer's nodes by id (their names). The search itself (in memory), the
  narratives and JSON are the tool's own work above the floor.
- `explore_neighborhoods` (one term, depth 2): the term's search (the `combined` preset the
  tool uses: query embedding, vector KNN and full-text, fused), the primary nodes' details, the
  relationships around them (at most the 50 shown), then the depth-2 neighbourhood the answer
  shows: the first layer around the primary nodes, heaviest first, cut at the 50 nearby nodes
  shown per primary, and, for the nodes that layer reached, the second layer cut the same way
  (the core's `expand`, one query a layer for all primary nodes). Recommendations and templates
  in use are left out: they are the tool's own work above the floor.

`generate_documents` uncached has a target it meets (15 ms) and no floor here.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from bench.lib.inprocess import core_on
from bench.lib.stats import summarize
from polyg.store.names import ENTITY

# As the tools use them (polyg.core.search.explore, polyg.core.traversal).
NEARBY = 50
RELATIONSHIPS = 50
PRIMARY = 3
CACHED_READ = (
    "MATCH (n:Entity {id: $id}) MATCH (n)-[:CACHED_AT]->(c:CachedDocument) "
    "RETURN n.id, n.name, c.content, c.generated_at, c.template_id"
)


class Floors:
    """An in-process core on the server's data directory, timing each floor's database work."""

    def __init__(self, data_dir: Path, embed: str, project: str) -> None:
        self.data_dir = data_dir
        self.embed = embed
        self.project = project
        self.times: dict[str, list[float]] = {"document_cached": [], "paths": [], "explore": []}
        self._stack = contextlib.AsyncExitStack()
        self._s: Any = None

    async def __aenter__(self) -> Floors:
        self._s = await self._stack.enter_async_context(core_on(self.data_dir, self.embed))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def _timed(self, name: str, work: Any) -> None:
        t = time.perf_counter()
        await work
        self.times[name].append(time.perf_counter() - t)

    async def document_cached(self, node_id: str) -> None:
        rows: list[Any] = []

        async def read() -> None:
            rows.extend(await self._s.ctx.read(self.project, CACHED_READ, {"id": node_id}))

        await self._timed("document_cached", read())
        if not rows:
            raise RuntimeError(f"no cached document for {node_id}")

    async def paths(self, source_id: str, target_id: str, max_len: int, answer_ids: list[str]) -> None:
        from polyg.core.traversal import service as traversal
        from polyg.store.queries import traversal as q

        s, project = self._s, self.project
        scorer = await s.traversal.strength_scorer(project)  # the types' weights: read before timing
        hop = scorer.hop

        async def read() -> None:
            ends = {row[1]: int(row[0]) for row in await q.find_nodes(s.ctx, project, ENTITY, [source_id, target_id])}
            depth = {True: (max_len + 1) // 2, False: max_len // 2}
            reached = {True: {ends[source_id]: 1.0}, False: {ends[target_id]: 1.0}}
            frontier = {True: [ends[source_id]], False: [ends[target_id]]}
            for layer in range(depth[True]):
                wanted = [(n, side) for side in (True, False) if layer < depth[side] for n in frontier[side]]
                rows = await q.best_hops(s.ctx, project, wanted, types=None, rank=scorer.rank, fanout=traversal.FANOUT)
                following: dict[bool, dict[int, float]] = {True: {}, False: {}}
                for node, outward, hops, _ in rows:
                    for _, start, type_, strength, weight, other in hops:
                        forward = (start == node) == outward
                        score = reached[outward][node] * hop(traversal.Hop(type_, forward, strength, weight))
                        if other not in reached[outward]:
                            following[outward][other] = max(score, following[outward].get(other, 0.0))
                for side, scored in following.items():
                    best = sorted(scored.items(), key=lambda item: -item[1])[: traversal.FRONTIER]
                    frontier[side] = [n for n, _ in best]
                    reached[side].update(best)
            if answer_ids:
                await q.find_nodes(s.ctx, project, ENTITY, answer_ids)

        await self._timed("paths", read())

    async def explore(self, term: str) -> None:
        from polyg.store.queries import edge_reads as edge_reads_q
        from polyg.store.queries import node_reads as node_reads_q
        from polyg.store.queries import traversal as q

        s, project = self._s, self.project

        async def read() -> None:
            hits = await s.search.search(project, term, "default", PRIMARY)
            ids = [h.node_id for h in hits]
            if not ids:
                return
            await node_reads_q.summaries(s.ctx, project, ids)
            await edge_reads_q.knowledge_touching(s.ctx, project, ids, RELATIONSHIPS)
            starts = [int(r[0]) for r in await q.find_nodes(s.ctx, project, ENTITY, ids)]
            first = await q.expand(
                s.ctx,
                project,
                starts,
                direction="both",
                types=None,
                min_weight=0.0,
                cap=NEARBY * len(starts),
                heaviest=True,
            )
            reached = [n for n in dict.fromkeys(int(row[7]) for row in first) if n not in starts]
            need = NEARBY * len(starts) - len(reached)
            if reached and need > 0:
                await q.expand(
                    s.ctx,
                    project,
                    reached,
                    direction="both",
                    types=None,
                    min_weight=0.0,
                    cap=need,
                    heaviest=True,
                )

        await self._timed("explore", read())

    def summary(self, ping_p50_ms: float) -> dict[str, Any]:
        """Per call: the database work's p50 and the floor (ping p50 + that p50)."""
        out: dict[str, Any] = {}
        for name, values in self.times.items():
            if values:
                db = summarize(values)
                out[name] = {"db": db, "floor_p50_ms": round(ping_p50_ms + db["p50_ms"], 3)}
        return out
