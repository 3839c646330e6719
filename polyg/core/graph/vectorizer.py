"""Vectors computed just after their text is stored (write-behind), in batches.

What is embedded follows from the embeddable registry (`polyg.core.graph.embeddable`): every declared
label but the parts (an entity's observations) is queued by label. A write that changes what a
node is embedded from (an entity's name, type, description or observations; a chunk's or an
event's text) stores the text at once, in one query, and bumps the node's text revision
`n.rev`; the tool answers as soon as that write is acknowledged. This worker then embeds what
is missing (the head text, new parts), composes the vector where the label declares parts
(`polyg.core.graph.vectors`) and stores it with `n.vec_rev = n.rev`, in batches: one model call and
two queries for many nodes.

Why: the model is the slowest step of every write (5 ms for a one-sentence description on
these machines, more for long texts or a remote provider), and a memory must not wait on
it, or be lost because an embedding service is down. The text is durable and findable by
full-text search from the first moment; vectors follow within milliseconds.

Consistency:
- search waits (`settle`) until the vectors of every write this process acknowledged
  before the search are stored, so a client always finds what it just wrote by meaning too;
- the vector write only lands if `n.rev` is still the revision it embedded: a text change
  in between (from this process or another one on the same database) wins, and its own
  mark brings the node back here;
- a crash between the two leaves `n.vec_rev <> n.rev`; `sweep` finds such nodes when a
  project is opened and queues them again. Nothing is lost, only late.
- revisions are random tokens, not counters: an entity deleted and created again with the
  same id (an import restores ids) starts from a revision its predecessor never had.

The same round links the entity to the document chunks that mention its name
(`polyg.core.graph.chunk_mentions`), so that a search, which waits for it, sees those links too.

Failures: a round whose database cannot be reached is retried, with a growing pause per
project. A batch that fails otherwise is split in halves down to single nodes; a text that
fails alone, and again once the model has embedded another text, is parked (`n.vec_parked`,
logged, counted by `polyg status`), so that one text the embedder rejects cannot hold back every
other vector of its project, or make its searches wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import time
from collections.abc import Iterable
from typing import Any

from polyg.core.graph.chunk_mentions import follow_entities
from polyg.core.graph.context import GraphContext
from polyg.core.graph.embeddable import REGISTRY, Embeddable, EmbeddableRegistry
from polyg.core.graph.vectors import compose
from polyg.embed.base import run_in_background
from polyg.errors import PolygError, StoreNotReady, StoreTimeout
from polyg.store.connection import reads_from_primary
from polyg.store.falkor import Row, VectorParam
from polyg.store.names import ENTITY, Label
from polyg.store.queries import vectors as q

log = logging.getLogger(__name__)

# Nodes recomposed per model call and write; an entity's observations ride along. 256 makes an
# import (which goes through here) as fast as embedding inline at create: 10k entities in 75 s
# (64: 86 s; the vector writes update nodes, which costs the database more per query).
BATCH = 256

# Backoff after a failed batch (embedding service or store down), doubling up to the max.
RETRY_S = 0.5
MAX_RETRY_S = 30.0

# Rows ready to write: (nodes with their vectors, new part vectors).
Vectors = tuple[list[dict[str, Any]], list[dict[str, Any]]]
# Failures that say nothing about the texts of a batch: the database cannot be reached. Any
# other failure may be one text the model (or the database) rejects, so the batch is split.
TRANSIENT = (StoreTimeout, StoreNotReady)
# Embedded to tell a rejected text from a model that rejects everything (each probe is a new
# text, so that a cache in front of the model cannot answer for it).
PROBE = "polyg embedding probe {}"
# The name of the worker's task: what tells it apart among a loop's tasks (a test checks that
# none outlives the Vectorizer that started it).
TASK_NAME = "polyg-vectorizer"


class Vectorizer:
    def __init__(self, ctx: GraphContext, *, batch: int = BATCH, registry: EmbeddableRegistry = REGISTRY) -> None:
        self.ctx = ctx
        self.batch = batch
        self.registry = registry
        self.labels = registry.vectorized_labels()
        self._sources = {label: registry.vector_source(label) for label in self.labels}
        self._pending: dict[str, dict[Label, set[str]]] = {}  # project -> label -> ids to embed
        # project -> label -> ids of the round under way not yet stored (`unstored`): they have
        # left the queue, but an import's progress bar still waits for them.
        self._in_flight: dict[str, dict[Label, set[str]]] = {}
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

    def mark(self, project: str, node_ids: Iterable[str], label: Label = ENTITY) -> None:
        """Queue nodes of `label` whose text was just written; their vectors follow shortly."""
        if label not in self._sources:
            raise ValueError(f"{label} is not a label the vectorizer embeds ({', '.join(self.labels)})")
        ids = set(node_ids)
        if not ids:
            return
        self._pending.setdefault(project, {}).setdefault(label, set()).update(ids)
        self._marked[project] = self._marked.get(project, 0) + 1
        self._wake.set()
        self._ensure_running()

    def pending(self, project: str | None = None, label: str | None = None) -> int:
        """Nodes waiting for vectors (in one project or in all; of one label or of all)."""
        queues = [self._pending.get(project, {})] if project is not None else list(self._pending.values())
        return sum(len(ids) for queue in queues for queued, ids in queue.items() if label in (None, queued))

    def unstored(self, project: str) -> int:
        """Nodes of `project` whose vectors are not stored yet: those waiting, and those of the
        round under way (which `pending` no longer counts). What an import's bar waits for."""
        queued, flying = self._pending.get(project, {}), self._in_flight.get(project, {})
        return sum(len(queued.get(label, set()) | flying.get(label, set())) for label in {*queued, *flying})

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

    async def parked(self, project: str, label: Label | None = None) -> int:
        """Nodes of `project` (of `label`, or of every label embedded) whose text the embedder
        rejects: they have no vector until their text changes (or the next start tries them again)."""
        labels = self.labels if label is None else (label,)
        return sum(await asyncio.gather(*(q.parked(self.ctx, project, each) for each in labels)))

    async def sweep(self, project: str) -> int:
        """Queue the nodes of `project` whose vectors are stale (left by a crash, or by a writer
        that leaves them to this worker); how many."""
        found = 0
        for label in self.labels:
            ids = await q.stale(self.ctx, project, label)
            self.mark(project, ids, label)
            found += len(ids)
        return found

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
            self._task = asyncio.get_running_loop().create_task(self._run(), name=TASK_NAME)

    def _queued(self, project: str) -> bool:
        return any(self._pending.get(project, {}).values())

    async def _run(self) -> None:
        while True:
            # No waiting to gather a batch: a search right after a write would wait for it.
            # Writes made while a batch is being stored form the next batch by themselves.
            # A project that failed waits for its retry time; the others go on meanwhile.
            now = time.monotonic()
            waits = [self._retry_at.get(p, now) - now for p in self._pending if self._queued(p)]
            if not waits or min(waits) > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), min(waits) if waits else None)
            self._wake.clear()
            now = time.monotonic()
            for project in [p for p in self._pending if self._queued(p) and self._retry_at.get(p, now) <= now]:
                # It reads the texts it writes vectors for: from the primary, never a replica
                # that may not have them yet.
                with reads_from_primary():
                    await self._round(project)

    async def _round(self, project: str) -> None:
        ticket = self._marked[project]
        queue = self._pending.pop(project)
        left = {label: set(ids) for label, ids in queue.items()}  # not yet stored or parked
        forgotten = self._forgotten.get(project, 0)
        self._storing = project
        self._in_flight[project] = left
        try:
            for label, ids in queue.items():
                await self._store_all(project, label, sorted(ids), left[label])
        except Exception as exc:
            self._in_flight.pop(project, None)
            # Nothing is lost: what is left goes back to the queue and is tried again later
            # (unless the project was cleared meanwhile).
            if self._forgotten.get(project, 0) != forgotten:
                async with self._changed:
                    self._storing = None
                    self._changed.notify_all()
                return
            requeued = self._pending.setdefault(project, {})
            for label, ids in left.items():
                requeued.setdefault(label, set()).update(ids)
            failures = self._failures[project] = self._failures.get(project, 0) + 1
            delay = min(RETRY_S * 2 ** (failures - 1), MAX_RETRY_S)
            self._retry_at[project] = time.monotonic() + delay
            message = exc.message if isinstance(exc, PolygError) else repr(exc)
            log.warning("storing vectors failed; will retry", extra={"project": project, "error": message})
            async with self._changed:
                self._storing = None
                self._changed.notify_all()  # searches waiting on this project stop waiting
            return
        self._in_flight.pop(project, None)
        self._failures.pop(project, None)
        self._retry_at.pop(project, None)
        async with self._changed:
            self._stored[project] = max(self._stored.get(project, 0), ticket)
            self._storing = None
            self._changed.notify_all()

    async def _store_all(self, project: str, label: Label, ids: list[str], left: set[str]) -> None:
        """Store the vectors of `ids` batch by batch, removing each from `left` once stored (or
        parked); the next batch is read and embedded while this one is written (the model and
        the database then use the cores at once)."""
        batches = [ids[start : start + self.batch] for start in range(0, len(ids), self.batch)]
        ahead = asyncio.ensure_future(self._vectors_of(project, label, batches[0]))
        try:
            for index, batch in enumerate(batches):
                try:
                    try:
                        vectors = await ahead
                    finally:
                        if index + 1 < len(batches):
                            ahead = asyncio.ensure_future(self._vectors_of(project, label, batches[index + 1]))
                    await self._write(project, label, *vectors)
                except TRANSIENT:
                    raise
                except Exception as exc:
                    await self._split(project, label, batch, left, exc)
                left.difference_update(batch)
        finally:
            ahead.cancel()
            if ahead.done() and not ahead.cancelled():
                ahead.exception()  # retrieved: a read-ahead that failed is tried again anyway

    async def _split(self, project: str, label: Label, batch: list[str], left: set[str], error: Exception) -> None:
        """A batch failed for a reason other than the database being down: store its halves
        apart, down to single nodes, so that one text the embedder rejects (too long for a
        provider, a byte it cannot take) does not hold back every other vector of the project.
        A text that fails alone is parked, unless the embedder rejects everything (then the
        error is raised: a failure to retry, not a text to park). The text is tried again once
        the probe has worked, and parked only if it fails then: the model may have failed it
        only because it was failing a moment before (a provider's passing error, a service that
        came back between the two), and a text parked wrongly would have no vector until it changes."""
        if len(batch) == 1:
            if not await self._embedder_works():
                raise error
            try:
                await self._write(project, label, *await self._vectors_of(project, label, batch))
            except TRANSIENT:
                raise
            except Exception as again:
                await self._park(project, label, batch[0], again)
            return
        middle = len(batch) // 2
        for half in (batch[:middle], batch[middle:]):
            try:
                await self._write(project, label, *await self._vectors_of(project, label, half))
            except TRANSIENT:
                raise
            except Exception as exc:
                await self._split(project, label, half, left, exc)
            left.difference_update(half)

    async def _embedder_works(self) -> bool:
        probe = PROBE.format(next(self._probes))
        try:
            await run_in_background(self.ctx.embedder.embed_batch_sync, [probe])
        except Exception:
            return False
        return True

    async def _park(self, project: str, label: Label, node_id: str, error: Exception) -> None:
        """Give up on the vectors of one node until its text changes (or the next start's
        sweep), and say so: its project's other vectors go on, and search still finds it by
        its words."""
        message = error.message if isinstance(error, PolygError) else repr(error)
        log.warning(
            "embedding this node's text fails on its own; its vectors are parked until its text changes",
            # Keyed by the label's own name ("entity": id), as the log has always named entities.
            extra={"project": project, label.lower(): node_id, "error": message},
        )
        await q.park(self.ctx, project, label, node_id)

    async def _vectors_of(self, project: str, label: Label, node_ids: list[str]) -> Vectors:
        rows = await q.read_sources(self.ctx, project, self._sources[label], node_ids)
        if label == ENTITY:
            await self._follow_mentions(project, rows)
        return await run_in_background(functools.partial(self._recompose, self.registry[label]), rows)

    async def _follow_mentions(self, project: str, rows: list[Row]) -> None:
        """The chunks mentioning each name follow it too, before the vectors are stored: a crash
        in between leaves the vectors stale, and the sweep brings the entity back here. Only a
        store that cannot be reached fails the round; any other failure to link must not hold
        back vectors (nor park a text that embeds well): it is logged, and the links wait for
        the entity's next change."""
        try:
            # An entity's head values are its name, type and summary (`polyg.core.graph.embeddable.ENTITY`).
            await follow_entities(self.ctx, project, [(row[0], row[2][0]) for row in rows])
        except TRANSIENT:
            raise
        except PolygError as exc:
            log.warning(
                "linking entities to the chunks that mention them failed",
                extra={"project": project, "error": exc.message},
            )

    async def _write(
        self, project: str, label: Label, nodes: list[dict[str, Any]], new_parts: list[dict[str, Any]]
    ) -> None:
        source = self._sources[label]
        if source.part is not None:
            # A part's text never changes, so its vector is right whatever happened since.
            await q.set_vectors(self.ctx, project, source.part.label, new_parts)
        await q.store_vectors(self.ctx, project, source, nodes)

    def _recompose(self, entry: Embeddable, rows: list[Row]) -> Vectors:
        """Embed what the rows lack and compose the vectors: (node rows, new part rows) ready to
        write. Runs in a background embedding thread, arithmetic included."""
        part = self.registry[entry.parts.label] if entry.parts is not None else None
        # What the model must run on: heads never embedded (or whose text changed) and parts
        # without a vector.
        texts: list[str] = []
        for _, _, head_values, head, parts in rows:
            if not head:
                texts.append(entry.head_text(dict(zip(entry.head, head_values, strict=True))))
            if part is not None:
                texts.extend(
                    part.head_text(dict(zip(part.head, values, strict=True)))
                    for _, values, vector in parts
                    if not vector
                )
        vectors = iter(self.ctx.embedder.embed_batch_sync(texts) if texts else [])
        nodes: list[dict[str, Any]] = []
        new_parts: list[dict[str, Any]] = []
        for node_id, rev, _, head, parts in rows:
            head_vec = head or next(vectors)
            if part is None:
                nodes.append({"id": node_id, "rev": rev, "emb": VectorParam(head_vec)})
                continue
            part_vecs = []
            for part_id, _, vector in parts:
                if not vector:
                    vector = next(vectors)
                    new_parts.append({"id": part_id, "emb": VectorParam(vector)})
                part_vecs.append(vector)
            nodes.append(
                {
                    "id": node_id,
                    "rev": rev,
                    "head": VectorParam(head_vec),
                    "emb": VectorParam(compose(head_vec, part_vecs)),
                }
            )
        return nodes, new_parts
