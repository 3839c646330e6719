"""Entity vectors computed just after their text is stored (write-behind), in batches.

A write that changes what an entity is embedded from (its name, type, description or
observations) stores the text at once, in one query, and bumps the entity's text revision
`e.rev`; the tool answers as soon as that write is acknowledged. This worker then embeds
what is missing (the head text, new observations), recomposes the entity vector
(`polyg.core.vectors`) and stores it with `e.vec_rev = e.rev`, in batches: one model call
and two queries for many entities.

Why: the model is the slowest step of every write (5 ms for a one-sentence description on
these machines, more for long texts or a remote provider), and a memory must not wait on
it, or be lost because an embedding service is down. The text is durable and findable by
full-text search from the first moment; vectors follow within milliseconds.

Consistency:
- search waits (`settle`) until the vectors of every write this process acknowledged
  before the search are stored, so a client always finds what it just wrote by meaning too;
- the vector write only lands if `e.rev` is still the revision it embedded: a text change
  in between (from this process or another one on the same database) wins, and its own
  mark brings the entity back here;
- a crash between the two leaves `e.vec_rev <> e.rev`; `sweep` finds such entities when a
  project is opened and queues them again. Nothing is lost, only late.
- revisions are random tokens, not counters: an entity deleted and created again with the
  same id (an import restores ids) starts from a revision its predecessor never had.

The same round links the entity to the document chunks that mention its name
(`polyg.core.mentions`), so that a search, which waits for it, sees those links too.

Failures: a round whose database cannot be reached is retried, with a growing pause per
project. A batch that fails otherwise is split in halves down to single entities; a text
that fails alone while the model embeds other texts is parked (`e.vec_parked`, logged,
counted by `polyg status`), so that one text the embedder rejects cannot hold back every
other vector of its project, or make its searches wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Iterable
from typing import Any

from polyg.core.embeddable import OBSERVATION
from polyg.core.graph import GraphContext
from polyg.core.mentions import follow_entities
from polyg.core.vectors import SET_VECTORS, compose, head_text
from polyg.embed.base import run_in_background
from polyg.errors import PolygError, StoreNotReady, StoreTimeout
from polyg.store.falkor import Row, VectorParam
from polyg.store.queries.nodes import set_vectors

log = logging.getLogger(__name__)

# Entities recomposed per model call and write; their observations ride along. 256 makes an
# import (which goes through here) as fast as embedding inline at create: 10k entities in 75 s
# (64: 86 s; the vector writes update nodes, which costs the database more per query).
BATCH = 256

# Backoff after a failed batch (embedding service or store down), doubling up to the max.
RETRY_S = 0.5
MAX_RETRY_S = 30.0

# Entities whose vectors do not match their text. Entities written before revisions existed
# have no `rev` and are up to date.
STALE = "e.rev IS NOT NULL AND (e.vec_rev IS NULL OR e.vec_rev <> e.rev)"
# Entities whose text failed to embed on its own (`Vectorizer._park`): `vec_parked` is the
# revision that failed, so a text change (a new revision) makes the entity ordinary again.
PARKED = "e.vec_parked IS NOT NULL AND e.vec_parked = e.rev"
# Rows ready to write: (entities with their head and composed vectors, new observation vectors).
Vectors = tuple[list[dict[str, Any]], list[dict[str, Any]]]
# Failures that say nothing about the texts of a batch: the database cannot be reached. Any
# other failure may be one text the model (or the database) rejects, so the batch is split.
TRANSIENT = (StoreTimeout, StoreNotReady)
# Embedded to tell a rejected text from a model that rejects everything (each probe is a new
# text, so that a cache in front of the model cannot answer for it).
PROBE = "polyg embedding probe {}"


class Vectorizer:
    def __init__(self, ctx: GraphContext, *, batch: int = BATCH) -> None:
        self.ctx = ctx
        self.batch = batch
        self._pending: dict[str, set[str]] = {}  # project -> entity ids to recompose
        self._marked: dict[str, int] = {}  # project -> marks made (a ticket counter)
        self._stored: dict[str, int] = {}  # project -> tickets whose vectors are stored
        self._changed = asyncio.Condition()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Per project, so that one project's success does not hide another's failures.
        self._failures: dict[str, int] = {}  # project -> consecutive failed rounds
        self._retry_at: dict[str, float] = {}  # project -> when to try a failed round again
        self._probes = itertools.count()
        self._storing: str | None = None  # the project whose round is under way
        self._forgotten: dict[str, int] = {}  # project -> times its queue was dropped (`forget`)

    @property
    def failures(self) -> int:
        """Consecutive failed rounds, summed over projects (0 when healthy)."""
        return sum(self._failures.values())

    def failing(self, project: str) -> bool:
        return self._failures.get(project, 0) > 0

    # --- what writers and readers call --------------------------------------------------------

    def mark(self, project: str, entity_ids: Iterable[str]) -> None:
        """Queue entities whose text was just written; their vectors follow shortly."""
        ids = set(entity_ids)
        if not ids:
            return
        self._pending.setdefault(project, set()).update(ids)
        self._marked[project] = self._marked.get(project, 0) + 1
        self._wake.set()
        self._ensure_running()

    def pending(self, project: str | None = None) -> int:
        """Entities waiting for vectors (in one project, or in all)."""
        if project is not None:
            return len(self._pending.get(project, ()))
        return sum(len(ids) for ids in self._pending.values())

    async def settle(self, project: str, timeout_s: float) -> bool:
        """Wait until vectors of everything marked so far in `project` are stored (True), or
        until `timeout_s` passes (False: the embedder is failing or far behind)."""
        ticket = self._marked.get(project, 0)

        def done() -> bool:
            return self._stored.get(project, 0) >= ticket

        # The embedder or the store is failing for this project (now, or while we wait):
        # waiting would only add latency to every search.
        if done() or self.failing(project):
            return done()

        async def stored() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: done() or self.failing(project))

        try:
            await asyncio.wait_for(stored(), timeout_s)
        except TimeoutError:
            return False
        return done()

    async def parked(self, project: str) -> int:
        """Entities of `project` whose text the embedder rejects: they have no vector until
        their text changes (or the next start tries them again)."""
        rows = await self.ctx.read(project, f"MATCH (e:Entity) WHERE {PARKED} RETURN count(e)")
        return int(rows[0][0]) if rows else 0

    async def sweep(self, project: str) -> int:
        """Queue the entities of `project` whose vectors are stale (left by a crash); how many."""
        rows = await self.ctx.read(project, f"MATCH (e:Entity) WHERE {STALE} RETURN e.id")
        self.mark(project, [row[0] for row in rows])
        return len(rows)

    async def forget(self, project: str) -> None:
        """Drop what is queued for `project`, whose graph is being deleted (a vector write would
        create it again), and wait until a round already under way for it is done."""
        self._pending.pop(project, None)
        self._failures.pop(project, None)
        self._retry_at.pop(project, None)
        self._forgotten[project] = self._forgotten.get(project, 0) + 1
        async with self._changed:
            self._stored[project] = self._marked.get(project, 0)  # nobody need wait for those
            self._changed.notify_all()
            await self._changed.wait_for(lambda: self._storing != project)

    async def close(self, drain_s: float = 10.0) -> None:
        """Store what is pending (for up to `drain_s`), then stop. Whatever is left over is
        found again by the next `sweep`."""
        if self._task is None:
            return
        deadline = asyncio.get_running_loop().time() + drain_s
        for project in list(self._marked):
            await self.settle(project, max(0.0, deadline - asyncio.get_running_loop().time()))
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    # --- the worker -----------------------------------------------------------------------------

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="polyg-vectorizer")

    async def _run(self) -> None:
        while True:
            # No waiting to gather a batch: a search right after a write would wait for it.
            # Writes made while a batch is being stored form the next batch by themselves.
            # A project that failed waits for its retry time; the others go on meanwhile.
            now = time.monotonic()
            waits = [self._retry_at.get(p, now) - now for p, ids in self._pending.items() if ids]
            if not waits or min(waits) > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), min(waits) if waits else None)
            self._wake.clear()
            now = time.monotonic()
            for project in [p for p, ids in self._pending.items() if ids and self._retry_at.get(p, now) <= now]:
                await self._round(project)

    async def _round(self, project: str) -> None:
        ticket = self._marked[project]
        ids = sorted(self._pending.pop(project))
        left = set(ids)  # not yet stored or parked
        forgotten = self._forgotten.get(project, 0)
        self._storing = project
        try:
            await self._store_all(project, ids, left)
        except Exception as exc:
            # Nothing is lost: what is left goes back to the queue and is tried again later
            # (unless the project was cleared meanwhile).
            if self._forgotten.get(project, 0) != forgotten:
                async with self._changed:
                    self._storing = None
                    self._changed.notify_all()
                return
            self._pending.setdefault(project, set()).update(left)
            failures = self._failures[project] = self._failures.get(project, 0) + 1
            delay = min(RETRY_S * 2 ** (failures - 1), MAX_RETRY_S)
            self._retry_at[project] = time.monotonic() + delay
            message = exc.message if isinstance(exc, PolygError) else repr(exc)
            log.warning("storing vectors failed; will retry", extra={"project": project, "error": message})
            async with self._changed:
                self._storing = None
                self._changed.notify_all()  # searches waiting on this project stop waiting
            return
        self._failures.pop(project, None)
        self._retry_at.pop(project, None)
        async with self._changed:
            self._stored[project] = max(self._stored.get(project, 0), ticket)
            self._storing = None
            self._changed.notify_all()

    async def _store_all(self, project: str, ids: list[str], left: set[str]) -> None:
        """Store the vectors of `ids` batch by batch, removing each from `left` once stored (or
        parked); the next batch is read and embedded while this one is written (the model and
        the database then use the cores at once)."""
        batches = [ids[start : start + self.batch] for start in range(0, len(ids), self.batch)]
        ahead = asyncio.ensure_future(self._vectors_of(project, batches[0]))
        try:
            for index, batch in enumerate(batches):
                try:
                    try:
                        vectors = await ahead
                    finally:
                        if index + 1 < len(batches):
                            ahead = asyncio.ensure_future(self._vectors_of(project, batches[index + 1]))
                    await self._write(project, *vectors)
                except TRANSIENT:
                    raise
                except Exception as exc:
                    await self._split(project, batch, left, exc)
                left.difference_update(batch)
        finally:
            ahead.cancel()
            if ahead.done() and not ahead.cancelled():
                ahead.exception()  # retrieved: a read-ahead that failed is tried again anyway

    async def _split(self, project: str, batch: list[str], left: set[str], error: Exception) -> None:
        """A batch failed for a reason other than the database being down: store its halves
        apart, down to single entities, so that one text the embedder rejects (too long for a
        provider, a byte it cannot take) does not hold back every other vector of the project.
        A text that fails alone is parked, unless the embedder rejects everything (then the
        error is raised: a failure to retry, not a text to park)."""
        if len(batch) == 1:
            if not await self._embedder_works():
                raise error
            await self._park(project, batch[0], error)
            return
        middle = len(batch) // 2
        for half in (batch[:middle], batch[middle:]):
            try:
                await self._write(project, *await self._vectors_of(project, half))
            except TRANSIENT:
                raise
            except Exception as exc:
                await self._split(project, half, left, exc)
            left.difference_update(half)

    async def _embedder_works(self) -> bool:
        probe = PROBE.format(next(self._probes))
        try:
            await run_in_background(self.ctx.embedder.embed_batch_sync, [probe])
        except Exception:
            return False
        return True

    async def _park(self, project: str, entity_id: str, error: Exception) -> None:
        """Give up on the vectors of one entity until its text changes (or the next start's
        sweep), and say so: its project's other vectors go on, and search still finds it by
        its words."""
        message = error.message if isinstance(error, PolygError) else repr(error)
        log.warning(
            "embedding this entity's text fails on its own; its vectors are parked until its text changes",
            extra={"project": project, "entity": entity_id, "error": message},
        )
        await self.ctx.write(project, "MATCH (e:Entity {id: $id}) SET e.vec_parked = e.rev", {"id": entity_id})

    async def _vectors_of(self, project: str, entity_ids: list[str]) -> Vectors:
        rows = await self.ctx.read(
            project,
            "UNWIND $ids AS id MATCH (e:Entity {id: id}) "
            "OPTIONAL MATCH (e)-[:HAS_OBSERVATION]->(o:Observation) "
            "RETURN e.id, e.rev, e.name, e.type, e.summary, e.head_embedding, "
            "collect(CASE WHEN o IS NULL THEN NULL ELSE [o.id, o.text, o.embedding] END)",
            {"ids": entity_ids},
        )
        await self._follow_mentions(project, rows)
        return await run_in_background(self._recompose, rows)

    async def _follow_mentions(self, project: str, rows: list[Row]) -> None:
        """The chunks mentioning each name follow it too, before the vectors are stored: a crash
        in between leaves the vectors stale, and the sweep brings the entity back here. Only a
        store that cannot be reached fails the round; any other failure to link must not hold
        back vectors (nor park a text that embeds well): it is logged, and the links wait for
        the entity's next change."""
        try:
            await follow_entities(self.ctx, project, [(row[0], row[2]) for row in rows])
        except TRANSIENT:
            raise
        except PolygError as exc:
            log.warning(
                "linking entities to the chunks that mention them failed",
                extra={"project": project, "error": exc.message},
            )

    async def _write(
        self, project: str, entities: list[dict[str, Any]], new_observations: list[dict[str, Any]]
    ) -> None:
        # An observation's text never changes, so its vector is right whatever happened since.
        await set_vectors(self.ctx, project, OBSERVATION.label, new_observations)
        if entities:
            await self.ctx.write(
                project,
                "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) WHERE e.rev = r.rev "
                f"{SET_VECTORS.format(entity='r.emb', head='r.head')} SET e.vec_rev = r.rev REMOVE e.vec_parked",
                {"rows": entities},
            )

    def _recompose(self, rows: list[Row]) -> Vectors:
        """Embed what the rows lack and compose entity vectors: (entity rows, new observation
        rows) ready to write. Runs in a background embedding thread, arithmetic included."""
        # What the model must run on: heads never embedded (or whose description changed)
        # and observations without a vector.
        texts: list[str] = []
        for _, _, name, type_, summary, head, observations in rows:
            if not head:
                texts.append(head_text(name, type_, summary or ""))
            texts.extend(text for _, text, vector in observations if not vector)
        vectors = iter(self.ctx.embedder.embed_batch_sync(texts) if texts else [])
        entities: list[dict[str, Any]] = []
        new_observations: list[dict[str, Any]] = []
        for entity_id, rev, _, _, _, head, observations in rows:
            head_vec = head or next(vectors)
            obs_vecs = []
            for obs_id, _, vector in observations:
                if not vector:
                    vector = next(vectors)
                    new_observations.append({"id": obs_id, "emb": VectorParam(vector)})
                obs_vecs.append(vector)
            entity_vec = compose(head_vec, obs_vecs)
            entities.append(
                {"id": entity_id, "rev": rev, "head": VectorParam(head_vec), "emb": VectorParam(entity_vec)}
            )
        return entities, new_observations
