"""Many memories remembered at once, as `remember` stores each: recall_bench's preload.

Used only by a benchmark (a store of 100k memories would otherwise wait for the model at every
memory), so it lives here rather than in the package: it calls `MemoryWriter.remember` for each
memory, in order, and makes the vectors of the next batch's texts while the store answers the
writes of this one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from polyg.core.memory.extract_memory import extract
from polyg.core.memory.write import MemoryWriter, Remembered, _as_name, memory_text
from polyg.embed.cache import CachingEmbedder
from polyg.nlp.pipeline import pipeline

# How many memories `remember_many` makes the vectors of at once, ahead of their writes.
AHEAD = 64


@dataclass(frozen=True)
class Memory:
    """One memory to remember: what `remember` takes."""

    content: str
    context: str | None
    at: datetime


async def remember_many(
    writer: MemoryWriter, project: str, memories: Sequence[Memory], *, ahead: int = AHEAD
) -> list[Remembered]:
    """Each memory as `remember` stores it, in order (each one sees those before it: the
    same content twice is stored once, names resolve to what was written before). The
    vectors of the next `ahead` memories' texts are made while the store answers the
    writes of these, so a large batch waits for the model only at its start. A batch that
    failed on the way, given again, writes what it did not: the memories stored whole are
    duplicates, the one that failed half-way is finished."""
    embedder = writer.graphs.temporal.ctx.embedder
    # Vectors made ahead are found again only through the embedder's cache.
    caching = isinstance(embedder, CachingEmbedder)
    batches = [memories[i : i + ahead] for i in range(0, len(memories), max(1, ahead))]
    out: list[Remembered] = []
    pending: asyncio.Future[None] | None = None
    try:
        for k, batch in enumerate(batches):
            if not caching:
                # Parsed in one batch (with the vectors, when made ahead: `_embed_ahead`).
                await pipeline().parse_many_async([m.content for m in batch])
            if caching:
                current = pending or asyncio.ensure_future(_embed_ahead(writer, batch))
                with contextlib.suppress(Exception):  # a failing model fails the remember itself
                    await current
                pending = asyncio.ensure_future(_embed_ahead(writer, batches[k + 1])) if k + 1 < len(batches) else None
            for m in batch:
                out.append(await writer.remember(project, m.content, m.context, m.at))
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
    return out


async def _embed_ahead(writer: MemoryWriter, batch: Sequence[Memory]) -> None:
    """The vectors of what the memories will store (their text, and what the rules find
    in it: events, causes and effects), into the embedder's cache; one model call each."""
    texts: list[str] = []
    # One batch through the parser (`nlp.pipe`), off the event loop; each remember reads
    # its parse again.
    await pipeline().parse_many_async([m.content for m in batch])
    for m in batch:
        texts.append(memory_text(m.content, m.context))
        found = extract(m.content, m.at, speaker=_as_name(m.context) or None)
        texts += [e.description for e in found.events]
        texts += [t for c in found.causes for t in (c.cause, c.effect)]
    await writer.graphs.temporal.ctx.embedder.embed_batch([t for t in dict.fromkeys(texts) if t.strip()])
