"""Ingestion (spec 001): documents become an article, its authors and its chunks, each chunk
embedded (in batches) and linked to the entities it names (entities written later are linked
to it by `polyg.core.graph.chunk_mentions`).

An article is known by its source; its `content_hash` covers everything it is made from (text,
title, authors, url, date, the chunking). Ingesting it again with the same hash does nothing; a
different hash replaces its chunks; `delete` removes it. Chunk vectors are embedded here, in
batches across articles, while the previous batch is written, and stored through the one
function every single-node vector goes through (`queries.vectors.set_vectors`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from polyg.core import limits
from polyg.core.graph.chunk_mentions import NameMatcher
from polyg.core.graph.context import GraphContext
from polyg.core.graph.embeddable import CHUNK
from polyg.core.ingest.parsers import Document
from polyg.core.text.chunking import DEFAULT_SPEC, Chunk, ChunkSpec, chunk_text
from polyg.errors import InvalidParams
from polyg.names import now_iso
from polyg.store.falkor import VectorParam
from polyg.store.queries import articles as q
from polyg.store.queries import node_reads as node_reads_q
from polyg.store.queries.vectors import set_vectors

log = logging.getLogger(__name__)

# Chunks embedded per model call and written per round of queries.
BATCH = 128

Progress = Callable[[int, int], None]  # (chunks stored so far, chunks to store)


@dataclass
class IngestReport:
    created: list[str] = field(default_factory=list)  # titles
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    chunks: int = 0
    mentions: int = 0
    embed_s: float = 0.0
    total_s: float = 0.0
    article_ids: dict[str, str] = field(default_factory=dict)  # source -> article id

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": len(self.created),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "deleted": len(self.deleted),
            "chunks": self.chunks,
            "mentions": self.mentions,
            "embed_s": round(self.embed_s, 3),
            "total_s": round(self.total_s, 3),
        }


def content_hash(doc: Document, spec: ChunkSpec) -> str:
    parts = [doc.title, list(doc.authors), doc.text, doc.url, doc.date, spec.size, spec.overlap]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


@dataclass
class _Pending:
    """An article to write, with its chunks."""

    doc: Document
    article_id: str
    digest: str
    chunks: list[Chunk]
    existed: bool


class IngestService:
    def __init__(self, ctx: GraphContext, spec: ChunkSpec = DEFAULT_SPEC, *, batch: int = BATCH) -> None:
        self.ctx = ctx
        self.spec = spec
        self.batch = batch

    async def ingest(
        self, project: str, documents: Sequence[Document], progress: Progress | None = None
    ) -> IngestReport:
        started = time.perf_counter()
        report = IngestReport()
        docs = list({doc.source: checked(doc) for doc in documents}.values())  # last one per source wins
        known = {
            row[0]: (row[1], row[2]) for row in await q.article_hashes(self.ctx, project, [d.source for d in docs])
        }
        todo: list[tuple[Document, str, str | None]] = []
        for doc in docs:
            digest = content_hash(doc, self.spec)
            article_id, stored = known.get(doc.source, (None, None))
            if stored == digest:
                report.unchanged.append(doc.title)
                report.article_ids[doc.source] = str(article_id)
            else:
                todo.append((doc, digest, article_id))
        if todo:
            pending = await asyncio.to_thread(self._chunk_all, todo)
            matcher = NameMatcher([(str(i), str(n)) for i, n in await node_reads_q.entity_names(self.ctx, project)])
            await self._write_all(project, pending, matcher, report, progress)
        report.total_s = time.perf_counter() - started
        log.info("ingested", extra={"project": project, "ingest": report.as_dict()})
        return report

    async def delete(self, project: str, sources: Sequence[str], prefixes: Sequence[str] = ()) -> IngestReport:
        """Remove the articles known by these sources, or whose source starts with a prefix."""
        report = IngestReport()
        for _, title in await q.delete_articles(self.ctx, project, list(sources), list(prefixes)):
            report.deleted.append(str(title))
        return report

    def _chunk_all(self, todo: list[tuple[Document, str, str | None]]) -> list[_Pending]:
        return [
            _Pending(
                doc, article_id or f"art_{uuid.uuid4().hex}", digest, chunk_text(doc.text, self.spec), bool(article_id)
            )
            for doc, digest, article_id in todo
        ]

    async def _write_all(
        self,
        project: str,
        pending: list[_Pending],
        matcher: NameMatcher,
        report: IngestReport,
        progress: Progress | None,
    ) -> None:
        total = sum(len(p.chunks) for p in pending)
        groups = _groups(pending, self.batch)
        if progress:
            progress(0, total)
        done = 0
        ahead = asyncio.ensure_future(self._embed(groups[0])) if groups else None
        try:
            for index, group in enumerate(groups):
                assert ahead is not None
                vectors, seconds = await ahead
                report.embed_s += seconds
                # The next group embeds (in a worker thread) while this one is written.
                ahead = asyncio.ensure_future(self._embed(groups[index + 1])) if index + 1 < len(groups) else None
                await self._write(project, group, vectors, matcher, report)
                done += sum(len(p.chunks) for p in group)
                if progress:
                    progress(done, total)
        finally:
            if ahead is not None:
                ahead.cancel()

    async def _embed(self, group: list[_Pending]) -> tuple[list[list[float]], float]:
        texts = [CHUNK.head_text({"text": c.text}) for p in group for c in p.chunks]
        started = time.perf_counter()
        # At normal priority, unlike the vectorizer's background embedding: someone waits for an
        # ingestion (the CLI's progress bar, an add_article call), and at the background's
        # lower priority it got a tenth of a core on a busy machine.
        vectors = await asyncio.to_thread(self.ctx.embedder.embed_batch_sync, texts)
        return vectors, time.perf_counter() - started

    async def _write(
        self,
        project: str,
        group: list[_Pending],
        vectors: list[list[float]],
        matcher: NameMatcher,
        report: IngestReport,
    ) -> None:
        now = now_iso()
        await q.replace_articles(
            self.ctx,
            project,
            [
                {
                    "source": p.doc.source,
                    "id": p.article_id,
                    "title": p.doc.title,
                    "url": p.doc.url,
                    "date": p.doc.date,
                    "authors": list(p.doc.authors),
                    "now": now,
                }
                for p in group
            ],
        )
        rows: list[dict[str, Any]] = []
        mentions: list[list[str]] = []
        for p in group:
            prev = None
            for ord_, chunk in enumerate(p.chunks):
                chunk_id = f"{p.article_id}_c{ord_}"
                rows.append(
                    {
                        "id": chunk_id,
                        "article": p.article_id,
                        "ord": ord_,
                        "text": chunk.text,
                        "heading": chunk.heading,
                        "tokens": chunk.tokens,
                        "now": now,
                        "prev": prev,
                    }
                )
                prev = chunk_id
                if matcher:
                    mentions.extend([chunk_id, entity_id] for entity_id in sorted(matcher.find(chunk.text)))
        await q.create_chunks(self.ctx, project, rows)
        await set_vectors(
            self.ctx,
            project,
            CHUNK.label,
            [{"id": row["id"], "emb": VectorParam(vector)} for row, vector in zip(rows, vectors, strict=True)],
        )
        await q.link_mentions(self.ctx, project, mentions)
        await q.mark_ingested(self.ctx, project, [[p.article_id, p.digest] for p in group])
        for p in group:
            (report.updated if p.existed else report.created).append(p.doc.title)
            report.article_ids[p.doc.source] = p.article_id
        report.chunks += len(rows)
        report.mentions += len(mentions)


def _groups(pending: list[_Pending], batch: int) -> list[list[_Pending]]:
    """Articles in groups of about `batch` chunks (an article is never split across groups)."""
    groups: list[list[_Pending]] = []
    current: list[_Pending] = []
    size = 0
    for p in pending:
        current.append(p)
        size += len(p.chunks)
        if size >= batch:
            groups.append(current)
            current, size = [], 0
    if current:
        groups.append(current)
    return groups


def checked(doc: Document) -> Document:
    """A document with a title and some text (the parsers make them; an agent's may lack them).
    `polyg ingest` checks each file's documents with it first, so one bad file is reported by
    name and the others are ingested."""
    limits.name(doc.title, "title")
    for author in doc.authors:
        limits.name(author, "authors")
    if not doc.text.strip():
        raise InvalidParams(f"{doc.source}: there is no text to ingest.")
    return doc
